"""Top 5 per synthetic question for HippoRAG and PathRAG on a large hash index, to compare two versions of the code.

    PYTHONPATH=<checkout> python studies/perf/hipporag_pathrag_scale.py INDEX SYNTH OUT.json [--methods hipporag,pathrag]
        [--questions 100]
    python studies/perf/hipporag_pathrag_scale.py --compare OLD.json NEW.json

The first form writes, per method and question, the top-5 chunk ids with their scores, recall@5 against the
synthetic gold passages, and the CPU milliseconds of each retrieval (query embedding computed beforehand). The second
counts the questions whose top 5 are the same (ids in order, as a set, ids and scores) and prints recall@5 and CPU
p50/p95 before and after. Paths that run only on big tables (the PageRank push, listed vector tables) cannot change
the shared sets' rankings; this is where they are measured. Results: ``studies/perf/results/hipporag_pathrag_scale.md``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def run(index_dir: str, synth: str, out_path: str, methods: list[str], n: int) -> None:
    from llama_index_graphrag_suite.eval.datasets import load_questions
    from llama_index_graphrag_suite.eval.metrics import percentile, recall_at
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(index_dir, embed_model="hash")
    questions = load_questions(Path(synth) / "questions.jsonl")[0][:n]
    out = {}
    for method in methods:
        retriever = get_retriever(index, method, top_k=5)
        index.embed_query(questions[0].question)
        retriever.retrieve(questions[0].question)  # per-snapshot structures built here, untimed
        rows, times, recalls = [], [], []
        for q in questions:
            index.embed_query(q.question)
            start = time.process_time()
            nodes = retriever.retrieve(q.question)
            times.append(1000 * (time.process_time() - start))
            chunks = [x for x in nodes if x.node.metadata.get("kind") != "evidence"]
            recalls.append(recall_at([str(x.node.metadata.get("doc_id") or x.node.node_id) for x in chunks],
                                     q.supporting_ids, 5))
            rows.append([[x.node.node_id, x.score] for x in chunks])
        out[method] = {"rows": rows, "recall@5": sum(recalls) / len(recalls),
                       "cpu_p50": percentile(times, 50), "cpu_p95": percentile(times, 95)}
        print(method, f"recall@5 {out[method]['recall@5']:.4f}",
              f"CPU p50/p95 ms {out[method]['cpu_p50']:.1f} / {out[method]['cpu_p95']:.1f}", flush=True)
    Path(out_path).write_text(json.dumps(out))


def compare(old_path: str, new_path: str) -> None:
    old, new = json.loads(Path(old_path).read_text()), json.loads(Path(new_path).read_text())
    for method in old.keys() & new.keys():
        a, b = old[method]["rows"], new[method]["rows"]
        order = sum([x[0] for x in p] == [x[0] for x in q] for p, q in zip(a, b))
        sets = sum({x[0] for x in p} == {x[0] for x in q} for p, q in zip(a, b))
        same = sum(p == q for p, q in zip(a, b))
        print(f"{method}: top 5 in the same order {order}/{len(a)}, same set {sets}, ids and scores identical {same}; "
              f"recall@5 {old[method]['recall@5']:.4f} -> {new[method]['recall@5']:.4f}; CPU p50 "
              f"{old[method]['cpu_p50']:.1f} -> {new[method]['cpu_p50']:.1f} ms, p95 {old[method]['cpu_p95']:.1f} -> "
              f"{new[method]['cpu_p95']:.1f} ms")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--methods", default="hipporag,pathrag")
    ap.add_argument("--questions", type=int, default=100)
    args = ap.parse_args()
    if args.compare:
        compare(*args.paths)
    else:
        run(*args.paths, methods=args.methods.split(","), n=args.questions)
