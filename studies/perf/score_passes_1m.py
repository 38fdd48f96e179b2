"""The per-query passes over every chunk at a million chunks, before and after, side by side in one process.

    python studies/perf/score_passes_1m.py INDEX_DIR SYNTH_DIR [--queries 100] [--out MD]

Three passes each method pays per question on a large index, timed per question both ways in turns (which goes
first alternates), with the outputs compared bit for bit:

- BM25 (``index/bm25.py``): before, every ``scores`` call made each row's length term again (four passes over the
  rows); now the table makes it once. "Before" clears that cache before each call.
- PathRAG's and ArchRAG's base (``scoring.blended``, numpy: a float64 array per operation) against the compiled
  pass (``query_kernels.blended``).
- Their top-k of the dense scores (``scoring.top_k``: negate, partition, scan twice) against ``query_kernels.top_k``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.methods import query_kernels, scoring
from llama_index_graphrag_suite.methods.query_scores import dense_scores

from _report import print_and_write  # studies/perf/_report.py (this folder is on sys.path)


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return 1000 * (time.perf_counter() - start), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("synth")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    questions = [q.question for q in load_dataset(args.synth).questions[:args.queries]]
    bm25 = index.bm25

    def bm25_before(q):
        bm25._norm = None
        return bm25.scores(q)

    for q in questions:  # the inputs once (dense scores are not memoised outside a retrieval), so only the pass is timed
        index.embed_query(q)
    dense = {q: dense_scores(index, q) for q in questions}
    sparse = {q: bm25.scores(q) for q in questions}
    passes = {
        "BM25 scores": (bm25_before, bm25.scores),
        "blended base (w 0.25)": (lambda q: scoring.blended(dense[q], lambda: sparse[q], 0.25),
                                  lambda q: query_kernels.blended(dense[q], lambda: sparse[q], 0.25)),
        "top 25 of dense": (lambda q: scoring.top_k(dense[q], 25), lambda q: query_kernels.top_k(dense[q], 25)),
    }
    for before, after in passes.values():  # compile and warm both ways
        before(questions[0]), after(questions[0])
    lines = [f"Index `{args.index}`: {bm25.size:,} chunks, {len(questions)} questions, both ways per question in "
             "turns. Milliseconds per question.", "",
             "| pass | before p50 | after p50 | before mean | after mean | after / before (p50) | same output |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for name, (before, after) in passes.items():
        ms = {"before": [], "after": []}
        same = True
        for i, q in enumerate(questions):
            got = {}
            for way, fn in ((("before", before), ("after", after)) if i % 2 == 0 else (("after", after), ("before", before))):
                t, got[way] = _timed(lambda: fn(q))
                ms[way].append(t)
            same &= np.array_equal(got["before"], got["after"])
        b, a = statistics.median(ms["before"]), statistics.median(ms["after"])
        lines.append(f"| {name} | {b:.2f} | {a:.2f} | {statistics.mean(ms['before']):.2f} | "
                     f"{statistics.mean(ms['after']):.2f} | {a / b:.2f} | {'yes' if same else 'NO'} |")
    print_and_write(lines, args.out, "Per-query passes over every chunk at 1M: before and after")


if __name__ == "__main__":
    main()
