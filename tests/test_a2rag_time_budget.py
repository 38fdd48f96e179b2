"""A2RAG's time budget: the LangGraph loop and the retriever end by it and keep the evidence found so far."""

from __future__ import annotations

import time

import pytest

from langgraph_agents.a2rag_loop import a2rag_tool, build_a2rag_graph
from llama_index_graphrag_suite.llm import RobustLLM, ScriptedLLM, llm_budget
from llama_index_graphrag_suite.llm.errors import LLMTimeoutError
from llama_index_graphrag_suite.llm.langchain_bridge import call_within_budget
from test_a2rag_loop import QUESTION, FakeA2RAGRetriever


def slow_llm(delay: float, verdict: str = "no") -> ScriptedLLM:
    """Answers after ``delay`` seconds; every Triple-Check says ``verdict`` (so "no" keeps the loop going)."""

    def respond(prompt: str) -> str:
        time.sleep(delay)
        if prompt.startswith("Task: answer"):
            return "Ada Lorne was born in Marlow [1]."
        if prompt.startswith("Task: rewrite"):
            return "New query: Ada Lorne birthplace"
        return verdict

    return ScriptedLLM(responder=respond)


def test_slow_llm_run_stops_at_the_budget_with_the_evidence_so_far():
    graph = build_a2rag_graph(FakeA2RAGRetriever(), slow_llm(0.15), max_iterations=5, time_budget=0.5)
    start = time.monotonic()
    result = graph.invoke({"question": QUESTION})
    took = time.monotonic() - start
    assert took < 1.5  # unbounded, 5 rounds of 5 calls at 0.15 s would take about 3.5 s
    assert result["status"] == "fail" and result["error"].startswith("time budget exhausted")
    assert result["cost"]["time_budget_exhausted"] is True
    assert 0.5 <= result["cost"]["seconds"] < 1.5
    assert result["documents"] and result["documents"][0]["id"] == "p-ada#0"  # the best evidence so far
    assert result["facts"] and result["trace"][-1]["error"].startswith("time budget exhausted")
    text, artifact = a2rag_tool(graph).func(QUESTION)  # the tool's (content, artifact)
    assert "time budget exhausted" in text and "Evidence found: [1] Ada Lorne" in text
    assert artifact["cost"]["time_budget_exhausted"] is True


def test_a_hung_llm_call_is_abandoned_at_the_deadline():
    graph = build_a2rag_graph(FakeA2RAGRetriever(), slow_llm(5.0), time_budget=0.4)
    start = time.monotonic()
    result = graph.invoke({"question": QUESTION})
    assert time.monotonic() - start < 1.5
    assert result["status"] == "fail" and result["cost"]["time_budget_exhausted"]
    assert "generate" in result["error"] and result["documents"]


def test_a_run_within_budget_is_unchanged_and_counts_its_seconds():
    graph = build_a2rag_graph(FakeA2RAGRetriever(), slow_llm(0.0, verdict="yes"), time_budget=30)
    result = graph.invoke({"question": QUESTION})
    assert result["status"] == "answered" and result["answer"].startswith("Ada Lorne")
    assert result["cost"]["time_budget_exhausted"] is False and 0 < result["cost"]["seconds"] < 30


def test_auto_budget_comes_from_the_retriever_config_then_the_llm():
    class Configured(FakeA2RAGRetriever):
        class config:  # noqa: N801 - stands in for A2RAGConfig
            time_budget = 0.3

    result = build_a2rag_graph(Configured(), slow_llm(0.2), max_iterations=5).invoke({"question": QUESTION})
    assert result["cost"]["time_budget_exhausted"]
    robust = RobustLLM(slow_llm(0.2), build_timeout=0.3, max_retries=0)
    result = build_a2rag_graph(FakeA2RAGRetriever(), robust, max_iterations=5).invoke({"question": QUESTION})
    assert result["cost"]["time_budget_exhausted"] and result["cost"]["seconds"] < 1.2
    unbounded = build_a2rag_graph(FakeA2RAGRetriever(), slow_llm(0.0), max_iterations=2, time_budget=None)
    assert not unbounded.invoke({"question": QUESTION})["cost"]["time_budget_exhausted"]
    for bad in (0, -1, float("inf"), "soon", True):
        with pytest.raises(ValueError, match="time_budget"):
            build_a2rag_graph(FakeA2RAGRetriever(), slow_llm(0.0), time_budget=bad)


def test_call_within_budget_raises_a_timeout_and_passes_errors_through():
    assert call_within_budget(lambda: 7) == 7  # no budget: a plain call
    with llm_budget(5):
        with pytest.raises(KeyError):
            call_within_budget(lambda: {}["x"])
    with llm_budget(0.1):
        with pytest.raises(LLMTimeoutError, match="time budget ran out"):
            call_within_budget(lambda: time.sleep(2))
    with llm_budget(0):
        with pytest.raises(LLMTimeoutError, match="before the LLM call"):
            call_within_budget(lambda: 1)


def test_a2rag_retriever_returns_the_evidence_so_far_when_its_budget_runs_out():
    from conftest import CORPUS

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    llm = ScriptedLLM(responder=lambda prompt: (time.sleep(0.4), "no")[1])
    retriever = A2RAGRetriever(index, top_k=3, llm=llm, time_budget=0.3)
    start = time.monotonic()
    nodes, trace = retriever.retrieve_with_trace("Did Piers Vant hold works by Tomas Brey?")
    assert time.monotonic() - start < 1.5  # three stages with two 0.4 s LLM checks and a seed call: 1.2 s+
    assert trace.get("time_budget_exhausted") is True
    assert len([n for n in nodes if n.node.metadata.get("kind") != "evidence"]) == 3  # top_k still filled
    assert trace["seed_extraction"].startswith("statistical")  # the seed call ran out of time: fallback
    unbounded = A2RAGRetriever(index, top_k=3, llm=ScriptedLLM(responder=lambda p: "no"))
    assert "time_budget_exhausted" not in unbounded.retrieve_with_trace("Did Piers Vant hold works by Tomas Brey?")[1]
