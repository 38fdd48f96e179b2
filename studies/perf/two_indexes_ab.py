"""Two copies of one index loaded in one process, each question timed on both in turns (order alternating).

    python studies/perf/two_indexes_ab.py INDEX_A INDEX_B SYNTH_DIR [--methods pathrag,agrag] [--out MD]

For a storage change that leaves the rankings alone (say, a table stored in another layout): A and B hold the same
rows, so each method's top 5 must agree on every question. Per method: p50/p95 per side, the ratio of the medians
and the median of the per-question ratios. Both indexes stay loaded, so leave room for two in memory and page cache.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.eval.metrics import percentile
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever

from _report import print_and_write  # studies/perf/_report.py (this folder is on sys.path)

SIDES = ("A", "B")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index_a")
    ap.add_argument("index_b")
    ap.add_argument("synth")
    ap.add_argument("--methods", default="hybrid,hipporag,agrag,pathrag,a2rag")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    methods = args.methods.split(",")
    questions = [q.question for q in load_dataset(args.synth).questions]
    retrievers = {}
    for side, folder in zip(SIDES, (args.index_a, args.index_b)):
        index = GraphRAGIndex.load(folder, embed_model="hash")
        for q in questions:
            index.embed_query(q)  # cached: the timed calls do not embed
        retrievers[side] = {m: get_retriever(index, m, top_k=5) for m in methods}
    lines = [f"A `{args.index_a}`, B `{args.index_b}`, {len(questions)} questions, each timed on both sides in turns "
             "(alternating which goes first). Wall ms exclude the query embedding.", "",
             "| method | A p50 | A p95 | B p50 | B p95 | B/A (medians) | B/A (per question) | same top 5 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for m in methods:
        for side in SIDES:  # lazy per-index set-up paid here, untimed
            retrievers[side][m].retrieve(questions[0])
        ms = {side: [] for side in SIDES}
        same = 0
        for i, q in enumerate(questions):
            top = {}
            for side in (SIDES if i % 2 == 0 else SIDES[::-1]):
                start = time.perf_counter()
                nodes = retrievers[side][m].retrieve(q)
                ms[side].append(1000 * (time.perf_counter() - start))
                top[side] = [n.node.node_id for n in nodes]
            same += top["A"] == top["B"]
        a, b = percentile(ms["A"], 50), percentile(ms["B"], 50)
        per_question = statistics.median(y / x for x, y in zip(ms["A"], ms["B"]))
        lines.append(f"| {m} | {a:.1f} | {percentile(ms['A'], 95):.1f} | {b:.1f} | {percentile(ms['B'], 95):.1f} | "
                     f"{b / a:.3f} | {per_question:.3f} | {same}/{len(questions)} |")
    print_and_write(lines, args.out, "Two copies of one index, side by side in one process")


if __name__ == "__main__":
    main()
