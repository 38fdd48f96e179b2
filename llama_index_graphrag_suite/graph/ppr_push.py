"""Local personalized PageRank by forward push, for a sparse reset on a large symmetric graph.

The fast form (:mod:`.ppr_fast`) solves ``y = p + d A D^-1 y`` over the whole graph: each query costs a dozen
passes over every stored entry, about 0.25 s at 1.2 million nodes and ten times that at ten million. When the
reset ``p`` sits on a few nodes (AGRAG's terminals, A2RAG's seeds, ArchRAG's retrieved items), almost all of
that mass stays within a few hops, and the forward push of Andersen, Chung & Lang (FOCS 2006) reads only there.

It keeps an estimate ``y`` and a residual ``r`` (first ``p``); pushing node ``u`` moves ``r(u)`` into
``y(u)`` and hands ``d r(u) A(u, v) / deg(u)`` to each neighbour's residual. It pushes every node whose
residual exceeds ``eps * deg(u)`` (``deg``: weighted degree), a round of such nodes at a time, until none is
left. Then, for a symmetric ``A``, every node's estimate is below the exact ``y`` by at most
``eps * deg(v) / (1 - d)`` (the exact answer is ``y + G r`` with ``G = (I - d A D^-1)^-1``, ``r <= eps D 1``
and ``G D 1 = D 1 / (1 - d)``), and the work is bounded by ``1 / ((1 - d) eps)`` units of pushed degree,
whatever the graph's size. Dangling nodes keep what reaches them, as in the fast form.

Rounds: every node above its threshold is pushed with the residual it held when the round began, and what the
round hands out is added to the residuals when it ends; the next round looks at the nodes that received mass, in
position order. Two implementations of exactly these rounds: a numba-compiled loop (when the fast form runs on
numba) and numpy calls per round (otherwise). Both add every share in the same order, so they give the same bits;
the compiled one skips the per-round sort of every touched entry, which was most of the numpy rounds' cost
(HippoRAG's push from 1,005 seeds at 300,000 passages: 79 ms per query).
"""

from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

__all__ = ["forward_push", "forward_push_reached"]

log = logging.getLogger(__name__)


def forward_push(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, degree: np.ndarray,
                 seeds: np.ndarray, weights: np.ndarray, damping: float, eps: float) -> tuple[np.ndarray, int]:
    """``(y, entries)``: the push estimate of ``y = p + d A D^-1 y`` and the number of stored entries read.

    ``indptr, indices, data`` are the CSR of the symmetric adjacency ``A`` (``data`` None: every weight 1),
    ``degree`` its row sums (0 for dangling nodes); the reset ``p`` is ``weights`` (non-negative) on the distinct
    rows ``seeds`` and 0 elsewhere. Every node of the result is within ``eps * degree / (1 - damping)`` below the
    exact solution (module docstring). Numpy rounds; :func:`forward_push_reached` runs the same rounds compiled.
    """
    n = degree.size
    y = np.zeros(n)
    r = np.zeros(n)
    frontier = np.asarray(seeds, np.int64)
    r[frontier] = weights
    entries = 0
    while frontier.size:
        # the threshold eps * deg(u) of the frontier only: a whole-graph array per query cost more than the push
        push = frontier[r[frontier] > eps * degree[frontier]]
        if not push.size:
            break
        mass = r[push]
        y[push] += mass
        r[push] = 0.0
        starts, ends = indptr[push].astype(np.int64), indptr[push + 1].astype(np.int64)
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:  # only dangling nodes: they keep what reached them
            break
        entries += total
        # the positions of the pushed rows' entries, row after row
        first = np.cumsum(lengths) - lengths
        where = np.arange(total, dtype=np.int64) + np.repeat(starts - first, lengths)
        live = lengths > 0
        share = damping * mass[live] / degree[push[live]]
        values = np.repeat(share, lengths[live])
        if data is not None:
            values = values * data[where]
        touched, slot = np.unique(indices[where], return_inverse=True)
        r[touched] += np.bincount(slot, weights=values, minlength=touched.size)
        frontier = touched
    return y, entries


def forward_push_reached(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, degree: np.ndarray,
                         seeds: np.ndarray, weights: np.ndarray, damping: float, eps: float,
                         compiled: bool = True) -> tuple[np.ndarray, np.ndarray, int]:
    """``(rows, values, entries)``: :func:`forward_push`'s nonzero entries (``rows`` ascending) without a pass over
    every node, by the compiled rounds when ``compiled`` and numba is importable (else the numpy ones)."""
    kernel = _kernel() if compiled else None
    if kernel is None:
        y, entries = forward_push(indptr, indices, data, degree, seeds, weights, damping, eps)
        rows = np.flatnonzero(y)
        return rows, y[rows], entries
    n = degree.size
    seeds = np.asarray(seeds, np.int64)
    weights = np.asarray(weights, np.float64)
    has_data = data is not None
    values = data if has_data else np.ones(1, np.float32)
    rows, y, entries = kernel(indptr, indices, values, has_data, np.asarray(degree, np.float64), seeds, weights,
                              float(damping), float(eps), n)
    return rows, y, int(entries)


def _push_rounds(indptr, indices, data, has_data, degree, seeds, weights, damping, eps, n):  # pragma: no cover
    """The rounds of :func:`forward_push` as loops (compiled by numba): same shares, added in the same order."""
    y = np.zeros(n)
    r = np.zeros(n)
    acc = np.zeros(n)  # this round's shares per node, summed in entry order as np.bincount sums them
    mark = np.zeros(n, np.bool_)
    reached = np.empty(max(seeds.size, 16), np.int64)
    n_reached = 0
    frontier = seeds.copy()
    for i in range(seeds.size):
        r[seeds[i]] = weights[i]
    touched = np.empty(max(seeds.size, 16), np.int64)
    entries = 0
    while frontier.size:
        push = frontier[r[frontier] > eps * degree[frontier]]
        if push.size == 0:
            break
        mass = r[push]
        total = 0
        for j in range(push.size):
            u = push[j]
            if y[u] == 0.0:
                if n_reached == reached.size:
                    reached = np.concatenate((reached, np.empty(reached.size, np.int64)))
                reached[n_reached] = u
                n_reached += 1
            y[u] += mass[j]
            r[u] = 0.0
            total += np.int64(indptr[u + 1]) - np.int64(indptr[u])
        if total == 0:
            break
        entries += total
        n_touched = 0
        for j in range(push.size):
            u = push[j]
            lo, hi = np.int64(indptr[u]), np.int64(indptr[u + 1])
            if hi == lo:
                continue
            share = damping * mass[j] / degree[u]
            for k in range(lo, hi):
                v = indices[k]
                if not mark[v]:
                    mark[v] = True
                    if n_touched == touched.size:
                        touched = np.concatenate((touched, np.empty(touched.size, np.int64)))
                    touched[n_touched] = v
                    n_touched += 1
                if has_data:
                    acc[v] += share * data[k]
                else:
                    acc[v] += share
        frontier = np.sort(touched[:n_touched])
        for j in range(frontier.size):
            v = frontier[j]
            r[v] += acc[v]
            acc[v] = 0.0
            mark[v] = False
    rows = np.sort(reached[:n_reached])
    return rows, y[rows], entries


@lru_cache(maxsize=1)
def _kernel():
    """:func:`_push_rounds` compiled, or None when numba is not importable."""
    try:
        import numba
    except Exception as e:  # not installed, or built for another numpy
        log.info("numba not available (%s): the PageRank push runs on numpy", e)
        return None
    try:  # compiled code cached next to this file (or in the user's cache) across processes
        return numba.njit(nogil=True, cache=True)(_push_rounds)
    except Exception:  # nowhere to write a cache
        return numba.njit(nogil=True)(_push_rounds)
