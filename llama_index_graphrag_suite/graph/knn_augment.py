"""ArchRAG graph augmentation (Algorithm 1, lines 3-5): KNN edges by attribute similarity, cosine edge weights.

Given node attribute embeddings and the graph's edges, :func:`knn_augment`

(a) links each node to its nearest neighbours by attribute embedding when their cosine similarity is
    above a threshold (the neighbour search is exact, faiss ``IndexFlatIP`` on unit vectors, up to the synonym
    search's ``APPROX_MIN_ROWS`` nodes; from there on it is the same inverted-file search as the synonyms', whose
    cost grows as n·√n instead of n², with 99.5 % of the exact neighbours found), and
(b) weights every edge, old and new, by the attribute cosine of its ends.

The threshold. The paper only says "larger than a threshold". The authors' code
(``utils.compute_distance``) derives it from the graph: the ``percentile``-th percentile of the cosines
of the existing edges (0.8 in their run scripts), so an added edge is at least as similar as 80 % of
the real links; and it adds at most ``k`` = the mean degree of non-isolated nodes per node, searching
``1.5 k + 1`` neighbours. Both are kept here as the defaults (``threshold=None``, ``percentile=80``,
``k=None``); pass a number to fix either. The threshold actually used is returned, so it can be reported.

Weights are clipped to ``[min_weight, 1]``: Leiden needs non-negative weights, and a real KG link whose
ends happen to be dissimilar should still count a little rather than vanish.

Pure: numpy and faiss only; node ids are rows ``0..n-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import faiss
import numpy as np

from .synonyms import QUERY_BATCH, approx_min_rows, ivf_index

__all__ = ["AugmentedGraph", "knn_augment", "unique_pairs", "edge_cosines"]


@dataclass
class AugmentedGraph:
    """Undirected weighted edges (each pair once, ``src < dst``) and how they came about."""

    num_nodes: int
    src: np.ndarray  # int64
    dst: np.ndarray  # int64
    weight: np.ndarray  # float64, attribute cosine clipped to [min_weight, 1]
    is_knn: np.ndarray  # bool: added by augmentation (False: an edge of the input graph)
    threshold: float  # cosine threshold used for KNN edges (nan when augmentation was off)
    k: int  # most KNN edges added per node (0 when off)

    @property
    def num_knn_edges(self) -> int:
        return int(self.is_knn.sum())


def unique_pairs(src: np.ndarray, dst: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Each undirected pair once as (low, high); self-loops and parallel edges dropped."""
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    if src.shape != dst.shape:
        raise ValueError("src and dst must have the same length")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise ValueError("edge endpoint out of range")
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    keep = lo != hi
    codes = np.unique(lo[keep] * num_nodes + hi[keep])
    return codes // num_nodes, codes % num_nodes


EDGE_BLOCK = 8_192  # edges whose two ends are gathered at once (two blocks of rows: 8 MB each at 256 dimensions)


def edge_cosines(vectors: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Cosine of each edge's ends (rows of ``vectors`` are unit vectors), a block of edges at a time."""
    out = np.empty(len(src), np.float64)
    for start in range(0, len(src), EDGE_BLOCK):
        end = start + EDGE_BLOCK
        out[start:end] = np.einsum("ij,ij->i", vectors[src[start:end]], vectors[dst[start:end]])
    return out


def _unit(vectors: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError("vectors must be a 2-d array (one row per node)")
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def _nearest(x: np.ndarray, k: int, approx_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's ``k`` nearest rows by inner product (itself among them): exact below ``approx_rows`` rows,
    else from :func:`.synonyms.ivf_index`, searched in blocks."""
    n = x.shape[0]
    if approx_rows <= 0 or n < approx_rows:
        index = faiss.IndexFlatIP(x.shape[1])
        index.add(x)
        return index.search(x, k)
    index = ivf_index(x)
    parts = [index.search(x[start:start + QUERY_BATCH], k) for start in range(0, n, QUERY_BATCH)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


KNN_BLOCK_ENTRIES = 1 << 18  # search entries (node x neighbour) handled at once (about ten int64 arrays of it)


def _block_rows(search: int) -> int:
    return max(1, KNN_BLOCK_ENTRIES // max(search, 1))


def _candidates(sims: np.ndarray, nbrs: np.ndarray, start: int, block: int):
    """``(rows, cols, cos)`` of search rows ``start:start + block``: each node's found neighbours but itself."""
    s_sims, s_nbrs = sims[start:start + block], nbrs[start:start + block]
    rows = np.repeat(np.arange(start, start + len(s_sims)), s_nbrs.shape[1])
    cols, cos = s_nbrs.ravel().astype(np.int64), s_sims.ravel().astype(np.float64)
    valid = (cols >= 0) & (cols != rows)
    return rows[valid], cols[valid], cos[valid]


def knn_augment(
    vectors: np.ndarray,
    src: np.ndarray,
    dst: np.ndarray,
    k: int | None = None,
    threshold: float | None = None,
    percentile: float = 80.0,
    search_factor: float = 1.5,
    augment: bool = True,
    min_weight: float = 1e-3,
    approx_rows: int | None = None,
    nearest: Callable[[np.ndarray, int], tuple[np.ndarray, np.ndarray]] | None = None,
) -> AugmentedGraph:
    """Algorithm 1, lines 3-5: add KNN edges above the threshold, weight all edges by attribute cosine.

    ``k``: most new edges per node (None: mean degree of the non-isolated nodes, at least 1).
    ``threshold``: cosine a new edge must exceed (None: the ``percentile``-th percentile of the existing
    edges' cosines; with no edges, the same percentile of the nodes' nearest-neighbour cosines).
    ``augment=False`` only reweights the existing edges (the "without KNN" ablation).
    ``approx_rows``: from this many nodes on the neighbours come from the synonym search's inverted-file index
    (default :func:`.synonyms.approx_min_rows`; 0 = always exact).
    ``nearest(vectors, k)``: the neighbour search to use instead, ``(similarities, rows)`` of each row's ``k``
    nearest, best first; ``vectors`` must then be float32 unit rows already (they are used as given, no copy).
    """
    x = np.ascontiguousarray(vectors, np.float32) if nearest is not None else _unit(vectors)
    n = x.shape[0]
    if not 0.0 <= percentile <= 100.0:
        raise ValueError("percentile must be in [0, 100]")
    base_src, base_dst = unique_pairs(src, dst, n)
    base_cos = edge_cosines(x, base_src, base_dst)
    if not augment or n < 2:
        return AugmentedGraph(n, base_src, base_dst, np.clip(base_cos, min_weight, 1.0),
                              np.zeros(base_src.size, bool), float("nan"), 0)

    if k is None:
        degree = np.bincount(np.r_[base_src, base_dst], minlength=n)
        k = max(1, int(degree[degree > 0].mean())) if (degree > 0).any() else 1
    if k < 1:
        raise ValueError("k must be at least 1")
    search = min(n, int(search_factor * k) + 2)  # +1 for the node itself, +1 as the authors' code
    if nearest is not None:
        sims, nbrs = nearest(x, search)
    else:
        sims, nbrs = _nearest(x, search, approx_min_rows() if approx_rows is None else approx_rows)

    block = _block_rows(search)
    if threshold is None:
        # The authors' rule: as similar as `percentile` % of the real links (with none: of the candidates).
        reference = base_cos if base_cos.size else np.concatenate(
            [_candidates(sims, nbrs, start, block)[2] for start in range(0, n, block)])
        threshold = float(np.percentile(reference, percentile)) if reference.size else 1.0

    # New edges a block of nodes at a time: a node's candidates are its own row of the search (the whole search
    # as pair arrays was about 10 arrays of n x search entries, 1 GB at 165,000 nodes).
    base_codes = base_src * n + base_dst  # sorted (unique_pairs)
    kept_codes, kept_cos = [], []
    for start in range(0, n, block):
        rows, cols, cos = _candidates(sims, nbrs, start, block)
        lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
        code = lo * n + hi
        at = np.minimum(np.searchsorted(base_codes, code), max(base_codes.size - 1, 0))
        known = base_codes[at] == code if base_codes.size else np.zeros(code.size, bool)
        new = (cos > threshold) & ~known
        # Top k new neighbours per node: faiss returns each node's neighbours best first.
        rank = np.zeros(rows.size, np.int64)
        if new.any():
            new_rows = rows[new]
            starts = np.r_[0, np.flatnonzero(np.diff(new_rows)) + 1]
            run = np.arange(new_rows.size) - np.repeat(starts, np.diff(np.r_[starts, new_rows.size]))
            rank[new] = run
        new &= rank < k
        kept_codes.append(code[new])
        kept_cos.append(cos[new])
    knn_codes, first = np.unique(np.concatenate(kept_codes), return_index=True)
    knn_cos = np.concatenate(kept_cos)[first]

    all_src = np.r_[base_src, knn_codes // n]
    all_dst = np.r_[base_dst, knn_codes % n]
    weight = np.clip(np.r_[base_cos, knn_cos], min_weight, 1.0)
    is_knn = np.r_[np.zeros(base_src.size, bool), np.ones(knn_codes.size, bool)]
    return AugmentedGraph(n, all_src, all_dst, weight, is_knn, float(threshold), int(k))
