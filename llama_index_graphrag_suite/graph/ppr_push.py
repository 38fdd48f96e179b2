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

Rounds rather than one node at a time: each round is a few numpy calls over the rows it pushes, so the cost
stays proportional to the entries read, with no compiled loop. (A numba loop doing the same rounds was no faster
on the 100,000-passage index's graph: about 95 ms for the 1.36 million entries a HippoRAG reset of 1,005 nodes
reads at ``eps = 1e-7``, as for these numpy calls.)
"""

from __future__ import annotations

import threading
import weakref

import numpy as np

__all__ = ["forward_push", "forward_push_reached"]


def forward_push(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, degree: np.ndarray,
                 seeds: np.ndarray, weights: np.ndarray, damping: float, eps: float) -> tuple[np.ndarray, int]:
    """``(y, entries)``: the push estimate of ``y = p + d A D^-1 y`` and the number of stored entries read.

    ``indptr, indices, data`` are the CSR of the symmetric adjacency ``A`` (``data`` None: every weight 1),
    ``degree`` its row sums (0 for dangling nodes); the reset ``p`` is ``weights`` (non-negative) on the distinct
    rows ``seeds`` and 0 elsewhere. Every node of the result is within ``eps * degree / (1 - damping)`` below the
    exact solution (module docstring).
    """
    n = degree.size
    y = np.zeros(n)
    entries = _rounds(indptr, indices, data, degree, seeds, weights, damping, eps, y, np.zeros(n), [], [])
    return y, entries


def _distinct(cols: np.ndarray, slots: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(cols, return_inverse=True)``; with ``slots`` (an int64 array over every node, any contents) by
    sorting the values alone and looking each one's position up in ``slots`` (no argsort of every entry)."""
    if slots is None or cols.size == 0:
        return np.unique(cols, return_inverse=True)
    ordered = np.sort(cols)
    first = np.empty(ordered.size, bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    distinct = ordered[first]
    slots[distinct] = np.arange(distinct.size)
    return distinct, slots[cols]


def _rounds(indptr, indices, data, degree, seeds, weights, damping, eps, y, r, pushed: list, touched: list,
            slots: np.ndarray | None = None) -> int:
    """The push rounds on ``y`` and ``r`` (zero where they start); appends each round's pushed rows to ``pushed``
    and the rows whose residual it wrote to ``touched`` (the seeds first). Returns the entries read. ``slots``:
    scratch for :func:`_distinct`."""
    frontier = np.asarray(seeds, np.int64)
    touched.append(frontier)  # listed before written: a caller resets what is listed, even after an error
    r[frontier] = weights
    entries = 0
    while frontier.size:
        # the threshold eps * deg(u) of the frontier only: a whole-graph array per query cost more than the push
        push = frontier[r[frontier] > eps * degree[frontier]]
        if not push.size:
            break
        pushed.append(push)
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
        reached, slot = _distinct(indices[where], slots)
        touched.append(reached)
        r[reached] += np.bincount(slot, weights=values, minlength=reached.size)
        frontier = reached
    return entries


def forward_push_reached(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray | None, degree: np.ndarray,
                         seeds: np.ndarray, weights: np.ndarray, damping: float, eps: float
                         ) -> tuple[np.ndarray, np.ndarray, int]:
    """``(rows, values, entries)``: :func:`forward_push`'s nonzero entries (``rows`` ascending), for a caller that
    ranks a few of the reached nodes and needs no array over every node.

    The estimate and residual arrays are kept per graph (``degree``) for the next call and zeroed where this one
    wrote: fresh arrays of every node cost their pages' first writes (and a pass to find the nonzeros) per query.
    The nonzeros are the pushed rows: a push adds a residual above ``eps * degree >= 0``."""
    y, r, slots = _borrow(degree)
    pushed: list[np.ndarray] = []
    touched: list[np.ndarray] = []
    try:
        entries = _rounds(indptr, indices, data, degree, seeds, weights, damping, eps, y, r, pushed, touched, slots)
        rows = np.unique(np.concatenate(pushed)) if pushed else np.empty(0, np.int64)
        values = y[rows]
        rows = rows[values != 0]  # a zero push (eps < 0) leaves no mass, as the nonzeros of y say
        return rows, y[rows], entries
    finally:
        for part in pushed:
            y[part] = 0.0
        for part in touched:
            r[part] = 0.0
        _give_back(degree, (y, r, slots))


# per graph (its degree array, by id: arrays are not hashable), the idle estimate, residual and scratch arrays;
# an entry goes with its array
_pool: dict[int, tuple[weakref.ref, list[tuple[np.ndarray, ...]]]] = {}
_pool_lock = threading.Lock()


def _borrow(degree: np.ndarray) -> tuple[np.ndarray, ...]:
    """A zeroed estimate and residual array and an int64 scratch array for ``degree``'s graph (one set per
    concurrent push)."""
    with _pool_lock:
        entry = _pool.get(id(degree))
        if entry is not None and entry[0]() is degree and entry[1]:
            return entry[1].pop()
    return np.zeros(degree.size), np.zeros(degree.size), np.empty(degree.size, np.int64)


def _give_back(degree: np.ndarray, arrays: tuple[np.ndarray, ...]) -> None:
    with _pool_lock:
        entry = _pool.get(id(degree))
        if entry is None or entry[0]() is not degree:
            entry = _pool[id(degree)] = (weakref.ref(degree), [])
            weakref.finalize(degree, _forget, id(degree))
        if len(entry[1]) < 2:  # two cores: more idle sets would only hold memory
            entry[1].append(arrays)


def _forget(key: int) -> None:
    with _pool_lock:
        entry = _pool.get(key)
        if entry is not None and entry[0]() is None:
            del _pool[key]


def pairwise_total(positions: np.ndarray, values: np.ndarray, n: int, ordered: bool = False) -> float:
    """``np.sum`` of a float64 array of ``n`` zeros holding ``values`` at the distinct ``positions``, bit for bit,
    without the array: numpy sums by pairwise halving down to blocks of at most 128 (eight interleaved accumulators),
    and a range without a nonzero adds exactly 0, so only the ranges that hold a position are visited. The
    PageRank paths normalise by such sums; a last bit of difference moves a push threshold or a near tie."""
    pos, val = np.asarray(positions, np.int64), np.asarray(values, np.float64)
    if not ordered:  # ``ordered``: the positions are ascending already
        order = np.argsort(pos, kind="stable")
        pos, val = pos[order], val[order]
    pos, val = np.ascontiguousarray(pos), np.ascontiguousarray(val)
    kernel = _pairwise_kernel()
    if kernel is None:  # numba missing: the array itself
        dense = np.zeros(n)
        dense[pos] = val
        return float(dense.sum())
    return float(kernel(pos, val, n))


def _leaf(pos, val, i0, i1, lo, n):
    """numpy's sum of a block of ``n <= 128`` positions from ``lo``, whose nonzeros are ``pos[i0:i1]``."""
    if n < 8:
        res = 0.0
        for k in range(i0, i1):
            res += val[k]
        return res
    acc = np.zeros(8)
    whole = n - n % 8  # the interleaved part; the rest is added in order after
    k = i0
    while k < i1 and pos[k] - lo < whole:
        acc[(pos[k] - lo) % 8] += val[k]
        k += 1
    res = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]))
    while k < i1:
        res += val[k]
        k += 1
    return res


def _pairwise(pos, val, n):
    """numpy's pairwise sum of ``n`` positions whose nonzeros are ``pos`` (sorted) with ``val``: its recursion as
    a loop over a stack of halves (left, then right, then their sum), a half without a nonzero being 0."""
    lo_, n_, i0_ = np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64, np.int64)
    i1_, mid_, state = np.zeros(64, np.int64), np.zeros(64, np.int64), np.zeros(64, np.int64)
    left = np.zeros(64)
    lo_[0], n_[0], i0_[0], i1_[0] = 0, n, 0, pos.size
    top, ret = 0, 0.0
    while top >= 0:
        lo, m, i0, i1 = lo_[top], n_[top], i0_[top], i1_[top]
        if state[top] == 0:
            if i0 == i1:
                ret, top = 0.0, top - 1
                continue
            if m <= 128:
                ret, top = _leaf(pos, val, i0, i1, lo, m), top - 1
                continue
            half = m // 2
            half -= half % 8
            mid = i0 + np.searchsorted(pos[i0:i1], lo + half)
            mid_[top], state[top] = mid, 1
            child = top + 1
            lo_[child], n_[child], i0_[child], i1_[child], state[child] = lo, half, i0, mid, 0
            top = child
        elif state[top] == 1:  # the left half's sum is in ret: now the right half
            half = m // 2
            half -= half % 8
            left[top], state[top] = ret, 2
            child = top + 1
            lo_[child], n_[child], i0_[child], i1_[child], state[child] = lo + half, m - half, mid_[top], i1, 0
            top = child
        else:
            ret = left[top] + ret
            state[top] = 0
            top -= 1
    return ret


_compiled: list = []


def _pairwise_kernel():
    """``_pairwise`` compiled by numba (once), or None without numba."""
    if not _compiled:
        try:
            from .ppr_fast import cached_njit

            leaf = cached_njit(_leaf)
            globals()["_leaf"] = leaf  # the compiled loop calls the compiled leaf
            _compiled.append(cached_njit(_pairwise))
        except Exception:  # numba not importable
            _compiled.append(None)
    return _compiled[0]
