"""LangGraph and LangChain pieces over llama-index-graphrag-suite retrievers.

* :mod:`.retrieval` - a LangChain retriever, a retrieval node, tools, a router graph (any method);
* :mod:`.a2rag_loop` - A2RAG's adaptive control loop (gate, retrieve, generate, Triple-Check, rewrite);
* :mod:`.archrag_filter` - ArchRAG's adaptive filtering (map: analyse and score items, reduce: answer);
* :mod:`.llm_adapter` - the one LLM seam they share (LlamaIndex LLM, LangChain chat model or function).

Every graph takes ``{"question": ...}`` as input and can be compiled with a checkpointer.
"""

from .a2rag_loop import A2RAGState, a2rag_tool, build_a2rag_graph
from .archrag_filter import build_archrag_filter_graph
from .llm_adapter import as_text_llm
from .retrieval import (
    GraphRAGLangChainRetriever,
    build_router_graph,
    make_graph_search_tool,
    make_retrieval_node,
    make_retriever_tool,
    route_by_rule,
)

__all__ = [
    "A2RAGState",
    "GraphRAGLangChainRetriever",
    "a2rag_tool",
    "as_text_llm",
    "build_a2rag_graph",
    "build_archrag_filter_graph",
    "build_router_graph",
    "make_graph_search_tool",
    "make_retrieval_node",
    "make_retriever_tool",
    "route_by_rule",
]
