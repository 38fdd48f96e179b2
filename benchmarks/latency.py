"""Median retrieval latency per method, excluding the query embedding.

    python benchmarks/latency.py --index-dir DIR --questions QUESTIONS.jsonl --methods hybrid,hipporag,agrag

Each question is embedded first (untimed; the index remembers the vector), then ``retrieve`` is timed.
The bench's own latency columns include the embedding; this isolates the method's graph work.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--methods", default="dense,bm25,hybrid,hipporag,agrag,pathrag,archrag,a2rag")
    parser.add_argument("--limit", type=int, default=0)
    args = parser.parse_args()
    index = GraphRAGIndex.load(args.index_dir)
    questions = [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    for q in questions:
        index.embed_query(q)
    print(f"{len(questions)} questions, {len(index.chunks)} chunks, {index.snapshot.num_nodes} nodes, "
          f"{index.snapshot.num_edges} edges")
    for method in args.methods.split(","):
        retriever = get_retriever(index, method)
        retriever.retrieve(questions[0])  # warm-up
        times = []
        for q in questions:
            start = time.perf_counter()
            retriever.retrieve(q)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        print(f"{method:10s} median {statistics.median(times):7.2f} ms   p95 {times[int(0.95 * (len(times) - 1))]:7.2f} ms")


if __name__ == "__main__":
    main()
