"""Any of our methods as a ``PropertyGraphIndex`` sub-retriever, to combine with LlamaIndex's own.

    from llama_index.core.indices.property_graph import PGRetriever, VectorContextRetriever
    ours = GraphRAGSubRetriever.from_index(pg_index, method="agrag", top_k=5)
    theirs = VectorContextRetriever(pg_index.property_graph_store, vector_store=pg_index.vector_store,
                                    embed_model=embed)
    retriever = PGRetriever(sub_retrievers=[ours, theirs])       # or pg_index.as_retriever(sub_retrievers=[...])

``PGRetriever`` concatenates its sub-retrievers' nodes and removes duplicates by text. Our nodes are
whole chunks (with their chunk and document ids in metadata), so ``include_text`` defaults to off:
LlamaIndex's "add source text" step would look the chunk's *document* up in the store and find nothing.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..index.derive import graph_index_of
from ..registry import get_retriever

__all__ = ["GraphRAGSubRetriever"]


class GraphRAGSubRetriever(BasePGRetriever):
    """Wraps one of our retrievers (built over the same store) in LlamaIndex's sub-retriever contract."""

    def __init__(self, graph_store, retriever, include_text: bool = False, **kwargs: Any) -> None:
        self.retriever = retriever
        super().__init__(graph_store=graph_store, include_text=include_text, **kwargs)

    @classmethod
    def from_index(cls, index, method: str = "agrag", **params: Any) -> "GraphRAGSubRetriever":
        """Build the named method over ``index`` (a ``PropertyGraphIndex`` or a ``GraphRAGIndex``)."""
        graph_index = graph_index_of(index)
        return cls(graph_index.property_graph_store, get_retriever(graph_index, method, **params))

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.retriever.retrieve(query_bundle)

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # PGRetriever runs sub-retrievers through this path even for a sync retrieve(); ours is off-loop.
        return await self.retriever.aretrieve(query_bundle)
