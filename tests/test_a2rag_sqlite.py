"""A2RAG runs survive a restart: stopped after a node, resumed from a SQLite checkpoint by a new graph."""

from __future__ import annotations

import sqlite3

import pytest

from langgraph_agents.a2rag_loop import build_a2rag_graph
from test_a2rag_loop import QUESTION, FakeA2RAGRetriever, script
from test_examples import load

SqliteSaver = pytest.importorskip("langgraph.checkpoint.sqlite").SqliteSaver


def saver(path) -> "SqliteSaver":
    return SqliteSaver(sqlite3.connect(str(path), check_same_thread=False))


class StatelessRetriever(FakeA2RAGRetriever):
    """The same answer for the same query, whichever instance (the fake's stage alternates per call)."""

    def retrieve(self, query: str):
        self.queries.clear()
        return super().retrieve(query)


def comparable(state: dict) -> dict:
    """The run without its wall-clock seconds (the only thing that may differ between two runs)."""
    return {**state, "cost": {k: v for k, v in state["cost"].items() if k != "seconds"}}


def test_resumed_run_equals_an_uninterrupted_run(tmp_path):
    db, config = tmp_path / "runs.sqlite", {"configurable": {"thread_id": "t-1"}}
    fails_once = {"grounding": ["no"]}  # two rounds: retrieve, generate, verify, rewrite, retrieve, ...
    whole = build_a2rag_graph(StatelessRetriever(), script(fails_once)).invoke({"question": QUESTION})

    first_llm = script(fails_once)
    first = build_a2rag_graph(StatelessRetriever(), first_llm, checkpointer=saver(db))
    paused = first.invoke({"question": QUESTION}, config, interrupt_before=["verify"])
    assert paused.get("status") is None and paused["draft"]  # generated, not yet checked
    assert first.get_state(config).next == ("verify",) and first_llm.call_count == 1
    del first  # a new process: a new graph, a new connection, a new LLM; only the file carries the run

    second_llm = script(fails_once)
    second = build_a2rag_graph(StatelessRetriever(), second_llm, checkpointer=saver(db))
    assert second.get_state(config).next == ("verify",)
    resumed = second.invoke(None, config)
    assert resumed["status"] == "answered" and second_llm.call_count == 7  # the generate call is not repeated
    assert comparable(resumed) == comparable(whole)
    assert [e["node"] for e in resumed["trace"]] == ["gate", "retrieve", "generate", "verify", "rewrite",
                                                     "retrieve", "generate", "verify"]


def test_sqlite_example_pauses_and_resumes(tmp_path, capsys):
    final = load("a2rag_sqlite_resume").main(embed="hash", db=str(tmp_path / "ex.sqlite"))
    assert final["status"] == "answered" and final["answer"] == "See passage [1]."
    out = capsys.readouterr().out
    assert "paused before: ('verify',)" in out and "checkpoints in" in out
