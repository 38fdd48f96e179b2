"""A2RAG's first query (its per-snapshot structures are built then), its steady per-query cost, and the bytes held.

    python studies/perf/a2rag_first_query.py INDEX_DIR QUESTIONS_JSONL [--questions 40] [--embed hash]
        [--method a2rag] [--profile 0] [--first-profile 0]

Prints, for one loaded index: the CPU and wall seconds of building A2RAG's per-snapshot structures (``_graph()``,
timed on its own) and of the rest of the first query; the wall and CPU milliseconds of each further question
(p50/p95; query embeddings computed beforehand, so excluded); the bytes of every structure the first query added
to the index's memo (``index.cached``), A2RAG's graph field by field. A memory-mapped array counts 0 (its pages
are the file's), the snapshot the structures point into is not counted.

Before/after on the same machine: export the old code and run this same script against it, e.g.

    git archive <old-commit> llama_index_graphrag_suite | tar -x -C /tmp/old
    PYTHONPATH=/tmp/old python studies/perf/a2rag_first_query.py INDEX QUESTIONS
    PYTHONPATH=.        python studies/perf/a2rag_first_query.py INDEX QUESTIONS

(the script uses only the public API, so it runs on either). The machine is shared: compare CPU seconds and
medians, run the two side by side. An index of 1,000,000 passages needs several GB: run it under a lock
(``flock``) so only one such process runs at a time. Results: ``studies/perf/results/a2rag_first_query.md``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time

import numpy as np
import scipy.sparse as sp

from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever


def held_bytes(obj, seen: set[int]) -> int:
    """Bytes ``obj`` holds, every part walked (no sampling): arrays by their buffers (a memory map counts 0), a
    sparse matrix by its arrays, containers and objects by their parts; an object already in ``seen`` counts 0."""
    total, stack = 0, [obj]
    while stack:
        x = stack.pop()
        if id(x) in seen:
            continue
        seen.add(id(x))
        if isinstance(x, np.memmap):
            continue
        if isinstance(x, np.ndarray):
            if isinstance(x.base, np.ndarray):  # a view holds its base
                stack.append(x.base)
            elif type(x.base).__name__ == "mmap":  # a file's pages
                pass
            else:
                total += x.nbytes
            continue
        if sp.issparse(x):
            stack.extend(getattr(x, a) for a in ("data", "indices", "indptr") if hasattr(x, a))
            continue
        total += sys.getsizeof(x)
        if isinstance(x, (str, bytes, int, float, bool, type(None))):
            continue
        if isinstance(x, dict):
            stack.extend(x.keys())
            stack.extend(x.values())
        elif isinstance(x, (list, tuple, set, frozenset)):
            stack.extend(x)
        else:
            stack.extend(getattr(x, "__dict__", {}).values())
            stack.extend(getattr(x, s) for s in getattr(type(x), "__slots__", ()) if hasattr(x, s))
    return total


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("questions", help="a questions.jsonl file")
    ap.add_argument("--questions", dest="n", type=int, default=40, help="the first one builds, the others are timed")
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--method", default="a2rag")
    ap.add_argument("--first-profile", type=int, default=0, help="cProfile's N costliest functions of the first query")
    ap.add_argument("--profile", type=int, default=0, help="cProfile's N costliest functions of the steady queries")
    ap.add_argument("--sort", default="tottime", help="profile order: tottime (own time) or cumulative")
    args = ap.parse_args()

    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index, embed_model=args.embed)
    print(f"load {time.perf_counter() - start:.1f} s wall", flush=True)
    questions = [q.question for q in load_questions(args.questions)[0][: args.n]]
    for q in questions:
        index.embed_query(q)
    memo = index.state.artefacts
    before = set(memo._values)
    retriever = get_retriever(index, args.method, top_k=5)

    profile = cProfile.Profile(time.process_time)
    if args.first_profile:
        profile.enable()
    cpu, wall = time.process_time(), time.perf_counter()
    graph = getattr(retriever, "inner", retriever)._graph()  # the guard wraps the method
    build_cpu, build_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    retriever.retrieve(questions[0])
    rest_cpu, rest_wall = time.process_time() - cpu, time.perf_counter() - wall
    profile.disable()
    print(f"first query: {build_cpu + rest_cpu:.2f} CPU s, {build_wall + rest_wall:.2f} wall s "
          f"(graph build {build_cpu:.2f} CPU s / {build_wall:.2f} wall s; rest {rest_cpu:.2f} / {rest_wall:.2f})",
          flush=True)
    if args.first_profile:
        pstats.Stats(profile).sort_stats(args.sort).print_stats(args.first_profile)

    gc.collect()
    snap = index.snapshot
    counted = {id(snap), *(id(v) for v in vars(snap).values())}
    if np.shares_memory(graph.entity_matrix, index.entity_vectors.vectors()):  # the index's own table, not a copy
        counted.add(id(graph.entity_matrix))
    total = 0
    for name in memo._values:
        if name not in before and name != "__snapshot__":
            size = held_bytes(memo._values[name], counted)
            total += size
            print(f"held {name}: {size / 1e6:.1f} MB", flush=True)
    print(f"held in all: {total / 1e6:.1f} MB", flush=True)
    fields = {f"graph.{k}": v for k, v in vars(graph).items() if k != "seeds"}
    fields.update({f"seeds.{k}": v for k, v in vars(graph.seeds).items() if k != "snapshot"})
    seen = {id(snap), *(id(v) for v in vars(snap).values())}
    if id(graph.entity_matrix) in counted:
        seen.add(id(graph.entity_matrix))
    print("  " + ", ".join(f"{k} {held_bytes(v, seen) / 1e6:.1f}" for k, v in fields.items()) + " (MB)", flush=True)

    profile = cProfile.Profile(time.process_time)
    walls, cpus = [], []
    if args.profile:
        profile.enable()
    for q in questions[1:]:
        cpu, wall = time.process_time(), time.perf_counter()
        retriever.retrieve(q)
        walls.append((time.perf_counter() - wall) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    profile.disable()
    print(f"steady ({len(walls)} questions): wall ms p50 {percentile(walls, 50):.1f} p95 {percentile(walls, 95):.1f}; "
          f"CPU ms p50 {percentile(cpus, 50):.1f} p95 {percentile(cpus, 95):.1f}", flush=True)
    if args.profile:
        pstats.Stats(profile).sort_stats(args.sort).print_stats(args.profile)


if __name__ == "__main__":
    main()
