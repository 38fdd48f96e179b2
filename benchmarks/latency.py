"""Median retrieval latency per method, excluding the query embedding.

    python benchmarks/latency.py --index-dir DIR --questions QUESTIONS.jsonl --methods hybrid,hipporag,agrag

Each question is embedded first (untimed; the index remembers the vector), and so are the texts a method embeds
from it (PathRAG's key phrases, ``embed_query_texts``; the retriever remembers them), then ``retrieve`` is timed.
The bench's own latency columns include the embedding; this isolates the method's graph work. ``--phrases timed``
leaves the key phrases to the timed retrieval. BLAS runs on one thread by default, as ``graphrag-suite serve``
runs it (``cli.serve.one_blas_thread``: OpenBLAS's spinning threads take the core the graph searches need);
``--blas-threads default`` keeps OpenBLAS's own thread count.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever


def cpu_model() -> str:
    """The processor's name (Linux), else what the platform says."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--methods", default="dense,bm25,hybrid,hipporag,agrag,pathrag,archrag,a2rag")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--phrases", choices=("untimed", "timed"), default="untimed",
                        help="embed a method's key phrases before the timing (as the question), or inside it")
    parser.add_argument("--blas-threads", choices=("one", "default"), default="one",
                        help="one BLAS thread (as graphrag-suite serve runs), or OpenBLAS's default")
    args = parser.parse_args()
    if args.blas_threads == "one":
        from llama_index_graphrag_suite.cli.serve import one_blas_thread

        one_blas_thread()
    index = GraphRAGIndex.load(args.index_dir)
    questions = [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    questions = questions[: args.limit] if args.limit else questions
    for q in questions:
        index.embed_query(q)
    questions_file = Path(args.questions)  # named by its set, not by this machine's folders
    print(f"python benchmarks/latency.py --index-dir IDX --questions {questions_file.parent.name}/{questions_file.name} "
          f"--methods {args.methods} --phrases {args.phrases} --blas-threads {args.blas_threads}"
          + (f" --limit {args.limit}" if args.limit else ""))
    print(f"machine: {cpu_model()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the start")
    print(f"{len(questions)} questions, {len(index.chunks)} chunks, {index.snapshot.num_nodes} nodes, "
          f"{index.snapshot.num_edges} edges; key phrases {args.phrases}, BLAS threads {args.blas_threads}")
    for method in args.methods.split(","):
        retriever = get_retriever(index, method)
        embed_texts = getattr(retriever, "embed_query_texts", None)
        if embed_texts is not None and args.phrases == "untimed":
            for q in questions:
                embed_texts(q)
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
