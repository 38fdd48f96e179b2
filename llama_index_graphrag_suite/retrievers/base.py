"""What every retriever in this project returns: chunk nodes in rank order, plus at most one evidence node.

Chunk nodes: ``TextNode(id_=chunk id, text=chunk text)`` with metadata ``kind="chunk"``, ``chunk_id``,
``doc_id``, ``title``, ``method``, and a SOURCE relationship to the document.
Evidence node: ``kind="evidence"``, a readable text and the method's structure in JSON-serialisable
metadata; its id is a content hash, so it is unique and stable.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeRelationship, NodeWithScore, QueryBundle, RelatedNodeInfo, TextNode


def chunk_node(index, chunk_id: str, score: float, method: str, **extra: Any) -> NodeWithScore:
    rec = index.chunks[chunk_id]
    node = TextNode(
        id_=chunk_id,
        text=rec.text,
        metadata={"kind": "chunk", "chunk_id": chunk_id, "doc_id": rec.doc_id, "title": rec.title, "method": method, **extra},
        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=rec.doc_id)},
    )
    # The synthesizer should see the text, not our bookkeeping.
    node.excluded_llm_metadata_keys = [k for k in node.metadata if k != "title"]
    node.excluded_embed_metadata_keys = list(node.metadata)
    return NodeWithScore(node=node, score=float(score))


def evidence_node(method: str, text: str, evidence: dict[str, Any], score: float | None = None) -> NodeWithScore:
    payload = json.dumps(evidence, sort_keys=True, default=str)
    digest = hashlib.sha1(f"{method}\n{text}\n{payload}".encode()).hexdigest()[:16]
    node = TextNode(id_=f"evidence-{method}-{digest}", text=text,
                    metadata={"kind": "evidence", "method": method, "evidence": json.loads(payload)})
    node.excluded_llm_metadata_keys = list(node.metadata)
    node.excluded_embed_metadata_keys = list(node.metadata)
    return NodeWithScore(node=node, score=score)


class GraphIndexRetriever(BaseRetriever):
    """Base for retrievers over a :class:`GraphRAGIndex`: holds the index and top_k, runs async off-loop."""

    method: str = "base"

    def __init__(self, index, top_k: int = 5, callback_manager=None, verbose: bool = False):
        if top_k < 1:
            raise ValueError("top_k must be at least 1")
        from llama_index.core import PropertyGraphIndex

        if isinstance(index, PropertyGraphIndex):  # built with our extractors: derive the artefacts once
            from ..entrypoints import graph_index_of

            index = graph_index_of(index)
        self.index = index
        self.top_k = top_k
        super().__init__(callback_manager=callback_manager, verbose=verbose)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # Retrieval is CPU-bound numpy/faiss work: keep it off the event loop.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def query_vector(self, query_bundle: QueryBundle):
        """The query embedding with the index's model (a bundle's precomputed embedding may come from another model)."""
        return self.index.embed_query(query_bundle.query_str)


class EvidenceFirst(BaseNodePostprocessor):
    """Moves the evidence node in front of the chunks, so a prompt sees the reasoning before the passages."""

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceFirst"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return sorted(nodes, key=lambda n: n.node.metadata.get("kind") != "evidence")  # stable: chunk order kept


class EvidenceLast(BaseNodePostprocessor):
    """Moves the evidence node after the chunks (PathRAG Eq. 6 puts the most reliable path at the very end)."""

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceLast"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return sorted(nodes, key=lambda n: n.node.metadata.get("kind") == "evidence")  # stable: chunk order kept
