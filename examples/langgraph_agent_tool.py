"""A LangGraph tool-calling agent that searches the graph index and chooses the retrieval method itself.

    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=none GRAPHRAG_CHAT_MODEL=<served model> \
        python examples/langgraph_agent_tool.py            # needs `pip install langchain-openai`
    python examples/langgraph_agent_tool.py --embed hash --scripted   # no server: a scripted chat model

Any LangChain chat model that supports tool calling works (``model.bind_tools([tool])``): vLLM serves
one with ``--enable-auto-tool-choice``. The tool's ``method`` argument lists our methods with one-line
descriptions, so the model can pick a graph method for multi-hop questions and BM25 for look-ups.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from langgraph_agents.retrieval import make_graph_search_tool
from llama_index_graphrag_suite import GraphRAGIndex, load_documents

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
QUESTION = "In which town was the painter of 'Morning at the Vellin Bridge' born?"
SYSTEM = ("Answer questions about the indexed documents. Use graph_search; for questions that chain "
          "several facts prefer a graph method (agrag, hipporag). Answer briefly and name your sources.")


def chat_model_from_env():
    if not os.environ.get("OPENAI_BASE_URL"):
        sys.exit("set OPENAI_BASE_URL (and GRAPHRAG_CHAT_MODEL) to a tool-calling OpenAI-compatible server, "
                 "or run with --scripted")
    try:
        from langchain_openai import ChatOpenAI
    except ImportError:
        sys.exit("this example talks to the server through langchain-openai: pip install langchain-openai")
    return ChatOpenAI(model=os.environ.get("GRAPHRAG_CHAT_MODEL", "default"), temperature=0)


def scripted_chat_model(question: str):
    """A stand-in model for runs without a server: calls the tool once, then answers."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel

    return FakeMessagesListChatModel(responses=[
        AIMessage(content="", tool_calls=[{"name": "graph_search", "id": "call-1",
                                           "args": {"query": question, "method": "agrag"}}]),
        AIMessage(content="(scripted) See the passages the tool returned."),
    ])


def build_agent(index, model):
    tool = make_graph_search_tool(index, top_k=4)
    try:
        bound = model.bind_tools([tool])  # the model sees the tool's schema, methods included
    except NotImplementedError:  # scripted test models answer from their script and need no schema
        bound = model

    def agent(state: MessagesState) -> dict:
        return {"messages": [bound.invoke([SystemMessage(SYSTEM), *state["messages"]])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([tool]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)  # tool call -> tools, else end
    builder.add_edge("tools", "agent")
    return builder.compile()


def main(model=None, embed: str | None = None, question: str = QUESTION):
    index = GraphRAGIndex.from_documents(load_documents(DATA), embed_model=embed)
    app = build_agent(index, model or chat_model_from_env())
    out = app.invoke({"messages": [HumanMessage(question)]}, {"recursion_limit": 12})
    for message in out["messages"]:
        if isinstance(message, ToolMessage):
            print(f"[tool {message.name}] {len(message.artifact)} documents:",
                  [d.metadata.get("title") for d in message.artifact if d.metadata["kind"] == "chunk"])
        elif isinstance(message, AIMessage) and message.tool_calls:
            print("[agent calls]", message.tool_calls[0]["args"])
    print("[answer]", out["messages"][-1].content)
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None)
    parser.add_argument("--question", default=QUESTION)
    parser.add_argument("--scripted", action="store_true", help="use a scripted chat model instead of a server")
    args = parser.parse_args()
    main(scripted_chat_model(args.question) if args.scripted else None, args.embed, args.question)
