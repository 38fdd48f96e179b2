"""PathRAG's relational paths (Chen et al., Eq. 4) from the flow-based pruning. Pure numpy.

The resource propagation (Eq. 2-3: breadth-first layers from every retrieved node, decay α, early stop
θ) is in :mod:`.flow_propagation`; its names (:class:`FlowGraph`, :class:`Flow`, :func:`propagate`)
are importable from here too.

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

from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from .flow_propagation import Flow, FlowGraph, Layers, check_flow_params, propagate, propagate_many

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


def _best_paths(layers: Layers, targets: np.ndarray, per_target: int) -> list[Path]:
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
    check_flow_params(alpha, theta)
    if top_k < 1 or paths_per_pair < 1:
        raise ValueError("top_k and paths_per_pair must be at least 1")
    source_rows = np.array(list(dict.fromkeys(int(s) for s in sources)), np.int64)
    target_rows = np.array(sorted(set(int(t) for t in (source_rows if targets is None else targets))), np.int64)
    for rows in (source_rows, target_rows):
        if rows.size and (rows.min() < 0 or rows.max() >= graph.num_nodes):
            raise ValueError("source or target row out of range")
    if source_rows.size == 0:
        return PathSearch([], 0, 0, 0)
    layers = propagate_many(graph, source_rows, alpha, theta, max_hops)
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
