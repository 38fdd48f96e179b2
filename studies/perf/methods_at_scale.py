"""What each graph method costs per query and keeps per snapshot, on one loaded (large) index.

    python studies/perf/methods_at_scale.py INDEX_DIR SYNTH_DIR [--methods hipporag,agrag,pathrag,a2rag]
        [--questions 8] [--embed hash] [--profile 18]

The methods run one after another in one process, as a server answering with several of them would. For each:
the CPU seconds of its first query (the per-snapshot structures it builds then), the process's RSS before and
after that query (anonymous and file-backed pages apart: memory-mapped vectors read by a query are file pages),
the bytes of every structure it added to the index's per-snapshot memo (``index.cached``), field by field, and the
CPU seconds of each further question (query embeddings computed beforehand, so excluded). A structure held by
two memo entries (or two methods) counts once, where it first appears ("MB new"); the per-attribute figures count
each attribute whole. An array a structure only refers to (a small vector table held in memory) counts as its
own; a memory-mapped one counts 0. ``--profile N`` prints
cProfile's N most expensive functions per method (own time): what to cut next. At 1,000,000 passages run it under
``flock /work/scratch/m1.lock`` (the load alone takes several GB). Results: ``studies/perf/results/methods_at_scale.md``.
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


def rss_gb() -> dict[str, float]:
    """VmRSS, RssAnon and RssFile of this process, in GB."""
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmRSS", "RssAnon", "RssFile"):
                out[key] = round(int(line.split()[1]) / 1e6, 2)
    return out


def nbytes(obj, seen: set[int], depth: int = 0) -> int:
    """Bytes held by ``obj``: arrays by their buffers (a memory map counts 0: its pages are the file's), containers and
    objects by their parts; a dict or list of more than 2,000 items estimated from a sample of 1,000."""
    if id(obj) in seen or depth > 6:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.memmap):
        return 0
    if isinstance(obj, np.ndarray):  # a view counts its base's buffer (once)
        return obj.nbytes if not isinstance(obj.base, np.ndarray) else nbytes(obj.base, seen, depth + 1)
    if sp.issparse(obj):
        return sum(nbytes(getattr(obj, a), seen, depth + 1) for a in ("data", "indices", "indptr") if hasattr(obj, a))
    if isinstance(obj, (str, bytes, int, float)):
        return sys.getsizeof(obj)
    if isinstance(obj, (dict, list, tuple, set, frozenset)):
        items = [x for kv in obj.items() for x in kv] if isinstance(obj, dict) else list(obj)
        if len(items) > 2000:
            sample = items[:: len(items) // 1000]
            return sys.getsizeof(obj) + int(sum(nbytes(x, set(), depth + 1) for x in sample) * len(items) / len(sample))
        return sys.getsizeof(obj) + sum(nbytes(x, seen, depth + 1) for x in items)
    total = sys.getsizeof(obj)
    for value in getattr(obj, "__dict__", {}).values():
        total += nbytes(value, seen, depth + 1)
    return total


def parts(obj) -> dict[str, float]:
    """MB per attribute of a cached structure (the larger ones)."""
    out = {}
    for name, value in getattr(obj, "__dict__", {}).items():
        mb = nbytes(value, set()) / 1e6
        if mb >= 1:
            out[name] = round(mb, 1)
            if not isinstance(value, np.ndarray) and hasattr(value, "__dict__"):
                out.update({f"{name}.{k}": v for k, v in parts(value).items()})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("synth", help="a benchmarks/synth.py folder (its questions.jsonl)")
    ap.add_argument("--methods", default="hipporag,agrag,pathrag,a2rag")
    ap.add_argument("--questions", type=int, default=8, help="the first one builds, the others are timed")
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--profile", type=int, default=18, help="functions printed per method (0: no profile)")
    args = ap.parse_args()

    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index, embed_model=args.embed)
    print(f"load {time.perf_counter() - start:.1f} s wall, RSS {rss_gb()}", flush=True)
    questions = [q.question for q in load_questions(f"{args.synth}/questions.jsonl")[0][: args.questions]]
    for q in questions:
        index.embed_query(q)
    memo = index.state.artefacts
    # counted once: a structure two methods share is counted where it first appears; the snapshot is not theirs
    counted = {id(index.snapshot), *(id(v) for v in vars(index.snapshot).values())}
    for method in args.methods.split(","):
        before, rss_before = set(memo._values), rss_gb()
        retriever = get_retriever(index, method, top_k=5)
        cpu = time.process_time()
        retriever.retrieve(questions[0])
        first = time.process_time() - cpu
        gc.collect()
        print(f"== {method}: first query {first:.2f} CPU s; RSS {rss_before} -> {rss_gb()}", flush=True)
        for name in memo._values:
            if name not in before and name != "__snapshot__":
                value = memo._values[name]
                print(f"   cached {name}: {nbytes(value, counted) / 1e6:.1f} MB new {parts(value) or ''}", flush=True)
        profile, times = cProfile.Profile(time.process_time), []
        if args.profile:
            profile.enable()
        for q in questions[1:]:
            cpu = time.process_time()
            retriever.retrieve(q)
            times.append(time.process_time() - cpu)
        profile.disable()
        print(f"   CPU s per question: {[round(t, 3) for t in times]}, median {np.median(times):.3f}", flush=True)
        if args.profile:
            pstats.Stats(profile).sort_stats("tottime").print_stats(args.profile)
    print(f"end RSS {rss_gb()}")


if __name__ == "__main__":
    main()
