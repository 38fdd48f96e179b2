"""Write BENCHMARKS.md and its plots from the bench JSON reports (numbers are never typed by hand).

    python benchmarks/report.py --results benchmarks/results --out BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS  # noqa: E402 (the folder on the path first)

DATASETS = (*SHARED_SETS, "sherlock_holmes_check", "four_books_check")
CHECK_SET = "sherlock_holmes_check"  # never used for tuning: benchmarks/datasets/sherlock_holmes_check/README.md
# the sets no tuning reads (each README): section title, what the corpus is, and what the set is not blind to
CHECK_SETS = {
    CHECK_SET: ("a novel", "one book", "two junk rules for dialogue were written after looking at the book's graph, "
                "and the coverage re-ranking's entity weighting after measuring its questions"),
    "four_books_check": ("four books", "four books (the novel's and three more)",
                         "the coverage re-ranking's entity weighting was written after measuring the novel's questions "
                         "on this corpus"),
}
# what a reader must know of a set's gold before reading its recall (from the dataset's README)
GOLD_NOTES = {
    "graphrag_bench_medical": "Gold passages are heuristic (the dataset's README): the chunk that best covers the "
    "question's evidence facts by IDF-weighted word overlap, kept at coverage >= 0.75. That is a lexical match by "
    "construction, so BM25 and hybrid are favoured; treat recall here as approximate.",
    "covidqa_dev": "Gold passages are exact (the passage holding the answer span, see the dataset's README).",
    CHECK_SET: "A novel (The Adventures of Sherlock Holmes) with 60 questions written for this project, never used "
    "for tuning (benchmarks/datasets/sherlock_holmes_check/README.md). Gold passages are those holding each "
    "question's evidence word for word; one question is 1.7 points of recall@5.",
    "four_books_check": "Four books (the novel above, Pride and Prejudice, Frankenstein, Poirot Investigates) in one "
    "corpus, 180 questions written for this project, never used for tuning "
    "(benchmarks/datasets/four_books_check/README.md). Gold passages are those holding each question's evidence word "
    "for word; one question is 0.56 points of recall@5.",
}
RUN_ALL = Path(__file__).resolve().parent / "run_all.sh"


# (results file, script that printed it, section title), in report order
MICRO_BENCHMARKS = [
    ("latency_2wiki.txt", "latency.py", "Retrieval latency without the query embedding (2wiki_retrieval101)"),
    ("agrag_steiner.txt", "agrag_steiner.py", "AGRAG Steiner tree + MCMI against networkx (2wiki_retrieval101)"),
    ("pathrag_pruning.txt", "pathrag_pruning.py", "PathRAG flow-based pruning against exhaustive path enumeration (2wiki_retrieval101)"),
    ("archrag.txt", "archrag_bench.py", "ArchRAG community hierarchy, C-HNSW and hierarchical search (2wiki_retrieval101)"),
    ("archrag_signal.txt", "archrag_signal.py", "ArchRAG item signal: what its items reach, every chunk ranking against dense"),
    ("chnsw.txt", "chnsw_bench.py", "C-HNSW against exact search (random vectors)"),
    ("tuning.txt", "tuning.py", "Tuning sweeps behind the A2RAG, PathRAG, ArchRAG and AGRAG defaults on the NER graph "
     "(2wiki_retrieval101, hotpotqa_train100, musique_train100)"),
    ("ner_speed.txt", "ner_speed.py", "spaCy parsing speed of the NER extractor, 1 process against one per core "
     "(musique_train100)"),
    ("a2rag.txt", "a2rag_bench.py", "A2RAG stages, latency and robustness to lost graph nodes (2wiki_retrieval101)"),
    ("insert_one.txt", "insert_one.py", "Inserting one document into the 2wiki_retrieval101 index (hotpotqa_train100 "
     "documents)"),
]


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def method_table(report: dict) -> list[str]:
    rows = ["| method | recall@2 | recall@5 | all-gold@5 | query p50 ms | query p95 ms | context tokens | LLM calls/query |",
            "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, m in report["methods"].items():
        rows.append(f"| {name} | {pct(m['recall@2'])} | {pct(m['recall@5'])} | {pct(m['all_gold@5'])} | "
                    f"{m['query_ms_p50']:.1f} | {m['query_ms_p95']:.1f} | {m['context_tokens_mean']:.0f} | "
                    f"{m['llm_calls_mean']:.1f} |")
    return rows


def extractor_table(ner: dict, statistical: dict) -> list[str]:
    """The same methods on the NER graph (default) and on AGRAG's statistical graph, side by side."""
    rows = ["| method | NER recall@2 | NER recall@5 | statistical recall@2 | statistical recall@5 |",
            "|---|---:|---:|---:|---:|"]
    for name, m in ner["methods"].items():
        s = statistical["methods"].get(name)
        other = f"{pct(s['recall@2'])} | {pct(s['recall@5'])}" if s else "– | –"
        rows.append(f"| {name} | {pct(m['recall@2'])} | {pct(m['recall@5'])} | {other} |")
    return rows


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(report["methods"])
    r5 = [100 * report["methods"][n]["recall@5"] for n in names]
    p50 = [report["methods"][n]["query_ms_p50"] for n in names]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.6))
    left.bar(names, r5, color="#4c72b0")
    left.tick_params(axis="x", labelrotation=35)
    for label in left.get_xticklabels():
        label.set_horizontalalignment("right")
    left.set_ylabel("recall@5 (%)")
    left.set_ylim(0, 100)
    left.set_title(f"{report['dataset']}: recall@5")
    for x, y in enumerate(r5):
        left.text(x, y + 1, f"{y:.1f}", ha="center", fontsize=8)
    right.scatter(p50, r5, color="#dd8452")
    for n, x, y in zip(names, p50, r5):
        right.annotate(n, (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
    right.set_xscale("log")
    right.set_xlabel("median query latency (ms, log)")
    right.set_ylabel("recall@5 (%)")
    right.set_title("latency vs recall")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def growth(xs: list[float], ys: list[float]) -> str:
    """Least-squares exponent of y ~ x^b on a log-log scale, in words."""
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys) if x > 0 and y > 0]
    if len(pts) < 2:
        return "n/a"
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    b = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    word = "flat" if b < 0.3 else "sub-linear" if b < 0.85 else "linear" if b < 1.2 else "n log n or mildly super-linear" if b < 1.45 else "super-linear"
    return f"~n^{b:.2f} ({word})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="benchmarks/results")
    parser.add_argument("--out", default="BENCHMARKS.md")
    args = parser.parse_args()
    results, out = Path(args.results), Path(args.out)
    plots = out.parent / "benchmarks" / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    reports = {d: load(results / f"{d}.json") for d in DATASETS if (results / f"{d}.json").exists()}
    if not reports:
        raise SystemExit(f"no bench reports in {results}")
    first = next(iter(reports.values()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Benchmarks",
        "",
        "Generated by `benchmarks/report.py` from the JSON reports in `benchmarks/results/`; do not edit by hand.",
        f"Machine: {first['machine']}. Embedder: {first['embed_model']}. LLM: none (every method LLM-free).",
        f"Report written at commit {commit or '?'} ({time.strftime('%Y-%m-%d')}); each section's numbers come from "
        "the run that wrote its results file (sections name their command; a section without a commit of its own "
        "is from the last full `make bench`).",
        "",
        "Recall values are percentages over each method's chunk nodes in rank order (recall@k = |gold ∩ top-k| / |gold|,",
        "averaged over questions; all-gold@5 = share of questions with every gold passage in the top 5). Latency is the wall",
        "time of one `retrieve()` call including the query embedding, after one untimed warm-up query. Context tokens count",
        "the text a method hands the LLM (chunks plus its evidence node).",
        "",
        "## Commands",
        "",
        "`make bench` installs the `bench` extra and runs `benchmarks/run_all.sh`, which is:",
        "",
        "```bash",
        RUN_ALL.read_text(encoding="utf-8").strip(),
        "```",
        "",
    ]
    lines += domain_tuning_section(results / "domain_tuning.json")
    for name in CHECK_SETS:
        lines += check_set_section(name, reports.get(name))
    for name, report in reports.items():
        plot(report, plots / f"{name}.png")
        skipped = f", {report['questions_without_gold']} without gold skipped" if report.get("questions_without_gold") else ""
        run = f" Run at commit {report['commit']}." if report.get("commit") else ""
        lines += [f"## {name}", "", f"{report['passages']} passages, {report['questions']} questions{skipped}.{run}"
                  + run_note(report), ""]
        if name in GOLD_NOTES:
            lines += [GOLD_NOTES[name], ""]
        lines += method_table(report)
        lines += ["", f"![{name}](benchmarks/plots/{name}.png)", ""]
        if (results / f"{name}-statistical.json").exists():
            other = load(results / f"{name}-statistical.json")
            mixed = "" if other.get("commit") == report.get("commit") else (
                f" The two runs are of different commits ({report.get('commit', '?')} above, "
                f"{other.get('commit', '?')} for the statistical graph): a row's change between them is not the "
                "extractor's alone.")
            lines += [f"Index built with `--entities {report['index'].get('extractor', 'statistical')}` (above) and with "
                      "`--entities statistical` (AGRAG's TF-IDF n-grams and co-occurrence relations; `agrag` there is "
                      f"the paper-faithful pipeline).{mixed}{run_note(other, of='the statistical run')}", ""]
            lines += extractor_table(report, other) + [""]
    lines += ["## Indexing cost", "",
              "Stages: extract (entities and relations), embed (chunks, entity names, fact texts), synonyms (faiss kNN "
              "over names), graph (snapshot, BM25). Rows run at different commits come from different runs, and the "
              "machine's speed varies between runs: compare seconds within one run only.", "",
              "| dataset | extractor | run at | passages | chunks | entities | relations | seconds | extract / embed / "
              "synonyms / graph s | peak RSS MB | LLM calls |",
              "|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|"]
    for name, report in reports.items():
        variants = [report] + ([load(results / f"{name}-statistical.json")]
                               if (results / f"{name}-statistical.json").exists() else [])
        for r in variants:
            i = r["index"]
            st = i.get("stage_seconds") or {}
            stages = " / ".join(f"{st.get(k, 0):.0f}" for k in ("extract", "embed", "synonyms", "graph")) if st else "–"
            lines.append(f"| {name} | {i.get('extractor', 'statistical')} | {r.get('commit', '?')} | {r['passages']} | "
                         f"{i.get('chunks', '')} | "
                         f"{i['entities']} | {i['relations']} | {i['seconds']:.1f} | {stages} | {i['peak_rss_mb']:.0f} | "
                         f"{i['llm_calls']} |")
    lines.append("")
    scaling_dir = results / "scaling"
    runs = sorted((load(p) for p in scaling_dir.glob("2wiki_first*.json")), key=lambda r: r["passages"])
    if runs:
        methods = list(runs[0]["methods"])
        lines += ["## Scaling (2wiki_retrieval101 prefixes)", "",
                  "Each row is a fresh process (`benchmarks/scaling.py`); questions are those whose gold passages are all in the prefix.",
                  "", "| passages | questions | index seconds | peak RSS MB | " + " | ".join(f"{m} p50 ms" for m in methods) + " |",
                  "|---:|---:|---:|---:|" + "---:|" * len(methods)]
        for r in runs:
            lines.append(f"| {r['passages']} | {r['questions']} | {r['index']['seconds']:.1f} | {r['index']['peak_rss_mb']:.0f} | "
                         + " | ".join(f"{r['methods'][m]['query_ms_p50']:.1f}" for m in methods) + " |")
        xs = [r["passages"] for r in runs]
        lines += ["", f"Growth with the number of passages: index time {growth(xs, [r['index']['seconds'] for r in runs])}, "
                  f"peak memory {growth(xs, [r['index']['peak_rss_mb'] for r in runs])}; query latency "
                  + ", ".join(f"{m} {growth(xs, [r['methods'][m]['query_ms_p50'] for r in runs])}" for m in methods) + ".", ""]
    medical = scaling_dir / "graphrag_bench_medical.json"
    if medical.exists():
        r = load(medical)
        lines += ["## graphrag_bench_medical timing (benchmarks/scaling.py)", "",
                  f"{r['passages']} passages, the first {r['questions']} questions timed (the whole set is in its own "
                  "section above). Index: "
                  f"{r['index']['seconds']:.1f} s, {r['index']['peak_rss_mb']:.0f} MB peak.", ""]
        lines += method_table(r) + [""]
    # which commit re-ran a micro-benchmark on its own, when it was not the last full `make bench` (a sidecar file:
    # the scripts print plain text and know no revision)
    runs = load(results / "micro_runs.json") if (results / "micro_runs.json").exists() else {}
    for name, script, title in MICRO_BENCHMARKS:
        if (results / name).exists():
            when = f", run at commit {runs[name]}" if name in runs else ""
            lines += [f"## {title}", "", f"Output of `benchmarks/{script}` (see run_all.sh){when}:", "", "```",
                      (results / name).read_text(encoding="utf-8").strip(), "```", ""]
    if (results / "json_repair.md").exists():  # markdown already, from benchmarks/json_repair_compare.py
        lines += [(results / "json_repair.md").read_text(encoding="utf-8").strip(), ""]
    for name, title, script in (("embed_speed.md", "Embedding speed: PyTorch and ONNX Runtime", "embed_speed.py"),
                                ("build_ab.md", "Index build time beside a baseline commit", "build_ab.py"),
                                ("big_document.md", "One very large document", "big_document.py"),
                                ("guard_latency.md", "The hybrid guard's cost per query", "guard_latency.py"),
                                ("store_bench.md", "Graph stores: in-memory JSON and embedded LadybugDB", "store_bench.py"),
                                ("ray_bench.md", "Indexing on Ray", "ray_bench.py"),
                                ("scale.md", "Scaling on a synthetic corpus", "scale.py"),
                                ("serve_memory.md", "A served index: memory and latency over HTTP", "serve_memory.py"),
                                ("startup.md", "Start-up of the CLI", "startup.py"),
                                ("name_density_sample.md", "How many words decide terms=\"auto\"",
                                 "name_density_sample.py"),
                                ("rerank_probes.md", "Re-ranking hybrid's top 20 with other graph signals (issue 25)",
                                 "rerank_probes.py"),
                                ("graph_headroom.md", "Room for a graph method above hybrid (issue 25)",
                                 "graph_headroom.py"),
                                ("sentence_probe.md", "A chunk's best sentence as a ranking signal (issue 25)",
                                 "sentence_probe.py"),
                                ("guard_order.md", "The order of the guard's top 5 (issue 25)", "guard_order.py"),
                                ("guard_top_k.md", "The hybrid guard at other top_k (issue 25)", "guard_top_k.py"),
                                ("top_k_books.md", "The hybrid guard at small top_k on the books", "top_k_check.py"),
                                ("pathrag_lodo.md", "PathRAG's base and path weights by leave-one-dataset-out",
                                 "sweep_lodo.py"),
                                ("archrag_lodo.md", "ArchRAG's base and item weights by leave-one-dataset-out",
                                 "sweep_lodo.py")):
        if (results / name).exists():  # markdown written by the script; its own "# " title becomes a sub-heading
            body = (results / name).read_text(encoding="utf-8").strip()
            body = _demote_headings(body)
            body = body.replace("](scale.png)", "](benchmarks/results/scale.png)")  # its image, from the repo root
            when = f", run at commit {runs[name]}" if name in runs else ""
            lines += [f"## {title}", "", f"Output of `benchmarks/{script}` (see run_all.sh){when}:", "", body, ""]
    lines += insert_batches_section(sorted(results.glob("insert_batches_*.json")))
    out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {out} and {len(reports)} plot(s) in {plots}")


def insert_batches_section(paths: list[Path]) -> list[str]:
    """A graph built by inserts in batches beside one built at once (benchmarks/insert_batches.py), per dataset."""
    if not paths:
        return []
    lines = ["## Inserting documents in batches against one build", "",
             "Output of `benchmarks/insert_batches.py` (see run_all.sh): the same documents indexed at once (*whole*) "
             "and as a first build of one batch followed by inserts of one batch each (*batched*), default settings, "
             "all-MiniLM-L6-v2. *shared links*: the (entity, chunk) links both graphs hold, over those either holds. "
             "recall@5 in %, every question with gold; `:paper` reads the graph alone (the hybrid guard off).", ""]
    for path in paths:
        r = load(path)
        methods = list(r["whole"]["recall@5"])
        lines += [f"**{r['dataset']}** ({r['documents']} documents, {r['chunks']} chunks, batches of {r['batch']}, "
                  f"commit {r['commit']}); shared links {100 * r['shared_links']:.1f} %.{run_note(r)}", "",
                  "| build | seconds | entities | terms | links | largest entity | " + " | ".join(methods) + " |",
                  "|---|---:|---:|---:|---:|---|" + "---:|" * len(methods)]
        for name in ("whole", "batched"):
            v = r[name]
            largest = f"`{v['largest'][0]}` ({v['largest'][1]})" if v.get("largest") else ""
            lines.append(f"| {name} | {v['seconds']:.1f} | {v['entities']:,} | {v['terms']:,} | {v['links']:,} | "
                         f"{largest} | " + " | ".join(f"{v['recall@5'][m]:.1f}" for m in methods) + " |")
        lines += ["", "Most linked, batched: " + ", ".join(f"`{k}` ({n})" for k, n in r["batched"]["top_linked"]), ""]
    return lines


def domain_tuning_section(path: Path) -> list[str]:
    """Issue 25: five sets, each graph method as its paper ranking and with the hybrid guard, the guard's settings
    chosen on all five sets (in-sample) and on the other four (left-out); entity counts and top entities."""
    if not path.exists():
        return []
    r = load(path)
    first = next(iter(r["table"].values()))
    methods = [m for m, v in first.items() if isinstance(v, dict) and "paper" in v]
    lines = ["## Any corpus: five sets, in-sample and left-out (issue 25)", "",
             f"Output of `benchmarks/domain_tuning.py` (see run_all.sh), written at commit {r.get('commit', '?')}."
             f"{run_note(r)} recall@5 in %, every question with gold, all-MiniLM-L6-v2, the default index (named "
             "entities; salient terms where the corpus is not written in names). For each graph method: *paper* = "
             "its paper variant "
             "(`method:paper`: its own ranking with the guard off; A2RAG's also without our anchors, its own "
             "ranking, the guard's input, in brackets); *in* = with the hybrid guard at the settings chosen on all five sets "
             "(the shipped defaults); *out* = at the settings chosen on the other four sets only (leave-one-dataset-"
             "out, the honest figure); *shipped* = the method with its defaults through `retrieve()` (the same "
             "settings as *in*, measured end to end); *best* = the best any setting of the grid reaches on that set "
             "alone (the ceiling of the guard's family there); the last two columns are 90 % paired-bootstrap "
             "intervals (questions resampled) of *in* − *out* and *in* − hybrid, in points. a2rag ranks to its top_k "
             "before the guard (`a2rag@5`). The graph weight's cap is not in the grid: it is "
             "`graph_guard.protective_weight` of the fusion's k0 and the top 5 (0.7 at k0 2), where hybrid's first "
             "chunk ties the graph's fifth.",
             f"The setting picked is the grid's best by the rule `{r.get('pick_rule', 'mean')}` (see the rules "
             "below). "
             f"Settings chosen on all five: `{json.dumps(r['in_sample'], sort_keys=True)}`.", "",
             "| dataset | questions | dense | bm25 | hybrid | method | paper | in | out | shipped | out − hybrid | best "
             "| in − out, 90 % | in − hybrid, 90 % |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for ds, row in r["table"].items():
        for i, m in enumerate(methods):
            head = (f"| {ds} | {row.get('questions', '')} | {row.get('dense', float('nan')):.1f} | "
                    f"{row.get('bm25', float('nan')):.1f} | {row['hybrid']:.1f} |" if i == 0 else "| | | | | |")
            v, shipped = row[m], row.get("shipped", {}).get(m)
            own = v.get("own", v["paper"])
            paper = f"{v['paper']:.1f}" + (f" ({own:.1f})" if abs(own - v["paper"]) >= 0.05 else "")
            lines.append(f"{head} {m} | {paper} | {v['in_sample']:.1f} | **{v['left_out']:.1f}** | "
                         f"{'' if shipped is None else f'{shipped:.1f}'} | {v['left_out'] - row['hybrid']:+.1f} | "
                         f"{_opt(v.get('best_any'))} | {_interval(v.get('in_minus_out_90'))} | "
                         f"{_interval(v.get('in_minus_hybrid_90'))} |")
    lines += ["", "Settings chosen with each set left out:", ""]
    for ds, chosen in r["left_out"].items():
        lines.append(f"- {ds}: `{json.dumps(chosen, sort_keys=True)}`")
    if r.get("pick_rules"):
        lines += ["", "How much of the left-out gap is the pick rule's: the same grid, floor and leave-one-out with "
                  "other rules for picking a setting (the one marked picks the shipped defaults). A pair is listed "
                  "when in − out > 1.5 points, or when its left-out figure is below hybrid − 0.5:", "",
                  "| rule | picks | in − out > 1.5 | left out below hybrid − 0.5 |", "|---|---|---|---|"]
        for rule, v in r["pick_rules"].items():
            gaps = ", ".join(f"{m} on {ds} ({gap:+.1f})" for ds, m, gap in v["gaps"]) or "none"
            below = ", ".join(f"{m} on {ds} ({d:+.1f})" for ds, m, d in v["left_out_below_floor"]) or "none"
            lines.append(f"| {rule} | {v['description']} | {gaps} | {below} |")
    if r.get("rule_choice"):
        rules = list(next(iter(r["rule_choice"].values()))["inner_left_out_gain"])
        lines += ["", "The choice of rule, checked without the set it is measured on (nested leave-one-dataset-out): "
                  "for each set, every rule's mean left-out gain over hybrid on the other four (each left out in "
                  "turn, the setting picked on the remaining three; mean over sets and methods, points), the rule "
                  "that scores best there, and the set's recall@5 per method at the setting that rule picks on the "
                  "other four:", "",
                  "| left out | " + " | ".join(rules) + " | rule | recall@5 at its pick |",
                  "|---|" + "---:|" * len(rules) + "---|---|"]
        for ds, v in r["rule_choice"].items():
            gains = " | ".join(f"{v['inner_left_out_gain'][x]:+.2f}" for x in rules)
            at = ", ".join(f"{m} {x:.1f}" for m, x in v["left_out"].items())
            lines.append(f"| {ds} | {gains} | {v['rule']} | {at} |")
    if r.get("examples"):
        lines += ["", "Where the per-query weight helps and hurts (a2rag, shipped settings; recall@5 of the method's "
                  "own ranking / hybrid / guarded):", ""]
        for ds, ex in r["examples"].items():
            if not ex:
                continue
            lines.append(f"- **{ds}**: the guard beats the method's own ranking on {ex['helps_count']} questions "
                         f"and falls below the better of the two on {ex['hurts_count']}.")
            for kind in ("helps", "hurts"):
                for e in ex[kind][:2]:
                    lines.append(f"  - {kind}: \"{e['question']}\" (link {e['link']:.2f}, weight {e['weight']:.2f}; "
                                 f"{e['own']:.1f} / {e['hybrid']:.1f} / {e['guarded']:.1f})")
    if r.get("graphs"):
        lines += ["", "The graph per set (default index): entities, of which salient terms, and the 15 most linked "
                  "entities (chunks linked, type):", "",
                  "| dataset | capitalised / 100 words | chunks | entities | TERM | index s (wall / CPU, busy machine) "
                  "| 15 most linked |", "|---|---:|---:|---:|---:|---|---|"]
        for ds, g in r["graphs"].items():
            top = ", ".join(f"`{k}` ({n}, {t})" for k, n, t in g["top_linked"])
            density = g.get("build_info", {}).get("capitalised_per_100_words", "")
            lines.append(f"| {ds} | {density} | {g['chunks']} | {g['entities']} | {g['types'].get('TERM', 0)} | "
                         f"{g['seconds']:.0f} / {g.get('cpu_seconds', 0):.0f} | {top} |")
    return lines + [""]


def run_note(report: dict, of: str = "") -> str:
    """What a reader must know of the run behind a results file (its ``run_note``, written beside its ``commit`` by
    whoever ran it: e.g. that it shared the cores with another job, so its seconds are not comparable); ``of`` names
    the run when the sentence stands beside another run's ("Of the statistical run: it shared ...")."""
    note = report.get("run_note")
    if not note:
        return ""
    return f" Of {of}: {note[:1].lower()}{note[1:]}" if of else f" {note}"


def check_set_section(name: str, report: dict | None) -> list[str]:
    """The defaults on a set no tuning read: each graph method with its defaults and as its paper variant, against
    hybrid, recall@5."""
    if not report:
        return []
    title, corpus, not_blind = CHECK_SETS[name]
    m = report["methods"]
    hybrid = m["hybrid"]["recall@5"]
    run = f" at commit {report['commit']}" if report.get("commit") else ""
    rows = [f"## A set no tuning read: {title}", "",
            f"`{name}`: {report['passages']} passages of {corpus}, {report['questions']} questions "
            f"(benchmarks/datasets/{name}/README.md). The tuned defaults above were chosen without this set: "
            f"`domain_tuning.py` does not read it ({not_blind}: its README). recall@5 in %, "
            f"from `graphrag-suite bench` (run_all.sh){run}; "
            f"one question is {100 / max(1, report['questions']):.2g} points.", "",
            f"| method | defaults | − hybrid ({pct(hybrid)}) | paper variant | − hybrid |", "|---|---:|---:|---:|---:|"]
    for name in ("hipporag", "agrag", "pathrag", "archrag", "a2rag"):
        if name in m:
            paper = m.get(f"{name}:paper", {}).get("recall@5")
            rows.append(f"| {name} | {pct(m[name]['recall@5'])} | {100 * (m[name]['recall@5'] - hybrid):+.1f} | "
                        + ("| |" if paper is None else f"{pct(paper)} | {100 * (paper - hybrid):+.1f} |"))
    return rows + [""]


def _opt(x) -> str:
    return "" if x is None else f"{x:.1f}"


def _interval(pair) -> str:
    return "" if not pair else f"{pair[0]:+.1f} … {pair[1]:+.1f}"


def _demote_headings(markdown: str) -> str:
    """Two levels deeper for every heading outside code fences (a script's "# Title" sits under our "## ")."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        out.append("##" + line if line.startswith("#") and not fenced else line)
    return "\n".join(out)


if __name__ == "__main__":
    main()
