"""A large vector table's lists on disk (``vectors.py``, ``graph/vector_lists.py``), beside its vectors.

Per listed table the manifest's ``vector_lists`` names ``[centroids, lists]`` segments (a ``.npy`` of centroids,
a Parquet ``list`` column: every row's list), and for a table of :data:`PACKED_TABLES` also the packed rows: a
``.npy`` of the rows again, list by list, so that a query reads one contiguous slice per list instead of a page
per row (``PackedRows``). It covers the table's first rows in the order the lists group them; rows added later
are read from the table. When rows were removed since it was written, a fourth segment (Parquet ``row``,
``list``) says which row each entry is now (-1: gone) and which list it is in.

A save writes the packed rows when the lists have none (new lists, or an index saved before they existed: until
then queries read the rows from the table, as before), when the table itself is written whole, or when more rows
were added since than they hold; otherwise the next version names the same file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..graph.vector_lists import PackedRows, VectorLists
from .vectors import VectorTable

__all__ = ["PACKED_TABLES", "read_vector_lists", "vector_lists_segments", "write_vector_lists"]

#: Tables whose rows are saved a second time list by list: float32, as the table's own, so every cosine a query
#: reads is the one the table gives. The entity table is left out to keep a 1,000,000-passage index within 8 GB
#: of disk (studies/perf/listed_search.py gives the bytes).
PACKED_TABLES = ("chunks", "facts")


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


def write_vector_lists(tables: dict[str, VectorTable], writer: Any, base: dict | None, whole: set[str]) -> dict:
    """The manifest's ``vector_lists`` entry (an empty dict when no table keeps lists). ``base``: the manifest the
    save extends in the same folder (None: none); ``whole``: the tables this save writes whole."""
    listed = {name: t for name, t in tables.items() if t.listed}
    if not listed:
        return {}
    before = vector_lists_of(base) if base else {}
    out = {}
    for name, table in listed.items():
        lists = table.lists
        entry = [writer.matrix(lists.centroids), writer.table(pa.table({"list": pa.array(lists.lists, pa.int32())}))]
        if name in PACKED_TABLES:
            packed = lists.packed
            kept = packed is not None and packed.segment is not None and before.get(name, [None] * 3)[2:3] == [packed.segment]
            if not kept or name in whole or len(lists) - int((packed.rows >= 0).sum()) > len(packed):
                order = lists.grouped()[0]
                segment = writer.matrix([_InListOrder(table, order)])
                lists = lists.with_packed(np.load(writer.folder / segment, mmap_mode="r", allow_pickle=False), segment)
                table.lists = lists
            packed = lists.packed
            entry.append(packed.segment)
            if packed.gone:  # which row each entry is now: no longer the order the lists give
                if packed.rows_segment is None:
                    of_entry = np.repeat(np.arange(len(packed.bounds) - 1, dtype=np.int32), np.diff(packed.bounds))
                    rows_segment = writer.table(pa.table({"row": pa.array(packed.rows, pa.int64()),
                                                          "list": pa.array(of_entry, pa.int32())}))
                    table.lists = lists = VectorLists(lists.centroids, lists.lists, lists.moves, PackedRows(
                        packed.matrix, packed.bounds, packed.rows, packed.segment, rows_segment, True))
                entry.append(lists.packed.rows_segment)
        out[name] = entry
    return {"vector_lists": out}


def vector_lists_of(manifest: dict) -> dict[str, list[str]]:
    """The manifest's vector lists by table (versions saved before every large table kept lists name only the
    entity table's, as ``entity_lists``)."""
    lists = dict(manifest.get("vector_lists", {}))
    if "entity_lists" in manifest:
        lists.setdefault("entities", manifest["entity_lists"])
    return lists


def vector_lists_segments(manifest: dict) -> set[str]:
    return {n for parts in vector_lists_of(manifest).values() for n in parts}


def read_vector_lists(folder: Path, manifest: dict, tables: dict[str, VectorTable],
                      read: Callable[[str], pa.Table]) -> None:
    """Give each table of ``tables`` the lists (and packed rows) the manifest names for it; ValueError naming the
    segment when they do not fit its vectors."""
    for name, segments in vector_lists_of(manifest).items():
        table = tables[name]
        centroids = np.load(folder / segments[0], allow_pickle=False)
        lists = read(segments[1]).column("list").to_numpy().astype(np.int32)
        if centroids.ndim != 2 or centroids.shape[1] != table.dim or len(lists) != len(table) or (
                len(lists) and not 0 <= lists.min() <= lists.max() < len(centroids)):
            raise ValueError(f"{segments[1]}: the {name} vector lists do not fit the {name} vectors")
        table.lists = VectorLists(centroids, lists, table.moves)
        if len(segments) > 2:
            table.lists = _with_packed(folder, segments, table.lists, read, name)


def _with_packed(folder: Path, segments: list[str], lists: VectorLists, read: Callable[[str], pa.Table],
                 name: str) -> VectorLists:
    matrix = np.load(folder / segments[2], mmap_mode="r", allow_pickle=False)
    nlist, rows = len(lists.centroids), len(lists)
    if matrix.ndim != 2 or matrix.shape[1] != lists.centroids.shape[1] or matrix.dtype != np.float32:
        raise ValueError(f"{segments[2]}: a {matrix.dtype} matrix of shape {matrix.shape} for the packed {name} rows")
    if len(segments) == 3:  # the table's first rows, in the order their lists give
        if len(matrix) > rows:
            raise ValueError(f"{segments[2]}: {len(matrix)} packed {name} rows for a table of {rows}")
        head = VectorLists(lists.centroids, lists.lists[:len(matrix)]).with_packed(matrix, segments[2])
        return VectorLists(lists.centroids, lists.lists, lists.moves, head.packed)
    entries = read(segments[3])
    at, of_entry = (entries.column(c).to_numpy() for c in ("row", "list"))
    if len(at) != len(matrix) or (len(at) and (at.max() >= rows or at.min() < -1 or of_entry.min() < 0
                                               or of_entry.max() >= nlist or (np.diff(of_entry) < 0).any())):
        raise ValueError(f"{segments[3]}: the packed {name} rows do not fit the {name} vectors")
    bounds = np.searchsorted(of_entry, np.arange(nlist + 1))
    packed = PackedRows(matrix, bounds, at.astype(np.int64), segments[2], segments[3], bool((at < 0).any()))
    return VectorLists(lists.centroids, lists.lists, lists.moves, packed)
