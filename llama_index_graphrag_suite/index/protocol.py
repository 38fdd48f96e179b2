"""What a method may read from an index: the declared interface between ``methods/`` and ``index/``.

:class:`~.graph_index.GraphRAGIndex` implements it (``reader.py``: read-only properties over its
``state``), and so does a read-only view of it (``index.view(snapshot=...)``: the same tables, another graph
if wanted). A test walks every module under ``methods/`` and ``langgraph_agents/`` and fails if a method reads
an index member that is not listed here, so the interface cannot drift silently. Methods only read: every
mutation goes through the index's own ``insert`` / ``delete`` / ``persist`` (``tests/index/test_state.py``
fails on a module outside ``index/`` that writes an index).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from ..config import IndexConfig
from ..extractors.entity_stats import EntityStatistics
from ..graph.snapshot import GraphSnapshot
from .bm25 import BM25Table
from .records import ChunkRecord, EntityRecord, FactRecord
from .vectors import VectorTable

__all__ = ["GraphIndexReader"]


@runtime_checkable
class GraphIndexReader(Protocol):
    """The read side of the shared index (see the module docstring)."""

    config: IndexConfig
    """How the index was built (chunking, entity threshold, synonym settings)."""
    build_info: dict[str, Any]
    """What the build measured (seconds, LLM calls, ``capitalised_per_100_words`` of the corpus); read only."""
    embed_model: Any
    """The LlamaIndex embedding model of every vector table (methods embed their own texts with it)."""
    property_graph_store: Any
    """The LlamaIndex ``PropertyGraphStore`` the tables are mirrored into (node descriptions, sub-retrievers)."""

    chunks: dict[str, ChunkRecord]
    """Chunk id -> record (text, document id, title, entity keys)."""
    entities: dict[str, EntityRecord]
    """Entity key -> record (surface form, supporting chunk ids); ``snapshot`` rows follow this order."""
    facts: dict[str, FactRecord]
    """Fact id -> record (subject, predicate, object, sentence text, supporting chunks)."""
    fact_ids: list[str]
    """``list(facts)``: what ``snapshot.edge_fact`` indexes."""

    snapshot: GraphSnapshot
    """The CSR graph over entities then chunks: relation, contains and synonym edges."""
    bm25: BM25Table
    """BM25 over chunk texts, scores in :attr:`chunk_order`."""
    chunk_vectors: VectorTable
    """One unit vector per chunk (faiss)."""
    entity_vectors: VectorTable
    """One unit vector per entity name."""
    fact_vectors: VectorTable
    """One unit vector per distinct fact text (facts sharing a sentence share a row)."""
    entity_vector_rows: np.ndarray
    """Row of each entity (in ``entities`` order) in :attr:`entity_vectors`."""
    fact_text_rows: np.ndarray
    """Row of each fact's text (in :attr:`fact_ids` order) in :attr:`fact_vectors`."""

    @property
    def chunk_order(self) -> list[str]:
        """Chunk ids in the order of BM25 and dense score arrays."""

    @property
    def chunk_position(self) -> dict[str, int]:
        """Chunk id -> its position in :attr:`chunk_order`."""

    def chunk_dense_scores(self, query_vec: np.ndarray, exact: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the query with every chunk, in :attr:`chunk_order` (a large chunk table: exact near the query
        and at the positions ``exact``, estimated elsewhere; ``VectorTable.scores``)."""

    def chunk_dense_at(self, query_vec: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The exact cosines of the query with the chunks at ``positions`` of :attr:`chunk_order`."""

    def embed_query(self, query: str) -> np.ndarray:
        """The query's unit vector with :attr:`embed_model` (recent queries are remembered)."""

    def clear_query_cache(self) -> None:
        """Forget the remembered query vectors (the bench does, so each method pays for its own embeddings)."""

    def search_facts(self, query_vec: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The ``k`` facts whose text is nearest the query: ``[(fact id, cosine)]``, best first."""

    def entity_statistics(self) -> EntityStatistics:
        """Corpus n-gram statistics (AGRAG Eq. 2), for scoring a query's phrases like the index scored entities."""

    def cached(self, name: str, build: Callable[[], Any]) -> Any:
        """A structure derived from the current snapshot, built once per snapshot."""

    def reading(self) -> AbstractContextManager:
        """The shared side of the index's reader-writer lock: reads inside ``with index.reading():`` see one
        state (insert and delete wait). Re-entrant; retrievers take it around every public entry point."""

    def artefact(self, name: str, build: Callable[[], Any], load: Callable[[Path], Any] | None = None) -> Any:
        """Like :meth:`cached`, and saved by ``persist`` / reused after ``load`` when it has ``save(folder)``."""

    def as_networkx(self, around: str | None = None, hops: int = 2, limit: int = 500) -> Any:
        """Entities, chunks and their edges as a ``networkx.MultiDiGraph`` (``export.py``); with ``around``,
        only the nodes within ``hops`` of that entity (at most ``limit``)."""
