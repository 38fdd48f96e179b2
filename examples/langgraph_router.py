"""Route each question to the retrieval method that suits it, inside a LangGraph graph (no LLM needed).

    python examples/langgraph_router.py
    python examples/langgraph_router.py --embed hash

The default rule (``route_by_rule``) sends comparison and bridging questions to a graph method and
single look-ups to the hybrid baseline; pass any function of the question instead (a classifier, an
LLM call). The graph is a normal compiled StateGraph, so it can be a node in a bigger one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from langgraph_agents.retrieval import build_router_graph
from llama_index_graphrag_suite import GraphRAGIndex, load_documents

DATA = Path(__file__).resolve().parent / "data"


def main(embed: str | None = None, limit: int = 6):
    index = GraphRAGIndex.from_documents(load_documents(DATA / "corpus.jsonl"), embed_model=embed)
    app = build_router_graph(index, methods=["a2rag", "hybrid"], top_k=3)
    questions = [json.loads(line) for line in (DATA / "questions.jsonl").read_text().splitlines() if line.strip()]
    questions.append({"question": "What is the Orrin Theatre?", "supporting_ids": ["doc-08"]})
    routed = []
    for q in questions[:limit] + questions[-1:]:
        out = app.invoke({"question": q["question"]})
        found = [d.metadata["doc_id"] for d in out["documents"]]
        hits = len(set(found) & set(q["supporting_ids"]))
        print(f"{out['method']:7s} {hits}/{len(q['supporting_ids'])} gold  {q['question']}")
        routed.append((out["method"], hits))
    return routed


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None)
    args = parser.parse_args()
    main(args.embed)
