"""Our tools are proper LangChain ``BaseTool``s: typed args schema, tool-call invocation, and (when the
``langchain`` package is installed) usable by ``create_agent``."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_agents import a2rag_tool, make_graph_search_tool, make_retriever_tool
from test_a2rag_loop import QUESTION, FakeA2RAGRetriever, script


@pytest.fixture(scope="module")
def tools(graph_index):
    return [make_retriever_tool(graph_index, "dense", top_k=2), make_graph_search_tool(graph_index, top_k=2),
            a2rag_tool(FakeA2RAGRetriever(), script())]


def test_every_tool_is_a_base_tool_with_a_schema_a_chat_model_can_bind(tools):
    for tool in tools:
        assert isinstance(tool, BaseTool) and tool.description
        spec = convert_to_openai_tool(tool)["function"]
        assert spec["name"] == tool.name
        required = spec["parameters"].get("required", [])
        assert required in (["query"], ["question"])


def test_tools_answer_plain_and_tool_call_invocations(tools):
    retriever_tool, search_tool, answer_tool = tools
    assert "Vant Gallery" in retriever_tool.invoke({"query": "Who founded the Vant Gallery?"})
    message = answer_tool.invoke({"type": "tool_call", "id": "c1", "name": answer_tool.name,
                                  "args": {"question": QUESTION}})
    assert isinstance(message, ToolMessage) and message.content.startswith("Ada Lorne was born in Marlow")
    assert message.artifact["status"] == "answered" and message.artifact["sources"][0]["id"] == "p-ada#0"
    with pytest.raises(Exception):  # a missing required argument is refused by the schema
        answer_tool.invoke({})


def test_create_agent_runs_the_a2rag_tool(tools):
    agents = pytest.importorskip("langchain.agents", reason="the langchain package is not installed")
    answer_tool = tools[2]
    class ToolCallingFake(FakeMessagesListChatModel):  # the fake model cannot bind; the agent only needs its calls
        def bind_tools(self, tools, **kwargs):
            return self

    model = ToolCallingFake(responses=[
        AIMessage(content="", tool_calls=[{"name": answer_tool.name, "id": "call-1", "args": {"question": QUESTION}}]),
        AIMessage(content="Marlow."),
    ])
    agent = agents.create_agent(model, tools=[answer_tool])
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert any(isinstance(m, ToolMessage) and "Marlow" in m.content for m in out["messages"])
