"""Queries on a large index with and without packed list rows, side by side in one process.

    python studies/perf/listed_search.py INDEX_DIR SYNTH_DIR [--methods dense,bm25,hybrid,hipporag]
                                         [--queries 100] [--tables entity_vectors] [--out MD]

A listed vector table (``index/vectors.py``) reads the rows of a query's nearest lists. Without packed rows
(``graph/vector_lists.py`` ``PackedRows``, saved by ``index/listed_io.py``) they are gathered one by one from the
table's memory-mapped segments, where a list's rows lie scattered; with them each list is one contiguous slice.
The index must have been saved by this code (the save writes the packed rows). Since a packed table stores its
rows only list by list (format 4, ``index/vector_io.py``), "table rows" gathers them one by one through the row
map from that same matrix, as a query on a table without packed rows would from its segments. For each question and method the
study runs the retrieval twice, once per way (which goes first alternates), and prints per way the p50/p95 wall
milliseconds (the query embedding excluded, as ``benchmarks/scale.py`` measures), CPU milliseconds per query,
recall@5, and how many of the five chunks the two ways agree on; then ``VectorTable.scores`` alone per table,
and the bytes the packed rows take on disk. ``--tables``: only these tables change way (the others read their
packed rows both ways), to see what packing one table is worth.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.eval.metrics import percentile, recall_at
from llama_index_graphrag_suite.graph.vector_lists import VectorLists
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever

from _report import print_and_write  # studies/perf/_report.py (this folder is on sys.path)

TABLES = ("chunk_vectors", "entity_vectors", "fact_vectors")
WAYS = ("table rows", "packed rows")
TOP_K = 5


def _ways(index, tables: tuple[str, ...] = TABLES) -> dict[str, dict[str, VectorLists]]:
    """Per way, the lists each listed table of ``tables`` answers through: without packed rows, or as loaded."""
    out = {way: {} for way in WAYS}
    for name in tables:
        table = getattr(index, name)
        if table.listed:
            out["packed rows"][name] = table.lists
            out["table rows"][name] = VectorLists(table.lists.centroids, table.lists.lists, table.lists.moves)
    return out


def _use(index, lists: dict[str, VectorLists]) -> None:
    for name, value in lists.items():
        getattr(index, name).lists = value


def _doc_ids(nodes) -> list[str]:
    return [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("synth")
    ap.add_argument("--methods", default="dense,bm25,hybrid,hipporag")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--tables", default=",".join(TABLES), help=f"the tables that change way (of {', '.join(TABLES)})")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    loaded = time.perf_counter() - start
    questions = load_dataset(args.synth).questions[:args.queries]
    ways = _ways(index, tuple(args.tables.split(",")))
    packed = {n: ways["packed rows"][n].packed for n in ways["packed rows"]}
    if not any(p is not None for p in packed.values()):
        raise SystemExit(f"{args.index}: no table has packed rows (save it with this code first)")
    for q in questions:
        index.embed_query(q.question)  # cached: the timed calls do not embed
    lines = [f"Index `{args.index}` (loaded in {loaded:.1f} s), {len(questions)} questions, each method run both ways "
             "per question (alternating which goes first). Wall ms exclude the query embedding. Tables that change "
             f"way: {', '.join(ways['packed rows'])}.", "",
             "| method | way | p50 ms | p95 ms | CPU ms/query | recall@5 | top-5 same as table rows |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for method in args.methods.split(","):
        retriever = get_retriever(index, method, top_k=TOP_K)
        for way in WAYS:  # lazy per-index set-up paid here, untimed
            _use(index, ways[way])
            retriever.retrieve(questions[0].question)
        wall = {w: [] for w in WAYS}
        cpu = {w: [] for w in WAYS}
        recall = {w: [] for w in WAYS}
        same = []
        for i, q in enumerate(questions):
            found = {}
            for way in (WAYS if i % 2 == 0 else WAYS[::-1]):
                _use(index, ways[way])
                c, w = time.process_time(), time.perf_counter()
                nodes = retriever.retrieve(q.question)
                wall[way].append(1000 * (time.perf_counter() - w))
                cpu[way].append(1000 * (time.process_time() - c))
                found[way] = [n.node.node_id for n in nodes]
                recall[way].append(recall_at(_doc_ids(nodes), q.supporting_ids, TOP_K))
            same.append(len(set(found[WAYS[0]]) & set(found[WAYS[1]])) / max(1, len(found[WAYS[0]])))
        for way in WAYS:
            lines.append(f"| {method} | {way} | {percentile(wall[way], 50):.1f} | {percentile(wall[way], 95):.1f} | "
                         f"{statistics.mean(cpu[way]):.1f} | {statistics.mean(recall[way]):.3f} | "
                         f"{'' if way == WAYS[0] else f'{statistics.mean(same):.3f}'} |")
    lines += ["", "`VectorTable.scores` alone (median ms over the questions, each way per question):", "",
              "| table | rows | lists | packed rows | table rows ms | packed rows ms | max |cos diff| |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for name in ways["packed rows"]:
        table = getattr(index, name)
        ms = {w: [] for w in WAYS}
        diff = 0.0
        for q in questions:
            vec = index.embed_query(q.question)
            got = {}
            for way in WAYS:
                table.lists = ways[way][name]
                start = time.perf_counter()
                got[way] = table.scores(vec)
                ms[way].append(1000 * (time.perf_counter() - start))
            diff = max(diff, float(np.abs(got[WAYS[0]] - got[WAYS[1]]).max()))
        p = packed[name]
        lines.append(f"| {name} | {len(table):,} | {len(table.lists.centroids):,} | "
                     f"{'-' if p is None else f'{len(p):,}'} | {statistics.median(ms[WAYS[0]]):.1f} | "
                     f"{statistics.median(ms[WAYS[1]]):.1f} | {diff:.1e} |")
    disk = sum(p.matrix.nbytes for p in packed.values() if p is not None)
    lines += ["", f"Packed rows on disk: {disk:,} bytes ({', '.join(f'{n} {p.matrix.nbytes:,}' for n, p in packed.items() if p is not None)})."]
    _use(index, ways["packed rows"])
    print_and_write(lines, args.out, "Listed search: packed list rows against the table's rows")


if __name__ == "__main__":
    main()
