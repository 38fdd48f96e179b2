"""A 2-D layout for a whole index graph (10,000 nodes and more) that a person can read: communities as islands.

A force layout of the whole graph at once gives a hairball on these graphs (hub entities such as years and
countries pull everything together; igraph's Fruchterman-Reingold on the hotpotqa_train100 graph put 7,700
nodes into one round blob) and DrL takes 15 s. This lays the graph out in two levels instead:

1. **Communities** (given, e.g. Leiden's :func:`~.communities.leiden_membership`) become discs whose area is
   proportional to their size. Their centres come from Fruchterman-Reingold on the community graph (two
   communities are linked by the number of edges between their members, :func:`~.communities.next_layer_edges`),
   so related communities sit near each other; then overlapping discs are pushed apart.
2. **Members**: each community's own subgraph gets its Fruchterman-Reingold layout (igraph's grid variant past
   a few hundred nodes), scaled into its disc.

Nodes without any edge are not a community of their own: they go in a block under the picture, so they
neither crowd the middle nor fly off to the edges. Everything is seeded, so a layout repeats. Arrays in,
arrays out: node ``i`` is row ``i``.
"""

from __future__ import annotations

import random
from contextlib import contextmanager

import numpy as np

from .communities import next_layer_edges

__all__ = ["community_layout", "push_apart"]

_SPACING = 1.0  # distance between neighbouring nodes inside a disc, in layout units


def _fruchterman_reingold(k: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None,
                          rng: np.random.Generator) -> np.ndarray:
    """``(k, 2)`` positions of a connected-ish graph of ``k`` nodes (igraph FR from a seeded start)."""
    import igraph as ig

    if k == 1:
        return np.zeros((1, 2))
    g = ig.Graph(n=k, edges=np.column_stack([src, dst]).tolist())
    start = rng.uniform(-1.0, 1.0, size=(k, 2)).tolist()
    layout = g.layout_fruchterman_reingold(weights=None if weight is None else weight.tolist(), seed=start,
                                           niter=300 if k > 200 else 500, grid=k > 500)
    return np.asarray(layout.coords, dtype=np.float64)


def _into_disc(points: np.ndarray, radius: float) -> np.ndarray:
    """``points`` centred and scaled so that 95% of them lie within ``radius`` (the rest are clipped to it)."""
    points = points - points.mean(axis=0)
    dist = np.linalg.norm(points, axis=1)
    scale = float(np.percentile(dist, 95)) if dist.size > 1 else 0.0
    if scale <= 0:
        return np.zeros_like(points)
    points = points * (radius / scale)
    dist = dist * (radius / scale)
    far = dist > radius
    points[far] *= (radius / dist[far])[:, None]
    return points


def push_apart(centres: np.ndarray, radii: np.ndarray, gap: float = 1.0, iterations: int = 200) -> np.ndarray:
    """Move discs (``centres``, ``radii``) until no two overlap (``gap`` between them), each step halving overlaps.

    Deterministic; a pair at the same point is split along a fixed direction per pair.
    """
    centres = np.array(centres, dtype=np.float64)
    k = len(centres)
    if k < 2:
        return centres
    i, j = np.triu_indices(k, 1)
    need = radii[i] + radii[j] + gap
    weight_i = radii[j] ** 2 / (radii[i] ** 2 + radii[j] ** 2)  # the smaller disc moves more
    angle = (np.arange(len(i)) * 2.399963) % (2 * np.pi)  # golden angle: a fixed direction for coincident pairs
    fallback = np.column_stack([np.cos(angle), np.sin(angle)])
    for _ in range(iterations):
        delta = centres[j] - centres[i]
        dist = np.linalg.norm(delta, axis=1)
        overlap = need - dist
        hit = overlap > 1e-6
        if not hit.any():
            break
        direction = np.where(dist[:, None] > 1e-9, delta / np.maximum(dist, 1e-9)[:, None], fallback)
        move = (0.5 * overlap[hit])[:, None] * direction[hit]
        step = np.zeros_like(centres)
        np.add.at(step, i[hit], -move * weight_i[hit][:, None])
        np.add.at(step, j[hit], move * (1 - weight_i[hit])[:, None])
        centres += step
    return centres


@contextmanager
def _igraph_seeded(seed: int):
    """igraph draws from Python's ``random`` module: give it its own seeded generator for the block, then put
    the module back (igraph's default), so the layout repeats and nobody else's random state is touched."""
    import igraph as ig

    ig.set_random_number_generator(random.Random(seed))
    try:
        yield
    finally:
        ig.set_random_number_generator(random)


def community_layout(n: int, src, dst, membership, seed: int = 0) -> np.ndarray:
    """``(n, 2)`` positions: communities (``membership[i]`` = community of node ``i``) as separate discs.

    ``src``/``dst`` are the edges (any direction; repeats and self-loops are ignored). Nodes without edges
    are laid out in rows under the communities.
    """
    with _igraph_seeded(seed):
        return _community_layout(n, src, dst, membership, seed)


def _community_layout(n: int, src, dst, membership, seed: int) -> np.ndarray:
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    membership = np.asarray(membership, np.int64)
    if membership.shape != (n,):
        raise ValueError(f"membership must have one community per node ({n}), got shape {membership.shape}")
    rng = np.random.default_rng(seed)
    pos = np.zeros((n, 2))
    if n == 0:
        return pos
    keep = src != dst
    src, dst = src[keep], dst[keep]
    degree = np.bincount(np.concatenate([src, dst]), minlength=n)
    linked = degree > 0

    # communities of linked nodes, renumbered 0..k-1
    codes, local = np.unique(membership[linked], return_inverse=True)
    k = len(codes)
    comm = np.full(n, -1, np.int64)
    comm[linked] = local
    sizes = np.bincount(local, minlength=k).astype(np.float64)
    radii = _SPACING * np.sqrt(sizes) * 1.2 + 0.5

    # 1. community centres: FR on the community graph, scaled so linked discs are about touching, then no overlap
    if k:
        a, b, w = next_layer_edges(comm[linked], *_relabel_edges(linked, src, dst))
        centres = _fruchterman_reingold(k, a, b, np.log1p(w), rng) if k > 1 else np.zeros((1, 2))
        if len(a):
            typical = float(np.median(np.linalg.norm(centres[a] - centres[b], axis=1)))
            wanted = float(np.median(radii[a] + radii[b]))
            centres *= wanted / max(typical, 1e-9)
        centres = _gather_components(centres, radii, a, b)
        centres = push_apart(centres, radii, gap=_SPACING * 2)

        # 2. members: each community's subgraph laid out in its disc
        internal = comm[src] == comm[dst]
        by_comm = np.argsort(comm[src[internal]], kind="stable")
        e_src, e_dst = src[internal][by_comm], dst[internal][by_comm]
        e_comm = comm[e_src]
        bounds = np.searchsorted(e_comm, np.arange(k + 1))
        order = np.argsort(comm, kind="stable")
        first = np.searchsorted(comm[order], np.arange(k + 1))
        for c in range(k):
            members = order[first[c]:first[c + 1]]
            if members.size == 1:
                pos[members[0]] = centres[c]
                continue
            row = np.full(n, -1, np.int64)  # could be a dict; an array is faster for big communities
            row[members] = np.arange(members.size)
            s, d = row[e_src[bounds[c]:bounds[c + 1]]], row[e_dst[bounds[c]:bounds[c + 1]]]
            inner = _fruchterman_reingold(members.size, s, d, None, rng)
            pos[members] = centres[c] + _into_disc(inner, radii[c])

    # 3. nodes without edges: rows under the picture, one unit apart
    alone = np.flatnonzero(~linked)
    if alone.size:
        low = pos[linked].min(axis=0) if linked.any() else np.zeros(2)
        high = pos[linked].max(axis=0) if linked.any() else np.zeros(2)
        width = max(int(np.ceil(np.sqrt(alone.size))), int((high[0] - low[0]) / (_SPACING * 2)) + 1)
        col, line = np.arange(alone.size) % width, np.arange(alone.size) // width
        pos[alone, 0] = low[0] + col * _SPACING * 2
        pos[alone, 1] = low[1] - _SPACING * 6 - line * _SPACING * 2
    return pos


def _gather_components(centres: np.ndarray, radii: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Communities outside the community graph's largest component, on a spiral around it, biggest first.

    FR pushes unlinked parts of a graph far away; a ring of small islands around the main picture keeps
    the whole drawing on one screen.
    """
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    k = len(centres)
    _, part = connected_components(coo_matrix((np.ones(len(a)), (a, b)), shape=(k, k)), directed=False)
    main = np.bincount(part).argmax()
    inside = part == main
    centres = centres - centres[inside].mean(axis=0)
    reach = float(np.max(np.linalg.norm(centres[inside], axis=1) + radii[inside]))
    outside = np.flatnonzero(~inside)
    outside = outside[np.argsort(-radii[outside], kind="stable")]
    # rings of discs around the main part, each ring one widest disc further out
    ring, along = reach + _SPACING * 2 + (float(radii[outside[0]]) if outside.size else 0.0), 0.0
    for disc in outside.tolist():
        along += radii[disc]
        if along / ring > 2 * np.pi:  # this ring is full
            ring += 2 * float(radii[outside].max()) + _SPACING * 2
            along = radii[disc]
        angle = along / ring
        centres[disc] = ring * np.array([np.cos(angle), np.sin(angle)])
        along += radii[disc] + _SPACING * 2
    return centres


def _relabel_edges(linked: np.ndarray, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge ends as rows among the linked nodes (every edge end is linked)."""
    row = np.cumsum(linked) - 1
    return row[src], row[dst]
