"""Score arithmetic shared by retrievers (pure numpy)."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def blended(dense: np.ndarray, sparse_of, sparse_weight: float) -> np.ndarray:
    """(1 - w) x min-max dense + w x min-max BM25, in [0, 1]; ``sparse_of()`` is called only when w > 0.

    w = 0.5 is AGRAG's hybrid (Eq. 21); w = 0 ranks as dense does. A method that adds a graph signal to
    every chunk's score adds it to this.
    """
    base = minmax(dense)
    return base if sparse_weight <= 0 else (1.0 - sparse_weight) * base + sparse_weight * minmax(sparse_of())


def minmax(x: np.ndarray, at: np.ndarray | None = None) -> np.ndarray:
    """Scale to [0, 1] (float64); a constant vector maps to zeros (it ranks nothing above anything).

    ``at``: only the entries at these positions, scaled by the whole vector's bounds (the same values as
    ``minmax(x)[at]``, without a float64 copy of all of ``x``).
    """
    x = np.asarray(x)
    part = np.asarray(x if at is None else x[at], dtype=np.float64)
    if x.size == 0:
        return part
    lo, hi = float(x.min()), float(x.max())  # a float32 bound is exact in float64: the same bounds either way
    if hi - lo <= 1e-12:
        return np.zeros_like(part)
    return (part - lo) / (hi - lo)


def hybrid(dense: np.ndarray, sparse: np.ndarray) -> np.ndarray:
    """AGRAG Eq. 21 as the authors compute it: min-max each score vector, then average."""
    return (minmax(dense) + minmax(sparse)) / 2.0


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first; ties broken by index (the lower first), also at the cut, so
    ``top_k(s, 5)`` is always ``top_k(s, 20)[:5]`` (argpartition alone keeps an arbitrary one of two chunks tied
    at the k-th score: duplicated passages of a guideline made the hybrid guard and the hybrid method differ)."""
    scores = np.asarray(scores)
    k = min(k, scores.size)
    if k <= 0:
        return np.empty(0, np.int64)
    if k < scores.size:
        part = np.argpartition(-scores, k - 1)[:k]
        kth = scores[part].min()
        if kth == kth:  # not NaN: take every score above the k-th, then the tied ones by index
            above = np.flatnonzero(scores > kth)
            part = np.concatenate([above, np.flatnonzero(scores == kth)[: k - above.size]])
    else:
        part = np.arange(scores.size)
    return part[np.lexsort((part, -scores[part]))]


def check_top_k(top_k: Any) -> None:
    """A ``top_k`` is a whole number of at least 1 (5.5 or "5" would otherwise rank silently or fail deep inside)."""
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral):
        raise TypeError(f"top_k must be a whole number, got {top_k!r}")
    if top_k < 1:
        raise ValueError("top_k must be at least 1")
