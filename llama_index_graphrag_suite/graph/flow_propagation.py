"""PathRAG's resource propagation (Chen et al., Eq. 2-3) on an undirected simple graph. Pure numpy.

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

All start nodes propagate together (:func:`propagate_many`: one breadth-first sweep over (start, node)
keys), so a query with N = 40 start nodes costs a few numpy calls per depth rather than per start node.
The paths and their reliability (Eq. 4) are in :mod:`.flow_paths`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import scipy.sparse as sp

__all__ = ["Flow", "FlowGraph", "Layers", "check_flow_params", "propagate", "propagate_many"]


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
        # entries by (row, column), one per neighbour, named by the smallest id of its parallel edges: one
        # sort of a single key (a sort by three keys costs several times more on a large graph); not a stable
        # sort: the smallest id of a run does not depend on the run's order, and quicksort is twice as fast
        key = rows * num_nodes + cols
        del rows, cols
        order = np.argsort(key)
        key, ids = key[order], ids[order]
        del order
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.empty(0, np.int64)
        ids = np.minimum.reduceat(ids, starts) if key.size else ids
        key = key[starts]
        rows, cols = key // num_nodes, key % num_nodes
        indptr = np.zeros(num_nodes + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=num_nodes), out=indptr[1:])
        # half the bytes where the numbers fit (a million-passage graph keeps 9 million entries per query process)
        small = num_nodes < 2**31 and (not ids.size or ids.max() < 2**31)
        return cls(indptr, cols.astype(np.int32) if small else cols, ids.astype(np.int32) if small else ids)

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


def check_flow_params(alpha: float, theta: float) -> None:
    """Decay α in (0, 1] (Eq. 2) and early-stop threshold θ >= 0 (Eq. 3), or a ValueError."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha (decay) must be in (0, 1], got {alpha}")
    if theta < 0.0:
        raise ValueError(f"theta (early-stop threshold) must be >= 0, got {theta}")


@dataclass
class Layers:
    """Propagations from several sources at once: layer d holds every (source, node) first reached at depth d."""

    n: int
    sources: np.ndarray
    sid: list[np.ndarray]  # per layer: index of the source (into ``sources``) of each entry
    node: list[np.ndarray]  # per layer: node row of each entry
    res: list[np.ndarray]  # per layer: S(node) in that source's flow
    alive: list[np.ndarray]  # per layer: propagated (Eq. 3)
    dag: list[tuple[np.ndarray, np.ndarray, np.ndarray]]  # per depth d >= 1: (parent pos in d-1, child pos in d, edge id)


def propagate_many(graph: FlowGraph, sources: np.ndarray, alpha: float, theta: float, max_hops: int | None) -> Layers:
    """Eq. 2-3 from every source, breadth first, all sources advancing one depth per step.

    Entries are keyed ``source index * n + node``; a sorted array of the keys reached so far keeps
    "each node is updated at most once" per source. Work per step is proportional to the edges
    leaving alive nodes, so the total grows with the nodes touched.
    """
    n, deg = graph.num_nodes, graph.degree
    sid = np.arange(sources.size, dtype=np.int64)
    node, res = sources.astype(np.int64), np.ones(sources.size)
    out = Layers(n, sources, [sid], [node], [res], [], [])
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
    check_flow_params(alpha, theta)
    if not 0 <= source < graph.num_nodes:
        raise ValueError(f"source {source} is not a node of the graph")
    layers = propagate_many(graph, np.array([source], np.int64), alpha, theta, max_hops)
    return Flow(source, layers.node, layers.res, layers.alive, layers.dag)
