"""PathRAG's flow-based pruning (Chen et al., Eq. 2-4) on an undirected simple graph. Pure numpy.

Resource propagation from one start node (Eq. 2-3), read as the breadth-first process the paper
describes ("we update the resource of a node at most once"):

* ``S(start) = 1``; every other node starts at 0.
* Depth by depth: every node of the current layer that is *alive* sends ``α · S(u) / |N(u)|`` to each
  neighbour not reached before. A node first reached at depth d sums what it receives from its
  alive parents at depth d-1 (Eq. 2) and is then fixed: later arrivals do not change it.
* A node is alive (propagates) only when ``S(u) / |N(u)| >= θ`` (Eq. 3, the early stop; applied to the
  start node too, so a start with more than 1/θ neighbours sends nothing).

So the propagation follows a DAG of breadth-first layers. Total resource at depth i is at most α^i
and an alive node holds at least θ, so at most α^i / θ nodes are alive at depth i and at most
1 / ((1 − α) θ) over the whole run (the paper's complexity bound): the cost grows with the
neighbourhoods of alive nodes, never with the number of simple paths.

A relational path from the start to another retrieved node follows the propagation DAG (each hop
goes from an alive node to a node first reached one layer deeper). Its reliability is Eq. 4:
``S(P) = Σ_{v ∈ V_P} S(v) / |E_P|`` with the resources of the flow started at the path's first node
(the start's own S = 1 included, as the formula is written). All paths between one pair have the
same number of hops here, so the most reliable ones maximise the resource sum; a dynamic programme
over the layers keeps the best ``paths_per_pair`` sums per node. A path and its reverse are one
relational path: the more reliable direction is kept. Finally the global top K.

All start nodes propagate together (one breadth-first sweep over (start, node) keys), so a query with
N = 40 start nodes costs a few numpy calls per depth rather than per start node.

:func:`exhaustive_paths` is the authors' code's approach for comparison (every simple path of at most
3 hops between every pair of retrieved nodes, by depth-first search), with two scorings:
:func:`resource_scores` (Eq. 4 with the resources above) and :func:`reference_scores` (the code's
edge flow restricted to the enumerated paths; see notes/reference-implementations.md §2.3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import scipy.sparse as sp

__all__ = [
    "Flow",
    "FlowGraph",
    "Path",
    "PathSearch",
    "exhaustive_paths",
    "flow_paths",
    "propagate",
    "reference_scores",
    "resource_scores",
    "select_paths",
]


@dataclass(frozen=True)
class FlowGraph:
    """An undirected simple graph in CSR form: no self loops, one entry per neighbour.

    ``edge_ids[k]`` names the edge behind CSR entry k (the first of parallel edges), so paths can be
    reported with the caller's edge ids.
    """

    indptr: np.ndarray
    indices: np.ndarray
    edge_ids: np.ndarray

    @classmethod
    def from_edges(cls, num_nodes: int, src: Sequence[int], dst: Sequence[int],
                   edge_ids: Sequence[int] | None = None) -> "FlowGraph":
        src = np.asarray(src, np.int64)
        dst = np.asarray(dst, np.int64)
        if src.shape != dst.shape:
            raise ValueError("src and dst must have the same length")
        eid = np.arange(src.size, dtype=np.int64) if edge_ids is None else np.asarray(edge_ids, np.int64)
        if eid.shape != src.shape:
            raise ValueError("edge_ids must have one id per edge")
        if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
            raise ValueError("edge endpoint out of range")
        rows, cols, ids = np.r_[src, dst], np.r_[dst, src], np.r_[eid, eid]
        keep = rows != cols
        rows, cols, ids = rows[keep], cols[keep], ids[keep]
        order = np.lexsort((ids, cols, rows))
        rows, cols, ids = rows[order], cols[order], ids[order]
        first = np.ones(rows.size, bool)
        first[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
        rows, cols, ids = rows[first], cols[first], ids[first]
        indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=num_nodes), out=indptr[1:])
        return cls(indptr, cols, ids)

    @classmethod
    def from_csr(cls, matrix: sp.spmatrix) -> "FlowGraph":
        """From a (symmetric or not) sparse adjacency; the edge id of entry (i, j) is the smaller of
        the two stored entries' positions in COO order, so both directions share it."""
        coo = sp.coo_matrix(matrix)
        if coo.shape[0] != coo.shape[1]:
            raise ValueError("adjacency must be square")
        upper = coo.row <= coo.col
        return cls.from_edges(coo.shape[0], coo.row[upper], coo.col[upper],
                              np.flatnonzero(upper)) if np.any(upper) else cls.from_edges(coo.shape[0], [], [])

    @property
    def num_nodes(self) -> int:
        return self.indptr.size - 1

    @property
    def degree(self) -> np.ndarray:
        """|N(v, ·)|: distinct neighbours."""
        return np.diff(self.indptr)

    def neighbours(self, node: int) -> np.ndarray:
        return self.indices[self.indptr[node]:self.indptr[node + 1]]

    def edge_between(self, u: int, v: int) -> int:
        """The edge id joining u and v, or -1."""
        lo, hi = self.indptr[u], self.indptr[u + 1]
        k = lo + int(np.searchsorted(self.indices[lo:hi], v))
        return int(self.edge_ids[k]) if k < hi and self.indices[k] == v else -1


@dataclass
class Flow:
    """One propagation (Eq. 2-3): breadth-first layers, their resources, and the DAG between them."""

    source: int
    layers: list[np.ndarray]  # node rows first reached at each depth; layers[0] = [source]
    resources: list[np.ndarray]  # S(v) for each layer's nodes
    alive: list[np.ndarray]  # bool per layer node: S(v) / |N(v)| >= θ, so it propagated
    dag: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # dag[d-1] = (position of the parent in layer d-1, position of the child in layer d, edge id)

    def resource(self) -> dict[int, float]:
        """Every reached node's resource."""
        return {int(v): float(s) for nodes, res in zip(self.layers, self.resources) for v, s in zip(nodes, res)}

    @property
    def touched(self) -> int:
        return sum(int(layer.size) for layer in self.layers)

    @property
    def num_alive(self) -> int:
        return sum(int(a.sum()) for a in self.alive)


@dataclass(frozen=True)
class Path:
    nodes: tuple[int, ...]
    edges: tuple[int, ...]
    reliability: float  # Eq. 4
    resources: tuple[float, ...] = ()  # S(v) of each node, from the flow of nodes[0]

    @property
    def hops(self) -> int:
        return len(self.edges)

    def key(self) -> tuple[int, ...]:
        """The same relational path read from either end has one key."""
        return self.nodes if self.nodes[0] <= self.nodes[-1] else self.nodes[::-1]


@dataclass
class PathSearch:
    paths: list[Path]  # the global top K, most reliable first
    candidates: int  # paths in the pool before the global cut
    touched: int  # nodes reached, summed over the start nodes
    alive: int  # nodes that propagated, summed over the start nodes


def _check(alpha: float, theta: float) -> None:
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha (decay) must be in (0, 1], got {alpha}")
    if theta < 0.0:
        raise ValueError(f"theta (early-stop threshold) must be >= 0, got {theta}")


@dataclass
class _Layers:
    """Propagations from several sources at once: layer d holds every (source, node) first reached at depth d."""

    n: int
    sources: np.ndarray
    sid: list[np.ndarray]  # per layer: index of the source (into ``sources``) of each entry
    node: list[np.ndarray]  # per layer: node row of each entry
    res: list[np.ndarray]  # per layer: S(node) in that source's flow
    alive: list[np.ndarray]  # per layer: propagated (Eq. 3)
    dag: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per depth d >= 1: (parent pos in d-1, child pos in d, edge id)


def _propagate_many(graph: FlowGraph, sources: np.ndarray, alpha: float, theta: float, max_hops: int | None) -> _Layers:
    """Eq. 2-3 from every source, breadth first, all sources advancing one depth per step.

    Entries are keyed ``source index * n + node``; a sorted array of the keys reached so far keeps
    "each node is updated at most once" per source. Work per step is proportional to the edges
    leaving alive nodes, so the total grows with the nodes touched.
    """
    n, deg = graph.num_nodes, graph.degree
    sid = np.arange(sources.size, dtype=np.int64)
    node, res = sources.astype(np.int64), np.ones(sources.size)
    out = _Layers(n, sources, [sid], [node], [res], [], [])
    reached = np.sort(sid * n + node)
    while True:
        d = deg[node]
        alive = (d > 0) & (res >= theta * d)  # S/|N| >= θ, without dividing by zero
        out.alive.append(alive)
        if not alive.any() or (max_hops is not None and len(out.node) > max_hops):
            break
        parents = np.flatnonzero(alive)
        counts = d[parents]
        ppos = np.repeat(parents, counts)
        offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
        entries = np.repeat(graph.indptr[node[parents]], counts) + offsets
        keys = sid[ppos] * n + graph.indices[entries]
        at = np.minimum(np.searchsorted(reached, keys), reached.size - 1)
        new = reached[at] != keys
        if not new.any():
            break
        ppos, keys, eids = ppos[new], keys[new], graph.edge_ids[entries[new]]
        layer_keys, cpos = np.unique(keys, return_inverse=True)
        res = np.bincount(cpos, weights=alpha * res[ppos] / d[ppos], minlength=layer_keys.size)
        sid, node = layer_keys // n, layer_keys % n
        reached = np.union1d(reached, layer_keys)
        out.sid.append(sid); out.node.append(node); out.res.append(res)
        out.dag.append((ppos, cpos, eids))
    return out


def propagate(graph: FlowGraph, source: int, alpha: float = 0.7, theta: float = 0.01,
              max_hops: int | None = None) -> Flow:
    """Resource propagation from ``source`` (Eq. 2, early stop Eq. 3), breadth first."""
    _check(alpha, theta)
    if not 0 <= source < graph.num_nodes:
        raise ValueError(f"source {source} is not a node of the graph")
    layers = _propagate_many(graph, np.array([source], np.int64), alpha, theta, max_hops)
    return Flow(source, layers.node, layers.res, layers.alive, layers.dag)


def _best_paths(layers: _Layers, targets: np.ndarray, per_target: int) -> list[Path]:
    """The ``per_target`` most reliable DAG paths from each source to each reached target (Eq. 4).

    All paths between one pair have the same number of hops, so the best ones maximise the sum of
    resources: a dynamic programme over the layers keeps the ``per_target`` best sums per entry.
    """
    m = per_target
    sums = [np.full((layers.node[0].size, m), -np.inf)]
    sums[0][:, 0] = layers.res[0]
    back: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per depth: parent pos, parent rank, edge id
    for depth, (ppos, cpos, eids) in enumerate(layers.dag, start=1):
        prev = sums[depth - 1]
        c_child, c_parent = np.repeat(cpos, m), np.repeat(ppos, m)
        c_rank, c_edge = np.tile(np.arange(m), ppos.size), np.repeat(eids, m)
        c_value = prev[c_parent, c_rank] + layers.res[depth][c_child]
        ok = np.isfinite(c_value)
        c_child, c_parent, c_rank, c_edge, c_value = (a[ok] for a in (c_child, c_parent, c_rank, c_edge, c_value))
        order = np.lexsort((c_edge, c_parent, -c_value, c_child))  # per child, best first (ties: repeatable)
        child_sorted = c_child[order]
        rank = np.arange(child_sorted.size) - np.searchsorted(child_sorted, child_sorted, side="left")
        take = rank < m
        keep, slot = order[take], (child_sorted[take], rank[take])
        layer_sums = np.full((layers.node[depth].size, m), -np.inf)
        layer_back = [np.full((layers.node[depth].size, m), -1, np.int64) for _ in range(3)]
        layer_sums[slot] = c_value[keep]
        layer_back[0][slot], layer_back[1][slot], layer_back[2][slot] = c_parent[keep], c_rank[keep], c_edge[keep]
        sums.append(layer_sums)
        back.append(tuple(layer_back))
    out: list[Path] = []
    for depth in range(1, len(layers.node)):
        node, sid = layers.node[depth], layers.sid[depth]
        hits = np.flatnonzero(np.isin(node, targets) & (node != layers.sources[sid]))
        for pos in hits.tolist():
            for r in range(m):
                total = sums[depth][pos, r]
                if not np.isfinite(total):
                    break
                nodes, edges, res = [], [], []
                d, p, rr = depth, pos, r
                while d > 0:
                    nodes.append(int(layers.node[d][p])); res.append(float(layers.res[d][p]))
                    edges.append(int(back[d - 1][2][p, rr]))
                    p, rr = int(back[d - 1][0][p, rr]), int(back[d - 1][1][p, rr])
                    d -= 1
                nodes.append(int(layers.node[0][p])); res.append(float(layers.res[0][p]))
                out.append(Path(tuple(nodes[::-1]), tuple(edges[::-1]), float(total) / depth, tuple(res[::-1])))
    return out


def select_paths(candidates: Iterable[Path], top_k: int, paths_per_pair: int = 1) -> list[Path]:
    """Keep one copy of each relational path (its more reliable direction), the ``paths_per_pair`` most
    reliable per pair of end nodes, then the global ``top_k``; most reliable first (ties: fewer hops,
    then node rows, for repeatable output)."""
    best: dict[tuple[int, ...], Path] = {}
    for p in candidates:
        k = p.key()
        if k not in best or p.reliability > best[k].reliability:
            best[k] = p
    ranked = sorted(best.values(), key=lambda p: (-p.reliability, p.hops, p.key()))
    per_pair: dict[tuple[int, int], int] = {}
    out: list[Path] = []
    for p in ranked:
        pair = (min(p.nodes[0], p.nodes[-1]), max(p.nodes[0], p.nodes[-1]))
        if per_pair.get(pair, 0) >= paths_per_pair:
            continue
        per_pair[pair] = per_pair.get(pair, 0) + 1
        out.append(p)
        if len(out) == top_k:
            break
    return out


def flow_paths(graph: FlowGraph, sources: Sequence[int], targets: Sequence[int] | None = None,
               alpha: float = 0.7, theta: float = 0.01, top_k: int = 15, paths_per_pair: int = 1,
               max_hops: int | None = None) -> PathSearch:
    """PathRAG path retrieval: a flow from every source, paths to the other targets (default: the
    sources themselves, i.e. every pair of retrieved nodes), reliability Eq. 4, global top ``top_k``."""
    _check(alpha, theta)
    if top_k < 1 or paths_per_pair < 1:
        raise ValueError("top_k and paths_per_pair must be at least 1")
    source_rows = np.array(list(dict.fromkeys(int(s) for s in sources)), np.int64)
    target_rows = np.array(sorted(set(int(t) for t in (source_rows if targets is None else targets))), np.int64)
    for rows in (source_rows, target_rows):
        if rows.size and (rows.min() < 0 or rows.max() >= graph.num_nodes):
            raise ValueError("source or target row out of range")
    if source_rows.size == 0:
        return PathSearch([], 0, 0, 0)
    layers = _propagate_many(graph, source_rows, alpha, theta, max_hops)
    candidates = _best_paths(layers, target_rows, paths_per_pair)
    touched = sum(int(x.size) for x in layers.node)
    alive = sum(int(a.sum()) for a in layers.alive)
    return PathSearch(select_paths(candidates, top_k, paths_per_pair), len(candidates), touched, alive)


# ---------------------------------------------------------------------- the exhaustive comparison


def exhaustive_paths(graph: FlowGraph, nodes: Sequence[int], max_hops: int = 3) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every simple path of at most ``max_hops`` hops from each of ``nodes`` to another of them
    (depth-first, as the authors' code does): ``[(node rows, edge ids)]``. Both directions are listed."""
    targets = set(int(n) for n in nodes)
    out: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    indptr, indices, eids = graph.indptr, graph.indices, graph.edge_ids
    for s in dict.fromkeys(int(n) for n in nodes):
        path, edges, on_path = [s], [], {s}

        def dfs(u: int) -> None:
            if len(edges) == max_hops:
                return
            for k in range(indptr[u], indptr[u + 1]):
                w = int(indices[k])
                if w in on_path:
                    continue
                path.append(w); edges.append(int(eids[k])); on_path.add(w)
                if w in targets:
                    out.append((tuple(path), tuple(edges)))
                dfs(w)
                path.pop(); edges.pop(); on_path.discard(w)

        dfs(s)
    return out


def resource_scores(graph: FlowGraph, paths: Sequence[tuple[tuple[int, ...], tuple[int, ...]]],
                    alpha: float = 0.7, theta: float = 0.01, max_hops: int | None = None) -> list[Path]:
    """Eq. 4 for given paths, with the resources of the flow from each path's first node
    (a node the flow did not reach counts 0)."""
    flows: dict[int, dict[int, float]] = {}
    out = []
    for nodes, edges in paths:
        if nodes[0] not in flows:
            flows[nodes[0]] = propagate(graph, nodes[0], alpha, theta, max_hops).resource()
        res = tuple(flows[nodes[0]].get(v, 0.0) for v in nodes)
        out.append(Path(nodes, edges, sum(res) / len(edges), res))
    return out


def reference_scores(paths: Sequence[tuple[tuple[int, ...], tuple[int, ...]]], alpha: float = 0.8,
                     theta: float = 0.3) -> list[Path]:
    """The authors' code's scoring (``bfs_weighted_paths``): per (source, target) pair, flow on the
    union of the enumerated paths only. The source gives each of its successors 1/|succ(source)|
    per edge; an edge whose flow exceeds θ passes flow·α/|succ(next)| to each next edge, level by
    level, never beyond the target. Reliability = mean edge flow along the path (0 for edges
    that got none). Defaults are the code's (α = 0.8, θ = 0.3)."""
    by_pair: dict[tuple[int, int], list[int]] = {}
    for i, (nodes, _) in enumerate(paths):
        by_pair.setdefault((nodes[0], nodes[-1]), []).append(i)
    scored: list[Path | None] = [None] * len(paths)
    for (s, t), members in by_pair.items():
        succ: dict[int, set[int]] = {}
        for i in members:
            nodes = paths[i][0]
            for a, b in zip(nodes, nodes[1:]):
                succ.setdefault(a, set()).add(b)
        flow: dict[tuple[int, int], float] = {(s, w): 1.0 / len(succ[s]) for w in succ[s]}
        level = list(flow)
        levels_left = max(len(paths[i][1]) for i in members) - 1  # the code unrolls one level per hop
        while level and levels_left > 0:
            levels_left -= 1
            nxt: dict[tuple[int, int], float] = {}
            for (u, w) in level:
                f = flow[(u, w)]
                if w == t or f <= theta or w not in succ:
                    continue
                for x in succ[w]:
                    if x == u:
                        continue
                    nxt[(w, x)] = nxt.get((w, x), 0.0) + f * alpha / len(succ[w])
            for e, f in nxt.items():
                flow[e] = flow.get(e, 0.0) + f
            level = list(nxt)
        for i in members:
            nodes, edges = paths[i]
            flows = [flow.get((a, b), 0.0) for a, b in zip(nodes, nodes[1:])]
            scored[i] = Path(nodes, edges, sum(flows) / len(edges), tuple(flows))
    return [p for p in scored if p is not None]
