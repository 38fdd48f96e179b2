"""K-hop bridge discovery (A2RAG Section III-C-2, Eq. 8), pure numpy.

A2RAG works on the augmented graph G' that holds every edge in both directions; a CSR neighbour list
of an undirected graph (``GraphSnapshot.neighbours``) is exactly that. With ``N_K(v)`` the nodes within
K hops of seed v, the bridge candidates are

    B_K = { u | #{ v in S_V : u in N_K(v) } >= 2 }                                   (Eq. 8)

the nodes that at least two seeds reach within K hops ("relaxed multi-seed constraint": no full
intersection is required). For each bridge a few shortest paths to the seeds that reach it are the
evidence; hop length, the number of bridges and the number of paths are all capped.

How it is computed: one breadth-first search per seed, bounded by K, kept as a per-seed distance
array (``-1`` = farther than K). A node is *expanded* (its neighbours visited) only if ``expand`` allows
it: hubs (a word like "film" that a thousand passages mention) can be reached but not crossed, so a
bridge means a specific connection rather than "both mention a common word". Shortest paths are then
read off the distance arrays backwards: from the bridge, step to any neighbour one hop closer to the
seed, until the seed is reached, so no predecessor lists are stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

UNREACHED = -1


def hop_distances(indptr: np.ndarray, indices: np.ndarray, sources: np.ndarray, max_hops: int,
                  expand: np.ndarray | None = None) -> np.ndarray:
    """Hop distance from each source to every node, up to ``max_hops``: shape (sources, nodes), int16.

    ``indptr``/``indices`` are a CSR neighbour list (row u lists u's neighbours). Nodes farther than
    ``max_hops`` get ``UNREACHED`` (-1). ``expand`` (bool per node, optional) says which nodes may pass
    the search on to their neighbours; a source is always expanded.
    """
    n = indptr.shape[0] - 1
    sources = np.asarray(sources, dtype=np.int64).ravel()
    if max_hops < 0:
        raise ValueError(f"max_hops must be non-negative, got {max_hops}")
    if sources.size and (sources.min() < 0 or sources.max() >= n):
        raise ValueError("source row out of range")
    if expand is not None and expand.shape != (n,):
        raise ValueError(f"expand has {expand.shape[0]} entries for {n} nodes")
    dist = np.full((sources.size, n), UNREACHED, dtype=np.int16)
    for i, s in enumerate(sources.tolist()):
        d = dist[i]
        d[s] = 0
        frontier = np.array([s], dtype=np.int64)
        for hop in range(1, max_hops + 1):
            if hop > 1 and expand is not None:
                frontier = frontier[expand[frontier]]
            if frontier.size == 0:
                break
            starts, ends = indptr[frontier], indptr[frontier + 1]
            # All neighbours of the frontier in one gather: concatenated CSR slices.
            lengths = ends - starts
            if lengths.sum() == 0:
                break
            offsets = np.repeat(starts - np.cumsum(np.r_[0, lengths[:-1]]), lengths)
            nbrs = indices[np.arange(lengths.sum()) + offsets]
            nbrs = np.unique(nbrs[d[nbrs] == UNREACHED])
            d[nbrs] = hop
            frontier = nbrs
    return dist


def bridge_candidates(dist: np.ndarray, min_seeds: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Eq. 8: nodes reached by at least ``min_seeds`` seeds. Returns (rows, seeds reaching, summed hops).

    Rows are ordered best first: more seeds reached, then fewer total hops, then row number.
    """
    reached = dist != UNREACHED
    count = reached.sum(axis=0)
    rows = np.flatnonzero(count >= min_seeds)
    hops = np.where(reached[:, rows], dist[:, rows], 0).sum(axis=0).astype(np.int64)
    order = np.lexsort((rows, hops, -count[rows]))
    return rows[order], count[rows][order], hops[order]


def shortest_paths(indptr: np.ndarray, indices: np.ndarray, dist_to_seed: np.ndarray, start: int,
                   max_paths: int, priority: np.ndarray | None = None) -> list[list[int]]:
    """Up to ``max_paths`` shortest paths from ``start`` to the seed whose distance array is given.

    Each path is a list of node rows from ``start`` to the seed (the node at distance 0). Among equally
    short paths, steps to neighbours with a higher ``priority`` (optional, per node) are taken first,
    then lower row numbers, so the output is deterministic.
    """
    d0 = int(dist_to_seed[start])
    if d0 == UNREACHED or max_paths <= 0:
        return []
    paths: list[list[int]] = []

    def closer(u: int) -> list[int]:
        nbrs = indices[indptr[u]:indptr[u + 1]]
        nbrs = np.unique(nbrs[dist_to_seed[nbrs] == dist_to_seed[u] - 1])
        if priority is not None and nbrs.size > 1:
            nbrs = nbrs[np.lexsort((nbrs, -priority[nbrs]))]
        return nbrs.tolist()

    def walk(path: list[int]) -> None:
        u = path[-1]
        if dist_to_seed[u] == 0:
            paths.append(list(path))
            return
        for w in closer(u):
            if len(paths) >= max_paths:
                return
            path.append(w)
            walk(path)
            path.pop()

    walk([int(start)])
    return paths


@dataclass
class Bridges:
    """What :func:`find_bridges` found: bridge rows best first and the paths that make them bridges."""

    rows: list[int] = field(default_factory=list)
    seeds_reached: list[int] = field(default_factory=list)  # per bridge: how many seeds reach it
    paths: list[list[int]] = field(default_factory=list)  # bridge -> ... -> seed, node rows
    truncated: bool = False  # a cap cut the candidate list or the paths


def group_distances(dist: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per-group hop distance: the minimum over the group's seeds (``UNREACHED`` when none reaches).

    A group is one query mention that aligned to several nodes (an entity and the passage titled
    with it): it should count once in Eq. 8, or a mention would "bridge" with itself.
    """
    labels, inverse = np.unique(groups, return_inverse=True)
    big = np.iinfo(np.int16).max
    d = np.where(dist == UNREACHED, big, dist)
    out = np.full((labels.size, dist.shape[1]), big, dtype=np.int16)
    for i in range(labels.size):
        out[i] = d[inverse == i].min(axis=0)
    out[out == big] = UNREACHED
    return out


def find_bridges(indptr: np.ndarray, indices: np.ndarray, seeds: np.ndarray, max_hops: int = 2,
                 min_seeds: int = 2, max_bridges: int = 10, paths_per_pair: int = 2, max_paths: int = 40,
                 expand: np.ndarray | None = None, priority: np.ndarray | None = None,
                 exclude_seeds: bool = False, groups: np.ndarray | None = None) -> Bridges:
    """Bridges within ``max_hops`` of at least ``min_seeds`` seeds (Eq. 8) and a few shortest paths each.

    At most ``max_bridges`` bridges are kept (best first, see :func:`bridge_candidates`); each gets up
    to ``paths_per_pair`` shortest paths to every seed that reaches it, and no more than ``max_paths``
    paths are returned in all. With ``exclude_seeds`` a seed is never its own bridge (by default a seed
    within K hops of another seed is one: it links the two). ``expand`` and ``priority`` as in
    :func:`hop_distances` and :func:`shortest_paths`; a node that may not be expanded (a hub) is not a
    bridge either, unless it is a seed. ``groups`` (one label per seed, optional) makes seeds with the
    same label count as one seed (see :func:`group_distances`); a path then ends at the group's
    nearest seed. ``seeds_reached`` counts groups.
    """
    seeds = np.asarray(seeds, dtype=np.int64).ravel()
    groups = np.arange(seeds.size) if groups is None else np.asarray(groups).ravel()
    if groups.shape != seeds.shape:
        raise ValueError("groups must give one label per seed")
    seeds, first = np.unique(seeds, return_index=True)
    groups = groups[first]
    if min_seeds < 2:
        raise ValueError("a bridge joins at least two seeds: min_seeds must be >= 2")
    if max_bridges < 0 or paths_per_pair < 0 or max_paths < 0:
        raise ValueError("caps must be non-negative")
    out = Bridges()
    if np.unique(groups).size < min_seeds:
        return out
    dist = group_distances(hop_distances(indptr, indices, seeds, max_hops, expand), groups)
    rows, count, _ = bridge_candidates(dist, min_seeds)
    is_seed = np.isin(rows, seeds)
    keep = ~is_seed if exclude_seeds else np.ones(rows.size, bool)
    if expand is not None:  # a hub links everything to everything: it is not a bridge (unless a seed)
        keep &= expand[rows] | is_seed
    rows, count = rows[keep], count[keep]
    out.truncated = rows.size > max_bridges
    for b, c in zip(rows[:max_bridges].tolist(), count[:max_bridges].tolist()):
        out.rows.append(b)
        out.seeds_reached.append(c)
        for i in np.flatnonzero(dist[:, b] != UNREACHED).tolist():
            if dist[i, b] == 0:
                continue  # the bridge is (a seed of) this group itself
            room = max_paths - len(out.paths)
            if room <= 0:
                out.truncated = True
                return out
            out.paths.extend(shortest_paths(indptr, indices, dist[i], b, min(paths_per_pair, room), priority))
    return out
