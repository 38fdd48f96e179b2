"""Synonym edges between entities (AGRAG Eq. 5): cosine > φ, at most k per entity, found with faiss.

Small searches are exact (``IndexFlatIP``). An exact kNN of q query rows against n rows costs q·n
inner products, so a bulk build (q = n) is quadratic in the entities; from ``APPROX_MIN_ROWS`` query
rows on, the neighbours come from an inverted-file index (``IndexIVFFlat``: a k-means coarse quantizer
over 4·√n lists, each query scanning the ``IVF_NPROBE`` nearest lists). Measured on 10k-200k entity-name
vectors (studies/perf/results/synonyms.md): it finds 99.5-100 % of the exact pairs, and at least 99.99 % of
its pairs are exact pairs (the others: rows with more than ``max_per_node`` neighbours above φ, where a
missed nearer neighbour lets a farther one in, or cosines within rounding of φ). At 200k rows it takes
~10x less CPU than the exact search; its cost grows as n·√n (fitted CPU exponent 1.3-1.5 over 10k-200k
rows against 1.9-2.1 exact). The k-means runs with a fixed seed on a seeded sample, so the same vectors
give the same pairs (also across thread counts, checked at 50k rows).

An index built in one go (approximate above the threshold) and one built by many small inserts (each
exact) can therefore differ in a few synonym pairs.

This module only measures closeness. Close names are not always one thing ("christopher nolan" and
"jonathan nolan", "sars cov" and "sars cov 2"): the index then drops the pairs that
:func:`~..extractors.entity_resolution.can_be_aliases` rules out by their words (``keep_alias_pairs``).
"""

from __future__ import annotations

import math
import os
from typing import Callable

import faiss
import numpy as np

from .vector_lists import VectorLists

# Query rows from which the approximate index is used. Below it the search is exact, as it always was,
# so small indexes and the golden tests see the same pairs. Chosen from studies/perf/synonyms_bench.py
# (2 shared cores, CPU seconds): at 20,000 MiniLM name vectors exact takes ~4 s against ~1.3 s, a saving
# too small to give up exact pairs for; at 50,000 ~21 s against ~3.4 s, at 200,000 ~320 s against ~28 s.
# An insert with fewer new entities than this stays exact whatever the index size (it costs q·n).
APPROX_MIN_ROWS = 20_000
APPROX_ENV = "GRAPHRAG_SUITE_SYNONYM_APPROX_ROWS"  # overrides APPROX_MIN_ROWS; 0 = always exact
IVF_LISTS_PER_SQRT = 4  # nlist = 4·√n: lists of ~√n/4 rows
IVF_NPROBE = 16  # lists per query; recall at 200k MiniLM rows: 4 -> 96.4 %, 8 -> 98.6 %, 16 -> 99.5 %, 32 -> 99.8 %
# (each doubling of nprobe ~doubles the search time: 16 is the knee)
IVF_TRAIN_PER_LIST = 16  # k-means on 16 sampled rows per list, 5 iterations: at 200k rows 32 rows and 10
IVF_NITER = 5  # iterations cost 3x the build time for the same recall (the lists' quality barely matters)
IVF_SEED = 1234
QUERY_BATCH = 65_536  # approximate mode searches this many rows at a time, so the k-NN buffers stay bounded


def approx_min_rows() -> int:
    """``GRAPHRAG_SUITE_SYNONYM_APPROX_ROWS`` when set (0 turns the approximate search off), else ``APPROX_MIN_ROWS``."""
    value = os.environ.get(APPROX_ENV, "").strip()
    if not value:
        return APPROX_MIN_ROWS
    try:
        return max(0, int(value))
    except ValueError:
        raise ValueError(f"{APPROX_ENV} must be a whole number of rows (0 = always exact), not {value!r}") from None


class Blocks:
    """Rows held as several blocks (a vector table's mapped segments and its RAM block), read without joining them
    into one matrix: a copy of every row would cost as much memory as the table again."""

    def __init__(self, blocks) -> None:
        self.blocks = [b for b in (blocks if isinstance(blocks, (list, tuple)) else [blocks]) if len(b)]
        self.starts = np.cumsum([0] + [len(b) for b in self.blocks])
        self.shape = (int(self.starts[-1]), self.blocks[0].shape[1] if self.blocks else 0)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        """The rows ``rows`` (any order), float32 and C-contiguous."""
        rows = np.asarray(rows, np.int64)
        out = np.empty((len(rows), self.shape[1]), np.float32)
        which = np.searchsorted(self.starts, rows, side="right") - 1
        for b in np.unique(which).tolist():
            at = which == b
            out[at] = self.blocks[b][rows[at] - self.starts[b]]
        return out

    def add_to(self, index) -> None:
        """Add every row to a faiss ``index``, a block at a time (in row order: the ids are the row numbers)."""
        for block in self.blocks:
            for start in range(0, len(block), QUERY_BATCH):
                index.add(np.ascontiguousarray(block[start:start + QUERY_BATCH], np.float32))


def ivf_index(vectors, nprobe: int | None = None, seed: int = IVF_SEED) -> faiss.IndexIVFFlat:
    """An inner-product ``IndexIVFFlat`` over ``vectors`` (a float32 matrix, or :class:`Blocks`), trained
    deterministically.

    ``4·√n`` lists from a spherical k-means (the rows are unit vectors) on a seeded sample of
    ``IVF_TRAIN_PER_LIST`` rows per list, ``IVF_NITER`` iterations; ``nprobe`` lists searched (``IVF_NPROBE``).
    """
    blocks = vectors if isinstance(vectors, Blocks) else Blocks(np.ascontiguousarray(vectors, np.float32))
    n, dim = blocks.shape
    nlist = max(1, min(n, int(round(IVF_LISTS_PER_SQRT * math.sqrt(n)))))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
    sample = min(n, IVF_TRAIN_PER_LIST * nlist)
    if sample == n and len(blocks.blocks) == 1:
        train = np.ascontiguousarray(blocks.blocks[0], np.float32)  # a matrix trains on itself, not on a copy
    else:
        train = blocks[np.arange(n) if sample == n else np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))]
    index.cp.seed, index.cp.niter, index.cp.spherical = seed, IVF_NITER, True
    index.cp.min_points_per_centroid = 1  # a small sample is deliberate: no warning
    index.cp.max_points_per_centroid = max(IVF_TRAIN_PER_LIST, math.ceil(sample / nlist))  # no second sampling
    index.train(train)
    blocks.add_to(index)
    index.nprobe = min(IVF_NPROBE if nprobe is None else nprobe, nlist)
    return index


def search_neighbours(index, vectors, rows, k, threshold, ok, batch=QUERY_BATCH):
    """(src, dst, cos) of the ``k`` nearest of each of ``rows`` in ``index`` that are a real neighbour, not
    the row itself, above φ and eligible (``ok``: rows -> bool per row), searched ``batch`` rows at a time."""
    parts = []
    for start in range(0, rows.size, batch):
        part = rows[start:start + batch]
        sims, nbrs = index.search(vectors[part], k)
        parts.append(_real_neighbours(part, sims, nbrs, threshold, ok))
    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate(p) for p in zip(*parts))


def synonym_pairs(
    vectors,
    threshold: float = 0.8,
    max_per_node: int = 100,
    query_rows: np.ndarray | None = None,
    eligible: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
    approx_rows: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs ``(i, j, cosine)`` with i < j and cosine(v_i, v_j) > threshold, each pair once.

    ``vectors`` are L2-normalised rows: a matrix, or :class:`Blocks` (read a block at a time). Each query row keeps at most ``max_per_node`` neighbours
    (its nearest ones), found by one inner-product kNN search in faiss, not all pairs in Python.
    ``query_rows`` limits the search to some rows (e.g. the entities an insert added); their
    neighbours may be any row. ``eligible`` (bool per row, or a function of an array of rows giving one)
    excludes rows from both sides, e.g. names too short to judge: a function is asked only about the query
    rows and the neighbours found, not about every row. The search is exact for fewer than ``approx_rows`` query rows (default
    :func:`approx_min_rows`; 0 = always exact) and approximate (:func:`ivf_index`) from there on.
    """
    vectors = vectors if isinstance(vectors, Blocks) else Blocks(np.ascontiguousarray(vectors, np.float32))
    n = vectors.shape[0]
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    if n < 2:
        return empty
    if eligible is None:
        ok = lambda r: np.ones(len(r), bool)  # noqa: E731
    elif callable(eligible):
        ok = eligible
    else:
        flags = np.asarray(eligible, bool)
        ok = flags.__getitem__
    # In row order, whatever order the caller holds them in (an insert's new names are a set, whose order follows
    # the process's string hashing): the search's matrix products tile the query rows, and a row's place in a tile
    # can change a cosine's last bit, so two builds of one corpus (a local and a Ray build) stored scores a bit apart.
    rows = np.arange(n) if query_rows is None else np.sort(np.asarray(query_rows, np.int64))
    rows = rows[ok(rows)]
    if rows.size == 0:
        return empty
    k = min(n, max_per_node + 1)  # +1: a row finds itself first
    limit = approx_min_rows() if approx_rows is None else approx_rows
    if limit <= 0 or rows.size < limit:
        index = faiss.IndexFlatIP(vectors.shape[1])
        vectors.add_to(index)
        src, dst, sim = search_neighbours(index, vectors, rows, k, threshold, ok, batch=rows.size)
    else:
        src, dst, sim = search_neighbours(ivf_index(vectors), vectors, rows, k, threshold, ok)
    return _each_pair_once(src, dst, sim, n)


def _real_neighbours(rows, sims, nbrs, threshold, ok):
    """(src, dst, cos) of a k-NN result (``sims``, ``nbrs``: one row per query row ``rows``): found (not -1), not
    the row itself, above φ and eligible."""
    src, dst, sim = np.repeat(rows, nbrs.shape[1]), nbrs.ravel(), sims.ravel()
    keep = (dst >= 0) & (dst != src) & (sim > threshold)
    keep[keep] &= ok(dst[keep])
    return src[keep], dst[keep], sim[keep]


def _each_pair_once(src, dst, sim, n):
    lo, hi = np.minimum(src, dst), np.maximum(src, dst)
    pair_ids = lo * n + hi
    _, first = np.unique(pair_ids, return_index=True)
    return lo[first], hi[first], sim[first].astype(np.float32)


def listed_synonym_pairs(lists: VectorLists, rows_of: Callable[[np.ndarray], np.ndarray], query_rows: np.ndarray,
                         threshold: float = 0.8, max_per_node: int = 100,
                         eligible: Callable[[np.ndarray], np.ndarray] | None = None):
    """:func:`synonym_pairs` of ``query_rows`` (an insert's new names) against every row, searched in the rows of
    each query's nearest lists (:class:`~.vector_lists.VectorLists`) instead of all rows: the same pairs but
    those whose names fall in lists a query does not probe. ``rows_of(rows)``: the vectors of sorted rows."""
    n = len(lists)
    empty = (np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    ok = eligible if eligible is not None else (lambda r: np.ones(len(r), bool))
    rows = np.asarray(query_rows, np.int64)
    rows = np.sort(rows[ok(rows)])
    if rows.size == 0 or n < 2:
        return empty
    k = min(n, max_per_node + 1)
    sims, nbrs = lists.search(rows_of(rows), rows_of, k, floor=threshold)
    return _each_pair_once(*_real_neighbours(rows, sims, nbrs, threshold, ok), n)
