"""The hybrid retriever a LlamaIndex user already has, as a baseline: LlamaIndex's ``QueryFusionRetriever`` over its
``BM25Retriever`` (``llama-index-retrievers-bm25``, bm25s with an English stemmer) and a ``VectorStoreIndex``
retriever, on the index's own chunks and chunk embeddings (nothing is embedded again; the query with the index's
model). One query, no LLM rewriting (``num_queries=1``): the recipe of LlamaIndex's BM25 hybrid example.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from llama_index.core.schema import NodeWithScore, QueryBundle

from .base import GraphIndexRetriever, MethodConfig, chunk_node, param

__all__ = ["FusionMode", "LlamaIndexHybridConfig", "LlamaIndexHybridRetriever"]

PACKAGE = "llama-index-retrievers-bm25"


class FusionMode(str, Enum):
    """``QueryFusionRetriever``'s modes (``llama_index.core.retrievers.fusion_retriever.FUSION_MODES``)."""

    RECIPROCAL_RANK = "reciprocal_rerank"
    RELATIVE_SCORE = "relative_score"
    DIST_BASED_SCORE = "dist_based_score"
    SIMPLE = "simple"


class LlamaIndexHybridConfig(MethodConfig):
    """How LlamaIndex's fusion is set up (its defaults, as its BM25 hybrid example uses them)."""

    mode: FusionMode = param(FusionMode.RECIPROCAL_RANK, "how QueryFusionRetriever fuses the two rankings",
                             paper="LlamaIndex's BM25 hybrid example (QueryFusionRetriever, mode reciprocal_rerank)")
    candidates: int = param(0, "chunks each of the two retrievers returns to the fusion; 0: top_k (as the example)",
                            paper="LlamaIndex's BM25 hybrid example", ge=0)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "relative_score": {"mode": FusionMode.RELATIVE_SCORE},
        "deep": {"candidates": 20},  # each retriever hands 20 chunks to the fusion
    }


class LlamaIndexHybridRetriever(GraphIndexRetriever):
    """``QueryFusionRetriever([vector, BM25Retriever])`` over the index's chunks (see the module doc)."""

    method = "llamaindex_hybrid"
    config_class = LlamaIndexHybridConfig
    score_meaning = "QueryFusionRetriever's fused score relative to the top chunk's (top = 1.0)"
    config: LlamaIndexHybridConfig

    def _retrievers(self, depth: int):
        """The vector and BM25 retrievers over the index's chunks (built once per snapshot and depth)."""
        try:
            from llama_index.retrievers.bm25 import BM25Retriever
        except ImportError as exc:
            raise ImportError(f"the llamaindex_hybrid baseline needs {PACKAGE}: pip install {PACKAGE} "
                              "(in the package's dev extra)") from exc
        from llama_index.core import VectorStoreIndex
        from llama_index.core.schema import TextNode

        index = self.index

        def build():
            order = index.chunk_order
            vectors = index.chunk_vectors.rows_of(order)
            nodes = [TextNode(id_=c, text=index.chunks[c].text, embedding=v.tolist()) for c, v in zip(order, vectors)]
            # every node carries its vector, so nothing is embedded; the model only has to be a real one (not
            # LlamaIndex's default, which would ask for OpenAI)
            store = VectorStoreIndex(nodes, embed_model=index.embed_model, show_progress=False)
            return store, nodes

        store, nodes = index.cached("llamaindex_hybrid.vectors", build)
        bm25 = index.cached(f"llamaindex_hybrid.bm25.{depth}", lambda: BM25Retriever.from_defaults(
            nodes=nodes, similarity_top_k=depth))
        return store.as_retriever(similarity_top_k=depth), bm25

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        from llama_index.core.llms import MockLLM
        from llama_index.core.retrievers import QueryFusionRetriever

        depth = self.config.candidates or self.top_k
        vector, bm25 = self._retrievers(depth)
        fusion = QueryFusionRetriever([vector, bm25], llm=MockLLM(), mode=self.config.mode.value,
                                      similarity_top_k=self.top_k, num_queries=1, use_async=False)
        bundle = QueryBundle(query_bundle.query_str, embedding=self.query_vector(query_bundle).tolist())
        return [chunk_node(self.index, n.node.node_id, n.score or 0.0, self.method) for n in fusion.retrieve(bundle)]
