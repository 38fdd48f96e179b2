"""What AGRAG's at-scale approximation knobs cost in recall and buy in CPU time, on one loaded index.

    python studies/perf/agrag_approximations.py INDEX_DIR QUESTIONS.jsonl [--questions 100] [--method agrag]
        --setting push_eps=1e-7 --setting push_eps=1e-6,steiner_max_entries=131072 ... [--save OUT.json]

Each ``--setting`` is a set of AGRAG config overrides (``name=value``, comma-separated; the first setting is the
reference). One process: query embeddings first (excluded), one warm-up query per setting, then per question every
setting in turn, the order rotating by question (so no setting always runs first on a warm cache). Prints per
setting the CPU p50/p95 ms, recall@5, how many top 5s (ids) equal the reference's, and the questions whose recall
rose or fell against it. At 300,000+ passages run it under ``flock /work/scratch/m1.lock``.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.eval.metrics import recall_at
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.methods.agrag.config import AGRAGConfig
from llama_index_graphrag_suite.registry import get_retriever


def parse_setting(text: str) -> dict:
    out = {}
    for part in filter(None, text.split(",")):
        name, value = part.split("=", 1)
        value = value.strip()
        out[name.strip()] = None if value == "None" else value == "True" if value in ("True", "False") else \
            float(value) if "." in value or "e" in value \
            else int(value)
    return out


def chunk_ids(nodes) -> list[str]:
    return [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id)
            for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index_dir")
    ap.add_argument("questions")
    ap.add_argument("--questions", dest="count", type=int, default=100)
    ap.add_argument("--method", default="agrag")
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--setting", action="append", required=True)
    ap.add_argument("--save")
    args = ap.parse_args()

    index = GraphRAGIndex.load(args.index_dir, embed_model=args.embed)
    questions = load_questions(args.questions)[0][: args.count]
    for q in questions:
        index.embed_query(q.question)
    retriever = get_retriever(index, args.method, top_k=5)
    inner = getattr(retriever, "inner", retriever)
    base = inner.config
    settings = [parse_setting(s) for s in args.setting]
    configs = [AGRAGConfig.resolve(base, **s) for s in settings]
    for config in configs:  # warm-up: per-snapshot structures, compiled kernels
        inner.config = config
        retriever.retrieve(questions[0].question)
    runs: list[list[dict]] = [[] for _ in configs]
    for i, q in enumerate(questions):
        for k in range(len(configs)):
            j = (i + k) % len(configs)
            inner.config = configs[j]
            cpu = time.process_time()
            top = chunk_ids(retriever.retrieve(q.question))
            runs[j].append({"id": q.id, "cpu": 1000 * (time.process_time() - cpu), "top": top,
                            "recall": recall_at(top, q.supporting_ids, 5)})
    inner.config = base
    ref = runs[0]
    for text, rs in zip(args.setting, runs):
        cpus = [r["cpu"] for r in rs]
        same = sum(a["top"] == b["top"] for a, b in zip(ref, rs))
        won = [b["id"] for a, b in zip(ref, rs) if b["recall"] > a["recall"]]
        lost = [b["id"] for a, b in zip(ref, rs) if b["recall"] < a["recall"]]
        print(f"{text:45s} CPU p50 {np.percentile(cpus, 50):6.1f} p95 {np.percentile(cpus, 95):6.1f}; recall@5 "
              f"{100 * np.mean([r['recall'] for r in rs]):.2f}; same top 5 {same}/{len(rs)}; won {won} lost {lost}",
              flush=True)
    if args.save:
        with open(args.save, "w") as f:
            json.dump({s: rs for s, rs in zip(args.setting, runs)}, f)


if __name__ == "__main__":
    main()
