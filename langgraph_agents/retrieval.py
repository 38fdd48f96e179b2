"""Our retrievers for LangChain and LangGraph: a LangChain retriever, a graph node, tools, a router.

Every piece takes either an index (``GraphRAGIndex`` or ``PropertyGraphIndex`` built with our
extractors) plus a method name, or an already-built LlamaIndex retriever of ours.

* :class:`GraphRAGLangChainRetriever` - ``langchain_core`` ``BaseRetriever``; chunks become ``Document``s
  in rank order (metadata: ``chunk_id``, ``doc_id``, ``title``, ``score``, ``rank``, ``method``), then the
  method's evidence (subgraph, paths, communities, A2RAG stage) as one last ``Document`` with
  ``metadata["kind"] == "evidence"`` and the structure under ``metadata["evidence"]``.
* :func:`make_retrieval_node` - a ``StateGraph`` node: reads the question from state, writes documents and
  evidence.
* :func:`make_graph_search_tool` - a tool whose ``method`` argument lets a tool-calling agent choose the
  method; :func:`make_retriever_tool` - LangChain's ``create_retriever_tool`` over one method.
* :func:`build_router_graph` - a compiled graph that sends each question to one method, chosen by a
  function of the question (:func:`route_by_rule` by default).
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Callable, Literal, TypedDict

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever as LCBaseRetriever
from langchain_core.tools import StructuredTool, create_retriever_tool
from pydantic import BaseModel, ConfigDict, Field

from llama_index_graphrag_suite.methods.base import aretrieve_nodes, retrieve_nodes  # chunks + evidence

__all__ = [
    "GraphRAGLangChainRetriever",
    "RouterState",
    "build_router_graph",
    "make_graph_search_tool",
    "make_retrieval_node",
    "make_retriever_tool",
    "nodes_to_documents",
    "route_by_rule",
]


def _retriever(index_or_retriever: Any, method: str | None, **params: Any):
    """A LlamaIndex retriever of ours, built from an index and a method name when given an index."""
    from llama_index.core.retrievers import BaseRetriever as LIBaseRetriever

    if isinstance(index_or_retriever, LIBaseRetriever):
        if params:
            raise ValueError("retriever parameters can only be given together with an index")
        return index_or_retriever
    from llama_index_graphrag_suite.registry import as_retriever

    return as_retriever(index_or_retriever, method or "agrag", **params)


def nodes_to_documents(nodes, method: str | None = None, include_evidence: bool = True) -> list[Document]:
    """LlamaIndex ``NodeWithScore``s (ours) -> LangChain ``Document``s, chunks in rank order, evidence last."""
    documents, evidence = [], None
    for n in nodes:
        meta = n.node.metadata
        if meta.get("kind") == "evidence":
            evidence = n
            continue
        documents.append(Document(
            id=n.node.node_id,
            page_content=n.node.get_content(),
            metadata={"kind": "chunk", "chunk_id": meta.get("chunk_id", n.node.node_id), "doc_id": meta.get("doc_id"),
                      "title": meta.get("title", ""), "score": n.score, "rank": len(documents) + 1,
                      "method": meta.get("method", method)},
        ))
    if evidence is not None and include_evidence:
        meta = evidence.node.metadata
        documents.append(Document(
            id=evidence.node.node_id, page_content=evidence.node.get_content(),
            metadata={"kind": "evidence", "method": meta.get("method", method), "evidence": meta.get("evidence", {})},
        ))
    return documents


class GraphRAGLangChainRetriever(LCBaseRetriever):
    """LangChain retriever over any of our methods (``invoke`` / ``ainvoke`` / ``batch`` as usual)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: Any = Field(description="one of this project's LlamaIndex retrievers")
    method: str | None = None
    include_evidence: bool = True

    @classmethod
    def from_index(cls, index: Any, method: str = "agrag", include_evidence: bool = True,
                   **params: Any) -> "GraphRAGLangChainRetriever":
        return cls(retriever=_retriever(index, method, **params), method=method, include_evidence=include_evidence)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return nodes_to_documents(retrieve_nodes(self.retriever, query), self.method, self.include_evidence)

    async def _aget_relevant_documents(self, query: str, *,
                                       run_manager: AsyncCallbackManagerForRetrieverRun) -> list[Document]:
        # our aretrieve runs the CPU-bound search in a worker thread, so the event loop stays free
        return nodes_to_documents(await aretrieve_nodes(self.retriever, query), self.method, self.include_evidence)


def make_retrieval_node(index_or_retriever: Any, method: str | None = None, *, question_key: str = "question",
                        documents_key: str = "documents", evidence_key: str = "evidence",
                        **params: Any) -> Callable[[dict], dict]:
    """A ``StateGraph`` node: ``state[question_key]`` -> ``{documents_key: [Document], evidence_key: dict}``.

    ``evidence`` is the method's structure (plain JSON values), so checkpointers can store it.
    The node is synchronous; under ``ainvoke`` LangGraph runs it in a worker thread.
    """
    retriever = _retriever(index_or_retriever, method, **params)
    name = method or getattr(retriever, "method", "graphrag")

    def retrieve(state: dict) -> dict:
        question = state.get(question_key)
        if not isinstance(question, str) or not question.strip():
            raise ValueError(f"the retrieval node needs a non-empty string in state[{question_key!r}]")
        documents = nodes_to_documents(retrieve_nodes(retriever, question), name)
        evidence = next((d.metadata["evidence"] for d in documents if d.metadata["kind"] == "evidence"), {})
        return {documents_key: [d for d in documents if d.metadata["kind"] == "chunk"], evidence_key: evidence}

    retrieve.__name__ = f"retrieve_{name}"
    return retrieve


def _format_for_llm(documents: list[Document]) -> str:
    lines = []
    for d in documents:
        if d.metadata["kind"] == "evidence":
            lines.append(f"Graph evidence ({d.metadata['method']}):\n{d.page_content}")
        else:
            lines.append(f"[{d.metadata['rank']}] {d.metadata['title']} (doc {d.metadata['doc_id']}): {d.page_content}")
    return "\n\n".join(lines) if lines else "No passages found."


def make_graph_search_tool(index: Any, methods: list[str] | None = None, default_method: str = "agrag",
                           top_k: int = 5, name: str = "graph_search") -> StructuredTool:
    """A tool ``(query, method)`` for tool-calling agents; the method list and descriptions go in its schema.

    The tool answers with the passages and the graph evidence as text; the ``Document``s ride along as
    the tool message's artifact (``response_format="content_and_artifact"``).
    """
    from llama_index_graphrag_suite.index.derive import graph_index_of
    from llama_index_graphrag_suite.registry import available_methods

    graph_index = graph_index_of(index)
    described = available_methods(graph_index)
    methods = list(methods or described)
    unknown = [m for m in methods if m not in described]
    if unknown or default_method not in methods:
        raise ValueError(f"unknown method(s) {unknown or [default_method]}; available: {', '.join(described)}")
    retrievers: dict[str, Any] = {}  # built on first use: an agent may never pick some methods

    class GraphSearchArgs(BaseModel):
        query: str = Field(description="what to search for, as a full question")
        method: Literal[tuple(methods)] = Field(default=default_method,  # type: ignore[valid-type]
                                                description="retrieval method: " + "; ".join(
                                                    f"{m}: {described[m]}" for m in methods))

    def search(query: str, method: str = default_method) -> tuple[str, list[Document]]:
        if method not in retrievers:
            retrievers[method] = _retriever(graph_index, method, top_k=top_k)
        documents = nodes_to_documents(retrieve_nodes(retrievers[method], query), method)
        return _format_for_llm(documents), documents

    return StructuredTool.from_function(
        func=search, name=name, args_schema=GraphSearchArgs, response_format="content_and_artifact",
        description="Search the indexed documents through their knowledge graph. Returns ranked passages "
                    "and the graph evidence that connects them. Choose the method that fits the question.",
    )


def make_retriever_tool(index_or_retriever: Any, method: str = "agrag", name: str | None = None,
                        description: str | None = None, **params: Any):
    """LangChain's ``create_retriever_tool`` over one of our methods."""
    lc = GraphRAGLangChainRetriever(retriever=_retriever(index_or_retriever, method, **params), method=method)
    return create_retriever_tool(lc, name or f"{method}_search",
                                 description or f"Search the indexed documents with the {method} graph retriever.")


# ---------------------------------------------------------------------------------------------- routing

def route_by_rule(question: str, graph_method: str = "a2rag", simple_method: str = "hybrid") -> str:
    """A cheap, LLM-free router built on our benchmark (see BENCHMARKS.md / README "Which method").

    Questions that compare or chain several named things (two names, or cue words of comparison and of
    bridging such as "both", "older", "whose", "of the", "by the") need multi-hop evidence: a graph
    method (A2RAG by default: the best recall@5 in BENCHMARKS.md). A short lookup about one thing is
    served as well, and faster, by the hybrid baseline.
    """
    words = question.replace("?", " ").replace(",", " ").replace("'", " ").replace('"', " ").split()
    # names = runs of capitalised words after the first word ("Vant Gallery" is one name)
    names = sum(1 for i, w in enumerate(words) if i > 0 and w[:1].isupper() and not words[i - 1][:1].isupper())
    rest = " " + " ".join(words[2:]).lower() + " "  # past the question word and its verb
    multi_hop = any(cue in rest for cue in (
        " both ", " same ", " older ", " younger ", " earlier ", " later ", " first ",  # comparison
        " of ", " by the ", " who ", " whose ", " which ", " where ", " that ", " when "))  # a chain: "the painter of X", "the ship that ..."
    return graph_method if multi_hop or names >= 2 else simple_method


class RouterState(TypedDict, total=False):
    question: str
    method: str
    documents: list[Document]
    evidence: dict
    route_trace: Annotated[list[str], operator.add]


def build_router_graph(index: Any, route: Callable[[str], str] = route_by_rule, methods: list[str] | None = None,
                       top_k: int = 5, checkpointer: Any = None):
    """A compiled graph: ``route`` picks a method per question, that method's retrieval node answers.

    Input ``{"question": ...}``; output adds ``method``, ``documents`` and ``evidence``. ``route`` may be
    any function of the question (a rule, a small classifier, an LLM call).
    """
    from langgraph.graph import END, START, StateGraph

    from llama_index_graphrag_suite.index.derive import graph_index_of

    graph_index = graph_index_of(index)
    methods = list(methods or ("a2rag", "hybrid"))
    builder = StateGraph(RouterState)

    def choose(state: RouterState) -> dict:
        method = route(state["question"])
        if method not in methods:
            raise ValueError(f"router chose {method!r}, which is not one of {methods}")
        return {"method": method, "route_trace": [f"{state['question']!r} -> {method}"]}

    builder.add_node("route", choose)
    for m in methods:
        builder.add_node(m, make_retrieval_node(graph_index, m, top_k=top_k))
        builder.add_edge(m, END)
    builder.add_edge(START, "route")
    builder.add_conditional_edges("route", lambda s: s["method"], {m: m for m in methods})
    return builder.compile(checkpointer=checkpointer)
