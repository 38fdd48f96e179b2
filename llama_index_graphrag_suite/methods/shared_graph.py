"""Per-snapshot structures that several methods read, cached once on the index under one name each.

HippoRAG 2 and AGRAG walk the same weighted transition matrix (Eq. 10 on ``snapshot.adjacency("weight")``):
one copy serves both (at 1,000,000 passages it is 267 MB). A2RAG's binary one (Eq. 9) has the same entries when
every edge weight is positive: it is that matrix's node order and neighbour lists with no values (one build, one
reverse Cuthill-McKee ordering, one copy of the lists). Chunk positions are looked up through the
snapshot's node rows (one int32 per node) rather than a dict of every chunk id.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Iterable

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["ChunkPositions", "binary_transition", "chunk_position_of_row", "chunk_positions", "chunk_rows",
           "entity_rows", "node_rows", "table_keys", "weighted_transition"]


def weighted_transition(index):
    """:func:`~..graph.ppr.transition_matrix` of the snapshot's weighted adjacency (parallel edges summed)."""
    from ..graph.ppr import transition_matrix  # scipy's csgraph: only where a walk runs

    return index.cached("transition.weight", lambda: transition_matrix(index.snapshot.adjacency("weight")))


def binary_transition(index) -> tuple:
    """``(transition, degree)``: :func:`~..graph.ppr.transition_matrix` of A2RAG's binary adjacency (1 where any
    edge joins two nodes) and each node's binary degree (float64, node order). Taken from
    :func:`weighted_transition` when every edge weight is positive and that one has the symmetric (fast) form:
    the same entries, so the same node order, lists and results, without a second copy; else built."""
    from ..graph.ppr import binary_adjacency, transition_matrix

    def build():
        snap = index.snapshot
        if snap.num_edges and bool((snap.edge_weight > 0).all()):
            weighted = weighted_transition(index)
            if weighted.fast is not None:
                return _binary_of(weighted)
        adj = binary_adjacency(snap.adjacency("ones"))
        return transition_matrix(adj), np.asarray(adj.sum(axis=1)).ravel()

    return index.cached("transition.binary", build)


def _binary_of(weighted) -> tuple:
    """The binary transition over the entries of ``weighted`` (a fast form): its order, lists and row chunks shared,
    every value 1, each degree its row's entry count."""
    import dataclasses

    import scipy.sparse as sp

    from ..graph.ppr import Transition

    f = weighted.fast
    counts = np.diff(f.indptr).astype(np.float64)  # per position
    inv = np.divide(1.0, counts, out=np.zeros_like(counts), where=counts > 0)
    if f.matrix is None:  # the compiled kernels: no values stored when all are 1
        form = dataclasses.replace(f, data=None, inv_degree=inv)
    else:  # scipy's: a float64 matrix of ones over the same lists
        ones = np.ones(f.indices.size)
        form = dataclasses.replace(f, data=ones, inv_degree=inv,
                                   matrix=sp.csr_matrix((ones, f.indices, f.indptr), shape=f.matrix.shape, copy=False))
    if "position" in f.__dict__:  # the inverse of the shared order, when already made
        form.__dict__["position"] = f.__dict__["position"]
    degree = np.empty_like(counts)
    degree[f.order] = counts
    return Transition(dangling=weighted.dangling, fast=form), degree


def chunk_rows(index) -> np.ndarray:
    """The snapshot row of every chunk, in ``index.chunk_order`` (KeyError naming a chunk the snapshot lacks)."""
    def build() -> np.ndarray:
        rows = node_rows(index, index.chunk_order, len(index.entities))
        if (rows < 0).any():
            raise KeyError(index.chunk_order[int(np.flatnonzero(rows < 0)[0])])
        return rows

    return index.cached("chunk_rows", build)


def table_keys(table) -> tuple[list, "pa.Array"]:
    """A table's keys in order, as a list and as an Arrow string array (a loaded table's own, else made)."""
    import pyarrow as pa

    from ..index.row_columns import RowColumns

    if isinstance(table, RowColumns) and table.key_list() is not None:
        return table.key_list(), table.key_array()
    keys = list(table)
    return keys, pa.array(keys, pa.string())


def node_rows(index, ids: list, start: int) -> np.ndarray:
    """The snapshot row of each of ``ids`` (-1: none). The snapshot lists the entities, then ``chunk_order``: when
    ``ids`` are its nodes ``start, start + 1, ...`` and no entity key is a chunk id too (the lookup would give the
    chunk's row), those numbers are the rows, found by two whole-list steps instead of a lookup per id (1.2 s for
    300,000 chunks)."""
    import pyarrow.compute as pc

    snap = index.snapshot
    if snap.node_ids[start:start + len(ids)] == ids:
        shared = pc.is_in(table_keys(index.entities)[1], value_set=table_keys(index.chunks)[1])
        if not pc.any(shared).as_py():
            return np.arange(start, start + len(ids), dtype=np.int64)
    return snap.rows_or_missing(ids)


def entity_rows(index) -> np.ndarray:
    """The snapshot row of every entity, in ``index.entities`` order (-1: not in the snapshot)."""
    return node_rows(index, table_keys(index.entities)[0], 0)


def chunk_position_of_row(index) -> np.ndarray:
    """Per snapshot row: the chunk's position in ``index.chunk_order``, -1 for entities (and chunks not in it)."""
    def build() -> np.ndarray:
        snap = index.snapshot
        out = np.full(snap.num_nodes, -1, np.int32 if len(index.chunk_order) < 2**31 else np.int64)
        out[chunk_rows(index)] = np.arange(len(index.chunk_order))
        return out

    return index.cached("chunk_position_of_row", build)


def chunk_positions(index, chunk_ids: Iterable[str]) -> np.ndarray:
    """Positions in ``index.chunk_order`` of the chunks ``chunk_ids`` (int64, -1 for an id that is no chunk)."""
    snap, by_row = index.snapshot, chunk_position_of_row(index)
    rows = snap.rows_or_missing(list(chunk_ids))
    return np.where(rows >= 0, by_row[rows].astype(np.int64), -1)


class ChunkPositions(Mapping):
    """``index.chunk_position`` (chunk id -> position in ``index.chunk_order``) read through the snapshot's rows:
    the same mapping without a dict of every chunk id (123 MB at 1,000,000 passages)."""

    def __init__(self, index) -> None:
        self._snap, self._by_row, self._order = index.snapshot, chunk_position_of_row(index), index.chunk_order

    def get(self, chunk_id, default=None):
        snap = self._snap
        if isinstance(chunk_id, str) and snap.has(chunk_id):
            position = int(self._by_row[snap.row(chunk_id)])
            if position >= 0:
                return position
        return default

    def __getitem__(self, chunk_id: str) -> int:
        position = self.get(chunk_id)
        if position is None:
            raise KeyError(chunk_id)
        return position

    def __contains__(self, chunk_id: object) -> bool:
        return self.get(chunk_id) is not None

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)
