"""The graph snapshot every retriever reads: nodes and edges as numpy arrays, adjacency as CSR.

Node rows: entities first, then chunks (passage nodes). Edges are undirected for traversal; each
edge is stored once in the edge arrays and twice (both directions) in the CSR neighbour lists.

Edge kinds: ``RELATION`` (entity-entity fact; ``edge_fact`` names the fact row), ``CONTAINS``
(chunk-entity), ``SYNONYM`` (entity-entity, ``edge_weight`` = cosine).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable

import numpy as np
import scipy.sparse as sp

ENTITY, CHUNK = 0, 1
RELATION, CONTAINS, SYNONYM = 0, 1, 2
EDGE_KIND_NAMES = {RELATION: "relation", CONTAINS: "contains", SYNONYM: "synonym"}


@dataclass
class GraphSnapshot:
    node_ids: list[str]  # entity keys, then chunk ids
    node_kind: np.ndarray  # int8, ENTITY or CHUNK
    edge_src: np.ndarray  # int32 node rows
    edge_dst: np.ndarray
    edge_kind: np.ndarray  # int8
    edge_fact: np.ndarray  # int32 fact row for RELATION edges, -1 otherwise
    edge_weight: np.ndarray  # float32
    # node id -> row, or -1: a loaded index's tables answer from the key lookups they keep (no third dict of every
    # entity and chunk); otherwise a dict made on first use
    find: Callable[[str], int] | None = field(default=None, repr=False, compare=False)
    _row: dict[str, int] | None = field(default=None, repr=False, compare=False)

    def _find(self, node_id: str) -> int:
        if self.find is not None:
            return self.find(node_id)
        if self._row is None:
            self._row = {n: i for i, n in enumerate(self.node_ids)}
        return self._row.get(node_id, -1)

    @property
    def num_nodes(self) -> int:
        return len(self.node_ids)

    @property
    def num_edges(self) -> int:
        return int(self.edge_src.shape[0])

    def row(self, node_id: str) -> int:
        row = self._find(node_id)
        if row < 0:
            raise KeyError(node_id)
        return row

    def rows(self, node_ids) -> np.ndarray:
        return np.fromiter(map(self.row, node_ids), dtype=np.int64)

    def has(self, node_id: str) -> bool:
        return self._find(node_id) >= 0

    def rows_or_missing(self, node_ids) -> np.ndarray:
        """Each id's row, -1 where the snapshot has no such node (one lookup per id)."""
        return np.fromiter(map(self._find, node_ids), dtype=np.int64, count=len(node_ids))

    @cached_property
    def neighbours(self) -> sp.csr_matrix:
        """CSR matrix whose row i lists i's neighbours (``indices``) and the edge ids (``data`` - 1).

        Edge ids are stored +1 so that edge 0 is not an implicit zero, as int32 while they fit (the matrix is
        shared by several methods: 94 MB less at 1,000,000 passages than int64). Parallel edges between the
        same pair (two facts) stay separate entries.
        """
        n, m = self.num_nodes, self.num_edges
        rows = np.concatenate([self.edge_src, self.edge_dst])
        cols = np.concatenate([self.edge_dst, self.edge_src])
        eid = np.concatenate([np.arange(m), np.arange(m)]) + 1
        # by row, then column, parallel edges in edge order: one stable sort of a combined key gives lexsort's
        # (cols, rows) order at a third of its time (23M entries at 1,000,000 passages: ~6 s against ~20)
        order = np.argsort(rows.astype(np.int64) * max(n, 1) + cols, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
        return sp.csr_matrix((eid[order].astype(np.int32 if m < 2**31 - 1 else np.int64), cols[order], indptr),
                             shape=(n, n))

    def adjacency(self, weight: str = "ones") -> sp.csr_matrix:
        """Symmetric adjacency; ``weight="ones"`` counts parallel edges, ``"weight"`` sums edge weights."""
        w = np.ones(self.num_edges, np.float64) if weight == "ones" else self.edge_weight.astype(np.float64)
        n = self.num_nodes
        a = sp.coo_matrix(
            (np.concatenate([w, w]), (np.concatenate([self.edge_src, self.edge_dst]), np.concatenate([self.edge_dst, self.edge_src]))),
            shape=(n, n),
        )
        return a.tocsr()

    def neighbours_of(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """(neighbour rows, edge ids) of one node."""
        nb = self.neighbours
        lo, hi = nb.indptr[row], nb.indptr[row + 1]
        return nb.indices[lo:hi], nb.data[lo:hi] - 1

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "node_kind": self.node_kind,
            "edge_src": self.edge_src,
            "edge_dst": self.edge_dst,
            "edge_kind": self.edge_kind,
            "edge_fact": self.edge_fact,
            "edge_weight": self.edge_weight,
        }

    @classmethod
    def from_edges(cls, node_ids: list[str], num_entities: int, relations: tuple[np.ndarray, np.ndarray],
                   contains: tuple[np.ndarray, np.ndarray],
                   synonyms: tuple[np.ndarray, np.ndarray, np.ndarray],
                   find: Callable[[str], int] | None = None) -> "GraphSnapshot":
        """A snapshot from endpoint rows per edge kind, in edge order: relations (subject, object; edge i is
        fact row i), contains (chunk, entity), synonyms (a, b, cosine). Whole arrays are concatenated, so
        building costs a few numpy calls, not Python objects per edge. ``find``: node id -> row (-1: none), when
        the caller has such a lookup already."""
        rel_src, rel_dst = (np.asarray(a, np.int32) for a in relations)
        con_src, con_dst = (np.asarray(a, np.int32) for a in contains)
        syn_src, syn_dst = (np.asarray(a, np.int32) for a in synonyms[:2])
        n_rel, n_con, n_syn = rel_src.size, con_src.size, syn_src.size
        node_kind = np.full(len(node_ids), CHUNK, np.int8)
        node_kind[:num_entities] = ENTITY
        return cls(
            node_ids=node_ids, node_kind=node_kind,
            edge_src=np.concatenate([rel_src, con_src, syn_src]),
            edge_dst=np.concatenate([rel_dst, con_dst, syn_dst]),
            edge_kind=np.concatenate([np.full(n_rel, RELATION, np.int8), np.full(n_con, CONTAINS, np.int8),
                                      np.full(n_syn, SYNONYM, np.int8)]),
            edge_fact=np.concatenate([np.arange(n_rel, dtype=np.int32), np.full(n_con + n_syn, -1, np.int32)]),
            edge_weight=np.concatenate([np.ones(n_rel + n_con, np.float32), np.asarray(synonyms[2], np.float32)]),
            find=find,
        )

    @classmethod
    def from_arrays(cls, node_ids: list[str], arrays) -> "GraphSnapshot":
        snap = cls(
            node_ids=list(node_ids),
            node_kind=np.asarray(arrays["node_kind"], np.int8),
            edge_src=np.asarray(arrays["edge_src"], np.int32),
            edge_dst=np.asarray(arrays["edge_dst"], np.int32),
            edge_kind=np.asarray(arrays["edge_kind"], np.int8),
            edge_fact=np.asarray(arrays["edge_fact"], np.int32),
            edge_weight=np.asarray(arrays["edge_weight"], np.float32),
        )
        snap.validate()
        return snap

    def validate(self) -> None:
        n, m = self.num_nodes, self.num_edges
        if self.node_kind.shape != (n,):
            raise ValueError(f"node_kind has {self.node_kind.shape[0]} rows for {n} nodes")
        for name in ("edge_dst", "edge_kind", "edge_fact", "edge_weight"):
            if getattr(self, name).shape != (m,):
                raise ValueError(f"{name} has the wrong length")
        if m and (min(self.edge_src.min(), self.edge_dst.min()) < 0 or max(self.edge_src.max(), self.edge_dst.max()) >= n):
            raise ValueError("edge endpoint out of range")
