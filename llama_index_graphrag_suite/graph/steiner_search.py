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
2. **Paths.** Each MST edge (s, t) becomes a shortest s-t path: a bidirectional Dijkstra (from s and from t,
   each side scanning only the nodes the Voronoi search settled; the others are reached, never scanned). Every
   node of a shortest s-t path lies within half the edge's G1' weight of a terminal, so within the settled area:
   the distance is the whole graph's. Two half-radius balls cost far less than one ball of the whole distance
   around s (the search steiner.py runs), where hubs are near. Among equal-cost paths the one taken may differ
   from scipy's.

The MST of G1' and of the union of the paths, and the pruning, are ``steiner.py``'s. So the tree costs what the
whole-graph search's costs; on graphs without equal-cost alternatives it is the same tree. Scratch arrays (one
distance, terminal and state per node) are kept per graph and reset where a search wrote, not made per query.
"""

from __future__ import annotations

import threading
import weakref

import numba
import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import minimum_spanning_tree

from .costs import ZERO_COST, CostGraph, CSRCosts, QueryCosts
__all__ = ["compiled_paths"]

_SLACK = 1e-9  # as steiner.py: a G1' edge must be below 2 D (1 - _SLACK) to count as found
_IDLE = 2  # scratch sets kept per graph (one per concurrent query)
_NO_BUDGET = np.iinfo(np.int64).max
# Row entries past which a Voronoi search is handed back to steiner.py. The scalar loops here beat numpy's rounds
# and scipy's set-up on narrow searches (300k passages: 2,135 entries, 4 against 15-33 ms) and lose on wide
# ones, where random reads dominate and numpy's gathers overlap them (243k-428k entries: 77-300 against
# 115-300 ms for the whole of steiner.py's search; the paths then cost as much again).
SEARCH_ENTRIES = 1 << 16


def _jit(fn):
    return numba.njit(nogil=True, cache=True)(fn)


# ------------------------------------------------------------------------------------------ compiled kernels
# Every array is passed in (numba sees no Python objects); the kernels call each other as compiled globals.

@_jit
def _stored(s, w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b):
    """Stored cost of slot ``s``, as ``QueryCosts._stored``: max(w, 0) + ZERO_COST, or a multi-edge pair's
    minimum over its edges (computed once into ``pair_min``, which the query's QueryCosts shares)."""
    if s < ns:
        x = w[s]
        return max(x, 0.0) + ZERO_COST
    m = s - ns
    if np.isnan(pair_min[m]):
        end = multi_starts[m + 1] if m + 1 < multi_starts.size else multi_edges.size
        best = np.inf
        for k in range(multi_starts[m], end):
            e = multi_edges[k]
            best = min(best, max(w[slot_a[e]], 0.0) + ZERO_COST, max(w[slot_b[e]], 0.0) + ZERO_COST)
        pair_min[m] = best
    return pair_min[m]


@_jit
def _price_row(u, indptr, entry_a, entry_b, two, w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b,
               data, priced):
    """Price row ``u``'s entries into ``data`` unless it is priced; returns how many entries it has."""
    lo, hi = indptr[u], indptr[u + 1]
    if not priced[u]:
        for e in range(lo, hi):
            c = _stored(entry_a[e], w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b)
            if two[e]:
                c = min(c, _stored(entry_b[e], w, ns, pair_min, multi_starts, multi_edges, slot_a, slot_b))
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
             slot_a, slot_b, data, priced, dist, near, state, touched, g1, budget):
    """Step 1 (module docstring). ``state``: 0 unseen, 1 reached, 2 settled; ``g1`` (k x k, inf) gets the G1'
    candidates. Returns ``(radius, entries read, stopped at the budget, touched, how many)``: every node nearer
    than ``radius`` is settled; ``touched[:n]`` were given a distance (to reset)."""
    k = terms.size
    keys, vals, size = np.empty(1024, np.float64), np.empty(1024, np.int64), 0
    n = 0
    for i in range(k):
        t = terms[i]
        dist[t], near[t], state[t] = 0.0, i, 1
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
                              slot_a, slot_b, data, priced)
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            c = data[e]
            if state[v] == 2:
                if near[v] != near[u]:  # a boundary edge, both ends final: summed from the lower id
                    wt = dist[v] + c + dist[u] if v < u else dist[u] + c + dist[v]
                    a, b = near[u], near[v]
                    if wt < g1[a, b]:
                        g1[a, b], g1[b, a] = wt, wt
                        dirty = True
                continue
            nd = d + c
            if nd < dist[v]:
                if state[v] == 0:
                    touched, n = _push_touched(touched, n, v)
                    state[v] = 1
                dist[v], near[v] = nd, near[u]
                keys, vals, size = _heap_push(keys, vals, size, nd, v)
    return np.inf, entries, False, touched, n


@_jit
def _clean_top(keys, vals, size, dist):
    """Drop stale entries (a distance since lowered) from the heap's top; returns the new size."""
    while size > 0 and keys[0] > dist[vals[0]]:
        size = _heap_pop(keys, vals, size)
    return size


@_jit
def _pair_path(s, t, indptr, indices, data, state, dist_f, dist_b, pred_f, pred_b, touched_f, touched_b):
    """Step 2 for one G1' edge: a shortest s-t path by bidirectional Dijkstra, each side scanning only settled
    nodes (``state`` 2: every node of a shortest path is one). Stops when the two heaps' tops add up to the best
    meeting found. Returns ``(u, v, touched_f, n_f, touched_b, n_b)``: the path is s..u (``pred_f``), the edge
    (u, v), then v..t (``pred_b``); ``dist_*`` (inf) are written where touched (to reset)."""
    kf, vf, sf = np.empty(1024, np.float64), np.empty(1024, np.int64), 0
    kb, vb, sb = np.empty(1024, np.float64), np.empty(1024, np.int64), 0
    dist_f[s], pred_f[s], dist_b[t], pred_b[t] = 0.0, -1, 0.0, -1
    touched_f, nf = _push_touched(touched_f, 0, s)
    touched_b, nb = _push_touched(touched_b, 0, t)
    kf, vf, sf = _heap_push(kf, vf, sf, 0.0, s)
    kb, vb, sb = _heap_push(kb, vb, sb, 0.0, t)
    best, meet_u, meet_v = np.inf, -1, -1
    while True:
        sf = _clean_top(kf, vf, sf, dist_f)
        sb = _clean_top(kb, vb, sb, dist_b)
        if sf == 0 or sb == 0 or kf[0] + kb[0] >= best:
            break
        forward = kf[0] <= kb[0]
        if forward:
            u = vf[0]
            sf = _heap_pop(kf, vf, sf)
        else:
            u = vb[0]
            sb = _heap_pop(kb, vb, sb)
        if state[u] != 2:
            continue  # reached, never scanned
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if forward:
                nd = dist_f[u] + data[e]
                if nd < dist_f[v]:
                    if dist_f[v] == np.inf:
                        touched_f, nf = _push_touched(touched_f, nf, v)
                    dist_f[v], pred_f[v] = nd, u
                    kf, vf, sf = _heap_push(kf, vf, sf, nd, v)
                if dist_b[v] < np.inf and dist_f[u] + data[e] + dist_b[v] < best:
                    best, meet_u, meet_v = dist_f[u] + data[e] + dist_b[v], u, v
            else:
                nd = dist_b[u] + data[e]
                if nd < dist_b[v]:
                    if dist_b[v] == np.inf:
                        touched_b, nb = _push_touched(touched_b, nb, v)
                    dist_b[v], pred_b[v] = nd, u
                    kb, vb, sb = _heap_push(kb, vb, sb, nd, v)
                if dist_f[v] < np.inf and dist_f[v] + data[e] + dist_b[u] < best:
                    best, meet_u, meet_v = dist_f[v] + data[e] + dist_b[u], v, u
    return meet_u, meet_v, touched_f, nf, touched_b, nb


# ------------------------------------------------------------------------------------------ driver

class _Scratch:
    """One query's per-node arrays (all reset after use: inf distances, state 0)."""

    def __init__(self, n: int):
        self.dist, self.dist_f, self.dist_b = np.full(n, np.inf), np.full(n, np.inf), np.full(n, np.inf)
        self.near, self.state = np.zeros(n, np.int32), np.zeros(n, np.int8)
        self.pred_f, self.pred_b = np.zeros(n, np.int64), np.zeros(n, np.int64)
        self.touched, self.touched_f, self.touched_b = (np.empty(4096, np.int64) for _ in range(3))


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
    """The arrays ``_voronoi`` prices rows from, the entry-cost array and the priced-row flags."""
    if isinstance(graph, QueryCosts):
        ix = graph.index
        return (ix._entry_a, ix._entry_b, ix._two_slots, graph.slot_costs, ix.num_slots, graph._pair_min,
                ix._multi_starts, ix._multi_edges, ix.slot_a, ix.slot_b, graph._data, graph._priced)
    none32, none64 = np.zeros(0, np.int32), np.zeros(0, np.int64)
    return (none32, none32, np.zeros(0, bool), np.zeros(0), 0, np.zeros(0), none64, none32, none32, none32,
            np.asarray(graph.data, np.float64), np.ones(graph.num_nodes, bool))


def compiled_paths(graph: CostGraph, terms: np.ndarray, max_entries: int | None, info: dict,
                   limit: int | None = None) -> list[list[int]] | None:
    """For each edge of the MST of G1' (or of its spanning forest, when ``max_entries`` stopped the search), in
    the order (row i, column j) of ``steiner.py``'s ``_terminal_mst``, a shortest path from ``terms[i]`` to
    ``terms[j]`` as node ids; None when the search would read more than ``limit`` (default
    :data:`SEARCH_ENTRIES`) entries before ``max_entries``. ``info`` gets the search's statistics. Raises
    ValueError when the search ends without joining the terminals."""
    owner = graph.index if isinstance(graph, QueryCosts) else graph
    scratch = _borrow(owner, graph.num_nodes)
    k = terms.size
    pricing = _pricing(graph)
    data = pricing[-2]
    n = -1
    try:
        g1 = np.full((k, k), np.inf)
        budget = _NO_BUDGET if max_entries is None else int(max_entries)
        limit = SEARCH_ENTRIES if limit is None else limit
        radius, entries, stopped, scratch.touched, n = _voronoi(
            terms, graph.indptr, graph.indices, *pricing, scratch.dist, scratch.near, scratch.state,
            scratch.touched, g1, min(budget, limit))
        if stopped and limit < budget:
            info["compiled"] = False  # handed back
            return None
        info.update(radius=float(radius), voronoi_entries=int(entries), voronoi_stopped=bool(stopped),
                    path_stops=0, whole_graph=False, compiled=True)
        if stopped:  # the edges known to be G1' edges: below twice the settled radius
            g1[g1 >= 2 * radius * (1 - _SLACK)] = np.inf
        mst = minimum_spanning_tree(sp.csr_matrix(np.where(np.isfinite(g1), g1, 0.0))).tocoo()
        if not stopped and mst.nnz < k - 1:
            raise ValueError("terminals are not connected")
        if mst.nnz == 0:
            return []
        paths = [_one_path(graph, scratch, data, int(terms[i]), int(terms[j]))
                 for i, j in zip(mst.row.tolist(), mst.col.tolist())]
        return paths
    finally:
        touched = scratch.touched[:n] if n >= 0 else np.flatnonzero(scratch.state)
        scratch.dist[touched] = np.inf
        scratch.state[touched] = 0
        _give_back(owner, scratch)


def _one_path(graph: CostGraph, scratch: _Scratch, data: np.ndarray, s: int, t: int) -> list[int]:
    """A shortest s-t path (node ids) by :func:`_pair_path`; the scratch distances are reset after."""
    u, v, scratch.touched_f, nf, scratch.touched_b, nb = _pair_path(
        s, t, graph.indptr, graph.indices, data, scratch.state, scratch.dist_f, scratch.dist_b, scratch.pred_f,
        scratch.pred_b, scratch.touched_f, scratch.touched_b)
    try:
        if u < 0:
            raise ValueError(f"node {t} is not reachable from terminal {s}")
        head, tail = [u], [v]
        while head[-1] != s:
            head.append(int(scratch.pred_f[head[-1]]))
        while tail[-1] != t:
            tail.append(int(scratch.pred_b[tail[-1]]))
        return head[::-1] + tail
    finally:
        scratch.dist_f[scratch.touched_f[:nf]] = np.inf
        scratch.dist_b[scratch.touched_b[:nb]] = np.inf
