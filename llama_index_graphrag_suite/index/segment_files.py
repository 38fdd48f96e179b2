"""Segment files of the index's tables (``tables.py``): written once, whole, and never changed after.

A table segment is an uncompressed Arrow IPC file (``.arrow``, one record batch) that a load memory-maps: the
columns are the file's pages, not decoded copies, so a load reads only the pages it touches (keys, links, BM25
rows) and a serving process holds the texts on disk until a query reads one. Versions saved before this format
(format 2) hold zstd-compressed Parquet segments (``.parquet``), which are still read (decoded whole); a table
may mix both, old segments first. A vector matrix is an ``.npy`` file (also memory-mapped).

:class:`SegmentWriter` writes each file to a temporary name, fsyncs it, renames it and records its checksum for the
manifest, so a segment file is always whole; ``storage.py`` checks the checksums before a load reads one.
"""

from __future__ import annotations

import contextvars
import os
import uuid
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from ..fileio import sha256_file

__all__ = ["MAX_SEGMENTS", "SEGMENTS", "SegmentWriter", "appending", "appending_segments", "one_array",
           "read_segment", "write_arrow"]

SEGMENTS = "segments"
MAX_SEGMENTS = 8  # segments a table may have before a save writes it whole again

_APPENDING = contextvars.ContextVar("appending_segments", default=False)


@contextmanager
def appending_segments():
    """Saves in this block append segments however many a table has (no compaction): the batches of a batched
    build, which writes every table whole once at its end. A whole write in between would write the same rows
    again (about twice the bytes of the index so far) and hold each table's rows as records while it does."""
    token = _APPENDING.set(True)
    try:
        yield
    finally:
        _APPENDING.reset(token)


def appending() -> bool:
    """Whether saves here append without compaction (:func:`appending_segments`)."""
    return _APPENDING.get()


class SegmentWriter:
    """Writes segment files into ``root/segments`` (each to a temporary name, fsynced, then renamed: a segment
    file is always whole) and remembers their checksums for the manifest."""

    def __init__(self, root: Path) -> None:
        self.folder = Path(root) / SEGMENTS
        self.folder.mkdir(exist_ok=True)
        self.written: dict[str, str] = {}

    def _commit(self, tmp: Path, name: str) -> str:
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.rename(tmp, self.folder / name)
        self.written[name] = sha256_file(self.folder / name)
        return name

    def table(self, table: pa.Table) -> str:
        """One Arrow IPC file of ``table`` as one record batch (uncompressed: a load maps it, see the module
        docstring)."""
        name = f"{uuid.uuid4().hex}.arrow"
        tmp = self.folder / f".{name}.tmp"
        write_arrow(table, tmp)
        return self._commit(tmp, name)

    def matrix(self, matrix: np.ndarray | list[np.ndarray]) -> str:
        """One ``.npy`` of float32 rows, as ``np.save`` writes it, from an array or from a list of row blocks written
        one after another (a table's mapped segments are not joined in memory to be written whole)."""
        blocks = [matrix] if isinstance(matrix, np.ndarray) else matrix
        name = f"{uuid.uuid4().hex}.npy"
        tmp = self.folder / f".{name}.tmp"
        with open(tmp, "wb") as f:
            shape = (sum(len(b) for b in blocks), blocks[0].shape[1])
            np.lib.format.write_array_header_1_0(f, {"descr": "<f4", "fortran_order": False, "shape": shape})
            for block in blocks:
                for lo in range(0, len(block), 1 << 16):
                    f.write(np.ascontiguousarray(block[lo:lo + (1 << 16)], np.float32).data)
        return self._commit(tmp, name)


def write_arrow(table: pa.Table, path: Path) -> None:
    """``table`` as an uncompressed Arrow IPC file of one record batch at ``path`` (not fsynced)."""
    batch = table.combine_chunks()
    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, batch.schema) as out:
        out.write_table(batch, max_chunksize=max(len(batch), 1))


def read_segment(path: Path) -> pa.Table:
    """A table segment as one Arrow table: an ``.arrow`` file memory-mapped (no copy), a ``.parquet`` one (older
    versions) decoded with each column one array (``read_table`` splits a large column into batches that the
    columns' readers would copy together again)."""
    if Path(path).suffix == ".arrow":
        with ipc.open_file(pa.memory_map(str(path))) as f:
            table = f.read_all()
        table.validate()  # buffers as long as the rows need (a cheap check: not every offset)
        return table
    with pq.ParquetFile(path) as f:
        return f.read()


def one_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A column as one array: its only chunk as it is (a mapped segment's stays on its file's pages), or the chunks
    copied together."""
    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column
