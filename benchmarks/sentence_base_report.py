"""The tables of ``sentence_base.py``'s JSON: recall@5 of each base and of every guarded method on it, the
questions each base wins and loses against hybrid, the first-choice method's margins against item 4's targets,
and which base leave-one-set-out would choose.

    python benchmarks/sentence_base_report.py sb.json > benchmarks/results/sentence_base.md
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS  # noqa: E402 (the folder on the path first)

# LlamaIndex's own hybrid (QueryFusionRetriever over BM25Retriever and the vector retriever), recall@5 on the same
# indexes, from the README's "Which method" table (it does not read the base, so no base changes it)
LLAMAINDEX_HYBRID = {"2wiki_retrieval101": 65.1, "hotpotqa_train100": 80.0, "musique_train100": 59.9,
                     "graphrag_bench_medical": 61.4, "covidqa_dev": 73.7}
TARGET = {"2wiki_retrieval101": 15, "hotpotqa_train100": 15, "musique_train100": 15, "graphrag_bench_medical": 1,
          "covidqa_dev": 3}  # the first choice's margin over max(hybrid, llamaindex_hybrid)
SHORT = {"2wiki_retrieval101": "2wiki", "hotpotqa_train100": "HotpotQA", "musique_train100": "MuSiQue",
         "graphrag_bench_medical": "clinical", "covidqa_dev": "COVID"}
FIRST_CHOICE = "a2rag"


def pct(values) -> float:
    return 100 * float(np.mean(values))


def rows_of(data: dict, name: str) -> dict[str, list[float]]:
    """``{"base/<base>": per-question recall, "<method>/<base>": ...}`` of one set."""
    out = {f"base/{b}": v for b, v in data[name]["base"].items()}
    out.update(data[name]["methods"])
    return out


def choose(data: dict, sets: list[str], candidates: list[str], rankings: list[str]) -> str:
    """The base whose mean recall@5 over ``rankings`` ("base": the base alone; a method: that method on it), each
    set weighed equally, is highest over ``sets``; hybrid wins ties (no change without a gain)."""
    def score(b: str) -> float:
        return float(np.mean([np.mean([pct(rows_of(data, s)[f"{m}/{b}"]) for m in rankings]) for s in sets]))
    return max(candidates, key=lambda b: (round(score(b), 6), b == "hybrid"))


def cell(values) -> str:
    return "–" if values is None else f"{pct(values):.1f}"


def main() -> None:
    data: dict = {}
    for path in sys.argv[1:]:  # one JSON per run; runs of a set over the same questions are merged
        for name, run in json.loads(Path(path).read_text()).items():
            kept = data.get(name)
            if kept is not None and kept["questions"] == run["questions"]:
                kept["methods"].update(run["methods"])
                for key in ("base", "base_ms"):
                    kept[key] = {**run[key], **kept[key]}
            elif kept is None or run["methods"] or not kept["methods"]:  # else: the run with methods stands
                data[name] = run
    sets = [s for s in SHARED_SETS if s in data]
    methods = sorted({k.split("/")[0] for s in sets for k in data[s]["methods"]})
    method_bases = sorted({k.split("/")[1] for s in sets for k in data[s]["methods"]}, key=["hybrid", "fact", "all"].index)
    bases = [b for b in ("hybrid", "fact", "fact|chunk", "all") if any(b in data[s]["base"] for s in sets)]
    head = "| ranking | " + " | ".join(SHORT[s] for s in sets) + " |"
    rule = "|---|" + "---:|" * len(sets)
    lines = ["# The best sentence as a third score of the hybrid base (`benchmarks/sentence_base.py`)", "",
             "recall@5 in %, all-MiniLM-L6-v2, LLM-free, top 5, every question with gold; the bases and the command "
             "are in the script's docstring. `llamaindex_hybrid` is the README's figure (the base does not enter "
             "it). Questions: " + ", ".join(f"{SHORT[s]} {data[s]['questions']}" for s in sets) + ".", "",
             "## Recall@5", "", head, rule,
             "| llamaindex_hybrid | " + " | ".join(f"{LLAMAINDEX_HYBRID[s]:.1f}" for s in sets) + " |"]
    for b in bases:
        lines.append(f"| base: {b} | " + " | ".join(cell(data[s]["base"].get(b)) for s in sets) + " |")
    for m in methods:
        for b in method_bases:
            lines.append(f"| {m} on {b} | " + " | ".join(cell(data[s]["methods"].get(f"{m}/{b}")) for s in sets)
                         + " |")
    lines += ["", "## Questions won / lost against today's base (recall@5 up / down), per ranking", "", head, rule]
    for key in [f"base/{b}" for b in bases[1:]] + [f"{m}/{b}" for m in methods for b in method_bases[1:]]:
        cells = []
        for s in sets:
            rows = rows_of(data, s)
            if key not in rows:
                cells.append("–")
                continue
            new, old = np.asarray(rows[key]), np.asarray(rows[key.split("/")[0] + "/hybrid"])
            cells.append(f"+{int((new > old).sum())} −{int((new < old).sum())} ({pct(new) - pct(old):+.1f})")
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines += ["", f"## {FIRST_CHOICE}'s margin over max(hybrid, llamaindex_hybrid), against item 4's targets", "",
              head, rule]
    for b in method_bases:
        cells = []
        for s in sets:
            if f"{FIRST_CHOICE}/{b}" not in data[s]["methods"]:
                cells.append("–")
                continue
            margin = pct(data[s]["methods"][f"{FIRST_CHOICE}/{b}"]) - max(pct(data[s]["base"]["hybrid"]),
                                                                          LLAMAINDEX_HYBRID[s])
            cells.append(f"{margin:+.1f} ({'meets' if margin >= TARGET[s] else 'misses'} +{TARGET[s]})")
        lines.append(f"| {FIRST_CHOICE} on {b} | " + " | ".join(cells) + " |")
    below = [f"{m} on {b} ({SHORT[s]})" for s in sets for m in methods for b in method_bases
             if f"{m}/{b}" in data[s]["methods"] and pct(data[s]["methods"][f"{m}/{b}"]) < pct(data[s]["base"]["hybrid"]) - 1e-9]
    lines += ["", "Graph methods below hybrid (the plain base): " + (", ".join(below) or "none") + "."]
    lines += ["", "## Which base: chosen on all sets (in-sample) and leaving each set out", "",
              "Criterion: mean recall@5 over the sets (weighed equally) of the base alone, or of the base alone and "
              "every guarded method on it (only the sets where every method ran on every candidate base); hybrid "
              "wins a tie.", "",
              "| left out | chosen on the others | held-out gain of the base | held-out gain, mean of the methods |",
              "|---|---|---:|---:|"]
    with_methods = [s for s in sets if all(f"{m}/{b}" in data[s]["methods"] for m in methods for b in method_bases)]
    for label, pool, candidates, rankings in (
            ("base alone", sets, [b for b in bases if all(b in data[s]["base"] for s in sets)], ["base"]),
            ("base and methods", with_methods, method_bases, ["base"] + methods)):
        if len(pool) < 2 or not candidates:
            continue
        for s in pool:
            b = choose(data, [o for o in pool if o != s], candidates, rankings)
            rows = rows_of(data, s)
            gain = pct(rows[f"base/{b}"]) - pct(rows["base/hybrid"])
            measured = [m for m in methods if f"{m}/{b}" in rows]
            mgain = np.mean([pct(rows[f"{m}/{b}"]) - pct(rows[f"{m}/hybrid"]) for m in measured]) if measured else None
            lines.append(f"| {SHORT[s]} ({label}) | {b} | {gain:+.1f} | "
                         + ("– |" if mgain is None else f"{mgain:+.1f} |"))
        lines.append(f"| all {len(pool)}, in-sample ({label}) | {choose(data, pool, candidates, rankings)} | | |")
    lines += ["", "## Index and query cost", "", "| set | chunks | fact sentences (in the index) | every sentence "
              "| embedding every sentence, s | fact pairs built, s | query ms (embedding excluded): hybrid / + fact / + all |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for s in sets:
        d = data[s]
        ms = {b: float(np.median(v)) for b, v in d["base_ms"].items()}
        every = "–" if "all" not in ms else f"+{ms['all']:.1f}"
        seconds = "–" if "all" not in ms else f"{d['embed_all_seconds']:.0f}"
        lines.append(f"| {SHORT[s]} | {d['chunks']} | {d['fact_sentences']} | {d['sentences'] or '–'} | {seconds} | "
                     f"{d['pairs_seconds']:.2f} | {ms['hybrid']:.1f} / +{ms['fact']:.1f} / {every} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
