"""AGRAG's per-snapshot structures (cached on the index by ``retriever.AGRAGRetriever._graph``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...graph.costs import PairCostIndex

__all__ = ["AGRAGGraph", "SynonymBlock", "SynonymEnds", "synonym_block", "synonym_ends"]

#: An unlisted entity table gets a :class:`SynonymBlock` when its synonym-edge entities are at most this share of
#: its rows (above it, the copy would cost nearly the table and save little of the product).
BLOCK_MAX_SHARE = 0.5


@dataclass
class AGRAGGraph:
    """Per-snapshot structures (cached on the index): transition matrix and cost layout with the pseudo node.

    Eq. 14 prices edges from a few per-query numbers, the *slots* of :class:`PairCostIndex`: one per fact
    (fact edges), one per node ((1 - cos) / 2 of an entity: a synonym edge is the cheaper of its two ends;
    (1 - hybrid) / 2 of a chunk: its contains edges), and one for the pseudo edges. Slot layout:
    ``[0, num_facts)`` facts, ``num_facts + node row`` nodes, ``num_facts + num_nodes`` the pseudo cost.
    """

    transition: Any
    pairs: PairCostIndex
    chunk_rows: np.ndarray  # snapshot rows of index.chunk_order
    num_edges: int  # snapshot edges; edge ids >= this are pseudo edges (one per chunk, in chunk_order)
    num_facts: int
    num_nodes: int  # snapshot nodes (the pseudo node is this row)
    synonyms: "SynonymEnds | None" = None  # a listed entity table's synonym-edge ends (see _entity_cosines)
    fact_text_rows: np.ndarray | None = None  # index.fact_text_rows, contiguous (read by compiled searches)
    chunk_mask: np.ndarray | None = None  # per node row (and the pseudo node): whether it is in chunk_rows
    chunk_slots: np.ndarray | None = None  # the slots of chunk_rows (num_facts + row)
    # per thread, the arrays of every slot and every node a query writes (slots, PageRank scores), kept for its
    # next query: at 1M passages a fresh array's pages cost their first write each query
    scratch: threading.local = field(default_factory=threading.local)
    synonym_block: "SynonymBlock | None" = None  # an unlisted table's synonym-edge entities, their vectors copied

    def buffer(self, name: str, size: int) -> np.ndarray:
        """This thread's float64 array ``name`` of ``size`` (its contents are the last query's)."""
        kept = getattr(self.scratch, name, None)
        if kept is None or kept.size != size:
            kept = np.empty(size)
            setattr(self.scratch, name, kept)
        return kept


@dataclass
class SynonymEnds:
    """The entities on synonym edges (the only edges an entity slot prices), grouped by their vector list."""

    nodes: np.ndarray  # snapshot rows, in list order
    rows: np.ndarray  # their entity-vector rows
    lists: np.ndarray  # their list
    bounds: np.ndarray  # list l's entities: [bounds[l], bounds[l + 1])
    slots: np.ndarray  # their slots (num_facts + node row)


def _synonym_entities(vector_rows, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The snapshot rows of the entities on the synonym edges ``src``-``dst`` (sorted, once each) and their
    entity-vector rows."""
    nodes = np.unique(np.r_[src, dst])
    return nodes, np.asarray(vector_rows, np.int64)[nodes]


def synonym_ends(table, vector_rows, src: np.ndarray, dst: np.ndarray, num_facts: int) -> SynonymEnds | None:
    """For a listed (large) entity ``table``: the entities of the synonym edges ``src``-``dst`` (snapshot rows)
    grouped by list; else None."""
    if table is None or not table.listed:
        return None
    nodes, rows = _synonym_entities(vector_rows, src, dst)
    lists = np.asarray(table.lists.lists, np.int64)[rows]
    order = np.argsort(lists, kind="stable")
    bounds = np.searchsorted(lists[order], np.arange(len(table.lists.centroids) + 1))
    return SynonymEnds(nodes[order], rows[order], lists[order], bounds, num_facts + nodes[order])


@dataclass
class SynonymBlock:
    """The synonym-edge entities of an unlisted entity table, their vectors copied into one matrix (row order): a
    query's entity costs are one product over them, not over every entity (2wiki_retrieval101: 9,244 of 31,774
    rows, 0.6 ms instead of 2.0), the same cosines bit for bit there (101 questions)."""

    slots: np.ndarray  # their slots (num_facts + node row), in the matrix's order
    matrix: np.ndarray  # float32, C-contiguous: their vectors


def synonym_block(table, vector_rows, src: np.ndarray, dst: np.ndarray, num_facts: int) -> SynonymBlock | None:
    """The :class:`SynonymBlock` of the synonym edges ``src``-``dst`` (snapshot rows) when ``table`` (the entity
    vectors) is unlisted and they are few enough (:data:`BLOCK_MAX_SHARE`); else None."""
    if table is None or table.listed:
        return None
    nodes, rows = _synonym_entities(vector_rows, src, dst)
    if nodes.size > BLOCK_MAX_SHARE * len(table.ids):
        return None
    order = np.argsort(rows, kind="stable")
    return SynonymBlock(num_facts + nodes[order], np.ascontiguousarray(table.at(rows[order]), np.float32))


def _chunk_loop(slots, at, hybrid):
    for i in range(at.size):
        slots[at[i]] = (1.0 - hybrid[i]) / 2.0


_compiled: list = []
COMPILED_MIN_CHUNKS = 100_000  # below it numpy's passes cost no more than the call


def write_chunk_slots(slots: np.ndarray, at: np.ndarray, hybrid: np.ndarray) -> None:
    """``slots[at] = (1 - hybrid) / 2`` (Eq. 14's contains-edge costs; float64) in one compiled pass: at a million
    chunks numpy's form writes two temporary arrays per query. The same values either way."""
    if not _compiled:
        try:
            from ...graph.ppr_fast import cached_njit

            _compiled.append(cached_njit(_chunk_loop))
        except Exception:  # numba not importable
            _compiled.append(None)
    hybrid = np.ascontiguousarray(hybrid, np.float64)
    if _compiled[0] is None or at.size < COMPILED_MIN_CHUNKS:
        costs = np.subtract(1.0, hybrid)
        costs /= 2.0
        slots[at] = costs
        return
    _compiled[0](slots, np.ascontiguousarray(at), hybrid)
