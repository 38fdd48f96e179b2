"""Rows of unit vectors grouped into lists around centroids, so a few queries scan a few lists, not every row.

An insert adds a few thousand entity names to an index that may hold millions; their synonym edges (AGRAG Eq. 5)
need each new name's nearest names. An exact search costs (new names) x (all names) inner products: about 4 s at
165,000 names, ten times that at a million, on every insert. :class:`VectorLists` is the inverted-file idea kept
between inserts: centroids from a spherical k-means on a sample, each row's nearest centroid (its list), saved with
the index. A query scans the rows of its ``nprobe`` nearest lists only, and a new row costs one search among the
centroids. Plain arrays in and out; the rows are read through a function, so memory-mapped vectors stay on disk
until a list is read.

A table's rows lie in the order they were added, so one list's rows are scattered over the whole table: reading
them touches a page per row. :class:`PackedRows` holds rows list by list (how a large table is saved,
``index/vector_io.py``, and then read by row through :meth:`PackedRows.entry_of`): a list is one contiguous
slice. Rows added since it was written (the tail) are read by row; rows removed since stay in it, marked gone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from threadpoolctl import threadpool_limits

__all__ = ["PackedRows", "VectorLists", "row_products", "train_lists"]

TRAIN_PER_LIST = 16  # k-means sample rows per list (as the synonym search's inverted file, graph/synonyms.py)
NITER = 5
NPROBE = 16
QUERY_NPROBE = 32  # lists a query's scores read exactly (studies/perf/listed_query_scores.py)
SEED = 1234
ASSIGN_BLOCK = 65_536


def row_products(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Each row's inner product with ``q``, summed the same way wherever the row sits in ``vectors``. A BLAS
    matrix-vector product rounds the last rows of a matrix differently from the others, so one row read from the
    packed rows and from the table would differ in the last bit, and rows whose cosines are equal (the same
    words under the hash embedding) would fall out of their tie by where they happened to lie."""
    return np.einsum("ij,j->i", vectors, q)


def _nearest_centroid(centroids: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    import faiss  # here, not at import: a query that reads lists never loads faiss

    index = faiss.IndexFlatIP(centroids.shape[1])
    index.add(centroids)
    out = np.empty(len(vectors), np.int32)
    for start in range(0, len(vectors), ASSIGN_BLOCK):
        part = np.ascontiguousarray(vectors[start:start + ASSIGN_BLOCK], np.float32)
        out[start:start + len(part)] = index.search(part, 1)[1][:, 0]
    return out


def train_lists(vectors: np.ndarray, nlist: int | None = None, seed: int = SEED) -> "VectorLists":
    """Lists over the unit rows ``vectors`` (a memory map is read a block at a time): ``nlist`` (default
    ``round(√n)``) centroids from a seeded spherical k-means on ``TRAIN_PER_LIST`` sampled rows per list, and
    every row's nearest centroid. The same vectors give the same lists."""
    n, dim = vectors.shape
    nlist = max(1, min(n, nlist or int(round(math.sqrt(n)))))
    sample = min(n, TRAIN_PER_LIST * nlist)
    rows = np.arange(n) if sample == n else np.sort(np.random.default_rng(seed).choice(n, sample, replace=False))
    import faiss

    kmeans = faiss.Kmeans(dim, nlist, niter=NITER, seed=seed, spherical=True, min_points_per_centroid=1,
                          max_points_per_centroid=max(TRAIN_PER_LIST, math.ceil(sample / nlist)))
    kmeans.train(np.ascontiguousarray(vectors[rows], np.float32))
    centroids = np.ascontiguousarray(kmeans.centroids, np.float32)
    return VectorLists(centroids, _nearest_centroid(centroids, vectors))


@dataclass(frozen=True)
class PackedRows:
    """The rows of lists stored list by list: list ``l``'s entries are ``matrix[bounds[l]:bounds[l + 1]]``, entry
    ``i`` the table's row ``rows[i]`` (-1: removed since). The entries not removed hold rows ``0 .. size - 1``
    (a table's leading rows, :meth:`entry_of` finds each). ``segment``/``rows_segment``: the saved files they were
    read from or written to (a save that changes neither names them again instead of writing them)."""

    matrix: np.ndarray
    bounds: np.ndarray
    rows: np.ndarray
    segment: str | None = None
    rows_segment: str | None = None
    gone: bool = False  # whether some entries are marked removed
    _entry_of: list = field(default_factory=list, init=False, repr=False, compare=False)  # [row -> entry] once made

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def size(self) -> int:
        """How many rows the entries hold (the entries not removed)."""
        return len(self.entry_of())

    def entry_of(self) -> np.ndarray:
        """Row -> entry: ``matrix[entry_of()[r]]`` is row ``r`` (made once, from :attr:`rows`)."""
        if not self._entry_of:
            alive = np.flatnonzero(self.rows >= 0) if self.gone else np.arange(len(self.rows))
            out = np.full(len(alive), -1, np.int64)
            held = self.rows[alive]
            if len(held) and (held.min() < 0 or held.max() >= len(alive)):
                raise ValueError(f"packed rows hold row {int(held.max())} but only {len(alive)} rows")
            out[held] = alive
            if (out < 0).any():
                raise ValueError(f"packed rows hold row {int(np.flatnonzero(out < 0)[0])} twice or not at all")
            self._entry_of.append(out)
        return self._entry_of[0]

    def named(self, rows_segment: str) -> "PackedRows":
        """These packed rows, their entries saved as ``rows_segment``."""
        out = PackedRows(self.matrix, self.bounds, self.rows, self.segment, rows_segment, self.gone)
        out._entry_of.extend(self._entry_of)
        return out

    def kept(self, keep: np.ndarray) -> "PackedRows":
        """The entries renumbered after the rows ``keep`` does not mark were removed (theirs marked gone)."""
        new_row = np.cumsum(keep, dtype=np.int64) - 1
        rows = np.full(len(self.rows), -1, np.int64)
        alive = np.flatnonzero(self.rows >= 0)
        old = self.rows[alive]
        stays = keep[old]
        rows[alive[stays]] = new_row[old[stays]]
        return PackedRows(self.matrix, self.bounds, rows, self.segment, None, bool((rows < 0).any()))


@dataclass
class VectorLists:
    """``centroids`` (lists x dim) and ``lists`` (the list of each row, in row order); ``moves``: the caller's
    count of the vector table's row moves when the lists were made (rows moved since: the lists no longer fit)."""

    centroids: np.ndarray
    lists: np.ndarray
    moves: int = 0
    packed: PackedRows | None = field(default=None, repr=False, compare=False)
    """The rows again, list by list (:class:`PackedRows`), when a save wrote them or a load read them."""
    _grouped: tuple | None = field(default=None, init=False, repr=False, compare=False)
    _tail: tuple | None = field(default=None, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.lists)

    def extended(self, vectors: np.ndarray) -> "VectorLists":
        """These lists with rows ``vectors`` appended (each in its nearest list; outside :attr:`packed`)."""
        return VectorLists(self.centroids, np.concatenate([self.lists, _nearest_centroid(self.centroids, vectors)]),
                           self.moves, self.packed)

    def kept(self, keep: np.ndarray, moves: int) -> "VectorLists":
        """These lists over the rows ``keep`` (a boolean mask) marks, after the others were removed: each row stays
        in its list, so removing rows never needs new centroids."""
        packed = None if self.packed is None else self.packed.kept(keep)
        return VectorLists(self.centroids, self.lists[keep], moves, packed)

    def moved(self, moves: int) -> "VectorLists":
        """These lists (and packed rows) for a table whose row moves count is now ``moves`` (a restore)."""
        return VectorLists(self.centroids, self.lists, moves, self.packed)

    def reading(self, packed: PackedRows | None) -> "VectorLists":
        """These lists, their packed rows read from ``packed`` (the same rows, written or named again)."""
        return VectorLists(self.centroids, self.lists, self.moves, packed)

    def with_packed(self, matrix: np.ndarray, segment: str | None = None) -> "VectorLists":
        """These lists with ``matrix``: the rows in the order of :meth:`grouped` (what a save wrote)."""
        order, bounds = self.grouped()
        if matrix.shape[0] != len(order):
            raise ValueError(f"{matrix.shape[0]} packed rows for lists of {len(order)} rows")
        return VectorLists(self.centroids, self.lists, self.moves,
                           PackedRows(matrix, bounds, order.astype(np.int64), segment))

    def tail(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, bounds)`` as :meth:`grouped` gives them, for the rows :attr:`packed` does not hold (all rows
        when there is none): rows added since the packed rows were written."""
        if self._tail is None:
            if self.packed is None:
                self._tail = self.grouped()
            else:
                outside = np.ones(len(self.lists), bool)
                outside[self.packed.rows[self.packed.rows >= 0]] = False
                rows = np.flatnonzero(outside)
                order = rows[np.argsort(self.lists[rows], kind="stable")]
                self._tail = (order, np.searchsorted(self.lists[order], np.arange(len(self.centroids) + 1)))
        return self._tail

    def list_rows(self, lists: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray]
                  ) -> list[tuple[np.ndarray, np.ndarray]]:
        """``[(rows, vectors)]`` holding every row of ``lists``: a contiguous slice of :attr:`packed` per list
        (gone entries dropped), and the other rows (all of them without packed rows) read by ``rows_of`` at once,
        in row order."""
        out, packed = [], self.packed
        if packed is not None:
            for i in lists.tolist():
                lo, hi = int(packed.bounds[i]), int(packed.bounds[i + 1])
                if hi > lo:
                    rows, vectors = packed.rows[lo:hi], packed.matrix[lo:hi]
                    if packed.gone:
                        alive = rows >= 0
                        rows, vectors = rows[alive], vectors[alive]
                    if len(rows):
                        out.append((rows, vectors))
        order, bounds = self.tail()
        rest = [order[bounds[i]:bounds[i + 1]] for i in lists.tolist()]
        rest = np.sort(np.concatenate(rest)) if rest else np.empty(0, np.int64)
        if rest.size:
            out.append((rest, rows_of(rest)))
        return out

    def grouped(self) -> tuple[np.ndarray, np.ndarray]:
        """``(order, bounds)``: the rows sorted by list, and list ``l``'s rows ``order[bounds[l]:bounds[l + 1]]``
        (made once per lists: a search reads it, not a sort of every row)."""
        if self._grouped is None:
            order = np.argsort(self.lists, kind="stable")
            self._grouped = (order, np.searchsorted(self.lists[order], np.arange(len(self.centroids) + 1)))
        return self._grouped

    def scores(self, query: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray],
               nprobe: int | None = None) -> np.ndarray:
        """Every row's inner product with one query, as an exact scan would give it for the rows of the query's
        ``nprobe`` nearest lists. Every other row gets its list centroid's inner product, capped at the lowest
        exact one, so an estimate never outranks a row that was measured (``nprobe``: :data:`QUERY_NPROBE`). Costs ``nprobe`` lists' rows and one
        gather over the rows, not a product with every row."""
        q = np.asarray(query, np.float32).ravel()
        near, probed = self.probe(q, nprobe)
        members, exact = self.probed_scores(q, probed, rows_of)
        if members.size:  # one gather over the rows: each list's estimate, capped at the lowest exact cosine
            np.minimum(near, exact.min(), out=near)
        out = near[self.lists]
        out[members] = exact
        return out

    def top(self, query: np.ndarray, k: int, rows_of: Callable[[np.ndarray], np.ndarray],
            nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """``(rows, sims)``: the ``k`` rows :meth:`scores` ranks highest (ties by row), read from the probed lists
        alone, with no estimate for the other rows: every estimate is at most the lowest exact cosine, so when the
        k-th best exact cosine is above it no estimate can enter the top k. None when it is not (or fewer than
        ``k + 1`` rows were probed): the caller ranks :meth:`scores` instead."""
        q = np.asarray(query, np.float32).ravel()
        rows, sims = self.probed_scores(q, self.probe(q, nprobe)[1], rows_of)
        if not 0 < k < len(rows):
            return None
        kth = np.partition(sims, len(sims) - k)[len(sims) - k]
        if kth <= sims.min():
            return None
        tied = np.flatnonzero(sims >= kth)  # every row tied with the k-th too, so ties go by row
        best = tied[np.lexsort((rows[tied], -sims[tied]))][:k]
        return rows[best], sims[best]

    def probe(self, q: np.ndarray, nprobe: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The centroids' inner products with ``q`` and the ``nprobe`` (:data:`QUERY_NPROBE`) lists nearest it."""
        near = self.centroids @ q
        nlist = len(near)
        nprobe = QUERY_NPROBE if nprobe is None else nprobe
        return near, np.argpartition(-near, nprobe - 1)[:nprobe] if nprobe < nlist else np.arange(nlist)

    def probed_scores(self, q: np.ndarray, probed: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray]
                      ) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, cosines)``: the exact inner product of ``q`` with every row of the lists ``probed`` (rows in
        no particular order)."""
        parts = [(rows, row_products(vectors, q)) for rows, vectors in self.list_rows(probed, rows_of)]
        if not parts:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def search(self, queries: np.ndarray, rows_of: Callable[[np.ndarray], np.ndarray], k: int,
               nprobe: int | None = None, floor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(sims, rows)``, each ``(len(queries), k)``: the ``k`` rows of highest inner product with each query
        among the rows of its ``nprobe`` (default :data:`NPROBE`) nearest lists, best first (rows -1 and sims -inf where fewer were there).
        ``rows_of(rows)`` gives the vectors of sorted row numbers. ``floor``: only rows above it are wanted (a
        synonym threshold), so the others are dropped before the per-query ranking."""
        # Many small products, one per list: one BLAS thread each. Several threads hand off and wait on every one
        # of them, which cost 10x on a busy 2-core machine (3.1 s against 0.31 s at 166,000 rows).
        with threadpool_limits(limits=1, user_api="blas"):
            return self._search(queries, rows_of, k, nprobe, floor)

    def _search(self, queries, rows_of, k, nprobe, floor):
        q = np.ascontiguousarray(queries, np.float32)
        nlist = len(self.centroids)
        nprobe = min(NPROBE if nprobe is None else nprobe, nlist)
        probed = np.argpartition(-(q @ self.centroids.T), nprobe - 1, axis=1)[:, :nprobe] if nprobe < nlist else \
            np.tile(np.arange(nlist), (len(q), 1))
        pair_query = np.repeat(np.arange(len(q)), probed.shape[1])
        pair_list = probed.ravel()
        by_list = np.argsort(pair_list, kind="stable")
        pair_query, pair_list = pair_query[by_list], pair_list[by_list]
        starts = np.flatnonzero(np.r_[True, pair_list[1:] != pair_list[:-1]])
        found_q, found_r, found_s = [], [], []
        for a, b in zip(starts.tolist(), np.r_[starts[1:], len(pair_list)].tolist()):
            found = self.list_rows(pair_list[a:a + 1], rows_of)
            if not found:
                continue
            members = np.concatenate([f[0] for f in found]) if len(found) > 1 else found[0][0]
            who = pair_query[a:b]
            sims = np.hstack([q[who] @ f[1].T for f in found])  # (queries probing this list) x (its rows)
            if floor is not None:  # most rows of a list are far from a query: keep the few above the floor
                at_q, at_r = np.nonzero(sims > floor)
                found_q.append(who[at_q])
                found_r.append(members[at_r])
                found_s.append(sims[at_q, at_r])
                continue
            take = min(k, len(members))
            best = np.argpartition(-sims, take - 1, axis=1)[:, :take] if take < len(members) else \
                np.tile(np.arange(len(members)), (len(who), 1))
            found_q.append(np.repeat(who, take))
            found_r.append(members[best].ravel())
            found_s.append(np.take_along_axis(sims, best, axis=1).ravel())
        out_s = np.full((len(q), k), -np.inf, np.float32)
        out_r = np.full((len(q), k), -1, np.int64)
        if not found_q:
            return out_s, out_r
        fq, fr, fs = np.concatenate(found_q), np.concatenate(found_r), np.concatenate(found_s)
        ranked = np.lexsort((fr, -fs, fq))  # per query: highest first, ties by row
        fq, fr, fs = fq[ranked], fr[ranked], fs[ranked]
        first = np.searchsorted(fq, np.arange(len(q)))
        rank = np.arange(len(fq)) - first[fq]
        keep = rank < k
        out_s[fq[keep], rank[keep]] = fs[keep]
        out_r[fq[keep], rank[keep]] = fr[keep]
        return out_s, out_r
