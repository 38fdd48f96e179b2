"""ArchRAG's attributed community hierarchy (Algorithm 1) and the community-quality metrics (Appendix B.1).

Per layer: augment and reweight the graph (:mod:`.knn_augment`), cluster it with weighted Leiden, give
each community a vector (a caller-supplied function: the embedding of its summary, or the centroid of
its members), and build the next layer's graph with the communities as nodes. Summaries are the
caller's business (they need an LLM or the index's text); this module is arrays in, arrays out.

Choices (the paper leaves them open):

* **Leiden objective**: ``leidenalg.RBConfigurationVertexPartition`` (modularity with a resolution
  parameter, weighted), the objective graspologic's ``hierarchical_leiden`` uses in the authors' code;
  ``objective="cpm"`` selects the Constant Potts Model instead (its resolution is a density threshold
  in weight units, so it needs tuning per graph). Seeded (``seed``) so results repeat. Two passes of
  the Leiden iteration per call (leidenalg's default): iterating to convergence found 33 instead of 31
  top-level communities on the 2wiki index at 5x the time (69 s vs 13 s).
* **Max cluster size**: as graspologic's ``hierarchical_leiden`` (``max_cluster_size=15`` in the
  authors' code), a community larger than the cap is re-clustered with Leiden on its own induced
  subgraph, recursively, and its pieces replace it. When Leiden keeps a piece whole (a dense blob), it
  is re-clustered at 2x, 4x, 8x the resolution, and as a last resort cut into near-equal runs of a
  breadth-first order. (leidenalg's ``max_comm_size`` is not used: in leidenalg 0.12 it left a
  6-clique whole with a cap of 4.)
* **Next layer graph**: communities A and B are linked when an edge joins a member of A and a member of
  B; the weight is the number of such edges (the authors' ``reconstruct_graph`` counts the crossing
  relationships). The next layer's augmentation replaces it by the attribute cosine anyway (Alg. 1 line 5).
* **Stop**: before a layer whose graph has fewer than ``min_nodes`` nodes, when clustering keeps more
  than ``max_keep_ratio`` (0.9) of the nodes as communities (it has stalled: on the 2wiki index the top
  layers went 123 -> 100 -> 99, mostly singletons without links), or after ``max_layers`` layers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .knn_augment import AugmentedGraph, knn_augment, unique_pairs

__all__ = [
    "HierarchyParams", "CommunityLayer", "leiden_membership", "next_layer_edges", "build_hierarchy",
    "calinski_harabasz", "member_centroid_cosine", "centroids", "internal_strength",
]


@dataclass
class HierarchyParams:
    """Knobs of Algorithm 1 (defaults: the authors' run scripts, see ``reference-implementations.md`` §3.5)."""

    knn_k: int | None = None  # most KNN edges per node; None = mean degree (authors' m_du)
    knn_threshold: float | None = None  # None = percentile of existing edge cosines
    knn_percentile: float = 80.0  # authors' index.sh: wx_weight = 0.8
    augment: bool = True  # False = weighted Leiden on the reweighted graph only (ablation)
    resolution: float = 1.0  # graspologic default
    objective: str = "modularity"  # or "cpm"
    max_cluster_size: int = 15  # authors' default
    max_layers: int = 5  # community layers above the entities (authors: max_level 4-6)
    min_nodes: int = 10  # authors' index.sh: min_clusters = 10
    max_keep_ratio: float = 0.9  # a layer keeping more than this share of its nodes as communities has stalled
    seed: int = 0

    def __post_init__(self) -> None:
        if self.objective not in ("modularity", "cpm"):
            raise ValueError("objective must be 'modularity' or 'cpm'")
        if self.max_cluster_size < 2 or self.max_layers < 1 or self.min_nodes < 2 or self.resolution <= 0:
            raise ValueError("need max_cluster_size >= 2, max_layers >= 1, min_nodes >= 2, resolution > 0")


@dataclass
class CommunityLayer:
    """One community layer: ``membership[i]`` = community of node i of the layer below (0..count-1)."""

    membership: np.ndarray  # int64, one entry per node of the layer below
    vectors: np.ndarray  # float32 unit vectors, one row per community
    graph: AugmentedGraph  # the clustered (augmented, weighted) graph of the layer below
    next_src: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # edges among communities
    next_dst: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    next_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def count(self) -> int:
        return int(self.membership.max()) + 1 if self.membership.size else 0


# ---------------------------------------------------------------------------------------- Leiden


def _partition_type(objective: str):
    import leidenalg

    return leidenalg.CPMVertexPartition if objective == "cpm" else leidenalg.RBConfigurationVertexPartition


EDGE_CHUNK = 1 << 20  # edges handed to igraph at once (it makes Python pairs of what it is given)


def _leiden(n: int, src, dst, weight, resolution: float, objective: str, seed: int) -> np.ndarray:
    import igraph as ig
    import leidenalg

    graph = ig.Graph(n=n, directed=False)
    for start in range(0, len(src), EDGE_CHUNK):  # the same edges in the same order as one list, less memory
        graph.add_edges(np.c_[src[start:start + EDGE_CHUNK], dst[start:start + EDGE_CHUNK]])
    part = leidenalg.find_partition(
        graph, _partition_type(objective), weights=np.asarray(weight, np.float64), n_iterations=2,
        seed=seed, resolution_parameter=resolution,
    )
    return np.asarray(part.membership, np.int64)


def _groups(labels: np.ndarray) -> list[np.ndarray]:
    """Rows of each label, labels in increasing order."""
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    return np.split(order, cuts) if labels.size else []


def _internal_edges(groups: list[np.ndarray], labels: np.ndarray, src, dst, weight) -> list[tuple]:
    """For each of ``groups`` (the members of one label each), the edges with both ends in it, in edge order,
    renumbered to positions in the group. One pass over the edges for all groups: a pass per group cost
    (groups x edges), which grows as n^2 with the graph."""
    inside = np.flatnonzero(labels[src] == labels[dst])
    by_label = inside[np.argsort(labels[src[inside]], kind="stable")]  # stable: edge order within a label
    label_of = labels[src[by_label]]
    local = np.empty(labels.size, np.int64)  # groups are disjoint: each group's rows are written before read
    out = []
    for members in groups:
        label = labels[members[0]]
        lo, hi = np.searchsorted(label_of, [label, label + 1])
        edges = by_label[lo:hi]
        local[members] = np.arange(members.size)
        out.append((local[src[edges]], local[dst[edges]], weight[edges]))
    return out


def _cut_in_traversal_order(n: int, src, dst, size: int) -> np.ndarray:
    """Last resort for a blob Leiden will not split: consecutive runs of a breadth-first order, near-equal sizes."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import breadth_first_order

    adj = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n)).tocsr()
    adj = adj + adj.T
    order, seen = [], np.zeros(n, bool)
    for start in range(n):
        if not seen[start]:
            part = breadth_first_order(adj, start, directed=False, return_predecessors=False)
            seen[part] = True
            order.extend(part.tolist())
    pieces = -(-n // size)
    labels = np.empty(n, np.int64)
    labels[np.asarray(order)] = np.arange(n) * pieces // n
    return labels


def _relabel(labels: np.ndarray) -> np.ndarray:
    """Community ids 0..c-1 in order of first appearance (so results do not depend on leidenalg's numbering)."""
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse].astype(np.int64)


def leiden_membership(n: int, src, dst, weight, resolution: float = 1.0, objective: str = "modularity",
                      max_cluster_size: int = 15, seed: int = 0) -> np.ndarray:
    """Weighted Leiden with every community at most ``max_cluster_size`` nodes (recursive splitting).

    Nodes without edges end up as singleton communities.
    """
    src, dst, weight = np.asarray(src, np.int64), np.asarray(dst, np.int64), np.asarray(weight, np.float64)
    if np.any(weight < 0):
        raise ValueError("Leiden needs non-negative edge weights")
    labels = _leiden(n, src, dst, weight, resolution, objective, seed)
    # Each oversize community is split on its own induced subgraph (its internal edges, local rows).
    oversize = [members for members in _groups(labels) if members.size > max_cluster_size]
    pending = [(members, *edges) for members, edges in zip(oversize, _internal_edges(oversize, labels, src, dst, weight))]
    next_label = int(labels.max()) + 1 if n else 0
    while pending:
        members, s, d, w = pending.pop()
        sub = _leiden(members.size, s, d, w, resolution, objective, seed)
        for boost in (2.0, 4.0, 8.0):  # Leiden keeps it whole: ask for smaller communities
            if sub.max() > 0:
                break
            sub = _leiden(members.size, s, d, w, resolution * boost, objective, seed)
        if sub.max() == 0:
            sub = _cut_in_traversal_order(members.size, s, d, max_cluster_size)
        pieces = _groups(sub)
        for piece in pieces:
            labels[members[piece]] = next_label
            next_label += 1
        big = [piece for piece in pieces if piece.size > max_cluster_size]
        pending.extend((members[piece], *edges) for piece, edges in zip(big, _internal_edges(big, sub, s, d, w)))
    return _relabel(labels)


def next_layer_edges(membership: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Algorithm 1 line 9: communities linked when members are linked; weight = number of crossing edges."""
    a, b = membership[np.asarray(src, np.int64)], membership[np.asarray(dst, np.int64)]
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    cross = lo != hi
    count = int(membership.max()) + 1 if membership.size else 0
    codes, weight = np.unique(lo[cross] * count + hi[cross], return_counts=True)
    return codes // max(count, 1), codes % max(count, 1), weight.astype(np.float64)


# ---------------------------------------------------------------------------------------- hierarchy


CENTROID_COLUMNS = 32  # dimensions summed at once in float64 (not a float64 copy of all the vectors)


def centroids(vectors: np.ndarray, membership: np.ndarray, normalise: bool = True) -> np.ndarray:
    """Mean vector of each community's members (unit length when ``normalise``).

    The sums are a one-hot matrix product, a few dimensions at a time in float64: each community adds its
    members in row order, as ``np.add.at`` did (the same numbers), at a fraction of its time and memory."""
    import scipy.sparse as sp

    membership = np.asarray(membership, np.int64)
    count = int(membership.max()) + 1 if membership.size else 0
    n, dim = membership.size, vectors.shape[1]
    onehot = sp.csr_matrix((np.ones(n), (membership, np.arange(n))), shape=(count, n))
    means = np.empty((count, dim), np.float64)
    for start in range(0, dim, CENTROID_COLUMNS):
        means[:, start:start + CENTROID_COLUMNS] = onehot @ np.asarray(vectors[:, start:start + CENTROID_COLUMNS],
                                                                       np.float64)
    means /= np.bincount(membership, minlength=count)[:, None]
    if normalise:
        means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    return means.astype(np.float32)


def build_hierarchy(
    vectors: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    params: HierarchyParams | None = None,
    community_vectors: Callable[[int, np.ndarray, np.ndarray, AugmentedGraph], np.ndarray] | None = None,
    layer_search: Callable[[int, np.ndarray], Callable | None] | None = None,
) -> list[CommunityLayer]:
    """Algorithm 1: the community layers above the bottom graph (entities), lowest first.

    ``vectors``: the bottom nodes' attribute embeddings; ``src``/``dst``: the bottom graph's edges.
    ``community_vectors(layer, membership, member_vectors, graph)`` returns one vector per new community
    (layer numbers start at 1; ``graph`` is the clustered graph, for centrality); it is where the caller
    summarises the communities and embeds the summaries. Default: the normalised centroid of the members.
    ``layer_search(layer, vectors)`` (layer 0 = the bottom nodes) may return the KNN step's neighbour search for
    that layer (see :func:`.knn_augment.knn_augment`'s ``nearest``), having scaled ``vectors`` to unit rows in
    place; None keeps the default search.
    """
    params = params or HierarchyParams()
    community_vectors = community_vectors or (lambda layer, membership, below, graph: centroids(below, membership))
    x = np.asarray(vectors, np.float32)
    src, dst = unique_pairs(src, dst, x.shape[0])
    layers: list[CommunityLayer] = []
    while len(layers) < params.max_layers and x.shape[0] >= params.min_nodes:
        nearest = layer_search(len(layers), x) if layer_search is not None and params.augment else None
        graph = knn_augment(x, src, dst, k=params.knn_k, threshold=params.knn_threshold,
                            percentile=params.knn_percentile, augment=params.augment, nearest=nearest)
        membership = leiden_membership(x.shape[0], graph.src, graph.dst, graph.weight, params.resolution,
                                       params.objective, params.max_cluster_size, params.seed)
        count = int(membership.max()) + 1
        if count > params.max_keep_ratio * x.shape[0]:  # clustering stalled (mostly unlinked nodes): stop
            break
        vecs = np.asarray(community_vectors(len(layers) + 1, membership, x, graph), np.float32)
        if vecs.shape != (count, x.shape[1]):
            raise ValueError(f"community_vectors returned {vecs.shape}, expected {(count, x.shape[1])}")
        # The next layer links communities through every clustered edge (KG links and KNN links alike).
        nsrc, ndst, nweight = next_layer_edges(membership, graph.src, graph.dst)
        layers.append(CommunityLayer(membership, vecs, graph, nsrc, ndst, nweight))
        x, src, dst = vecs, nsrc, ndst
    return layers


# ---------------------------------------------------------------------------------------- metrics (Appendix B.1)


def calinski_harabasz(features: np.ndarray, labels: np.ndarray) -> float:
    """Eq. 5: [sum_k n_k |c_k - c|^2 / (K - 1)] / [sum_k sum_{x in C_k} |x - c_k|^2 / (N - K)].

    Undefined (nan) for fewer than 2 clusters or as many clusters as points; +inf when every cluster
    is a single point repeated (zero within-cluster dispersion).
    """
    x = np.asarray(features, np.float64)
    labels = np.asarray(labels)
    _, labels = np.unique(labels, return_inverse=True)
    n, k = x.shape[0], int(labels.max()) + 1 if labels.size else 0
    if k < 2 or k >= n:
        return float("nan")
    sizes = np.bincount(labels, minlength=k)
    sums = np.zeros((k, x.shape[1]))
    np.add.at(sums, labels, x)
    centre = sums / sizes[:, None]
    between = float((sizes * ((centre - x.mean(axis=0)) ** 2).sum(axis=1)).sum())
    within = float(((x - centre[labels]) ** 2).sum())
    if within == 0.0:
        return float("inf")
    return (between / (k - 1)) / (within / (n - k))


def internal_strength(membership: np.ndarray, graph: AugmentedGraph) -> np.ndarray:
    """Each node's weighted degree counting only edges inside its own community (its centrality there)."""
    inside = membership[graph.src] == membership[graph.dst]
    weight = graph.weight[inside]
    # One bincount over the source ends, then the destination ends: the additions np.add.at made, in its order.
    return np.bincount(np.r_[graph.src[inside], graph.dst[inside]], weights=np.r_[weight, weight],
                       minlength=membership.size).astype(np.float64)


def member_centroid_cosine(features: np.ndarray, labels: np.ndarray, min_size: int = 2) -> float:
    """Eq. 6-7: mean over nodes of cos(node, its cluster's centroid).

    Clusters smaller than ``min_size`` are left out (a singleton is its own centroid, cosine 1, which
    would reward not clustering at all). nan when no cluster is large enough.
    """
    x = np.asarray(features, np.float64)
    _, labels = np.unique(np.asarray(labels), return_inverse=True)
    sizes = np.bincount(labels)
    keep = sizes[labels] >= min_size
    if not keep.any():
        return float("nan")
    centre = centroids(x, labels, normalise=True).astype(np.float64)
    unit = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    cos = np.einsum("ij,ij->i", unit, centre[labels])
    return float(cos[keep].mean())
