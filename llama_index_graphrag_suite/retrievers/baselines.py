"""Baseline retrievers over the shared index: dense, BM25 and hybrid (AGRAG Eq. 21)."""

from __future__ import annotations

from abc import abstractmethod

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from .base import GraphIndexRetriever, chunk_node
from .scoring import hybrid, top_k


class _ScoredChunksRetriever(GraphIndexRetriever):
    """Shared ranking for retrievers that score every chunk; subclasses say how."""

    @abstractmethod
    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        """One score per chunk, in ``index.chunk_order``."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        scores = self.chunk_scores(query_bundle)
        order = self.index.chunk_order
        return [chunk_node(self.index, order[i], scores[i], self.method) for i in top_k(scores, self.top_k)]


class DenseRetriever(_ScoredChunksRetriever):
    """Chunks by cosine similarity of their embedding with the query's."""

    method = "dense"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        return self.index.chunk_dense_scores(self.query_vector(query_bundle))


class BM25Retriever(_ScoredChunksRetriever):
    """Chunks by BM25 (k1=1.5, b=0.75) over lower-cased, stop-word-free tokens."""

    method = "bm25"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        return self.index.bm25.scores(query_bundle.query_str)


class HybridRetriever(_ScoredChunksRetriever):
    """Chunks by the average of min-max-scaled dense and BM25 scores (AGRAG Eq. 21, as its authors compute it)."""

    method = "hybrid"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        dense = self.index.chunk_dense_scores(self.query_vector(query_bundle))
        return hybrid(dense, self.index.bm25.scores(query_bundle.query_str))
