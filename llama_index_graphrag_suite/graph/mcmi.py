"""Minimum-Cost-Maximum-Influence subgraph expansion (AGRAG Eq. 15-17, Algorithm 3 lines 13-17).

Start from a Steiner tree over the terminals. Its cost-score ratio is Eq. 15,

    r(G) = sum over edges (u, v) of c(u, v) / (s_u + s_v),

with s the node influence (PPR) and c the edge cost. Repeatedly take the frontier node v (a
neighbour of the subgraph) with the lowest c(subgraph, v) / s_v, where c(subgraph, v) is its cheapest
edge into the subgraph; if that ratio is below r(G), add v with that edge, plus any other edge from v
into the subgraph whose own ratio c / (s_u + s_v) is below r(G) (so cycles appear, the point of MCMI
over a tree: the paper's Figure 2), and recompute r(G).
Stop when the best frontier ratio is not below r(G), the frontier is empty, or after ``max_iter``
additions (20, as in the authors' code).

``ratio="sum"`` is Eq. 15 as printed. Because every added edge raises a sum, the rule then tends to
run to the cap; ``ratio="mean"`` (the "average ratio" of the paper's Figure 3 caption) makes each
addition lower the subgraph's ratio, so expansion stops by itself. Both are offered; see the
retriever for the default.

The frontier is kept as one number per node (its best ratio so far) rather than a heap of every push, and
each added node's row is read once, vectorised; the result (nodes, edges, order, ratios, stop reason) is
the same as the heap version's, including its ties (lowest ratio, then lowest node id) and its "cap"
versus "frontier" stop (a heap still holding stale pushes counts as not empty).
"""

from __future__ import annotations

import heapq
import threading
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp

from .costs import CostGraph, CSRCosts

_EPS = 1e-12


@dataclass
class MCMIResult:
    nodes: list[int]
    edges: list[tuple[int, int, float]]  # (u, v, cost), u < v
    added: list[int] = field(default_factory=list)  # nodes the expansion added, in order
    ratios: list[float] = field(default_factory=list)  # r(G) before the first and after each addition
    stopped: str = ""  # "ratio", "frontier", "cap"

    @property
    def ratio(self) -> float:
        return self.ratios[-1] if self.ratios else 0.0


def _edge_ratio(cost: float, su: float, sv: float) -> float:
    return cost / max(su + sv, _EPS)


def mcmi_expand(
    costs: sp.spmatrix | CostGraph,
    scores: np.ndarray,
    tree_edges: list[tuple[int, int, float]],
    terminals,
    max_iter: int = 20,
    ratio: Literal["sum", "mean"] = "sum",
) -> MCMIResult:
    """Grow the Steiner tree ``tree_edges`` into the MCMI subgraph.

    ``costs`` is the symmetric cost matrix the tree was computed on (cheapest parallel edge), or the
    same as a :class:`~.costs.CostGraph` (only the rows of the subgraph's nodes are read); ``scores``
    the influence of every node.
    """
    if ratio not in ("sum", "mean"):
        raise ValueError(f"ratio must be 'sum' or 'mean', got {ratio!r}")
    graph = costs if isinstance(costs, CostGraph) else CSRCosts(sp.csr_matrix(costs))
    scores = np.asarray(scores)
    nodes = {int(t) for t in terminals} | {x for u, v, _ in tree_edges for x in (u, v)}
    edges = {(min(u, v), max(u, v)): float(c) for u, v, c in tree_edges}
    total = sum(_edge_ratio(c, scores[u], scores[v]) for (u, v), c in edges.items())

    def current() -> float:
        return total if ratio == "sum" else total / max(len(edges), 1)

    result = MCMIResult(nodes=[], edges=[], ratios=[current()])
    indices = graph.indices
    # per-node arrays kept between calls (fresh ones cost their pages' first writes each query): all False / inf /
    # -1, and reset where this call wrote them (at the end)
    in_nodes, key, pos = _borrow(graph.num_nodes)
    in_nodes[list(nodes)] = True
    # The frontier: every node ever pushed (cand), with its lowest push c(u, v) / s_v so far (its heap
    # minimum; inf once added) in front_key, aligned with cand; pos maps a node to its place in cand.
    cand = np.empty(0, np.int64)
    front_key = np.empty(0)
    stale: list[tuple[float, int]] = []  # the heap's other pushes for nodes since added (popped as stale)

    def push_neighbours(us: np.ndarray) -> None:
        nonlocal cand, front_key
        entries, _, c = graph.gather(us)
        v = indices[entries].astype(np.int64)
        keep = ~in_nodes[v] & (scores[v] > 0)
        v, c = v[keep], c[keep]
        np.minimum.at(key, v, c / scores[v])
        new = np.unique(v[pos[v] < 0]) if us.size > 1 else v[pos[v] < 0]  # one row has no repeats
        pos[new] = np.arange(cand.size, cand.size + new.size)
        cand = np.concatenate([cand, new])
        front_key = np.concatenate([front_key, np.empty(new.size)])
        front_key[pos[v]] = key[v]

    push_neighbours(np.array(sorted(nodes), np.int64))
    result.stopped = "frontier"
    while True:
        head = None
        if front_key.size:
            best = front_key.min()
            if best < np.inf:
                v = int(cand[front_key == best].min())
                head = (best, v)
        if head is None and not stale:
            break  # the heap is empty
        if len(result.added) >= max_iter:
            result.stopped = "cap"
            break
        if stale and (head is None or stale[0] < head):
            heapq.heappop(stale)  # a stale entry: v was added through another edge
            continue
        if not best < current():
            result.stopped = "ratio"
            break
        cols, row_costs = graph.row(v)
        linked = in_nodes[cols]
        us, cs = cols[linked].astype(np.int64), row_costs[linked]
        order = np.lexsort((us, cs))
        links = list(zip(cs[order].tolist(), us[order].tolist()))
        for i, (c, u) in enumerate(links):
            # The cheapest link always joins; each further link joins only if it is itself better than the
            # subgraph's ratio, which is what closes useful cycles without diluting the subgraph.
            if i == 0 or _edge_ratio(c, scores[u], scores[v]) < current():
                edges[(min(u, v), max(u, v))] = float(c)
                total += _edge_ratio(c, scores[u], scores[v])
        # every node of the subgraph next to v pushed v once; the lowest push was just popped
        pushes = sorted(c / scores[v] for c, _ in links)
        for r in pushes[1:]:
            heapq.heappush(stale, (r, v))
        key[v] = front_key[pos[v]] = np.inf
        in_nodes[v] = True
        nodes.add(v)
        result.added.append(v)
        result.ratios.append(current())
        push_neighbours(np.array([v], np.int64))
    # every key and pos written is a candidate's, every node marked is in the subgraph (an error above drops the
    # arrays instead: a push it interrupted may have written elsewhere)
    key[cand] = np.inf
    pos[cand] = -1
    in_nodes[list(nodes)] = False
    _give_back(in_nodes, key, pos)
    result.nodes = sorted(nodes)
    result.edges = [(u, v, c) for (u, v), c in sorted(edges.items())]
    return result


_idle = threading.local()  # per thread, per node count: the idle (in_nodes, key, pos) arrays


def _borrow(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    kept = getattr(_idle, "arrays", None)
    if kept is not None and kept[0].size == n:
        _idle.arrays = None
        return kept
    return np.zeros(n, bool), np.full(n, np.inf), np.full(n, -1, np.int64)


def _give_back(in_nodes: np.ndarray, key: np.ndarray, pos: np.ndarray) -> None:
    _idle.arrays = (in_nodes, key, pos)
