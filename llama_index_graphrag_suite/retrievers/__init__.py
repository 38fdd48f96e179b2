"""Retrievers (LlamaIndex BaseRetriever) over the shared graph index."""

from .a2rag import A2RAGRetriever
from .agrag import AGRAGRetriever
from .archrag import ArchRAGRetriever
from .base import GraphIndexRetriever, chunk_node, evidence_node
from .baselines import BM25Retriever, DenseRetriever, HybridRetriever
from .hipporag import HippoRAGRetriever
from .pathrag import PathRAGRetriever
from .registry import METHODS, UnknownMethodError, available_methods, get_retriever

__all__ = [
    "A2RAGRetriever",
    "AGRAGRetriever",
    "ArchRAGRetriever",
    "BM25Retriever",
    "DenseRetriever",
    "GraphIndexRetriever",
    "HippoRAGRetriever",
    "HybridRetriever",
    "METHODS",
    "PathRAGRetriever",
    "UnknownMethodError",
    "available_methods",
    "chunk_node",
    "evidence_node",
    "get_retriever",
]
