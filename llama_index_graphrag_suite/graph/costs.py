"""Per-query cost matrices over a fixed edge list, without re-sorting the graph on every query.

AGRAG prices every edge by its similarity to the query (Eq. 14), so the cost matrix changes with
each query while the graph does not. :class:`PairCostIndex` does the sorting once: it groups the
edges by unordered node pair and lays out the symmetric CSR structure. For a query, ``matrix(costs)``
takes the cheapest edge of every pair (parallel facts between two entities) and fills the CSR data
in a few vectorised numpy steps.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

ZERO_COST = 1e-12  # scipy's csgraph reads a stored 0 as "no edge": free edges get this instead


class PairCostIndex:
    def __init__(self, src: np.ndarray, dst: np.ndarray, num_nodes: int):
        src = np.asarray(src, np.int64)
        dst = np.asarray(dst, np.int64)
        if src.shape != dst.shape:
            raise ValueError("src and dst differ in length")
        self.num_nodes = num_nodes
        self.num_edges = src.size
        lo, hi = np.minimum(src, dst), np.maximum(src, dst)
        keep = lo != hi  # self-loops never help a path
        key = lo * num_nodes + hi
        order = np.argsort(np.where(keep, key, -1), kind="stable")
        order = order[keep[order]]
        sorted_keys = key[order]
        starts = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if order.size else np.empty(0, np.int64)
        self._order = order  # edge ids grouped by pair
        self._starts = starts  # first position of each pair in _order
        self._group = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, order.size]))  # pair of each position
        pair_lo, pair_hi = lo[order[starts]], hi[order[starts]]
        self.pair_lo, self.pair_hi = pair_lo, pair_hi
        # Symmetric CSR: every pair twice (lo->hi and hi->lo), rows sorted.
        rows = np.concatenate([pair_lo, pair_hi])
        cols = np.concatenate([pair_hi, pair_lo])
        self._pair_of_entry = np.concatenate([np.arange(pair_lo.size), np.arange(pair_lo.size)])
        entry_order = np.lexsort((cols, rows))
        self._pair_of_entry = self._pair_of_entry[entry_order]
        self._indices = cols[entry_order].astype(np.int32)
        counts = np.bincount(rows, minlength=num_nodes)
        self._indptr = np.r_[0, np.cumsum(counts)].astype(np.int64)

    @property
    def num_pairs(self) -> int:
        return int(self.pair_lo.size)

    def cheapest(self, edge_costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair: the lowest cost among its parallel edges, and the id of that edge."""
        c = np.asarray(edge_costs, np.float64)[self._order]
        if c.size == 0:
            return c, self._order
        pair_cost = np.minimum.reduceat(c, self._starts)
        # the edge achieving it: first position in each group whose cost equals the group minimum
        group = self._group
        is_min = c == pair_cost[group]
        first = np.full(self._starts.size, -1, np.int64)
        pos = np.flatnonzero(is_min)
        first[group[pos[::-1]]] = pos[::-1]  # reversed so the earliest position wins
        return pair_cost, self._order[first]

    def matrix(self, edge_costs: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
        """Symmetric CSR of the cheapest cost per pair (min ZERO_COST), and the edge id per pair."""
        pair_cost, best_edge = self.cheapest(edge_costs)
        data = np.maximum(pair_cost, 0.0)[self._pair_of_entry] + ZERO_COST
        n = self.num_nodes
        return sp.csr_matrix((data, self._indices, self._indptr), shape=(n, n)), best_edge

    def pair_id(self, u: int, v: int) -> int:
        """Index of the pair {u, v} (for mapping a tree edge back to its cheapest edge); -1 if absent."""
        lo, hi = min(u, v), max(u, v)
        start, end = self._indptr[lo], self._indptr[lo + 1]
        at = start + np.searchsorted(self._indices[start:end], hi)
        if at < end and self._indices[at] == hi:
            return int(self._pair_of_entry[at])
        return -1
