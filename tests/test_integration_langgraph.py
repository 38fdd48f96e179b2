"""LangChain / LangGraph adapters: retriever Documents, a node in a compiled graph, tools, an agent, a router."""

from __future__ import annotations

import asyncio
import json
from typing import TypedDict

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_agents.retrieval import (
    GraphRAGLangChainRetriever,
    build_router_graph,
    make_graph_search_tool,
    make_retrieval_node,
    make_retriever_tool,
    route_by_rule,
)

QUESTION = "Which museum holds the painting by the painter born in Marlow?"


@pytest.fixture(scope="module")
def index(graph_index):
    return graph_index


def test_langchain_retriever_returns_documents_with_provenance(index):
    lc = GraphRAGLangChainRetriever.from_index(index, method="agrag", top_k=3)
    docs = lc.invoke(QUESTION)
    chunks = [d for d in docs if d.metadata["kind"] == "chunk"]
    assert 1 <= len(chunks) <= 3 and all(isinstance(d, Document) for d in docs)
    assert [d.metadata["rank"] for d in chunks] == list(range(1, len(chunks) + 1))
    for d in chunks:
        assert d.metadata["chunk_id"] in index.chunks and d.metadata["method"] == "agrag"
        assert d.metadata["doc_id"] == index.chunks[d.metadata["chunk_id"]].doc_id
        assert d.page_content == index.chunks[d.metadata["chunk_id"]].text
    scores = [d.metadata["score"] for d in chunks]
    assert scores == sorted(scores, reverse=True)
    assert docs[-1].metadata["kind"] == "evidence" and json.dumps(docs[-1].metadata["evidence"])
    assert asyncio.run(lc.ainvoke(QUESTION)) == docs  # async path gives the same answer


def test_retrieval_node_runs_inside_a_compiled_graph_with_a_checkpointer(index):
    class State(TypedDict, total=False):
        question: str
        documents: list
        evidence: dict
        answer: str

    def answer(state):  # a stand-in for an LLM step: names the top passage
        return {"answer": f"see {state['documents'][0].metadata['title']}"}

    builder = StateGraph(State)
    builder.add_node("retrieve", make_retrieval_node(index, "hybrid", top_k=2))
    builder.add_node("answer", answer)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "answer")
    builder.add_edge("answer", END)
    app = builder.compile(checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    out = app.invoke({"question": "Who founded the Vant Gallery?"}, config)
    assert out["answer"] == "see Vant Gallery" and len(out["documents"]) == 2
    assert app.get_state(config).values["documents"][0].metadata["doc_id"] == "p-vant"  # checkpointed
    assert asyncio.run(app.ainvoke({"question": "Who founded the Vant Gallery?"},
                                   {"configurable": {"thread_id": "t2"}}))["answer"] == "see Vant Gallery"


def test_retrieval_node_rejects_a_missing_question(index):
    node = make_retrieval_node(index, "dense")
    with pytest.raises(ValueError, match="non-empty string"):
        node({"question": "  "})


def test_tool_lets_the_agent_choose_the_method(index):
    tool = make_graph_search_tool(index, methods=["agrag", "hybrid"], top_k=2)
    schema = tool.args_schema.model_json_schema()
    assert schema["properties"]["method"]["enum"] == ["agrag", "hybrid"]
    text = tool.invoke({"query": "Who founded the Vant Gallery?", "method": "hybrid"})
    assert "Vant Gallery" in text and "[1]" in text
    message = tool.invoke({"type": "tool_call", "id": "c1", "name": tool.name,
                           "args": {"query": QUESTION, "method": "agrag"}})
    assert isinstance(message, ToolMessage) and "Graph evidence (agrag)" in message.content
    assert all(isinstance(d, Document) for d in message.artifact)
    with pytest.raises(ValueError, match="unknown method"):
        make_graph_search_tool(index, methods=["nope"])


def test_tool_calling_agent_uses_the_tool_in_a_langgraph_loop(index):
    tool = make_graph_search_tool(index, top_k=2)
    model = FakeMessagesListChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "graph_search", "id": "call-1",
                                           "args": {"query": "Who founded the Vant Gallery?", "method": "bm25"}}]),
        AIMessage(content="Piers Vant founded it."),
    ])
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    out = builder.compile().invoke({"messages": [HumanMessage("Who founded the Vant Gallery?")]})
    tool_messages = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert len(tool_messages) == 1 and "Piers Vant" in tool_messages[0].content
    assert out["messages"][-1].content == "Piers Vant founded it."


def test_create_retriever_tool_over_one_method(index):
    tool = make_retriever_tool(index, "dense", top_k=2)
    assert tool.name == "dense_search"
    assert "Vant Gallery" in tool.invoke({"query": "Who founded the Vant Gallery?"})


def test_router_sends_questions_to_methods(index):
    assert route_by_rule("Who founded the Vant Gallery?") == "hybrid"
    assert route_by_rule(QUESTION) == "a2rag" and route_by_rule(QUESTION, graph_method="agrag") == "agrag"
    app = build_router_graph(index, top_k=2)
    simple = app.invoke({"question": "Who founded the Vant Gallery?"})
    hard = app.invoke({"question": QUESTION})
    assert simple["method"] == "hybrid" and hard["method"] == "a2rag"
    assert simple["documents"][0].metadata["method"] == "hybrid"
    assert hard["evidence"]["stage_reached"] and hard["route_trace"] == [f"{QUESTION!r} -> a2rag"]
    with pytest.raises(ValueError, match="router chose"):
        build_router_graph(index, route=lambda q: "pathfinder", methods=["hybrid"]).invoke({"question": "x"})
