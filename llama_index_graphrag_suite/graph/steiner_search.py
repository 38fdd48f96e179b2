"""Mehlhorn's Steiner tree by compiled Dijkstra searches, for large query cost graphs (``graph/steiner.py``).

``steiner.py``'s searches are vectorised numpy rounds plus scipy's Dijkstra on subgraphs: exact to the tie on any
graph, but every row entry they read costs a few numpy passes, a subgraph copy and scipy's set-up. On a
300,000-passage index (6.8 million row entries) a search reads up to half a million entries, and that was
AGRAG's slowest step. Here the same steps run as numba-compiled loops over the query's :class:`~.costs.QueryCosts`
(or any :class:`~.costs.CSRCosts`), pricing each row where the search first scans it, into the query's own
entry-cost buffer (so the MCMI expansion and the evidence read the same prices):

1. **Voronoi search.** One multi-source Dijkstra from the terminals (binary heap; ties by node id) settles nodes
   in order of distance and records each node's nearest terminal. When it settles the later end of an edge
   (u, v) whose ends have different nearest terminals, it has the G1' candidate d(u) + c(u, v) + d(v) (summed
   from the lower node id, as ``steiner.py`` sums it). Before settling a node at distance D, every node nearer
   than D is settled, so every G1' edge of weight below 2D is known (both ends of such an edge lie within half
   its weight: ``steiner.py``'s module docstring): when the known edges below 2D join every terminal, their MST
   is the MST of the whole G1' and the search stops. It also stops before reading more than ``max_entries``
   row entries; the MST of the edges below 2D is then a spanning forest of the terminals it joined.
2. **Paths, without another search.** Mehlhorn (1988) shows that every MST of G1' is an MST of the complete
   distance graph of the terminals (KMB's, the graph H of AGRAG's Algorithm 3, lines 3-8). As G1''s weight
   w(s, t) is at least the distance d(s, t), the two MSTs' equal totals give w = d on every MST edge: the path
   the Voronoi search found for an MST edge (s .. u, the boundary edge (u, v), v .. t, along the search's
   shortest-path trees) is a shortest s-t path, the P(s, t) Algorithm 3 adds. Among equal-cost paths it may be
   another one than the scipy search's. (A search for each path, as ``steiner.py`` runs, cost as much as the
   Voronoi search on wide searches.)

The MST of the union of the paths and the pruning are ``steiner.py``'s. On graphs without equal-cost
alternatives the tree is the whole-graph search's. Scratch arrays (one
distance, terminal and state per node) are kept per graph and reset where a search wrote, not made per query.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

from .costs import ZERO_COST, CostGraph, CSRCosts, QueryCosts
from .ppr_fast import cached_njit

__all__ = ["compiled_paths"]

_SLACK = 1e-9  # as steiner.py: a G1' edge must be below 2 D (1 - _SLACK) to count as found
_IDLE = 1  # idle scratch sets kept per graph (17 bytes a node; a concurrent query makes its own)
_NO_BUDGET = np.iinfo(np.int64).max


_jit = cached_njit


def _jit_inline(fn):
    """``cached_njit``, inlined into its callers by numba (a slot read happens per entry a search prices: a call with
    its arrays passed cost more than the read)."""
    import numba

    try:
        return numba.njit(nogil=True, cache=True, inline="always")(fn)
    except Exception:  # nowhere to write a cache
        return numba.njit(nogil=True, inline="always")(fn)


# ------------------------------------------------------------------------------------------ compiled kernels
# Every array is passed in (numba sees no Python objects); the kernels call each other as compiled globals.

@_jit_inline
def _value(s, w, cos, cos_rows, cos_lists, list_cos):
    """Slot ``s``'s value, as ``QueryCosts.slot_values``: below ``cos_rows.size`` derived from its cosine,
    ``(1 - c) / 2`` in the cosines' dtype (a float32 difference is rounded to float32, as numpy computes it), else
    ``w[s]``. The cosine is as ``CosineSlots.values`` reads it: its list's (``list_cos``) unless NaN, else ``cos``."""
    if s < cos_rows.size:
        if cos_lists.size:
            c = list_cos[cos_lists[s]]
            if np.isnan(c):
                c = cos[cos_rows[s]]
        else:
            c = cos[cos_rows[s]]
        # float32 constants: with a float32 cosine numba computes in float32 (numpy's dtype for a float32 array and
        # a Python float), with a float64 one in float64
        return np.float64((np.float32(1.0) - c) / np.float32(2.0))
    return w[s]


@_jit_inline
def _stored(s, w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b, cos, cos_rows, cos_lists, list_cos):
    """Stored cost of slot ``s``, as ``QueryCosts._stored``: max(value, 0) + ZERO_COST, or a multi-edge pair's
    minimum over its edges (computed once into ``pair_min``, which the query's QueryCosts shares)."""
    if s < ns:
        x = _value(s, w, cos, cos_rows, cos_lists, list_cos)
        return max(x, 0.0) + ZERO_COST
    m = s - ns
    if np.isnan(pair_min[m]):
        end = multi_starts[m + 1] if m + 1 < multi_starts.size else multi_edges.size
        best = np.inf
        for k in range(multi_starts[m], end):
            e = multi_edges[k]
            best = min(best, max(_value(slot_a[e], w, cos, cos_rows, cos_lists, list_cos), 0.0) + ZERO_COST,
                       max(_value(slot_b[e], w, cos, cos_rows, cos_lists, list_cos), 0.0) + ZERO_COST)
        pair_min[m] = best
    return pair_min[m]


@_jit
def _price_row(u, indptr, entry_a, entry_b, two, w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b,
               cos, cos_rows, cos_lists, list_cos, data, priced):
    """Price row ``u``'s entries into ``data`` unless it is priced; returns how many entries it has."""
    lo, hi = indptr[u], indptr[u + 1]
    if not priced[u]:
        for e in range(lo, hi):
            c = _stored(entry_a[e], w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b, cos, cos_rows,
                        cos_lists, list_cos)
            if two[e]:
                c = min(c, _stored(entry_b[e], w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b, cos,
                                   cos_rows, cos_lists, list_cos))
            data[e] = c
        priced[u] = True
    return hi - lo


@_jit
def _heap_push(keys, vals, size, key, val):
    """Push (key, val) on a binary min-heap ordered by key, then val; the arrays double when full."""
    if size == keys.size:
        k2, v2 = np.empty(2 * size, keys.dtype), np.empty(2 * size, vals.dtype)
        k2[:size], v2[:size] = keys, vals
        keys, vals = k2, v2
    i = size
    while i > 0:
        p = (i - 1) >> 1
        if keys[p] < key or (keys[p] == key and vals[p] < val):
            break
        keys[i], vals[i] = keys[p], vals[p]
        i = p
    keys[i], vals[i] = key, val
    return keys, vals, size + 1


@_jit
def _heap_pop(keys, vals, size):
    """Remove the top (read by the caller at index 0); returns the new size."""
    size -= 1
    key, val = keys[size], vals[size]
    i = 0
    while True:
        c = 2 * i + 1
        if c >= size:
            break
        if c + 1 < size and (keys[c + 1] < keys[c] or (keys[c + 1] == keys[c] and vals[c + 1] < vals[c])):
            c += 1
        if key < keys[c] or (key == keys[c] and val < vals[c]):
            break
        keys[i], vals[i] = keys[c], vals[c]
        i = c
    if size > 0:
        keys[i], vals[i] = key, val
    return size


@_jit
def _spans(g1, bound):
    """``(joined, next)``: whether the G1' edges below ``bound`` join every terminal (union-find over the k x k
    matrix), and the lightest edge not below it (inf if none)."""
    k = g1.shape[0]
    parent = np.arange(k)
    parts, nxt = k, np.inf
    for a in range(k):
        for b in range(a + 1, k):
            if g1[a, b] >= bound:
                nxt = min(nxt, g1[a, b])
                continue
            ra, rb = a, b
            while parent[ra] != ra:
                ra = parent[ra]
            while parent[rb] != rb:
                rb = parent[rb]
            if ra != rb:
                parent[ra] = rb
                parts -= 1
    return parts == 1, nxt


@_jit
def _push_touched(touched, n, v):
    if n == touched.size:
        grown = np.empty(2 * n, touched.dtype)
        grown[:n] = touched
        touched = grown
    touched[n] = v
    return touched, n + 1


@_jit
def _voronoi(terms, indptr, indices, entry_a, entry_b, two, w, ns, pair_min, multi_starts, multi_edges,
             slot_a, slot_b, cos, cos_rows, cos_lists, list_cos, data, priced, dist, near, state, pred, touched, g1,
             ends, budget, first_join):
    """Step 1 (module docstring). ``state``: 0 unseen, 1 reached, 2 settled; ``g1`` (k x k, inf) gets the G1'
    candidates and ``ends[a, b]`` the node nearest terminal a on the boundary edge giving g1[a, b]; ``pred`` the
    search's shortest-path forest. ``first_join``: stop as soon as the G1' edges found join every terminal, whatever
    their weight (their spanning tree is a Steiner tree, not always the MST of the whole G1'). Returns ``(radius, entries read, stopped at the budget, touched, how many)``: every node nearer
    than ``radius`` is settled; ``touched[:n]`` were given a distance (to reset)."""
    k = terms.size
    keys, vals, size = np.empty(1024, np.float64), np.empty(1024, np.int64), 0
    n = 0
    for i in range(k):
        t = terms[i]
        dist[t], near[t], state[t], pred[t] = 0.0, i, 1, -1
        touched, n = _push_touched(touched, n, t)
        keys, vals, size = _heap_push(keys, vals, size, 0.0, t)
    entries = 0
    dirty, nxt = True, np.inf
    while size > 0:
        d, u = keys[0], vals[0]
        if state[u] == 2 or d > dist[u]:  # stale
            size = _heap_pop(keys, vals, size)
            continue
        bound = 2.0 * d * (1.0 - _SLACK)  # every G1' edge below it is in g1
        if first_join and dirty:
            joined, _ = _spans(g1, np.inf)
            if joined:
                return d, entries, False, touched, n
        if dirty or bound > nxt:
            joined, nxt = _spans(g1, bound)
            dirty = False
            if joined:
                return d, entries, False, touched, n
        row = indptr[u + 1] - indptr[u]
        if entries + row > budget:
            return d, entries, True, touched, n
        size = _heap_pop(keys, vals, size)
        state[u] = 2
        entries += _price_row(u, indptr, entry_a, entry_b, two, w, ns, pair_min, multi_starts, multi_edges,
                              slot_a, slot_b, cos, cos_rows, cos_lists, list_cos, data, priced)
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            c = data[e]
            if state[v] == 2:
                if near[v] != near[u]:  # a boundary edge, both ends final: summed from the lower id
                    wt = dist[v] + c + dist[u] if v < u else dist[u] + c + dist[v]
                    a, b = near[u], near[v]
                    if wt < g1[a, b]:
                        g1[a, b], g1[b, a] = wt, wt
                        ends[a, b], ends[b, a] = u, v
                        dirty = True
                continue
            nd = d + c
            if nd < dist[v]:
                if state[v] == 0:
                    touched, n = _push_touched(touched, n, v)
                    state[v] = 1
                dist[v], near[v], pred[v] = nd, near[u], u
                keys, vals, size = _heap_push(keys, vals, size, nd, v)
    return np.inf, entries, False, touched, n


# ------------------------------------------------------------------------------------------ driver

class _Scratch:
    """One query's per-node arrays (all reset after use: inf distances, state 0)."""

    def __init__(self, n: int):
        self.dist, self.near, self.state = np.full(n, np.inf), np.zeros(n, np.int32), np.zeros(n, np.int8)
        self.pred = np.zeros(n, np.int32)  # read only along chains the search wrote: never reset
        self.touched = np.empty(4096, np.int64)


_pools: "weakref.WeakKeyDictionary[object, list[_Scratch]]" = weakref.WeakKeyDictionary()
_pools_lock = threading.Lock()


def _borrow(owner, n: int) -> _Scratch:
    with _pools_lock:
        idle = _pools.get(owner)
        if idle:
            return idle.pop()
    return _Scratch(n)


def _give_back(owner, scratch: _Scratch) -> None:
    with _pools_lock:
        idle = _pools.setdefault(owner, [])
        if len(idle) < _IDLE:
            idle.append(scratch)


def _pricing(graph: CostGraph):
    """The arrays ``_voronoi`` prices rows from (with the derived slots' cosines and rows, empty when none), the
    entry-cost array and the priced-row flags."""
    none32, none64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    if isinstance(graph, QueryCosts):
        ix, derived = graph.index, graph.cosine_slots
        cos = ((derived.cosines, derived.rows, derived.lists, derived.list_cosines) if derived is not None
               else (np.zeros(0), none64, none64, np.zeros(0)))
        return (ix._entry_a, ix._entry_b, ix._two_slots, graph.slot_costs, ix.num_slots, graph._pair_min,
                ix._multi_starts, ix._multi_edges, ix.slot_a, ix.slot_b, *cos, graph._data, graph._priced)
    return (none32, none32, np.zeros(0, bool), np.zeros(0), 0, np.zeros(0), none64, none32, none32, none32,
            np.zeros(0), none64, none64, np.zeros(0), np.asarray(graph.data, np.float64),
            np.ones(graph.num_nodes, bool))


def compiled_paths(graph: CostGraph, terms: np.ndarray, max_entries: int | None, info: dict,
                   first_join: bool = False) -> list[list[int]]:
    """For each edge of the MST of G1' (or of its spanning forest, when ``max_entries`` stopped the search), in
    the order (row i, column j) of ``steiner.py``'s ``_terminal_mst``, a shortest path from ``terms[i]`` to
    ``terms[j]`` as node ids. ``info`` gets the search's statistics; ``first_join``: see ``_voronoi``. Raises
    ValueError when the search ends without joining the terminals."""
    owner = graph.index if isinstance(graph, QueryCosts) else graph
    scratch = _borrow(owner, graph.num_nodes)
    k = terms.size
    pricing = _pricing(graph)
    n = -1
    try:
        g1, ends = np.full((k, k), np.inf), np.full((k, k), -1, np.int64)
        radius, entries, stopped, scratch.touched, n = _voronoi(
            terms, graph.indptr, graph.indices, *pricing, scratch.dist, scratch.near, scratch.state, scratch.pred,
            scratch.touched, g1, ends, _NO_BUDGET if max_entries is None else int(max_entries), bool(first_join))
        info.update(radius=float(radius), voronoi_entries=int(entries), voronoi_stopped=bool(stopped),
                    path_stops=0, whole_graph=False, compiled=True)
        if stopped:  # the edges known to be G1' edges: below twice the settled radius
            g1[g1 >= 2 * radius * (1 - _SLACK)] = np.inf
        mst = minimum_spanning_tree(sp.csr_matrix(np.where(np.isfinite(g1), g1, 0.0))).tocoo()
        if not stopped and mst.nnz < k - 1:
            raise ValueError("terminals are not connected")
        if mst.nnz == 0:
            return []
        return [_chain(scratch.pred, int(ends[i, j]))[::-1] + _chain(scratch.pred, int(ends[j, i]))
                for i, j in zip(mst.row.tolist(), mst.col.tolist())]
    finally:
        touched = scratch.touched[:n] if n >= 0 else np.flatnonzero(scratch.state)
        scratch.dist[touched] = np.inf
        scratch.state[touched] = 0
        _give_back(owner, scratch)


def _chain(pred: np.ndarray, x: int) -> list[int]:
    """``x`` and its predecessors in the Voronoi search up to its terminal."""
    out = [x]
    while pred[out[-1]] >= 0:
        out.append(int(pred[out[-1]]))
    return out
