"""One compiled pass instead of several numpy passes over a large per-chunk score array (``query_scores.py``).

At a million chunks a numpy expression writes a float64 array per operation: Eq. 21's fusion (two min-max
scalings, a sum, a halving) makes seven such passes, PathRAG's and ArchRAG's weighted blend as many, and
``scoring.top_k`` negates, partitions and scans the array twice. Here each is one loop with the same floating-point
operations in the same order (no fast-math), so the values and the order, ties included, are those of
``scoring.hybrid``, ``scoring.blended`` and ``scoring.top_k``. Arrays below
:data:`LARGE` entries, and any run without numba, keep the numpy forms.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["LARGE", "blended", "hybrid", "top_k"]

#: From this many entries on (the chunk tables that keep vector lists) the compiled passes run.
LARGE = 100_000

_compiled: dict[str, object] = {}


def _kernels() -> dict[str, object]:
    """The compiled loops (once), or {} without numba or with it switched off (``GRAPHRAG_SUITE_NUMBA=0``)."""
    from ..graph.ppr_fast import NUMBA_ENV

    if os.environ.get(NUMBA_ENV, "1") == "0":
        return {}
    if not _compiled:
        try:
            from ..graph.ppr_fast import cached_njit

            _compiled.update(hybrid=cached_njit(_hybrid_loop), blended=cached_njit(_blended_loop),
                             top=cached_njit(_top_loop))
        except Exception:  # numba not importable
            _compiled["none"] = None
    return {} if "none" in _compiled else _compiled


def _hybrid_loop(dense, sparse, lo1, span1, flat1, lo2, span2, flat2, out):
    """``(minmax(dense) + minmax(sparse)) / 2.0`` element by element (``flat``: the constant vector's zeros)."""
    for i in range(out.size):
        a = 0.0 if flat1 else (np.float64(dense[i]) - lo1) / span1
        b = 0.0 if flat2 else (np.float64(sparse[i]) - lo2) / span2
        out[i] = (a + b) / 2.0


def _bounds(*arrays: np.ndarray) -> list:
    """Per array, as ``scoring.minmax`` takes them: its min, its span, and whether it counts as constant (the span
    compared as Python floats)."""
    out = []
    for x in arrays:
        lo, hi = float(x.min()), float(x.max())
        out += [lo, hi - lo, hi - lo <= 1e-12]
    return out


def hybrid(dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    """``scoring.hybrid(dense, sparse)``, bit for bit (same bounds, same operations per entry)."""
    from .scoring import hybrid as plain

    dense, sparse = np.asarray(dense), np.asarray(sparse)
    kernels = _kernels()
    if dense.size < LARGE or not kernels or dense.shape != sparse.shape or dense.ndim != 1:
        return plain(dense, sparse)
    out = np.empty(dense.size)
    kernels["hybrid"](np.ascontiguousarray(dense), np.ascontiguousarray(sparse), *_bounds(dense, sparse), out)
    return out


def _blended_loop(dense, sparse, lo1, span1, flat1, lo2, span2, flat2, w1, w2, out):
    """``w1 · minmax(dense) + w2 · minmax(sparse)`` element by element, as ``scoring.blended`` computes it."""
    for i in range(out.size):
        a = 0.0 if flat1 else (np.float64(dense[i]) - lo1) / span1
        b = 0.0 if flat2 else (np.float64(sparse[i]) - lo2) / span2
        out[i] = w1 * a + w2 * b


def blended(dense: np.ndarray, sparse_of, sparse_weight: float) -> np.ndarray:
    """``scoring.blended(dense, sparse_of, sparse_weight)``, bit for bit; ``sparse_of()`` is called only when the
    weight is positive."""
    from .scoring import blended as plain

    dense = np.asarray(dense)
    kernels = _kernels()
    if sparse_weight <= 0 or dense.size < LARGE or not kernels or dense.ndim != 1:
        return plain(dense, sparse_of, sparse_weight)
    sparse = np.asarray(sparse_of())
    if sparse.shape != dense.shape:
        return plain(dense, lambda: sparse, sparse_weight)
    out = np.empty(dense.size)
    kernels["blended"](np.ascontiguousarray(dense), np.ascontiguousarray(sparse), *_bounds(dense, sparse),
                       1.0 - sparse_weight, float(sparse_weight), out)
    return out


def _top_loop(scores, k, keep_s, keep_i):
    """The ``k`` best of ``scores`` by (higher score, then lower index) into ``keep_s`` / ``keep_i`` (a heap whose
    root is the worst kept); False when a NaN is met (the caller then ranks with numpy)."""
    size = 0
    for i in range(scores.size):
        s = scores[i]
        if s != s:
            return False
        if size < k:  # sift up: the worse (lower score, then higher index) toward the root
            j = size
            size += 1
            while j > 0:
                p = (j - 1) >> 1
                if keep_s[p] < s or (keep_s[p] == s and keep_i[p] > i):
                    break
                keep_s[j], keep_i[j] = keep_s[p], keep_i[p]
                j = p
            keep_s[j], keep_i[j] = s, i
            continue
        if not s > keep_s[0]:  # a later index never beats an equal score
            continue
        j = 0  # replace the root, sift down
        while True:
            c = 2 * j + 1
            if c >= k:
                break
            if c + 1 < k and (keep_s[c + 1] < keep_s[c] or (keep_s[c + 1] == keep_s[c] and keep_i[c + 1] > keep_i[c])):
                c += 1
            if s < keep_s[c] or (s == keep_s[c] and i > keep_i[c]):
                break
            keep_s[j], keep_i[j] = keep_s[c], keep_i[c]
            j = c
        keep_s[j], keep_i[j] = s, i
    return True


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """``scoring.top_k(scores, k)``: the indices of the ``k`` largest scores, best first, ties by the lower index."""
    from .scoring import top_k as plain

    scores = np.asarray(scores)
    kernels = _kernels()
    k = int(k)
    if scores.size < LARGE or not kernels or not 0 < k < scores.size or scores.ndim != 1 \
            or scores.dtype not in (np.float32, np.float64):
        return plain(scores, k)
    keep_s, keep_i = np.empty(k, scores.dtype), np.empty(k, np.int64)
    if not kernels["top"](np.ascontiguousarray(scores), k, keep_s, keep_i):
        return plain(scores, k)
    return keep_i[np.lexsort((keep_i, -keep_s))]
