"""Synonym edges between entities (AGRAG Eq. 5): cosine > φ, at most k per entity, found with faiss."""

from __future__ import annotations

import faiss
import numpy as np


def synonym_pairs(
    vectors: np.ndarray,
    threshold: float = 0.8,
    max_per_node: int = 100,
    query_rows: np.ndarray | None = None,
    eligible: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``(i, j, cosine)`` with i < j and cosine(v_i, v_j) > threshold.

    ``vectors`` are L2-normalised rows. Each query row keeps at most ``max_per_node`` neighbours
    (its nearest ones), found by one exact inner-product kNN search in faiss, not all pairs in Python.
    ``query_rows`` limits the search to some rows (e.g. the entities an insert added); their
    neighbours may be any row. ``eligible`` (bool per row) excludes rows from both sides, e.g. names
    too short to judge.
    """
    n = vectors.shape[0]
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    if n < 2:
        return empty
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    ok = np.ones(n, bool) if eligible is None else np.asarray(eligible, bool)
    rows = np.arange(n) if query_rows is None else np.asarray(query_rows, np.int64)
    rows = rows[ok[rows]]
    if rows.size == 0:
        return empty
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    k = min(n, max_per_node + 1)  # +1: a row finds itself first
    sims, nbrs = index.search(vectors[rows], k)
    src = np.repeat(rows, k)
    dst, sim = nbrs.ravel(), sims.ravel()
    keep = (dst >= 0) & (dst != src) & (sim > threshold)
    keep[keep] &= ok[dst[keep]]
    src, dst, sim = src[keep], dst[keep], sim[keep]
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pair_ids = lo * n + hi
    _, first = np.unique(pair_ids, return_index=True)
    return lo[first], hi[first], sim[first].astype(np.float32)
