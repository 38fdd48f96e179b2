"""A vector table on disk: the parts a manifest's ``vectors`` entry lists for it (``tables.py``), each stored once.

A plain part ``[ids, matrix, rows]`` is an Arrow ``id`` segment and a ``.npy`` segment of float32 rows whose
first ``rows`` are the table's next rows, in row order. An insert appends one such part; a table of
:data:`MAX_SEGMENTS` parts, or one a delete shortened near its start, is written whole again (compaction).

A packed table (a large chunk, entity or fact table, :data:`PACKED_TABLES`) starts with a packed part
``[ids, matrix, rows, entries]`` instead: the matrix holds the table's first ``rows`` rows list by list (the lists
of the manifest's ``vector_lists``), so a query reads each probed list as one contiguous slice, and the Arrow
``entries`` segment says for each matrix row which table row it is (``row``, -1 for a row removed since) and which
list it is in (``list``, ascending). The rows added since follow as plain parts. That matrix is the rows' only
copy: a row is read through its place in it (``VectorTable.packed``). A save packs the table again, every row in
list order, when the packed part is not the saved version's, when the rows added since outnumber the packed
ones, when half its entries are removed rows, or at compaction; otherwise it names the same matrix again (and a
new ``entries`` segment and ids after a delete).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..graph.vector_lists import PackedRows
from .segment_files import MAX_SEGMENTS, one_array, appending
from .vectors import VectorTable

__all__ = ["MAX_SEGMENTS", "PACKED_TABLES", "read_vector_parts", "vector_part_segments", "write_vector_parts"]

#: Tables saved list by list once they keep lists (``VectorTable.listed``): every table a query reads list by list.
#: The entity names are read by list too (PathRAG's keyword search, AGRAG's synonym edges, the synonym step of an
#: insert), and read by name through the row map as cheaply as from plain rows.
PACKED_TABLES = ("chunks", "entities", "facts")
_STR = pa.string()


def _segment_limit() -> int | float:
    """Segments a table may have before a save writes it whole again: none while a batched build appends."""
    return float("inf") if appending() else MAX_SEGMENTS


def _ids_segment(writer: Any, ids: list[str]) -> str:
    return writer.table(pa.Table.from_pydict({"id": list(ids)}))


def write_vector_parts(name: str, table: VectorTable, writer: Any, base_parts: list | None) -> list:
    """The manifest's ``vectors`` entry for ``table`` after writing what it needs: the parts of ``base_parts``
    (the saved version's, None: write everything) that still hold its rows, and new parts for the others."""
    if name in PACKED_TABLES and table.listed:
        return _write_packed(table, writer, base_parts)
    plain = base_parts is not None and not any(len(p) == 4 for p in base_parts)
    parts = _kept_parts(base_parts, table.saved_rows) if plain else None
    if parts is not None and (len(parts) >= _segment_limit() or table.saved_rows < sum(p[2] for p in base_parts) // 2):
        parts = None  # compaction, or a delete near the start left less than half of the saved rows in use
    if parts is None:
        parts, ids, matrix = [], table.ids, table.blocks() or table.vectors()
    else:
        ids, matrix = table.unsaved()
    if len(ids) or not parts:
        parts.append([_ids_segment(writer, ids), writer.matrix(matrix), len(ids)])
    return parts


def _write_packed(table: VectorTable, writer: Any, base_parts: list | None) -> list:
    packed, head = table.packed, base_parts[0] if base_parts and len(base_parts[0]) == 4 else None
    if packed is None or head is None or head[1] != packed.segment or table.lists.packed is not packed:
        return [_pack(table, writer)]
    tail = _kept_parts(base_parts[1:], table.saved_rows - packed.size)
    if 1 + len(tail) >= _segment_limit() or len(table) - packed.size > packed.size or 2 * packed.size < len(packed):
        return [_pack(table, writer)]
    if packed.rows_segment != head[3]:  # rows removed since: their entries marked, the others renumbered
        of_entry = np.repeat(np.arange(len(packed.bounds) - 1, dtype=np.int32), np.diff(packed.bounds))
        entries = writer.table(pa.table({"row": pa.array(packed.rows, pa.int64()), "list": pa.array(of_entry)}))
        table.name_packed(entries)
        head = [_ids_segment(writer, table.ids[:packed.size]), packed.segment, packed.size, entries]
    ids, matrix = table.unsaved()
    if len(ids):
        tail.append([_ids_segment(writer, ids), writer.matrix(matrix), len(ids)])
    return [head] + tail


class _InListOrder:
    """The rows of ``table`` in the order ``order``, read a slice at a time (what ``SegmentWriter.matrix`` streams
    into a file): the save never holds a second copy of the table in memory."""

    def __init__(self, table: VectorTable, order: np.ndarray) -> None:
        self.table, self.order = table, order
        self.shape = (len(order), table.dim)

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, part: slice) -> np.ndarray:
        rows = self.order[part]
        by_row = np.argsort(rows, kind="stable")
        out = np.empty((len(rows), self.table.dim), np.float32)
        out[by_row] = self.table.at(rows[by_row])  # read in row order: each mapped block once
        return out


def _pack(table: VectorTable, writer: Any) -> list:
    """Every row of ``table`` written list by list as one packed part; the table then reads its rows from it."""
    lists = table.lists
    order, bounds = lists.grouped()
    order = order.astype(np.int64)
    matrix = writer.matrix([_InListOrder(table, order)])
    entries = writer.table(pa.table({"row": pa.array(order), "list": pa.array(lists.lists[order], pa.int32())}))
    part = [_ids_segment(writer, table.ids), matrix, len(order), entries]
    table.pack(PackedRows(np.load(writer.folder / matrix, mmap_mode="r", allow_pickle=False), bounds, order,
                          matrix, entries))
    return part


def _kept_parts(parts: list, rows: int) -> list:
    """The saved ``parts`` cut to their first ``rows`` rows."""
    out, left = [], rows
    for ids, matrix, used in parts:
        if left <= 0:
            break
        out.append([ids, matrix, min(used, left)])
        left -= used
    return out


def vector_part_segments(parts: list) -> set[str]:
    """The segment names ``parts`` (one table's ``vectors`` entry) refer to."""
    return {n for p in parts for n in [*p[:2], *p[3:]]}


def read_vector_parts(folder: Path, parts: list, read: Callable[[str], pa.Table], dim: int, nlist: int | None
                      ) -> tuple[pa.Array | None, list[np.ndarray], PackedRows | None]:
    """``(ids, blocks, packed)`` of a table's saved ``parts`` (``nlist``: how many lists its ``vector_lists``
    hold, None without); ValueError naming the segment that does not fit."""
    blocks, id_arrays, packed = [], [], None
    for i, part in enumerate(parts):
        ids_segment, matrix_segment, used = part[:3]
        id_array = one_array(read(ids_segment).column("id")).cast(_STR)  # no rows: saved as nulls
        matrix = np.load(folder / matrix_segment, mmap_mode="r", allow_pickle=False)
        if matrix.ndim != 2 or matrix.shape[1] != dim or matrix.dtype != np.float32 or (
                len(part) == 3 and len(id_array) != len(matrix)):
            raise ValueError(f"{matrix_segment}: a {matrix.dtype} matrix of shape {matrix.shape} for "
                             f"{len(id_array)} ids, expected (rows, {dim}) float32")
        if not 0 <= int(used) <= len(id_array):
            raise ValueError(f"{matrix_segment}: {used} rows used of {len(id_array)}")
        if len(part) == 4:
            if i or len(id_array) != int(used):
                raise ValueError(f"{matrix_segment}: packed rows {'after other rows' if i else 'with other ids'}")
            packed = _read_packed(matrix, read(part[3]), part, nlist)
        else:
            blocks.append(matrix[:used])
        id_arrays.append(id_array.slice(0, int(used)))
    return (pa.concat_arrays(id_arrays) if id_arrays else None), blocks, packed


def _read_packed(matrix: np.ndarray, entries: pa.Table, part: list, nlist: int | None) -> PackedRows:
    rows, of_entry = (entries.column(c).to_numpy() for c in ("row", "list"))
    nlist = nlist if nlist is not None else int(of_entry.max(initial=-1)) + 1
    if len(rows) != len(matrix) or (len(rows) and (of_entry.min() < 0 or of_entry.max() >= nlist or
                                                   (np.diff(of_entry) < 0).any())):
        raise ValueError(f"{part[3]}: the entries do not fit the packed rows {part[1]}")
    bounds = np.searchsorted(of_entry, np.arange(nlist + 1))
    packed = PackedRows(matrix, bounds, np.asarray(rows, np.int64), part[1], part[3], bool((rows < 0).any()))
    try:
        size = packed.size  # each row once: checked as the row -> entry map is made
    except ValueError as exc:
        raise ValueError(f"{part[3]}: {exc}") from None
    if size != int(part[2]):
        raise ValueError(f"{part[3]}: {size} packed rows for {part[2]} ids")
    return packed
