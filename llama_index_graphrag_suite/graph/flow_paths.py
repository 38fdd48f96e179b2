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


def propagate(graph: FlowGraph, source: int, alpha: float = 0.7, theta: float = 0.01,
              max_hops: int | None = None, _seen: np.ndarray | None = None) -> Flow:
    """Resource propagation from ``source`` (Eq. 2, early stop Eq. 3), breadth first."""
    _check(alpha, theta)
    if not 0 <= source < graph.num_nodes:
        raise ValueError(f"source {source} is not a node of the graph")
    deg = graph.degree
    seen = np.zeros(graph.num_nodes, bool) if _seen is None else _seen
    frontier, res = np.array([source], np.int64), np.array([1.0])
    seen[source] = True
    flow = Flow(source, [frontier], [res], [])
    try:
        while True:
            d = deg[frontier]
            alive = (d > 0) & (res >= theta * d)  # S/|N| >= θ without dividing by zero
            flow.alive.append(alive)
            if not alive.any() or (max_hops is not None and len(flow.layers) > max_hops):
                break
            parents = np.flatnonzero(alive)
            counts = d[parents]
            total = int(counts.sum())
            ppos = np.repeat(parents, counts)
            offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
            entries = np.repeat(graph.indptr[frontier[parents]], counts) + offsets
            child = graph.indices[entries]
            new = ~seen[child]
            ppos, child, eids = ppos[new], child[new], graph.edge_ids[entries[new]]
            if child.size == 0:
                break
            layer, cpos = np.unique(child, return_inverse=True)
            share = alpha * res[ppos] / d[ppos]
            res = np.bincount(cpos, weights=share, minlength=layer.size)
            seen[layer] = True
            flow.layers.append(layer)
            flow.resources.append(res)
            flow.dag.append((ppos, cpos, eids))
            frontier = layer
        if len(flow.alive) < len(flow.layers):  # stopped by max_hops before judging the last layer
            d = deg[frontier]
            flow.alive.append((d > 0) & (res >= theta * d))
    finally:
        for layer in flow.layers:  # leave the shared scratch array clean: cost stays with nodes touched
            seen[layer] = False
    return flow


def _best_paths(flow: Flow, targets: np.ndarray, per_target: int) -> list[Path]:
    """The ``per_target`` most reliable DAG paths from the flow's source to each reached target."""
    m = per_target
    sums = [np.full((1, m), -np.inf)]
    sums[0][0, 0] = flow.resources[0][0]
    back: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per depth: parent pos, parent rank, edge id
    for depth, (ppos, cpos, eids) in enumerate(flow.dag, start=1):
        n_layer = flow.layers[depth].size
        prev = sums[depth - 1]
        cand_child = np.repeat(cpos, m)
        cand_parent = np.repeat(ppos, m)
        cand_rank = np.tile(np.arange(m), ppos.size)
        cand_edge = np.repeat(eids, m)
        cand_value = prev[cand_parent, cand_rank] + flow.resources[depth][cand_child]
        ok = np.isfinite(cand_value)
        cand_child, cand_parent, cand_rank, cand_edge, cand_value = (
            a[ok] for a in (cand_child, cand_parent, cand_rank, cand_edge, cand_value))
        order = np.lexsort((cand_edge, cand_parent, -cand_value, cand_child))
        cand_child = cand_child[order]
        group_start = np.searchsorted(cand_child, cand_child, side="left")
        rank = np.arange(cand_child.size) - group_start
        keep = order[rank < m]
        kept_rank = rank[rank < m]
        layer_sums = np.full((n_layer, m), -np.inf)
        layer_back = [np.full((n_layer, m), -1, np.int64) for _ in range(3)]
        slot = (cand_child[rank < m], kept_rank)
        layer_sums[slot] = cand_value[keep]
        layer_back[0][slot] = cand_parent[keep]
        layer_back[1][slot] = cand_rank[keep]
        layer_back[2][slot] = cand_edge[keep]
        sums.append(layer_sums)
        back.append(tuple(layer_back))
    out: list[Path] = []
    target_set = set(int(t) for t in targets) - {flow.source}
    for depth in range(1, len(flow.layers)):
        layer = flow.layers[depth]
        for pos in np.flatnonzero(np.isin(layer, list(target_set))) if target_set else []:
            for r in range(m):
                total = sums[depth][pos, r]
                if not np.isfinite(total):
                    break
                nodes, edges, res = [], [], []
                d, p, rr = depth, int(pos), r
                while d > 0:
                    nodes.append(int(flow.layers[d][p])); res.append(float(flow.resources[d][p]))
                    edges.append(int(back[d - 1][2][p, rr]))
                    p, rr = int(back[d - 1][0][p, rr]), int(back[d - 1][1][p, rr])
                    d -= 1
                nodes.append(flow.source); res.append(float(flow.resources[0][0]))
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
    sources = list(dict.fromkeys(int(s) for s in sources))
    target_rows = np.array(sorted(set(int(t) for t in (sources if targets is None else targets))), np.int64)
    if target_rows.size and (target_rows.min() < 0 or target_rows.max() >= graph.num_nodes):
        raise ValueError("target row out of range")
    seen = np.zeros(graph.num_nodes, bool)
    candidates: list[Path] = []
    touched = alive = 0
    for s in sources:
        flow = propagate(graph, s, alpha, theta, max_hops, _seen=seen)
        touched += flow.touched
        alive += flow.num_alive
        candidates.extend(_best_paths(flow, target_rows, paths_per_pair))
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
