"""What the hybrid guard costs per query: median retrieve() time of each graph method with its defaults and as
its paper variant (guard off), on one saved index, the two timed alternately question by question.

    python benchmarks/guard_latency.py --index-dir IDX --questions ../shared/datasets/hotpotqa_train100/questions.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--methods", default="hipporag,agrag,pathrag,archrag,a2rag")
    ap.add_argument("--n", type=int, default=100)
    args = ap.parse_args()
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(args.index_dir, embed_model=resolve_embed_model("all-MiniLM-L6-v2"), show_progress=False)
    with open(args.questions, encoding="utf-8") as f:
        questions = [json.loads(line)["question"] for _, line in zip(range(args.n), f)]
    for q in questions:
        index.embed_query(q)  # embeddings cached: the figures are retrieval alone
    print(f"# What the hybrid guard costs per query\n\n{len(index.chunk_order):,} chunks, {len(questions)} questions, "
          "query embeddings cached; each method with its defaults (guarded) and as its paper variant, timed "
          "alternately. The guard reuses the method's dense and BM25 scores (methods/query_scores.py), ranks hybrid, "
          "looks the question's words up in the entity table and reads the links of the entities it finds.\n")
    print("| method | guarded p50 ms | paper p50 ms | ratio |\n|---|---:|---:|---:|")
    for method in args.methods.split(","):
        guarded, paper = get_retriever(index, method, top_k=5), get_retriever(index, f"{method}:paper", top_k=5)
        guarded.retrieve(questions[0]), paper.retrieve(questions[0])  # warm-up (lazy artefacts)
        times = {"guarded": [], "paper": []}
        for q in questions:
            for name, r in (("guarded", guarded), ("paper", paper)):
                start = time.perf_counter()
                r.retrieve(q)
                times[name].append((time.perf_counter() - start) * 1000)
        g, p = statistics.median(times["guarded"]), statistics.median(times["paper"])
        print(f"| {method} | {g:.1f} | {p:.1f} | {g / p:.2f} |", flush=True)


if __name__ == "__main__":
    main()
