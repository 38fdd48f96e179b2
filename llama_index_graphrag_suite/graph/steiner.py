"""Mehlhorn's 2-approximate Steiner tree on a sparse cost graph (AGRAG Algorithm 3, lines 1-10).

Pure scipy: one multi-source Dijkstra gives every node its nearest terminal (Voronoi regions); edges
between regions give the auxiliary terminal graph G1' (weight d(s,u) + c(u,v) + d(v,t)); its minimum
spanning tree is expanded into shortest paths, the union gets its own spanning tree, and non-terminal
leaves are pruned. The expansion uses the shortest terminal-to-terminal path, as networkx's
``steiner_tree(method="mehlhorn")`` does, so both return trees of equal cost.

Only the part of the graph near the terminals is searched, and only its edges are priced (a
:class:`~.costs.QueryCosts` graph prices an edge when a search first reads it). The tree is the one the
whole-graph searches give, ties included:

* **Voronoi search within a radius L.** Every G1' edge of weight w <= 2L is found exactly by a search
  bounded at L: for a boundary edge (u, v), d(v) <= d(u) + c(u, v), so w >= 2 d(v) (and likewise for u),
  so both ends lie within w / 2. When the spanning tree of what was found is connected and uses only
  edges below 2L, it is the MST of the whole G1' (Kruskal never reaches a heavier edge). Otherwise the
  search grows to a larger L: 1.4 L, or half the largest edge of a spanning tree of everything found
  when that is smaller (it then suffices). The search grows from where it stopped.
* **Path expansion.** A tree edge (i, j) of the MST (row i) becomes the path to terminal j in a Dijkstra
  rooted at terminal i with the limit of the largest tree edge; it lies within i's largest tree edge.
* **Searches on a subgraph.** A bounded search reads only the rows of the nodes within its bound: they
  are found first by a vectorised label-correcting pass (numpy; its distances are the same floating-point
  sums as Dijkstra's), then scipy's Dijkstra runs on the subgraph of those rows plus their neighbours as
  row-less sinks, relabelled in the same order. scipy never puts a node beyond the limit on its heap, and
  every node it scans has its whole row, so it performs the same heap operations as on the whole graph:
  the same distances, nearest terminals and predecessors, ties included (the Fibonacci heap's order among
  equal distances depends on what it holds, so this matters when costs repeat).
* **Large searches.** One that reads over 1/8 of all row entries prices the whole graph and runs scipy on it.
* **Search budget** (``max_entries``), on a graph of more than 8 budgets of entries: the Voronoi search stops
  before reading more, keeping its last complete radius (a spanning forest of the G1' edges it found: a
  Steiner forest); path searches run on the Voronoi subgraph, which holds every shortest path of a G1' edge.
* **Graphs of COMPILED_MIN_ENTRIES entries or more** (never a shared benchmark's) are searched by the
  compiled Dijkstra of ``steiner_search.py`` instead (the same G1' MST and tree cost; among equal-cost
  paths it may take another one).
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra, minimum_spanning_tree

from .costs import ZERO_COST, CostGraph, CSRCosts, QueryCosts, as_cost_graph, symmetric_min  # noqa: F401
from .ppr_fast import NUMBA_ENV

_ZERO = ZERO_COST  # scipy's csgraph reads a stored 0 as "no edge": costs are stored shifted by this
_GROWTH = 1.4  # next Voronoi search radius when a search was too small
# A bounded search that reads more than this share of all row entries runs on the whole priced graph
# instead (scipy's Dijkstra on all of it costs less than building a subgraph of most of it).
_WHOLE_GRAPH_SHARE = 0.125
# A path expansion (one terminal's search) tries the subgraph within its own bound while it reads at most
# this share of the entries; past it, the whole graph is priced (once per query) and searched instead.
_PATH_SHARE = 1 / 32
# On the priced whole graph, a terminal whose own bound is at least this share of the reach runs the
# reference search itself (Dijkstra to the reach on the whole graph: one search instead of two and a subgraph).
_WHOLE_REACH = 0.5
MAX_ENTRIES = 1 << 18  # search budget in row entries (module docstring); a shared set's graph has < 0.25M
_PATH_BUDGET_PARTS = 8  # a path search under the budget reads at most this share of it (see _bounded_paths)
_SLACK = 1e-9  # relative and absolute margin on search bounds (float sums of one path in two orders)
COMPILED_MIN_ENTRIES = 1 << 20  # from here (4x a shared set's graph) steiner_search.py searches first


def _compiled_ok(graph: CostGraph) -> bool:
    """Whether steiner_search.py searches ``graph``: numba importable and not switched off (as for PageRank)."""
    return (isinstance(graph, (QueryCosts, CSRCosts)) and os.environ.get(NUMBA_ENV, "1") != "0"
            and importlib.util.find_spec("numba") is not None)


# ---------------------------------------------------------------------------------------- bounded searches

def _sorted_set(nodes: np.ndarray, num_nodes: int) -> np.ndarray:
    """The distinct ``nodes``, sorted: by sorting when they are few, else by marking (a pass over every node)."""
    if nodes.size * 32 < num_nodes:
        return np.unique(nodes)
    mark = np.zeros(num_nodes, bool)
    mark[nodes] = True
    return np.flatnonzero(mark)


class Ball:
    """The nodes within a limit of the nearest of ``sources`` (what Dijkstra with that limit reaches), for a
    limit that may grow: :meth:`grow` continues from the last search instead of starting again.

    Label-correcting in rounds: each round relaxes the rows of the nodes whose distance fell in the last
    one, keeping candidates within the limit (and, for a later larger limit, those beyond it). It ends at
    the fixpoint d(v) = min_u d(u) + c(u, v), the same floating-point sums Dijkstra settles on, so the set
    is exactly Dijkstra's.
    """

    def __init__(self, graph: CostGraph, sources: np.ndarray, resumable: bool = True,
                 max_entries: int | None = None, dist: np.ndarray | None = None):
        self.graph, self.resumable = graph, resumable
        # past this many row entries read, grow() gives up (returns None): a whole-graph search is cheaper
        self.max_entries = max_entries
        self.entries_read = 0
        self.exceeded = False
        # one distance per node, all inf: given (``dist``, e.g. by an earlier search's release()) or new
        self.dist = np.full(graph.num_nodes, np.inf) if dist is None else dist
        self._reached: list[np.ndarray] = []  # the nodes given a distance, round by round
        self._pending_v = np.unique(np.asarray(sources, np.int64))  # candidates beyond the last limit
        self._pending_c = np.zeros(self._pending_v.size)
        self.limit = -1.0

    def grow(self, limit: float) -> np.ndarray | None:
        """Sorted nodes within ``limit`` (at least the last limit); None past ``max_entries``."""
        if self.exceeded:
            return None
        graph, dist = self.graph, self.dist
        self.limit = limit = max(limit, self.limit)
        now = self._pending_c <= limit
        v, cand = self._pending_v[now], self._pending_c[now]
        later_v, later_c = [self._pending_v[~now]], [self._pending_c[~now]]
        while v.size:
            better = cand < dist[v]
            v, cand = v[better], cand[better]
            if not v.size:
                break
            np.minimum.at(dist, v, cand)
            frontier = _sorted_set(v, graph.num_nodes)  # the nodes whose distance fell
            self._reached.append(frontier)
            entries, owner, costs = graph.gather(frontier)
            self.entries_read += entries.size
            if self.max_entries is not None and self.entries_read > self.max_entries:
                self.exceeded = True  # the state is incomplete now: every later grow() gives up too
                return None
            v = graph.indices[entries]
            cand = dist[frontier][owner] + costs
            near = cand <= limit
            if self.resumable:
                far = ~near
                later_v.append(v[far])
                later_c.append(cand[far])
            v, cand = v[near], cand[near]
        self._pending_v = np.concatenate(later_v)
        self._pending_c = np.concatenate(later_c)
        if self._pending_v.size > 4 * graph.num_nodes:  # keep the best candidate per node only
            order = np.lexsort((self._pending_c, self._pending_v))
            first = np.r_[True, self._pending_v[order][1:] != self._pending_v[order][:-1]]
            self._pending_v, self._pending_c = self._pending_v[order][first], self._pending_c[order][first]
        # every node given a distance is within the limit: no pass over every node to find them
        return self._reached_nodes()

    def _reached_nodes(self) -> np.ndarray:
        if not self._reached:
            return np.empty(0, np.int64)
        if len(self._reached) > 1:
            self._reached = [_sorted_set(np.concatenate(self._reached), self.graph.num_nodes)]
        return self._reached[0].astype(np.int64, copy=False)

    def release(self) -> np.ndarray:
        """The distance array, all inf again (for another search on the same graph); this search ends."""
        self.dist[self._reached_nodes()] = np.inf
        self._reached, self.exceeded = [], True
        return self.dist


def ball(graph: CostGraph, sources: np.ndarray, limit: float,
         max_entries: int | None = None, dist: np.ndarray | None = None) -> np.ndarray | None:
    """Sorted nodes within ``limit`` of the nearest of ``sources`` (see :class:`Ball`); None past
    ``max_entries`` row entries read. ``dist`` (all inf, one per node) is used and given back all inf."""
    search = Ball(graph, sources, resumable=False, max_entries=max_entries, dist=dist)
    try:
        return search.grow(limit)
    finally:
        if dist is not None:
            search.release()


class _Whole:
    """The whole graph as a :class:`_Subgraph` look-alike (every entry priced; identity labels)."""

    def __init__(self, graph: CostGraph):
        self._graph = graph  # keeps the matrix's arrays alive
        self.matrix = graph.shared_csr()
        self.glob = self.local = np.arange(graph.num_nodes)

    def row_entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        entries, owner, costs = self._graph.gather(rows)
        return rows[owner], self._graph.indices[entries], costs


class _Subgraph:
    """The rows of ``nodes`` (sorted) as a scipy CSR over those nodes and their neighbours (sinks, no rows)."""

    def __init__(self, graph: CostGraph, nodes: np.ndarray):
        entries, owner, data = graph.gather(nodes)
        cols = graph.indices[entries]
        glob = _sorted_set(np.concatenate([nodes, cols]), graph.num_nodes)  # sorted: scipy sees the same orders
        local = np.empty(graph.num_nodes, np.int32)
        local[glob] = np.arange(glob.size, dtype=np.int32)
        counts = np.zeros(glob.size, np.int64)
        counts[local[nodes]] = graph.indptr[nodes + 1] - graph.indptr[nodes]
        indptr = np.zeros(glob.size + 1, np.int32)
        np.cumsum(counts, out=indptr[1:])
        m = glob.size
        self.matrix = sp.csr_matrix((data, local[cols], indptr), shape=(m, m))
        self.glob, self.local = glob, local
        self._entries = (nodes[owner], cols, data)  # global row and column of every stored entry, its cost

    def row_entries(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, column, cost) of the entries of ``rows``, which must be all the subgraph's rows."""
        return self._entries


@dataclass
class _Voronoi:
    """One Voronoi search: its terminal-graph MST (or forest), found on ``sub``."""

    mst: sp.coo_matrix | None  # over terminal positions; None if a terminal is not reached
    ok: bool  # it spans the terminals with edges below 2 x limit: the MST of the whole G1'
    top: float | None  # its largest edge when it spans the terminals
    sub: "_Subgraph | _Whole"  # what was searched
    radius: float = 0.0  # every node within it of a terminal has its whole row in `sub`


def _terminal_mst(graph: CostGraph, terms: np.ndarray, near: Ball, limit: float,
                  whole_ok: bool = True) -> _Voronoi | None:
    """The MST of G1' found by a Voronoi search bounded at ``limit`` (see :class:`_Voronoi`). ``near`` is the
    growing search around the terminals; past its entry budget it is the whole graph, or None when not
    ``whole_ok``."""
    nodes = near.grow(limit)
    if nodes is None and not whole_ok:
        return None
    sub = _Subgraph(graph, nodes) if nodes is not None else _Whole(graph)
    loc = sub.local[terms]
    dist_l, _, nearest_l = dijkstra(sub.matrix, indices=loc, min_only=True, return_predecessors=True, limit=limit)
    k = terms.size
    if np.isinf(dist_l[loc]).any():
        return _Voronoi(None, False, None, sub)
    # G1': for each pair of regions, the cheapest connecting edge d(s,u) + c(u,v) + d(v,t). Only the rows
    # of the reached nodes matter; the matrix is symmetric, so u < v holds every edge once.
    u, v, c = sub.row_entries(sub.glob[np.flatnonzero(np.isfinite(dist_l))])
    lu, lv = sub.local[u], sub.local[v]
    su, sv = nearest_l[lu], nearest_l[lv]
    cross = (u < v) & (sv >= 0) & (su != sv)
    lu, lv, c, su, sv = lu[cross], lv[cross], c[cross], su[cross], sv[cross]
    g1 = np.full((k, k), np.inf)  # by terminal position: `loc` is sorted and holds every nearest terminal
    np.minimum.at(g1, (np.searchsorted(loc, su), np.searchsorted(loc, sv)), dist_l[lu] + c + dist_l[lv])
    g1 = np.minimum(g1, g1.T)
    mst = minimum_spanning_tree(sp.csr_matrix(np.where(np.isfinite(g1), g1, 0.0))).tocoo()
    found = _Voronoi(mst, False, None, sub, limit)
    if mst.nnz == k - 1:
        found.top = float(mst.data.max()) if mst.nnz else 0.0
        found.ok = found.top < 2 * limit * (1 - _SLACK)
    return found


def _bounded_paths(graph: CostGraph, vor: _Voronoi, terms: np.ndarray, s: int, targets: list[int], reach: float,
                   budget: int, scratch: np.ndarray, info: dict) -> tuple[_Subgraph, np.ndarray]:
    """Terminal s's search for the paths to its tree neighbours under the budget: ``(searched, predecessors)``.

    A shortest s-t path of a G1' edge (s, t) lies within the Voronoi search (each of its nodes is within
    d(s, t) / 2 <= radius of s or t), so Dijkstra on that subgraph finds the targets at their true distance,
    and it performs the whole graph's heap operations up to the first node beyond the radius from s: when
    every target is within the radius, its paths are the whole-graph search's. Otherwise the search within
    the farthest target's distance (which also suffices) runs, within ``budget`` entries; past it, the
    Voronoi subgraph's paths stand (shortest paths too: they differ only where two paths cost the same).
    """
    sub, src = vor.sub, int(vor.sub.local[terms[s]])
    dist, pred = dijkstra(sub.matrix, indices=[src], return_predecessors=True, limit=reach)
    need = float(dist[0, sub.local[terms[targets]]].max())
    if need > vor.radius * (1 - _SLACK):
        nodes = ball(graph, terms[[s]], need * (1 + _SLACK) + _SLACK, max_entries=budget, dist=scratch)
        if nodes is None:
            info["path_stops"] += 1
        else:
            sub = _Subgraph(graph, nodes)
            _, pred = dijkstra(sub.matrix, indices=[int(sub.local[terms[s]])], return_predecessors=True, limit=reach)
    return sub, pred[0]


def _path(pred_row: np.ndarray, source: int, target: int) -> list[int]:
    path = [target]
    while path[-1] != source:
        prev = pred_row[path[-1]]
        if prev < 0:
            raise ValueError(f"node {target} is not reachable from terminal {source}")
        path.append(int(prev))
    return path[::-1]


def steiner_tree(costs, terminals, symmetric: bool = False, first_radius: float = 0.125, first_join: bool = False,
                 max_entries: int | None = MAX_ENTRIES, stats: dict | None = None) -> list[tuple[int, int, float]]:
    """Edges ``(u, v, cost)`` (u < v) of a Steiner tree spanning ``terminals``; cost <= 2 x optimum.

    ``costs`` is an n x n sparse matrix of non-negative edge costs (an undirected graph; pass
    ``symmetric=True`` if it already went through :func:`symmetric_min`), or a :class:`CostGraph`
    (e.g. one query's :class:`~.costs.QueryCosts`, priced only where searched). Raises ValueError if the
    terminals are not connected. One terminal gives an empty tree.

    ``first_radius`` bounds the first Voronoi search (see the module docstring); the tree does not
    depend on it. ``max_entries`` is the search budget on large graphs (None: no budget); a search
    that stops at it gives a Steiner forest (see the module docstring). ``stats``, when given, is filled
    with ``radius``, ``voronoi_entries`` (row entries the Voronoi search read), ``voronoi_stopped`` and
    ``path_stops`` (searches the budget stopped) and ``whole_graph`` (whether the whole graph was priced).
    ``first_join``: the compiled Voronoi search stops once its G1' edges join the terminals (not always Mehlhorn's).
    """
    terms = np.unique(np.asarray(list(terminals), dtype=np.int64))
    if terms.size == 0:
        raise ValueError("no terminals")
    if terms.size == 1:
        return []
    graph = as_cost_graph(costs, symmetric)
    info = stats if stats is not None else {}
    info.update(radius=0.0, voronoi_entries=0, voronoi_stopped=False, path_stops=0, whole_graph=False)
    if graph.indices.size >= COMPILED_MIN_ENTRIES and _compiled_ok(graph):
        from .steiner_search import compiled_paths  # numba: imported only for a large graph

        paths = compiled_paths(graph, terms, max_entries, info, first_join)
    else:
        paths = _searched_paths(graph, terms, first_radius, max_entries, info)
    if not paths:
        return []
    g3: dict[tuple[int, int], float] = {}
    for path in paths:
        for x, y in zip(path, path[1:]):
            g3[(min(x, y), max(x, y))] = graph.cost(x, y)

    # 5. Spanning tree of G3, then prune leaves that are not terminals.
    nodes = sorted({x for e in g3 for x in e})
    local = {x: i for i, x in enumerate(nodes)}
    m = len(nodes)
    rows3 = [local[x] for x, _ in g3]
    cols3 = [local[y] for _, y in g3]
    mst3 = minimum_spanning_tree(sp.csr_matrix((list(g3.values()), (rows3, cols3)), shape=(m, m))).tocoo()
    edges = {(nodes[i], nodes[j]) if nodes[i] < nodes[j] else (nodes[j], nodes[i]): float(cost)
             for i, j, cost in zip(mst3.row.tolist(), mst3.col.tolist(), mst3.data.tolist())}
    return _prune(edges, set(terms.tolist()))


def _searched_paths(graph: CostGraph, terms: np.ndarray, first_radius: float, max_entries: int | None,
                    info: dict) -> list[list[int]]:
    """Steps 1-4 by bounded numpy/scipy searches (module docstring): the shortest path (node ids) of each edge of
    G1''s MST (or of the spanning forest a budget-stopped search found); [] when no two terminals joined."""
    # 1-3. Voronoi regions, the terminal graph G1' and its MST; first within a small search radius.
    big = max(int(graph.indices.size * _WHOLE_GRAPH_SHARE), 1)
    bounded = max_entries is not None and big > max_entries  # the budget applies: never the whole graph
    limit, vor = float(first_radius), None
    near = Ball(graph, terms, max_entries=max_entries if bounded else big)
    while True:
        found = _terminal_mst(graph, terms, near, limit, whole_ok=not bounded)
        info["voronoi_entries"] = near.entries_read
        if found is None:  # over the budget: the last complete search stands
            info["voronoi_stopped"] = True
            break
        vor, info["radius"] = found, limit
        if found.ok or np.isinf(limit):
            break
        # The searched area grows quickly with the radius (hubs), so the radius grows in small steps; when
        # the found edges already span the terminals (largest `top`), a search to top / 2 finds every edge
        # the MST needs, and when that is sooner it is the next radius.
        grown = limit * _GROWTH
        if found.top is not None:
            grown = min(grown, found.top / 2 * (1 + _SLACK) + _SLACK)
        limit = grown if grown < 1e6 else np.inf
    mst1 = vor.mst if vor is not None else None
    if not info["voronoi_stopped"] and (mst1 is None or mst1.nnz < terms.size - 1):
        raise ValueError("terminals are not connected")
    if mst1 is None or mst1.nnz == 0:  # stopped before any two terminals joined
        return []
    info["whole_graph"] = isinstance(vor.sub, _Whole)

    # 4. Each MST edge becomes a shortest terminal-to-terminal path; their union is G3.
    rows, cols, weights = mst1.row.tolist(), mst1.col.tolist(), mst1.data.tolist()
    sources = sorted(set(rows))
    # A tree edge's path is never longer than its G1' weight: searching further is wasted work.
    reach = float(mst1.data.max()) * (1 + _SLACK) + _SLACK
    preds: dict[int, tuple[_Subgraph | _Whole, np.ndarray]] = {}
    whole = vor.sub if isinstance(vor.sub, _Whole) else None  # set once the whole graph is priced
    path_budget = max(int(graph.indices.size * _PATH_SHARE), 1)
    scratch = near.release()  # one distance array per query, not one per search
    for s in sources:
        own = min(max(w for i, w in zip(rows, weights) if i == s) * (1 + _SLACK) + _SLACK, reach)
        if bounded:
            preds[s] = _bounded_paths(graph, vor, terms, s, [j for i, j in zip(rows, cols) if i == s], reach,
                                      max(max_entries // _PATH_BUDGET_PARTS, 1), scratch, info)
            continue
        far = own >= reach * _WHOLE_REACH
        # The label pass finds a small area sooner than Dijkstra on the whole graph (which sets up every node);
        # once the whole graph is priced it gets a smaller budget, and none when the reference search runs.
        budget = path_budget if whole is None else None if far else max(path_budget // 8, 1)
        nodes = ball(graph, terms[[s]], own, max_entries=budget, dist=scratch) if budget is not None else None
        if nodes is not None:
            sub = _Subgraph(graph, nodes)
        else:
            whole = whole if whole is not None else _Whole(graph)
            info["whole_graph"] = True
            if far:
                sub = whole  # the reference search itself: on the whole graph to `reach`
            else:  # Dijkstra finds a large area within `own` sooner than the label pass
                dist = dijkstra(whole.matrix, indices=[int(terms[s])], limit=own)
                sub = _Subgraph(graph, np.flatnonzero(np.isfinite(dist)))
        _, pred = dijkstra(sub.matrix, indices=[int(sub.local[terms[s]])], return_predecessors=True, limit=reach)
        preds[s] = (sub, pred[0])
    paths = []
    for i, j in zip(rows, cols):
        sub, pred = preds[i]
        paths.append(sub.glob[_path(pred, int(sub.local[terms[i]]), int(sub.local[terms[j]]))].tolist())
    return paths


def _prune(edges: dict[tuple[int, int], float], terminals: set[int]) -> list[tuple[int, int, float]]:
    degree: dict[int, int] = {}
    for x, y in edges:
        degree[x] = degree.get(x, 0) + 1
        degree[y] = degree.get(y, 0) + 1
    leaves = [x for x, d in degree.items() if d == 1 and x not in terminals]
    while leaves:
        leaf = leaves.pop()
        for e in [e for e in edges if leaf in e]:
            del edges[e]
            other = e[0] if e[1] == leaf else e[1]
            degree[other] -= 1
            if degree[other] == 1 and other not in terminals:
                leaves.append(other)
    return [(x, y, max(cost - _ZERO, 0.0)) for (x, y), cost in sorted(edges.items())]
