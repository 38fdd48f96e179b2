"""What a loaded index holds in memory, and what each method adds on its first question.

    python benchmarks/load_memory.py --index DIR --questions DIR/../questions.jsonl

In this one process: RSS (``/proc/self/status``) after importing the library, after ``GraphRAGIndex.load``
(and its peak), then after two questions to each method in turn (the first builds what the method keeps per graph
snapshot), with each method's first and second question time. ``--trace`` adds the Python allocations
(``tracemalloc``) alive after the load, by source line: slower, and not counting Arrow's or numpy's own pools.
"""

from __future__ import annotations

import argparse
import gc
import json
import time

METHODS = "dense,bm25,hybrid,pathrag,archrag,a2rag,hipporag,agrag"


def _status() -> dict[str, int]:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(value.split()[0]) // 1024
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions", required=True, help="a .jsonl file with a 'question' field per line")
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--trace", action="store_true")
    args = ap.parse_args()
    if args.trace:
        import tracemalloc

        tracemalloc.start()
    from llama_index_graphrag_suite import GraphRAGIndex

    print("imported", _status())
    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index)
    print(f"loaded in {time.perf_counter() - start:.1f} s", _status())
    if args.trace:
        snapshot = tracemalloc.take_snapshot()
        stats = snapshot.statistics("lineno")
        print(f"Python allocations alive: {sum(s.size for s in stats) / 1e6:.0f} MB; largest:")
        for s in stats[:10]:
            print(f"  {s.size / 1e6:7.1f} MB {s.count:9d}  {s.traceback}")
        tracemalloc.stop()
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for line in f if line.strip()][:2]
    before = _status()["VmRSS"]
    for method in args.methods.split(","):
        retriever = index.as_retriever(method)
        times = []
        for q in questions:
            start = time.perf_counter()
            retriever.retrieve(q)
            times.append(time.perf_counter() - start)
        gc.collect()
        now = _status()["VmRSS"]
        print(f"{method:9s} +{now - before:5d} MB  RSS {now:6d} MB  first {times[0]:.2f} s  second {times[-1]:.3f} s")
        before = now


if __name__ == "__main__":
    main()
