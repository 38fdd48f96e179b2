"""A large vector table's lists on disk (``vectors.py``, ``graph/vector_lists.py``), beside its vectors.

Per listed table the manifest's ``vector_lists`` names ``[centroids, lists]`` segments: a ``.npy`` of centroids and
an Arrow ``list`` column, every row's list. A packed table's rows are stored list by list by its
vectors (``vector_io.py``); its lists then read each list from there.

Versions saved before that (format 3) stored the packed rows a second time, beside the table's own: their entry
names a third segment, a ``.npy`` of the rows again, list by list, covering the table's first rows in the order
the lists give, and a fourth (Parquet ``row``, ``list``) when rows were removed since. A load still reads them
(queries stay as fast), and the next save stores the table list by list instead, once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from ..graph.vector_lists import PackedRows, VectorLists
from .vectors import VectorTable

__all__ = ["list_count", "read_vector_lists", "vector_lists_segments", "write_vector_lists"]


def write_vector_lists(tables: dict[str, VectorTable], writer: Any) -> dict:
    """The manifest's ``vector_lists`` entry (an empty dict when no table keeps lists)."""
    out = {name: [writer.matrix(t.lists.centroids), writer.table(pa.table({"list": pa.array(t.lists.lists, pa.int32())}))]
           for name, t in tables.items() if t.listed}
    return {"vector_lists": out} if out else {}


def vector_lists_of(manifest: dict) -> dict[str, list[str]]:
    """The manifest's vector lists by table (versions saved before every large table kept lists name only the
    entity table's, as ``entity_lists``)."""
    lists = dict(manifest.get("vector_lists", {}))
    if "entity_lists" in manifest:
        lists.setdefault("entities", manifest["entity_lists"])
    return lists


def vector_lists_segments(manifest: dict) -> set[str]:
    return {n for parts in vector_lists_of(manifest).values() for n in parts}


def list_count(folder: Path, manifest: dict, name: str) -> int | None:
    """How many lists the manifest's ``vector_lists`` keep for table ``name`` (None: it keeps none)."""
    segments = vector_lists_of(manifest).get(name)
    if not segments:
        return None
    centroids = np.load(folder / segments[0], mmap_mode="r", allow_pickle=False)
    return int(centroids.shape[0]) if centroids.ndim == 2 else 0


def read_vector_lists(folder: Path, manifest: dict, tables: dict[str, VectorTable],
                      read: Callable[[str], pa.Table]) -> None:
    """Give each table of ``tables`` the lists the manifest names for it, reading its lists from its packed rows
    (or from a version's second copy of them); ValueError naming the segment when they do not fit its vectors."""
    for name, segments in vector_lists_of(manifest).items():
        table = tables[name]
        centroids = np.load(folder / segments[0], allow_pickle=False)
        lists = read(segments[1]).column("list").to_numpy().astype(np.int32)
        if centroids.ndim != 2 or centroids.shape[1] != table.dim or len(lists) != len(table) or (
                len(lists) and not 0 <= lists.min() <= lists.max() < len(centroids)):
            raise ValueError(f"{segments[1]}: the {name} vector lists do not fit the {name} vectors")
        packed = table.packed
        if packed is not None:  # each of its entries in the list the lists give its row
            alive = packed.rows >= 0
            of_entry = np.repeat(np.arange(len(packed.bounds) - 1), np.diff(packed.bounds))
            if len(packed.bounds) != len(centroids) + 1 or (lists[packed.rows[alive]] != of_entry[alive]).any():
                raise ValueError(f"{segments[1]}: the {name} vector lists do not fit its packed rows {packed.segment}")
        elif len(segments) > 2:
            packed = _second_copy(folder, segments, VectorLists(centroids, lists), read, name)
        table.lists = VectorLists(centroids, lists, table.moves, packed)


def _second_copy(folder: Path, segments: list[str], lists: VectorLists, read: Callable[[str], pa.Table],
                 name: str) -> PackedRows:
    """The packed rows a format-3 version stored beside the table's own (see the module docstring)."""
    matrix = np.load(folder / segments[2], mmap_mode="r", allow_pickle=False)
    nlist, rows = len(lists.centroids), len(lists)
    if matrix.ndim != 2 or matrix.shape[1] != lists.centroids.shape[1] or matrix.dtype != np.float32:
        raise ValueError(f"{segments[2]}: a {matrix.dtype} matrix of shape {matrix.shape} for the packed {name} rows")
    if len(segments) == 3:  # the table's first rows, in the order their lists give
        if len(matrix) > rows:
            raise ValueError(f"{segments[2]}: {len(matrix)} packed {name} rows for a table of {rows}")
        return VectorLists(lists.centroids, lists.lists[:len(matrix)]).with_packed(matrix, segments[2]).packed
    entries = read(segments[3])
    at, of_entry = (entries.column(c).to_numpy() for c in ("row", "list"))
    if len(at) != len(matrix) or (len(at) and (at.max() >= rows or at.min() < -1 or of_entry.min() < 0
                                               or of_entry.max() >= nlist or (np.diff(of_entry) < 0).any())):
        raise ValueError(f"{segments[3]}: the packed {name} rows do not fit the {name} vectors")
    bounds = np.searchsorted(of_entry, np.arange(nlist + 1))
    return PackedRows(matrix, bounds, at.astype(np.int64), segments[2], segments[3], bool((at < 0).any()))
