"""The methods a CLI user or the benchmark can name, and how to build each one's retriever."""

from __future__ import annotations

from typing import Any, Callable

from .a2rag import A2RAGRetriever
from .agrag import AGRAGRetriever
from .archrag import ArchRAGRetriever
from .baselines import BM25Retriever, DenseRetriever, HybridRetriever
from .hipporag import HippoRAGRetriever
from .pathrag import PathRAGRetriever

# name -> (factory(index, **params), one-line description). Method issues add their entries here.
METHODS: dict[str, tuple[Callable[..., Any], str]] = {
    "dense": (DenseRetriever, "cosine similarity of chunk embeddings"),
    "bm25": (BM25Retriever, "BM25 over chunk words"),
    "hybrid": (HybridRetriever, "average of min-max dense and BM25 scores (AGRAG Eq. 21)"),
    "hipporag": (HippoRAGRetriever, "HippoRAG 2-style: fact mapping, PPR with passage nodes, passages by PPR"),
    "agrag": (AGRAGRetriever, "AGRAG: MCMI reasoning subgraph (Steiner tree + greedy expansion) + hybrid chunks"),
    "pathrag": (PathRAGRetriever, "PathRAG: flow-pruned relational paths between query entities (Eq. 2-4), reliability-ordered path prompt"),
    "archrag": (ArchRAGRetriever, "ArchRAG: attributed communities (KNN + weighted Leiden), C-HNSW search on every layer, chunks by best item score"),
    "a2rag": (A2RAGRetriever, "A2RAG: seeds -> 1-hop local -> K-hop bridges -> degree-normalised PPR, escalating until sufficient"),
}


class UnknownMethodError(ValueError):
    pass


def available_methods(index=None) -> dict[str, str]:
    """Methods that can run on ``index`` (all registered ones need only the shared index today)."""
    return {name: desc for name, (_, desc) in METHODS.items()}


def get_retriever(index, method: str, **params: Any):
    if method not in METHODS:
        raise UnknownMethodError(f"unknown method {method!r}; available: {', '.join(sorted(available_methods(index)))}")
    factory, _ = METHODS[method]
    return factory(index, **params)
