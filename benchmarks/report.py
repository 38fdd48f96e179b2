"""Write BENCHMARKS.md and its plots from the bench JSON reports (numbers are never typed by hand).

    python benchmarks/report.py --results benchmarks/results --out BENCHMARKS.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS  # noqa: E402 (the folder on the path first)

DATASETS = (*SHARED_SETS, "sherlock_holmes_check", "four_books_check")
CHECK_SET = "sherlock_holmes_check"  # never used for tuning: benchmarks/datasets/sherlock_holmes_check/README.md
# what a reader must know of a set's gold before reading its recall (from the dataset's README)
GOLD_NOTES = {
    "graphrag_bench_medical": "Gold passages are heuristic (the dataset's README): the chunk that best covers the "
    "question's evidence facts by IDF-weighted word overlap, kept at coverage >= 0.75. That is a lexical match by "
    "construction, so BM25 and hybrid are favoured; treat recall here as approximate.",
    "covidqa_dev": "Gold passages are exact (the passage holding the answer span, see the dataset's README).",
    CHECK_SET: "A novel (The Adventures of Sherlock Holmes) with 60 questions written for this project, never used "
    "for tuning (benchmarks/datasets/sherlock_holmes_check/README.md; not blind either: two junk rules for dialogue "
    "were written after looking at the book's graph, and the coverage re-ranking's entity weighting after measuring "
    "its questions). Gold passages are those holding each "
    "question's evidence word for word; one question is 1.7 points of recall@5.",
    "four_books_check": "Four books (the novel above, Pride and Prejudice, Frankenstein, Poirot Investigates) in one "
    "corpus, 180 questions written for this project, never used for tuning "
    "(benchmarks/datasets/four_books_check/README.md; the coverage re-ranking's entity weighting was written after "
    "measuring the novel's questions on this corpus). Gold passages are those holding each question's evidence word "
    "for word; one question is 0.56 points of recall@5.",
}


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


# the rows of each set's table: the defaults, then the papers' own rankings; the ablations go in one table of their own
DEFAULTS = ("dense", "bm25", "hybrid", "llamaindex_hybrid", "hipporag", "agrag", "pathrag", "archrag", "a2rag")
SHORT = {"2wiki_retrieval101": "2wiki", "hotpotqa_train100": "HotpotQA", "musique_train100": "MuSiQue",
         "graphrag_bench_medical": "clinical", "covidqa_dev": "COVID", "sherlock_holmes_check": "novel",
         "four_books_check": "four books"}
# the tuning tables the methods' scripts write beside the bench reports (linked, not copied: they are long)
TUNING_RESULTS = (("domain_tuning.md", "the hybrid guard's settings by leave-one-dataset-out, in full"),
                  ("tuning.txt", "each method's own parameter sweeps (`benchmarks/tuning.py`)"),
                  ("pathrag_lodo.md", "PathRAG's two weights by leave-one-dataset-out (`benchmarks/sweep_lodo.py`)"),
                  ("archrag_lodo.md", "ArchRAG's two weights by leave-one-dataset-out (`benchmarks/sweep_lodo.py`)"),
                  ("archrag_signal.txt", "what ArchRAG's items reach per layer (`benchmarks/archrag_signal.py`)"),
                  ("guard_top_k.md", "the guard at top_k 2, 3, 10 (`benchmarks/guard_top_k.py`)"),
                  ("top_k_books.md", "the guard at small top_k on the books (`benchmarks/top_k_check.py`)"),
                  ("guard_order.md", "the order of the guard's top 5 (`benchmarks/guard_order.py`)"),
                  ("graph_headroom.md", "room for a graph method above hybrid (`benchmarks/graph_headroom.py`)"),
                  ("rerank_probes.md", "other graph signals re-ranking hybrid (`benchmarks/rerank_probes.py`)"),
                  ("sentence_probe.md", "a chunk's best sentence as a signal (`benchmarks/sentence_probe.py`)"),
                  ("guard_latency.md", "the guard's cost per query (`benchmarks/guard_latency.py`)"),
                  ("name_density_sample.md", "how many words decide `terms=\"auto\"` "
                   "(`benchmarks/name_density_sample.py`)"))


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
    statistical = {d: load(results / f"{d}-statistical.json") for d in reports
                   if (results / f"{d}-statistical.json").exists()}
    first = next(iter(reports.values()))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Benchmarks",
        "",
        "Generated by `benchmarks/report.py` from the JSON reports in `benchmarks/results/`; do not edit by hand.",
        f"Machine: {first['machine']}. Embedder: {first['embed_model']}. LLM: none (every method LLM-free).",
        f"Report written at commit {commit or '?'} ({time.strftime('%Y-%m-%d')}); each section's numbers come from "
        "the run that wrote its results file (each section says which).",
        "",
        "Recall values are percentages over each method's chunk nodes in rank order (recall@k = |gold ∩ top-k| / |gold|,",
        "averaged over questions; all-gold@5 = share of questions with every gold passage in the top 5). Latency is the wall",
        "time of one `retrieve()` call including the query embedding, after one untimed warm-up query. Context tokens count",
        "the text a method hands the LLM (chunks plus its evidence node). A set of 100 questions moves 0.5-1 point per",
        "question: a difference of less than one question is noise.",
        "",
        "`make bench` runs everything below (`benchmarks/run_all.sh`, several hours on 2 cores; the datasets in",
        "`../shared/datasets` or `DATASETS=path`), `make bench-scale` the scale curve; one set by hand and the dataset",
        "format: [docs/benchmarks.md](docs/benchmarks.md). Finished studies (speed of each algorithm, stores, Ray, large",
        "documents, inserts, start-up) are frozen with their results in [studies/](studies/README.md).",
        "",
        "```bash",
        "make bench          # every section below (benchmarks/run_all.sh), then this file (benchmarks/report.py)",
        "make bench-scale    # the Scale section alone",
        "# one set, as run_all.sh runs it (the defaults, the papers' rankings, the ablations; --index-dir keeps the index)",
        "graphrag-suite bench --dataset ../shared/datasets/hotpotqa_train100 --methods all,agrag:paper,a2rag:paper \\",
        "  --out hotpotqa_train100.json",
        "graphrag-suite bench --dataset ../shared/datasets/hotpotqa_train100 --methods all --entities statistical \\",
        "  --out hotpotqa_train100-statistical.json        # the same on AGRAG's statistical graph",
        "python benchmarks/latency.py --index-dir IDX --questions ../shared/datasets/2wiki_retrieval101/questions.jsonl",
        "```",
        "",
    ]
    lines += summary_table(reports)
    lines += domain_tuning_section(results / "domain_tuning.json", results / "domain_tuning.md")
    for name, report in reports.items():
        plot(report, plots / f"{name}.png")
        lines += set_section(name, report, statistical.get(name))
    lines += ablation_table(reports)
    lines += indexing_table(reports, statistical)
    lines += scale_section(results / "scale.md")
    lines += latency_section(results / "latency_2wiki.txt", results / "serve_memory.md")
    lines += ["## More tables", "", "Written by the methods' tuning scripts (`make bench` runs them; "
              "[docs/benchmarks.md](docs/benchmarks.md)):", ""]
    lines += [f"- [{name}](benchmarks/results/{name}): {what}" for name, what in TUNING_RESULTS
              if (results / name).exists()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out} and {len(reports)} plot(s) in {plots}")


def summary_table(reports: dict) -> list[str]:
    """recall@5 of every method with its defaults on every set, one row per method."""
    sets = list(reports)
    rows = ["## recall@5 on every set", "",
            "Each method with its defaults (`graphrag-suite bench --methods all`); each set's own section has recall@2, "
            "all-gold@5, latency and the papers' own rankings. The guard's defaults were chosen on the first five sets "
            "(in-sample; the next section has the left-out figures); the two book sets were read by no tuning.", "",
            "| method | " + " | ".join(SHORT.get(s, s) for s in sets) + " |", "|---|" + "---:|" * len(sets)]
    for m in DEFAULTS:
        cells = [pct(reports[s]["methods"][m]["recall@5"]) if m in reports[s]["methods"] else "–" for s in sets]
        rows.append(f"| `{m}` | " + " | ".join(cells) + " |")
    return rows + [""]


def set_section(name: str, report: dict, statistical: dict | None) -> list[str]:
    """One set: its size and run, what to know of its gold, and the defaults and paper variants."""
    skipped = f", {report['questions_without_gold']} without gold skipped" if report.get("questions_without_gold") else ""
    run = f" Run at commit {report['commit']}." if report.get("commit") else ""
    lines = [f"## {name}", "", f"{report['passages']} passages, {report['questions']} questions{skipped}.{run}"
             + run_note(report), ""]
    if name in GOLD_NOTES:
        lines += [GOLD_NOTES[name], ""]
    methods = report["methods"]
    main_rows = {k: methods[k] for k in [*DEFAULTS, *(f"{m}:paper" for m in DEFAULTS)] if k in methods}
    lines += method_table({"methods": main_rows})
    lines += ["", f"![{name}](benchmarks/plots/{name}.png)", ""]
    if statistical:
        mixed = "" if statistical.get("commit") == report.get("commit") else (
            f" The two runs are of different commits ({report.get('commit', '?')} above, "
            f"{statistical.get('commit', '?')} for the statistical graph): a row's change between them is not the "
            "extractor's alone.")
        recall = ", ".join(f"{m} {pct(v['recall@5'])}" for m, v in statistical["methods"].items() if m in DEFAULTS)
        lines += [f"On AGRAG's statistical graph (`--entities statistical`: TF-IDF n-grams and co-occurrence "
                  f"relations) instead of named entities, recall@5: {recall}.{mixed}"
                  f"{run_note(statistical, of='the statistical run')}", ""]
    return lines


def ablation_table(reports: dict) -> list[str]:
    """The papers' ablations (variants other than :paper), recall@5 per set, one row per variant."""
    variants = [v for v in dict.fromkeys(k for r in reports.values() for k in r["methods"])
                if ":" in v and not v.endswith(":paper")]
    if not variants:
        return []
    sets = [s for s in reports if any(v in reports[s]["methods"] for v in variants)]
    rows = ["## Ablations", "", "The papers' ablations as variants (`method:variant`), recall@5 (the bench runs of the "
            "sections above; `a2rag:unguarded` is our A2RAG ranking with only the hybrid guard off):", "", "| variant | " + " | ".join(SHORT.get(s, s) for s in sets) + " |",
            "|---|" + "---:|" * len(sets)]
    for v in variants:
        cells = [pct(reports[s]["methods"][v]["recall@5"]) if v in reports[s]["methods"] else "–" for s in sets]
        rows.append(f"| `{v}` | " + " | ".join(cells) + " |")
    return rows + [""]


def indexing_table(reports: dict, statistical: dict) -> list[str]:
    lines = ["## Indexing cost", "",
             "Stages: extract (entities and relations), embed (chunks, entity names, fact texts), synonyms (faiss kNN "
             "over names), graph (snapshot, BM25). Rows run at different commits come from different runs, and the "
             "machine's speed varies between runs: compare seconds within one run only.", "",
             "| dataset | extractor | run at | passages | chunks | entities | relations | seconds | extract / embed / "
             "synonyms / graph s | peak RSS MB |",
             "|---|---|---|---:|---:|---:|---:|---:|---|---:|"]
    for name, report in reports.items():
        for r in [report] + ([statistical[name]] if name in statistical else []):
            i = r["index"]
            st = i.get("stage_seconds") or {}
            stages = " / ".join(f"{st.get(k, 0):.0f}" for k in ("extract", "embed", "synonyms", "graph")) if st else "–"
            lines.append(f"| {name} | {i.get('extractor', 'statistical')} | {r.get('commit', '?')} | {r['passages']} | "
                         f"{i.get('chunks', '')} | {i['entities']} | {i['relations']} | {i['seconds']:.1f} | {stages} | "
                         f"{i['peak_rss_mb']:.0f} |")
    return lines + [""]


def scale_section(path: Path) -> list[str]:
    """From ``make bench-scale``'s report: per setting, its build table and its retrieval table (the rest, targets
    and notes, stays in the file)."""
    if not path.exists():
        return []
    lines = ["## Scale", "", "`make bench-scale` (`benchmarks/scale.py` on `benchmarks/synth.py`'s synthetic "
             "encyclopedia: 2- and 3-hop questions with known gold; the hop a question names is found by every "
             "method, so 43.3 is the first hop alone). The build and the retrieval of each setting; the insert, the "
             f"save, the targets at a million passages and the notes: [scale.md](benchmarks/results/scale.md).", ""]
    for heading, tables in _sections_with_tables(path.read_text(encoding="utf-8")):
        keep = [t for t in tables if t[0].startswith("| passages | chunks") or "p50 / p95" in t[0]]
        if keep:
            lines += [f"### {heading}", ""]
            for t in keep:
                lines += t + [""]
    return lines


def latency_section(latency: Path, serve: Path) -> list[str]:
    lines = []
    if latency.exists():
        lines += ["## Latency", "", "`benchmarks/latency.py` on the 2wiki_retrieval101 index of the bench (retrieval "
                  "without the query embedding):", "", "```", latency.read_text(encoding="utf-8").strip(), "```", ""]
    if serve.exists():
        sections = _sections_with_tables(serve.read_text(encoding="utf-8"))
        tables = [t for _, ts in sections for t in ts]
        if tables:
            lines += ["A served index (`benchmarks/serve_memory.py`: `graphrag-suite serve` on the 100,000-passage "
                      "synthetic index, whole HTTP round trips; memory and the runs: "
                      "[serve_memory.md](benchmarks/results/serve_memory.md)):", ""] + tables[-1] + [""]
    return lines


def _sections_with_tables(markdown: str) -> list[tuple[str, list[list[str]]]]:
    """The markdown tables of a text under each ``## `` heading (the text before the first heading under "")."""
    sections: list[tuple[str, list[list[str]]]] = [("", [])]
    current: list[str] | None = None
    for line in markdown.splitlines():
        if line.startswith("## "):
            sections.append((line[3:].strip(), []))
        if line.startswith("|"):
            if current is None:
                current = []
                sections[-1][1].append(current)
            current.append(line)
        else:
            current = None
    return [s for s in sections if s[1]]


def domain_tuning_section(path: Path, full: Path) -> list[str]:
    """Five sets, each graph method as its paper ranking and with the hybrid guard, the guard's settings chosen on all
    five sets (in-sample) and on the other four (left-out); entity counts and top entities. The whole section goes to
    ``full``; BENCHMARKS.md gets its table and a link."""
    if not path.exists():
        return []
    r = load(path)
    first = next(iter(r["table"].values()))
    methods = [m for m, v in first.items() if isinstance(v, dict) and "paper" in v]
    lines = ["## Any corpus: five sets, in-sample and left-out", "",
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
             "the guard's `protective_weight` of the fusion's k0 and the top 5 (0.7 at k0 2), where hybrid's first "
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
    table_end = len(lines)
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
    full.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lines[:table_end] + ["", f"The settings chosen with each set left out, the rules for picking one, where the "
                                f"guard helps and hurts, and the graph of each set: [{full.name}]"
                                f"(benchmarks/results/{full.name}).", ""]


def run_note(report: dict, of: str = "") -> str:
    """What a reader must know of the run behind a results file (its ``run_note``, written beside its ``commit`` by
    whoever ran it: e.g. that it shared the cores with another job, so its seconds are not comparable); ``of`` names
    the run when the sentence stands beside another run's ("Of the statistical run: it shared ...")."""
    note = report.get("run_note")
    if not note:
        return ""
    return f" Of {of}: {note[:1].lower()}{note[1:]}" if of else f" {note}"


def _opt(x) -> str:
    return "" if x is None else f"{x:.1f}"


def _interval(pair) -> str:
    return "" if not pair else f"{pair[0]:+.1f} … {pair[1]:+.1f}"


if __name__ == "__main__":
    main()
