"""Rows of unit vectors with string ids, searched by inner product; saved rows stay on disk.

A table is a list of row blocks: read-only memory maps of the ``.npy`` segments a version is made of
(``tables.py``), and at most one block in RAM that inserts grow. The operating system pages mapped rows in and
out like any file, so a loaded index holds no copy of its vectors, and a save writes only the rows added since
the saved version (:attr:`VectorTable.saved_rows` says how many leading rows are the saved ones).

A large table (:data:`LISTED_MIN_ROWS` rows on) also keeps its rows grouped in lists around centroids
(``graph/vector_lists.py``, saved with the index): a query then reads the rows of its nearest lists, not every
row, so its cost stops growing with the table. Listed tables are saved list by list
(``index/vector_io.py``): their leading rows are then :attr:`VectorTable.packed`, one matrix in list order with
each row's place in it, so a probed list is one contiguous read, and the blocks hold only the rows added since
(until a save packs the table again). Small tables, every shared benchmark's among them, are scanned exactly.
"""

from __future__ import annotations

import mmap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..graph.vector_lists import PackedRows, VectorLists, row_products, train_lists

#: From this many rows on a table keeps lists (:meth:`VectorTable.ensure_lists`) and queries read through them.
LISTED_MIN_ROWS = 100_000

#: ``ensure_lists(refit=True)`` trains new lists when the rows average more than this many times as many per list
#: as there are lists (``train_lists`` makes √n lists of √n rows): retrained each time the table doubles, which
#: costs about twice the last training in all.
REFIT_GROWTH = 2

__all__ = ["LISTED_MIN_ROWS", "REFIT_GROWTH", "VectorTable", "normalize_rows"]


def normalize_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    if x.ndim == 1:
        x = x[None, :]
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class VectorTable:
    """Rows of unit vectors with ids. Cosine similarity = inner product.

    Exact search: a BLAS matrix-vector product per block and a partial sort answer in milliseconds at the sizes
    one machine holds and never miss a neighbour. Blocks loaded from disk are never written (another process may
    be reading the same version): a change copies what it must into the RAM block.
    """

    def __init__(self, dim: int, ids: list[str] | None = None, blocks: list[np.ndarray] | None = None,
                 id_array: pa.Array | None = None, packed: PackedRows | None = None):
        self.dim = dim
        self.packed = packed
        """The leading rows stored list by list (a packed table's only copy of them), or None; the blocks hold the
        rows after them."""
        self.ids: list[str] = list(ids or [])
        self._blocks: list[np.ndarray] = [b for b in (blocks or []) if len(b)]
        self._ram: np.ndarray | None = None  # the growing block (capacity may exceed its rows)
        self._ram_rows = 0
        self._row_of: dict[str, int] | None = None  # id -> row, made when first asked (see _row)
        # the ids as an Arrow array (a load passes the one it read), for lookups of many ids at once (rows_in)
        self._id_array = (self.ids, len(self.ids), id_array) if id_array is not None else None
        if id_array is not None and len(id_array) != len(self.ids):
            raise ValueError(f"vector table has {len(id_array)} ids in its array but {len(self.ids)} in its list")
        rows = self._head_rows() + sum(len(b) for b in self._blocks)
        if packed is not None and (packed.matrix.ndim != 2 or packed.matrix.shape[1] != dim):
            raise ValueError(f"packed rows of shape {packed.matrix.shape}, expected (entries, {dim})")
        if rows != len(self.ids):
            raise ValueError(f"vector table has {rows} rows but {len(self.ids)} ids")
        for b in self._blocks:
            if b.ndim != 2 or b.shape[1] != dim:
                raise ValueError(f"a vector block of shape {b.shape}, expected (rows, {dim})")
        self.saved_rows = rows if blocks or packed is not None else 0
        """Leading rows that are, in order, the rows of the version this table was loaded from or saved as."""
        self._joined: np.ndarray | None = None
        self.moves = 0
        """How many times rows moved (a remove, a restore): rows read before stay valid while it is unchanged."""
        self.lists: VectorLists | None = None
        """The rows' lists when the table keeps them (:meth:`ensure_lists`); :attr:`listed` says if they fit."""

    @property
    def _row(self) -> dict[str, int]:
        """Id -> row, made on first use: a load finds the rows it needs by Arrow joins (:meth:`rows_in`), so a table
        read only by row (most queries) never holds a dict of its ids."""
        if self._row_of is None:
            self._row_of = dict(zip(self.ids, range(len(self.ids))))
        return self._row_of

    @property
    def listed(self) -> bool:
        """Whether :attr:`lists` hold every row as it is now, so searches read through them."""
        return self.lists is not None and self.lists.moves == self.moves and len(self.lists) == len(self.ids)

    def ensure_lists(self, refit: bool = False) -> VectorLists | None:
        """The lists of a table of :data:`LISTED_MIN_ROWS` rows or more, trained on its rows when it has none that
        fit (an add and a remove keep them fitting); None for a smaller table. ``refit``: train them again, too,
        when adds have outgrown them (:data:`REFIT_GROWTH`): lists trained at 166,000 rows hold 2,700 rows each
        once a batched build reaches a million, and a search of a list reads every one of them."""
        if len(self.ids) < LISTED_MIN_ROWS:
            return None
        outgrown = refit and self.lists is not None and len(self.ids) > REFIT_GROWTH * len(self.lists.centroids) ** 2
        if not self.listed or outgrown:
            lists = train_lists(_RowReader(self))
            lists.moves = self.moves
            self.lists = lists
            self.forget_joined()
        return self.lists

    @property
    def mapped(self) -> bool:
        """Whether every row is memory-mapped from disk rather than held in RAM."""
        held = self._blocks + ([self.packed.matrix] if self.packed is not None else [])
        return bool(held) and self._ram_rows == 0 and all(isinstance(b, np.memmap) for b in held)

    def name_packed(self, rows_segment: str) -> None:
        """Record that a save wrote the packed rows' entries as ``rows_segment`` (the next save names it again)."""
        old, self.packed = self.packed, self.packed.named(rows_segment)
        if self.lists is not None and self.lists.packed is old:
            self.lists = self.lists.reading(self.packed)

    def _head_rows(self) -> int:
        return 0 if self.packed is None else self.packed.size

    def pack(self, packed: PackedRows) -> None:
        """Hold every row in ``packed`` (what a save wrote: the same rows, list by list) instead of the blocks, which
        are dropped. Row numbers stay, and so do the lists, which now read their lists from ``packed``."""
        if packed.size != len(self.ids):
            raise ValueError(f"{packed.size} packed rows for a table of {len(self.ids)}")
        self.packed, self._blocks, self._ram, self._ram_rows, self._joined = packed, [], None, 0, None
        if self.lists is not None:
            self.lists = self.lists.reading(packed)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, id_: str) -> bool:
        return id_ in self._row

    def row(self, id_: str) -> int:
        return self._row[id_]

    def find(self, id_: str) -> int:
        """The row of ``id_``, or -1."""
        return self._row.get(id_, -1)

    def id_array(self) -> pa.Array:
        """The ids in row order as an Arrow string array (kept while the ids stay as they are)."""
        kept = self._id_array
        if kept is None or kept[0] is not self.ids or kept[1] != len(self.ids):
            kept = self._id_array = (self.ids, len(self.ids), pa.array(self.ids, pa.string()))
        return kept[2]

    def rows_in(self, ids: pa.Array) -> np.ndarray:
        """The row of each of ``ids`` (an Arrow string array), -1 for one the table does not hold: one hash join in
        Arrow instead of a dict lookup per id."""
        found = pc.index_in(ids, value_set=self.id_array())
        return np.asarray(found.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)

    def blocks(self) -> list[np.ndarray]:
        """The rows in order as the blocks that hold them (mapped segments, then the RAM block), not joined; the
        :attr:`packed` rows first, gathered into row order (a copy)."""
        head = [np.asarray(self.packed.matrix[self.packed.entry_of()])] if self._head_rows() else []
        return head + self._tail_blocks()

    def _tail_blocks(self) -> list[np.ndarray]:
        """The blocks after the packed rows (all of them without)."""
        ram = [self._ram[:self._ram_rows]] if self._ram_rows else []
        return self._blocks + ram

    def add(self, ids: list[str], vectors: np.ndarray) -> None:
        if not ids:
            return
        vectors = normalize_rows(vectors)
        if vectors.shape != (len(ids), self.dim):
            raise ValueError(f"expected {len(ids)} vectors of dim {self.dim}, got {vectors.shape}")
        dup = [i for i in ids if i in self._row]
        if dup:
            raise ValueError(f"ids already present: {dup[:3]}")
        if self.listed:  # each new row joins its nearest list
            self.lists = self.lists.extended(vectors)
        need = self._ram_rows + len(ids)
        if not self._ram_rows and (self._ram is None or need > len(self._ram)):
            self._ram = vectors  # a fresh array (normalize_rows): the RAM block as it is, no second copy
        elif self._ram is None or need > len(self._ram):  # grow by doubling: appends cost amortised O(rows added)
            grown = np.empty((max(need, 2 * (len(self._ram) if self._ram is not None else 0), 64), self.dim), np.float32)
            if self._ram_rows:
                grown[:self._ram_rows] = self._ram[:self._ram_rows]
            self._ram = grown
        if self._ram is not vectors:
            self._ram[self._ram_rows:need] = vectors
        self._ram_rows = need
        for i in ids:
            self._row[i] = len(self.ids)
            self.ids.append(i)
        self._joined = None

    def remove(self, ids) -> None:
        rows = sorted({self._row[i] for i in ids if i in self._row})
        if not rows:
            return
        keep = np.ones(len(self.ids), bool)
        keep[rows] = False
        lists = self.lists if self.listed else None
        head, old = self._head_rows(), self.packed
        packed = old.kept(keep) if old is not None and rows[0] < head else old  # stay where they are, renumbered
        blocks = self._select(keep[head:]) if rows[-1] >= head else self._tail_blocks()
        self._set_rows([i for r, i in enumerate(self.ids) if keep[r]], blocks, packed)
        if lists is not None and lists.packed is not None and lists.packed is old:  # renumbered once, above
            self.lists = VectorLists(lists.centroids, lists.lists[keep], self.moves, packed)
        elif lists is not None:  # the other rows stay in their lists
            self.lists = lists.kept(keep, self.moves)

    def _select(self, keep: np.ndarray) -> list[np.ndarray]:
        """The blocks after the packed rows, holding those of their rows ``keep`` marks: whole blocks before its
        first unmarked row stay as they are (mapped ones stay mapped); the rows from the first block touched on
        are copied into one RAM block."""
        first = int(np.argmin(keep))
        blocks, out, start = self._tail_blocks(), [], 0
        while blocks and start + len(blocks[0]) <= first:
            out.append(blocks.pop(0))
            start += len(out[-1])
        if blocks:
            rest = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
            out.append(np.array(rest[keep[start:]], np.float32))
        return out

    def _set_rows(self, ids: list[str], blocks: list[np.ndarray], packed: PackedRows | None) -> None:
        """Make the table ``ids`` over ``packed`` and ``blocks``: blocks it already held stay (the saved rows among
        the leading ones stay saved), the others become the RAM block."""
        held = [b for b in blocks if any(b is old for old in self._blocks)]
        fresh = [b for b in blocks if not any(b is old for old in self._blocks)]
        saved_after = max(self.saved_rows - self._head_rows(), 0)
        self.packed = packed
        self.saved_rows = self._head_rows() + min(saved_after, sum(len(b) for b in held))
        merged = np.concatenate(fresh) if len(fresh) > 1 else (fresh[0] if fresh else np.zeros((0, self.dim), np.float32))
        self._blocks, self._ram, self._ram_rows = held, np.array(merged, np.float32), len(merged)
        self.ids = list(ids)
        self._row_of = None
        self._joined = None
        self.moves += 1

    def vectors(self) -> np.ndarray:
        """All rows in order: the mapped matrix itself when there is one block, else (packed rows too) a cached
        copy."""
        if not self.ids:
            return np.zeros((0, self.dim), np.float32)
        return self._joined_rows()

    def drop_mapped_pages(self) -> None:
        """Unmap from this process the pages of its memory-mapped rows read so far (``MADV_DONTNEED`` on read-only
        mappings): they stay in the page cache, and a later read maps them again. For a pass that reads every row
        once (ArchRAG's attribute step), whose pages would otherwise stay in the process's RSS: at 1,000,000
        passages several GB."""
        for rows in ([self.packed.matrix] if self.packed is not None else []) + self._blocks:
            mapping = getattr(rows, "_mmap", None) if isinstance(rows, np.memmap) else None
            if isinstance(mapping, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
                mapping.madvise(mmap.MADV_DONTNEED)

    def forget_joined(self) -> None:
        """Drop the cached copy :meth:`vectors` joined from several blocks (a change that read it once, as the
        synonym search does, need not keep a second copy of every row until the next change)."""
        self._joined = None

    def _joined_rows(self) -> np.ndarray:
        if self._joined is not None:
            return self._joined
        blocks, head = self._tail_blocks(), self._head_rows()
        if len(blocks) == 1 and not head:
            return blocks[0]
        out = np.empty((len(self.ids), self.dim), np.float32)
        if head:
            np.take(self.packed.matrix, self.packed.entry_of(), axis=0, out=out[:head])
        start = head
        for block in blocks:
            out[start:start + len(block)] = block
            start += len(block)
        self._joined = out
        return out

    def rows_of(self, ids: list[str]) -> np.ndarray:
        """The stored vectors of ``ids`` (a copy; mapped blocks read just those rows)."""
        return self.at(np.fromiter((self._row[i] for i in ids), np.int64, len(ids)))

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of row numbers ``rows`` (a copy; mapped blocks read just those rows)."""
        rows = np.asarray(rows, np.int64)
        head = self._head_rows()
        if not head:
            return self._tail_at(rows)
        entry, matrix = self.packed.entry_of(), self.packed.matrix
        if not rows.size or rows.max() < head:  # every row packed: one gather through the row -> entry map
            return np.asarray(matrix[entry[rows]], np.float32)
        out = np.empty((len(rows), self.dim), np.float32)
        inside = rows < head
        out[inside] = matrix[entry[rows[inside]]]
        out[~inside] = self._tail_at(rows[~inside] - head)
        return out

    def _tail_at(self, rows: np.ndarray) -> np.ndarray:
        """``at`` for rows of the blocks after the packed rows (numbered from the first of them)."""
        out = np.empty((len(rows), self.dim), np.float32)
        start = 0
        if rows.size and np.all(rows[1:] >= rows[:-1]):  # sorted (a list search's rows): each block's part is a slice
            for block in self._tail_blocks():
                lo, hi = np.searchsorted(rows, [start, start + len(block)])
                if hi > lo:
                    out[lo:hi] = block[rows[lo:hi] - start]
                start += len(block)
            return out
        for block in self._tail_blocks():
            inside = (rows >= start) & (rows < start + len(block))
            if inside.any():
                out[inside] = block[rows[inside] - start]
            start += len(block)
        return out

    def checkpoint(self) -> tuple:
        """What :meth:`restore` needs to give the table back as it is now (no copy of any row: blocks are never
        changed in place below their row count, and a remove makes a new RAM block)."""
        return (list(self.ids), list(self._blocks), self._ram, self._ram_rows, self.saved_rows,
                self.lists if self.listed else None, self.packed)

    def restore(self, checkpoint: tuple) -> None:
        """The table as it was at ``checkpoint``: how a failed change's removals are undone."""
        ids, self._blocks, self._ram, self._ram_rows, self.saved_rows, lists, self.packed = checkpoint
        self.ids = list(ids)
        self._row_of = None
        self._joined = None
        self.moves += 1
        self.lists = None if lists is None else lists.moved(self.moves)

    def search(self, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-k rows and cosines for one query vector, best first (ties by row)."""
        k = min(k, len(self.ids))
        if k <= 0:
            return np.empty(0, np.int64), np.empty(0, np.float32)
        if self.listed:  # the top of the exact rows, unless the k-th of them ties with the estimates' cap
            found = self.lists.top(normalize_rows(query)[0], k, self.at)
            if found is not None:
                return found
        sims = self.scores(query)
        part = np.argpartition(-sims, k - 1)[:k] if k < sims.size else np.arange(sims.size)
        rows = part[np.lexsort((part, -sims[part]))]
        return rows, sims[rows]

    def scores(self, query: np.ndarray, exact_rows: np.ndarray | None = None) -> np.ndarray:
        """Cosine of the query with every row, in row order: a matrix-vector product per block; for a listed table,
        exact on the rows of the query's nearest lists and on ``exact_rows`` (rows another signal ranks high, whose
        cosine is fused with it), a capped estimate elsewhere (``VectorLists.scores``)."""
        if not self.ids:
            return np.zeros(0, np.float32)
        q = normalize_rows(query)[0]
        if self.listed:
            out = self.lists.scores(q, self.at)
            if exact_rows is not None and len(exact_rows):
                rows = np.unique(np.asarray(exact_rows, np.int64))
                out[rows] = row_products(self.at(rows), q)
            return out
        head = self._head_rows()
        parts = [(self.packed.matrix @ q)[self.packed.entry_of()]] if head else []
        parts += [b @ q for b in self._tail_blocks()]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def scores_at(self, query: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """The exact cosines of the query with ``rows``: on a listed table read for those rows alone (its
        :meth:`scores` would give estimates for rows far from the query), else :meth:`scores` at them."""
        rows = np.asarray(rows, np.int64)
        if not self.listed:
            return self.scores(query)[rows]
        return row_products(self.at(rows), normalize_rows(query)[0])

    def unsaved(self) -> tuple[list[str], np.ndarray]:
        """The rows after :attr:`saved_rows` (what a save appends to the saved version's rows; never packed ones:
        a save that keeps the packed rows saved keeps them all)."""
        start = self.saved_rows
        if start == len(self.ids):
            return [], np.zeros((0, self.dim), np.float32)
        if start < self._head_rows():
            raise ValueError(f"rows from {start} on are unsaved, but the first {self._head_rows()} are packed")
        tail, offset = [], self._head_rows()
        for block in self._tail_blocks():  # only the blocks that hold rows after the saved ones are read
            if offset + len(block) > start:
                tail.append(block[max(start - offset, 0):])
            offset += len(block)
        return self.ids[start:], np.ascontiguousarray(np.concatenate(tail) if len(tail) > 1 else tail[0])

    def mark_saved(self) -> None:
        self.saved_rows = len(self.ids)


class _RowReader:
    """A table's rows as ``train_lists`` reads them (``shape``, ``len``, rows by slice or by sorted array), each read
    through :meth:`VectorTable.at`: no copy of every row joined from the table's blocks."""

    def __init__(self, table: VectorTable) -> None:
        self.table, self.shape = table, (len(table), table.dim)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        if isinstance(rows, slice):
            rows = np.arange(*rows.indices(self.shape[0]))
        return self.table.at(rows)
