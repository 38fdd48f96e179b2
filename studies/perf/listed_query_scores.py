"""What a query's scores over a large vector table cost and miss when read through the table's lists.

    python studies/perf/listed_query_scores.py INDEX_DIR QUESTIONS_JSONL [--queries 50] [--runs 3] [--out MD]

Loads a saved index (hash embedding), makes the lists of every table of ``index.vectors.LISTED_MIN_ROWS`` rows or
more that has none (timed: an index built with this code pays it at build time and saves them), and for each
question's vector times ``VectorTable.scores`` twice per table: the exact product with every row, and through the
lists (exact on the rows of the query's ``QUERY_NPROBE`` nearest lists, a capped estimate elsewhere). Prints the
median milliseconds of each (runs interleaved) and how many of the exact top 10 rows the listed scores rank in
their own top 10.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.graph.vector_lists import QUERY_NPROBE
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

from _report import kept_share, print_and_write  # studies/perf/_report.py (this folder is on sys.path)

TABLES = ("chunk_vectors", "entity_vectors", "fact_vectors")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("questions")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    questions = [json.loads(line)["question"] for line in open(args.questions)][:args.queries]
    queries = [np.asarray(index.embed_model.get_query_embedding(q), np.float32) for q in questions]
    lines = [f"Index `{args.index}`, {len(queries)} questions, {args.runs} runs, QUERY_NPROBE {QUERY_NPROBE}.", "",
             "| table | rows | lists | lists made s | exact ms | listed ms | top-10 kept |", "|---|---:|---:|---:|---:|---:|---:|"]
    for name in TABLES:
        table = getattr(index, name)
        start = time.perf_counter()
        lists = table.ensure_lists()
        made = time.perf_counter() - start
        if lists is None:
            continue
        exact_ms, listed_ms, kept = [], [], []
        for _ in range(args.runs):
            for q in queries:
                table.lists, saved = None, table.lists
                start = time.perf_counter()
                exact = table.scores(q)
                exact_ms.append(1000 * (time.perf_counter() - start))
                table.lists = saved
                start = time.perf_counter()
                listed = table.scores(q)
                listed_ms.append(1000 * (time.perf_counter() - start))
                kept.append(kept_share(exact, listed, 10))
        lines.append(f"| {name} | {len(table):,} | {len(lists.centroids):,} | {made:.1f} | "
                     f"{statistics.median(exact_ms):.1f} | {statistics.median(listed_ms):.1f} | {np.mean(kept):.3f} |")
    print_and_write(lines, args.out, "Query scores through vector lists")


if __name__ == "__main__":
    main()
