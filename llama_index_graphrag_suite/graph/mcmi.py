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
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import scipy.sparse as sp

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
    costs: sp.csr_matrix,
    scores: np.ndarray,
    tree_edges: list[tuple[int, int, float]],
    terminals,
    max_iter: int = 20,
    ratio: Literal["sum", "mean"] = "sum",
) -> MCMIResult:
    """Grow the Steiner tree ``tree_edges`` into the MCMI subgraph.

    ``costs`` is the symmetric sparse cost matrix the tree was computed on (cheapest parallel edge);
    ``scores`` the influence of every node.
    """
    if ratio not in ("sum", "mean"):
        raise ValueError(f"ratio must be 'sum' or 'mean', got {ratio!r}")
    costs = costs.tocsr()
    nodes = {int(t) for t in terminals} | {x for u, v, _ in tree_edges for x in (u, v)}
    edges = {(min(u, v), max(u, v)): float(c) for u, v, c in tree_edges}
    total = sum(_edge_ratio(c, scores[u], scores[v]) for (u, v), c in edges.items())

    def current() -> float:
        return total if ratio == "sum" else total / max(len(edges), 1)

    result = MCMIResult(nodes=[], edges=[], ratios=[current()])
    frontier: list[tuple[float, int]] = []

    def push_neighbours(u: int) -> None:
        lo, hi = costs.indptr[u], costs.indptr[u + 1]
        for v, c in zip(costs.indices[lo:hi].tolist(), costs.data[lo:hi].tolist()):
            if v not in nodes and scores[v] > 0:
                heapq.heappush(frontier, (c / scores[v], v))

    for u in nodes:
        push_neighbours(u)
    result.stopped = "frontier"
    while frontier:
        if len(result.added) >= max_iter:
            result.stopped = "cap"
            break
        best, v = heapq.heappop(frontier)
        if v in nodes:
            continue  # stale entry: v was added through another edge
        if not best < current():
            result.stopped = "ratio"
            break
        lo, hi = costs.indptr[v], costs.indptr[v + 1]
        links = sorted((c, u) for u, c in zip(costs.indices[lo:hi].tolist(), costs.data[lo:hi].tolist()) if u in nodes)
        for i, (c, u) in enumerate(links):
            # The cheapest link always joins; each further link joins only if it is itself better than the
            # subgraph's ratio, which is what closes useful cycles without diluting the subgraph.
            if i == 0 or _edge_ratio(c, scores[u], scores[v]) < current():
                edges[(min(u, v), max(u, v))] = float(c)
                total += _edge_ratio(c, scores[u], scores[v])
        nodes.add(v)
        result.added.append(v)
        result.ratios.append(current())
        push_neighbours(v)
    result.nodes = sorted(nodes)
    result.edges = [(u, v, c) for (u, v), c in sorted(edges.items())]
    return result
