"""A faiss inner-product index over L2-normalised vectors, with string ids kept in row order.

Large tables need not sit in RAM: a table of at least :func:`mmap_min_bytes` is saved as a plain ``.npy``
matrix (next to where the ``.faiss`` file would be) and memory-mapped read-only on load, so the operating
system pages it in and out like any file. Smaller tables are saved and loaded as faiss files, as before.
"""

from __future__ import annotations

import os
from pathlib import Path

import faiss
import numpy as np

MMAP_MIN_MB = 128.0  # about 87,000 rows of 384 float32 dims
MMAP_ENV = "GRAPHRAG_SUITE_MMAP_MIN_MB"


def mmap_min_bytes() -> int:
    """Tables at least this large are saved as .npy and memory-mapped on load (``GRAPHRAG_SUITE_MMAP_MIN_MB``
    overrides the default 128 MB; 0 maps every table)."""
    return int(float(os.environ.get(MMAP_ENV, MMAP_MIN_MB)) * 2**20)


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class VectorTable:
    """Rows of unit vectors with ids. Cosine similarity = inner product.

    Exact search (``IndexFlatIP``): at the corpus sizes this project targets (10^4-10^5 rows of
    384 dims) it answers in milliseconds and never misses a neighbour. A loaded large table is a read-only
    memory-mapped matrix instead (``mapped``); it is searched the same way, with the same results.
    """

    def __init__(self, dim: int, ids: list[str] | None = None, index: faiss.Index | None = None,
                 mapped: np.ndarray | None = None):
        self.dim = dim
        self.ids: list[str] = list(ids or [])
        self._mapped = mapped  # a read-only np.memmap, or None when the rows live in the faiss index
        self._index = index if index is not None or mapped is not None else faiss.IndexFlatIP(dim)
        self._row = {i: r for r, i in enumerate(self.ids)}
        rows = mapped.shape[0] if mapped is not None else self._index.ntotal
        if rows != len(self.ids):
            raise ValueError(f"vector index has {rows} rows but {len(self.ids)} ids")

    @property
    def mapped(self) -> bool:
        """Whether the rows are memory-mapped from disk rather than held in RAM."""
        return self._mapped is not None

    @property
    def index(self) -> faiss.Index:
        """The faiss ``IndexFlatIP`` (a mapped table is first read into RAM: callers may change it)."""
        return self._writable()

    def clone(self) -> "VectorTable":
        """An independent copy; a mapped table's copy shares the read-only map (a change copies it then)."""
        if self._mapped is not None:
            return VectorTable(self.dim, list(self.ids), mapped=self._mapped)
        return VectorTable(self.dim, list(self.ids), faiss.clone_index(self._index))

    def _writable(self) -> faiss.Index:
        """The faiss index, made from the mapped rows on the first change (a mapped file is never written
        in place: it may be a saved version other readers use)."""
        if self._mapped is not None:
            self._index = faiss.IndexFlatIP(self.dim)
            self._index.add(np.ascontiguousarray(self._mapped))
            self._mapped = None
        return self._index

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, id_: str) -> bool:
        return id_ in self._row

    def row(self, id_: str) -> int:
        return self._row[id_]

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        vectors = normalize_rows(vectors)
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected {len(ids)} vectors of dim {self.dim}, got {vectors.shape}")
        dup = [i for i in ids if i in self._row]
        if dup:
            raise ValueError(f"ids already present: {dup[:3]}")
        self._writable().add(vectors)
        for i in ids:
            self._row[i] = len(self.ids)
            self.ids.append(i)

    def remove(self, ids) -> None:
        rows = sorted({self._row[i] for i in ids if i in self._row})
        if not rows:
            return
        # IndexFlat.remove_ids shifts later rows down, exactly as deleting from the id list does.
        self._writable().remove_ids(np.asarray(rows, dtype=np.int64))
        gone = set(rows)
        self.ids = [i for r, i in enumerate(self.ids) if r not in gone]
        self._row = {i: r for r, i in enumerate(self.ids)}

    def vectors(self) -> np.ndarray:
        """All rows in order: a copy, or the read-only mapped matrix itself."""
        if not self.ids:
            return np.zeros((0, self.dim), np.float32)
        if self._mapped is not None:
            return self._mapped
        return self._index.reconstruct_n(0, len(self.ids))

    def rows_of(self, ids: list[str]) -> np.ndarray:
        """The stored vectors of ``ids`` (a copy; a mapped table reads just those rows)."""
        return np.array(self._matrix()[[self._row[i] for i in ids]], dtype=np.float32)

    def put_back(self, order: list[str], rows: dict[str, np.ndarray]) -> None:
        """Rows removed earlier back in their places: the ids become ``order`` (those in the table now keep their
        vectors, the others are taken from ``rows``). How a failed change's removals are undone."""
        now = self._matrix()
        matrix = np.empty((len(order), self.dim), np.float32)
        here = np.fromiter((self._row.get(i, -1) for i in order), np.int64, len(order))
        matrix[here >= 0] = now[here[here >= 0]]
        for n in np.flatnonzero(here < 0).tolist():
            matrix[n] = rows[order[n]]
        index = faiss.IndexFlatIP(self.dim)
        index.add(matrix)
        self._index, self._mapped = index, None
        self.ids = list(order)
        self._row = {i: r for r, i in enumerate(self.ids)}

    def _matrix(self) -> np.ndarray:
        if self._mapped is not None:
            return self._mapped
        # A zero-copy view of the flat index's storage; valid until the next add or remove.
        return faiss.rev_swig_ptr(self._index.get_xb(), len(self.ids) * self.dim).reshape(len(self.ids), self.dim)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and cosines for one query vector, best first (ties by row)."""
        k = min(k, len(self.ids))
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        # For one query, a BLAS matrix-vector product plus a partial sort beats faiss's search call.
        sims = self.scores(query)
        part = np.argpartition(-sims, k - 1)[:k] if k < sims.size else np.arange(sims.size)
        rows = part[np.lexsort((part, -sims[part]))]
        return rows, sims[rows]

    def scores(self, query: np.ndarray) -> np.ndarray:
        """Cosine of the query with every row, in row order (one matrix-vector product, no sort)."""
        if not self.ids:
            return np.zeros(0, np.float32)
        return self._matrix() @ normalize_rows(query)[0]

    def save(self, path: Path) -> None:
        """Write to ``path`` (a faiss file) or, for a table of at least :func:`mmap_min_bytes`, to
        ``path.with_suffix(".npy")`` (a plain matrix: aligned, so a memory map of it is as fast as RAM)."""
        path = Path(path)
        if len(self.ids) * self.dim * 4 >= mmap_min_bytes() and self.ids:
            with path.with_suffix(".npy").open("wb") as f:  # np.save(str) would append another ".npy"
                np.save(f, np.ascontiguousarray(self._matrix(), np.float32), allow_pickle=False)
            return
        faiss.write_index(self._writable(), str(path))  # a mapped table this small: the threshold was raised

    @classmethod
    def load(cls, path: Path, ids: list[str], dim: int) -> "VectorTable":
        """Read what :meth:`save` wrote for ``path``: the .npy matrix (memory-mapped when at least
        :func:`mmap_min_bytes`, else read into a faiss index) or the faiss file."""
        path = Path(path)
        matrix_path = path.with_suffix(".npy")
        if matrix_path.is_file():
            big = matrix_path.stat().st_size >= mmap_min_bytes()
            matrix = np.load(matrix_path, mmap_mode="r" if big else None, allow_pickle=False)
            if matrix.ndim != 2 or matrix.shape[1] != dim or matrix.dtype != np.float32:
                raise ValueError(f"{matrix_path.name}: a {matrix.dtype} matrix of shape {matrix.shape}, expected (rows, {dim}) float32")
            if big:
                return cls(dim, ids, mapped=matrix)
            index = faiss.IndexFlatIP(dim)
            index.add(matrix)
            return cls(dim, ids, index)
        index = faiss.read_index(str(path))
        if index.d != dim:
            raise ValueError(f"{path.name}: dimension {index.d}, expected {dim}")
        return cls(dim, ids, index)
