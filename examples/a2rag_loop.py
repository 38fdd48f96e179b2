"""The A2RAG adaptive loop (gate -> agentic retrieval -> answer -> Triple-Check -> rewrite -> retry) with a real LLM.

    GRAPHRAG_LLM_URL=http://localhost:8000/v1 python examples/a2rag_loop.py
    GRAPHRAG_LLM_URL=vllm+http://localhost:8000 python examples/a2rag_loop.py --question "..."

GRAPHRAG_LLM_URL names a vLLM server (OpenAI-compatible ``/v1`` or the legacy ``vllm+http://`` API) or any
OpenAI-compatible server; GRAPHRAG_LLM_API_KEY is sent as a bearer token if set. Without it the
script says so and stops. Each step of the loop is printed as it finishes (LangGraph streaming), then
the status (answered / abstain / fail), the answer, its sources and what the run cost.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from langgraph.checkpoint.memory import InMemorySaver

from langgraph_agents.a2rag_loop import build_a2rag_graph
from llama_index_graphrag_suite import GraphRAGIndex, load_documents
from llama_index_graphrag_suite.llm import build_llm
from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
QUESTION = "On which river lies the birthplace of the architect who designed the Orrin Theatre?"


def llm_from_env():
    url = os.environ.get("GRAPHRAG_LLM_URL")
    if not url:
        sys.exit("no LLM: set GRAPHRAG_LLM_URL to a vLLM or OpenAI-compatible server "
                 "(e.g. http://localhost:8000/v1); the A2RAG loop needs one to answer and to verify")
    return build_llm(url, api_key=os.environ.get("GRAPHRAG_LLM_API_KEY"))


def main(llm=None, embed: str | None = None, question: str = QUESTION, max_iterations: int = 2):
    llm = llm or llm_from_env()
    index = GraphRAGIndex.from_documents(load_documents(DATA), embed_model=embed)
    retriever = A2RAGRetriever(index, top_k=5, llm=llm)  # the LLM also judges sufficiency between stages
    app = build_a2rag_graph(retriever, llm, max_iterations=max_iterations, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "example-1"}}

    for update in app.stream({"question": question}, config, stream_mode="updates"):
        for node, values in update.items():
            cost = values.get("cost") or {}
            detail = {"gate": f"score {cost.get('gate_score')}", "retrieve": f"stage reached: {cost.get('stage_reached')}",
                      "rewrite": f"new query: {values.get('query')}"}.get(node, values.get("status") or "")
            print(f"[{node}] {detail}")
    final = app.get_state(config).values  # the checkpointer holds the whole run
    print("status:", final["status"])
    print("answer:", final.get("answer", ""))
    for doc in final.get("documents", [])[:5]:
        print("  source:", doc.get("title") or doc.get("chunk_id"))
    print("cost:", final["cost"])
    return final


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None)
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--max-iterations", type=int, default=2)
    args = parser.parse_args()
    main(embed=args.embed, question=args.question, max_iterations=args.max_iterations)
