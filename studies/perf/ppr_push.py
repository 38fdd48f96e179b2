"""The local PageRank push against the global solver on a saved index's graph: time and agreement.

    python studies/perf/ppr_push.py INDEX_DIR [--resets 10] [--seeds 6] [--out MD]

Loads a saved index (hash embedding), takes its snapshot's weighted adjacency (AGRAG's and HippoRAG's walk graph),
and for ``--resets`` random resets on ``--seeds`` entity nodes each solves personalised PageRank (damping 0.5)
twice: globally (``ppr_fast.solve``, Chebyshev to the usual 1e-7 bound) and by the local push
(``ppr_push.forward_push``) at three residual bounds. Prints the median milliseconds of each, the stored entries the
push read, and how many of the global top 5 and top 20 chunks the push ranks in its own.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.graph import ppr
from llama_index_graphrag_suite.graph.ppr import personalized_pagerank, transition_matrix
from llama_index_graphrag_suite.graph.ppr_push import forward_push
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

from _report import kept_share, print_and_write  # studies/perf/_report.py (this folder is on sys.path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("--resets", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    snap = index.snapshot
    transition = transition_matrix(snap.adjacency("weight"))
    form = transition.fast
    chunk_rows = snap.rows(index.chunk_order)
    entities = np.setdiff1d(np.arange(transition.num_nodes), chunk_rows)
    rng = np.random.default_rng(0)
    resets = []
    for _ in range(args.resets):
        reset = np.zeros(transition.num_nodes)
        reset[rng.choice(entities, args.seeds, replace=False)] = 1.0
        resets.append(reset)
    lines = [f"Index `{args.index}`: {transition.num_nodes:,} nodes, {form.indices.size:,} stored entries; "
             f"{args.resets} resets on {args.seeds} random entities, damping 0.5.", "",
             "| solver | ms (median) | entries read (median) | top-5 kept | top-20 kept |", "|---|---:|---:|---:|---:|"]
    exact, times = [], []
    ppr.PUSH_MIN_NNZ = 10**15  # the global solver for every graph here
    for reset in resets:
        start = time.perf_counter()
        exact.append(personalized_pagerank(transition, reset, 0.5)[chunk_rows])
        times.append(1000 * (time.perf_counter() - start))
    lines.append(f"| global (Chebyshev, 1e-7) | {statistics.median(times):.1f} | {form.indices.size:,} x steps | 1 | 1 |")
    for eps in (1e-6, 1e-7, 1e-8):
        times, reads, kept5, kept20 = [], [], [], []
        for reset, truth in zip(resets, exact):
            seeds = np.flatnonzero(reset)
            start = time.perf_counter()
            y, entries = forward_push(form.indptr, form.indices, form.data, form.degree, form.position[seeds],
                                      reset[seeds] / reset.sum(), 0.5, eps)
            scores = y[form.position][chunk_rows]
            times.append(1000 * (time.perf_counter() - start))
            reads.append(entries)
            for k, kept in ((5, kept5), (20, kept20)):
                kept.append(kept_share(truth, scores, k))
        lines.append(f"| push, eps {eps:g} | {statistics.median(times):.1f} | {statistics.median(reads):,.0f} | "
                     f"{np.mean(kept5):.3f} | {np.mean(kept20):.3f} |")
    print_and_write(lines, args.out, "Local PageRank push against the global solver")


if __name__ == "__main__":
    main()
