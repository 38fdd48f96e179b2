"""Deprecated: retrievers now live in ``llama_index_graphrag_suite.methods`` and are found through
``llama_index_graphrag_suite.registry``; this package re-exports the old names for one release."""

from .._compat import warn_moved

warn_moved(__name__, "llama_index_graphrag_suite.methods / llama_index_graphrag_suite.registry")

from ..methods.a2rag import A2RAGRetriever  # noqa: E402,F401
from ..methods.agrag import AGRAGRetriever  # noqa: E402,F401
from ..methods.archrag import ArchRAGRetriever  # noqa: E402,F401
from ..methods.base import GraphIndexRetriever, chunk_node, evidence_node  # noqa: E402,F401
from ..methods.baselines import BM25Retriever, DenseRetriever, HippoRAGRetriever, HybridRetriever  # noqa: E402,F401
from ..methods.pathrag import PathRAGRetriever  # noqa: E402,F401
from ..registry import UnknownMethodError, available_methods, get_retriever  # noqa: E402,F401

__all__ = [
    "A2RAGRetriever",
    "AGRAGRetriever",
    "ArchRAGRetriever",
    "BM25Retriever",
    "DenseRetriever",
    "GraphIndexRetriever",
    "HippoRAGRetriever",
    "HybridRetriever",
    "PathRAGRetriever",
    "UnknownMethodError",
    "available_methods",
    "chunk_node",
    "evidence_node",
    "get_retriever",
]
