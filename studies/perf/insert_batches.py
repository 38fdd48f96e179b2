"""A graph built by inserting documents in batches, beside the graph built from all of them at once.

A LlamaIndex app often grows its index with ``index.insert(docs)``. The NER graph's corpus-wide rules (one-word
names that are not names, salient terms and their hub ceilings) must then judge each insert against the whole
corpus, or documents inserted a few at a time grow hubs a build never has. For one dataset this builds both
indexes (MiniLM, default settings) and prints, side by side: build time, entities (and TERM entities), links,
the largest entity, the share of (entity, chunk) links the two graphs share, the 10 most linked entities, and
recall@5 of graph methods with their defaults and as paper variants (the paper variant reads the graph alone,
without the hybrid guard).

    python benchmarks/insert_batches.py --dataset ../shared/datasets/graphrag_bench_medical --batch 50 \\
        --out benchmarks/results/insert_batches_medical.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def graph_summary(index) -> dict:
    linked = sorted(((len(e.chunks), k) for k, e in index.entities.items()), reverse=True)
    return {"entities": len(index.entities), "terms": sum(e.type == "TERM" for e in index.entities.values()),
            "links": sum(n for n, _ in linked), "largest": [linked[0][1], linked[0][0]] if linked else None,
            "top_linked": [[k, n] for n, k in linked[:10]]}


def links_of(index) -> set[tuple[str, str]]:
    """(entity key, document id and chunk number) pairs: chunk ids are the same in both builds."""
    return {(k, c) for k, e in index.entities.items() for c in e.chunks}


def recall5(index, questions, method: str) -> float:
    from llama_index_graphrag_suite.eval.metrics import recall_at
    from llama_index_graphrag_suite.registry import get_retriever

    retriever = get_retriever(index, method, top_k=5)
    total = sum(recall_at([n.node.metadata["doc_id"] for n in retriever.retrieve(q.question)], q.supporting_ids, 5)
                for q in questions)
    return round(100.0 * total / len(questions), 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--batch", type=int, default=50, help="documents per insert (the first build takes one batch)")
    ap.add_argument("--methods", default="a2rag,hipporag,a2rag:paper,hipporag:paper")
    ap.add_argument("--out", help="write the JSON here too")
    args = ap.parse_args()
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex

    embed = resolve_embed_model("all-MiniLM-L6-v2")
    dataset = load_dataset(Path(args.dataset))
    docs = list(dataset.documents)
    questions = [q for q in dataset.questions if q.supporting_ids]
    start = time.perf_counter()
    whole = GraphRAGIndex.from_documents(docs, embed_model=embed, show_progress=False)
    whole_s = time.perf_counter() - start
    start = time.perf_counter()
    batched = GraphRAGIndex.from_documents(docs[:args.batch], embed_model=embed, show_progress=False)
    for i in range(args.batch, len(docs), args.batch):
        batched.insert(docs[i:i + args.batch])
    batched_s = time.perf_counter() - start
    a, b = links_of(whole), links_of(batched)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parent).stdout.strip()
    report = {"dataset": Path(args.dataset).name, "commit": commit, "documents": len(docs), "batch": args.batch,
              "questions": len(questions), "chunks": len(whole.chunks),
              "whole": {"seconds": round(whole_s, 1), **graph_summary(whole)},
              "batched": {"seconds": round(batched_s, 1), **graph_summary(batched)},
              "shared_links": round(len(a & b) / max(1, len(a | b)), 3)}
    for method in args.methods.split(","):
        report["whole"].setdefault("recall@5", {})[method] = recall5(whole, questions, method)
        report["batched"].setdefault("recall@5", {})[method] = recall5(batched, questions, method)
        print(method, report["whole"]["recall@5"][method], report["batched"]["recall@5"][method], flush=True)
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
