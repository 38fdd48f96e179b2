"""Mehlhorn's 2-approximate Steiner tree on a sparse cost matrix (AGRAG Algorithm 3, lines 1-10).

Pure scipy: one multi-source Dijkstra gives every node its nearest terminal (Voronoi regions); edges
between regions give the auxiliary terminal graph G1' (weight d(s,u) + c(u,v) + d(v,t)); its minimum
spanning tree is expanded into shortest paths, the union gets its own spanning tree, and non-terminal
leaves are pruned. The expansion uses the shortest terminal-to-terminal path, as networkx's
``steiner_tree(method="mehlhorn")`` does, so both return trees of equal cost.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra, minimum_spanning_tree

# scipy's csgraph treats a stored 0 as "no edge"; costs are shifted by this so free edges stay edges.
_ZERO = 1e-12


def symmetric_min(costs: sp.spmatrix) -> sp.csr_matrix:
    """A symmetric CSR cost matrix keeping the cheapest of parallel edges (and of both directions)."""
    coo = sp.coo_matrix(costs)
    rows = np.concatenate([coo.row, coo.col])
    cols = np.concatenate([coo.col, coo.row])
    data = np.concatenate([coo.data, coo.data]).astype(np.float64)
    keep = rows != cols
    rows, cols, data = rows[keep], cols[keep], data[keep]
    order = np.lexsort((data, cols, rows))
    rows, cols, data = rows[order], cols[order], data[order]
    first = np.ones(rows.size, bool)
    first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    n = costs.shape[0]
    return sp.csr_matrix((np.maximum(data[first], 0.0) + _ZERO, (rows[first], cols[first])), shape=(n, n))


def _terminal_mst(graph: sp.csr_matrix, terms: np.ndarray, limit: float):
    """MST (COO, over terminal positions) of the terminal graph G1' found within ``limit``, or None."""
    dist, _, nearest = dijkstra(graph, indices=terms, min_only=True, return_predecessors=True, limit=limit)
    if np.isinf(dist[terms]).any():
        return None
    # G1': for each pair of regions, the cheapest connecting edge d(s,u) + c(u,v) + d(v,t). Only rows
    # of reached nodes matter; the matrix is symmetric, so the upper triangle holds every edge once.
    rows = np.flatnonzero(np.isfinite(dist))
    starts, counts = graph.indptr[rows], np.diff(graph.indptr)[rows]
    u = np.repeat(rows, counts)
    entry = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    v, c = graph.indices[entry], graph.data[entry]
    su, sv = nearest[u], nearest[v]
    cross = (u < v) & (sv >= 0) & (su != sv)
    u, v, c, su, sv = u[cross], v[cross], c[cross], su[cross], sv[cross]
    k = terms.size
    pos = np.full(graph.shape[0], -1, dtype=np.int64)
    pos[terms] = np.arange(k)
    g1 = np.full((k, k), np.inf)
    np.minimum.at(g1, (pos[su], pos[sv]), dist[u] + c + dist[v])
    g1 = np.minimum(g1, g1.T)
    mst = minimum_spanning_tree(sp.csr_matrix(np.where(np.isfinite(g1), g1, 0.0))).tocoo()
    if mst.nnz < k - 1 or (mst.nnz and float(mst.data.max()) > limit):
        return None
    return mst


def _cost(graph: sp.csr_matrix, x: int, y: int) -> float:
    """graph[x, y] without scipy's slow scalar indexing (column indices are sorted per row)."""
    lo, hi = graph.indptr[x], graph.indptr[x + 1]
    at = lo + int(np.searchsorted(graph.indices[lo:hi], y))
    return float(graph.data[at])


def _path(pred_row: np.ndarray, source: int, target: int) -> list[int]:
    path = [target]
    while path[-1] != source:
        prev = pred_row[path[-1]]
        if prev < 0:
            raise ValueError(f"node {target} is not reachable from terminal {source}")
        path.append(int(prev))
    return path[::-1]


def steiner_tree(costs: sp.spmatrix, terminals, symmetric: bool = False,
                 first_radius: float = 0.75) -> list[tuple[int, int, float]]:
    """Edges ``(u, v, cost)`` (u < v) of a Steiner tree spanning ``terminals``; cost <= 2 x optimum.

    ``costs`` is an n x n sparse matrix of non-negative edge costs (an undirected graph; pass
    ``symmetric=True`` if it already went through :func:`symmetric_min`). Raises ValueError if the
    terminals are not connected. One terminal gives an empty tree.

    ``first_radius`` bounds the first Voronoi search: every G1' edge of weight <= radius is found
    exactly within it, so when the MST of what was found is connected and uses only such edges it is
    the MST of the whole G1' (Kruskal never reaches a heavier edge). Otherwise the search is redone
    without a bound. Same tree either way; on AGRAG's query graphs it is usually 5x less work.
    """
    terms = np.unique(np.asarray(list(terminals), dtype=np.int64))
    if terms.size == 0:
        raise ValueError("no terminals")
    if terms.size == 1:
        return []
    graph = costs.tocsr() if symmetric else symmetric_min(costs)
    if not graph.has_sorted_indices:
        graph = graph.sorted_indices()

    # 1-3. Voronoi regions, the terminal graph G1' and its MST; first within a small search radius.
    mst1 = None
    for limit in (first_radius, np.inf):
        mst1 = _terminal_mst(graph, terms, limit)
        if mst1 is not None:
            break
    if mst1 is None:
        raise ValueError("terminals are not connected")

    # 4. Each MST edge becomes a shortest terminal-to-terminal path; their union is G3.
    sources = sorted({int(x) for x in mst1.row})
    # A tree edge's path is never longer than its G1' weight: searching further is wasted work.
    reach = float(mst1.data.max()) * (1 + 1e-9) + 1e-9
    _, preds = dijkstra(graph, indices=[int(terms[s]) for s in sources], return_predecessors=True, limit=reach)
    row_of = {s: i for i, s in enumerate(sources)}
    g3: dict[tuple[int, int], float] = {}
    for i, j in zip(mst1.row.tolist(), mst1.col.tolist()):
        path = _path(preds[row_of[i]], int(terms[i]), int(terms[j]))
        for x, y in zip(path, path[1:]):
            g3[(min(x, y), max(x, y))] = _cost(graph, x, y)

    # 5. Spanning tree of G3, then prune leaves that are not terminals.
    nodes = sorted({x for e in g3 for x in e})
    local = {x: i for i, x in enumerate(nodes)}
    m = len(nodes)
    rows = [local[x] for x, _ in g3]
    cols = [local[y] for _, y in g3]
    mst3 = minimum_spanning_tree(sp.csr_matrix((list(g3.values()), (rows, cols)), shape=(m, m))).tocoo()
    edges = {(nodes[i], nodes[j]) if nodes[i] < nodes[j] else (nodes[j], nodes[i]): float(cost)
             for i, j, cost in zip(mst3.row.tolist(), mst3.col.tolist(), mst3.data.tolist())}
    return _prune(edges, set(terms.tolist()))


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
