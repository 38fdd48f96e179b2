"""Durable A2RAG runs: a SQLite checkpointer lets a run stop after any node and resume in another process.

    pip install langgraph-checkpoint-sqlite      # in the `dev` extra
    GRAPHRAG_LLM_URL=http://localhost:8000/v1 python examples/a2rag_sqlite_resume.py --db runs.sqlite

The run is stopped before Triple-Check (``interrupt_before=["verify"]``): the retrieved evidence and the
draft answer are in the SQLite file under the thread id. A new graph, built on a new connection to the
same file (as a restarted worker would), resumes the thread with ``invoke(None, config)`` and finishes
it. Without GRAPHRAG_LLM_URL a scripted offline LLM answers, so the example runs anywhere.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver

from langgraph_agents.a2rag_loop import build_a2rag_graph
from llama_index_graphrag_suite import GraphRAGIndex, load_documents
from llama_index_graphrag_suite.llm import ScriptedLLM, build_llm
from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
QUESTION = "Who designed the Orrin Theatre?"


def offline_llm() -> ScriptedLLM:
    """Says yes to every check and answers from the first passage: enough to show the mechanics."""
    return ScriptedLLM(rules=[(r"yes or no", "yes")], responder=lambda prompt: "See passage [1].")


def build(retriever, llm, db: str):
    # check_same_thread=False: LangGraph may write checkpoints from its worker threads.
    return build_a2rag_graph(retriever, llm, checkpointer=SqliteSaver(sqlite3.connect(db, check_same_thread=False)))


def main(llm=None, embed: str | None = None, db: str | None = None, question: str = QUESTION, thread: str = "run-1"):
    url = os.environ.get("GRAPHRAG_LLM_URL")
    llm = llm or (build_llm(url, api_key=os.environ.get("GRAPHRAG_LLM_API_KEY")) if url else offline_llm())
    db = db or str(Path(tempfile.mkdtemp()) / "a2rag-checkpoints.sqlite")
    index = GraphRAGIndex.from_documents(load_documents(DATA), embed_model=embed)
    retriever = A2RAGRetriever(index, top_k=3, llm=None)  # LLM-free retrieval; the loop's LLM answers and checks
    config = {"configurable": {"thread_id": thread}}

    first = build(retriever, llm, db)
    first.invoke({"question": question}, config, interrupt_before=["verify"])
    paused = first.get_state(config)
    print("paused before:", paused.next, "| draft:", paused.values.get("draft"))

    second = build(retriever, llm, db)  # a fresh graph and connection: only the SQLite file carries the run
    final = second.invoke(None, config)
    print("status:", final["status"], "| answer:", final.get("answer"))
    print("checkpoints in", db, ":", sum(1 for _ in second.checkpointer.list(config)))
    return final


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", default=None)
    parser.add_argument("--embed", default=None)
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    main(embed=args.embed, db=args.db, question=args.question)
