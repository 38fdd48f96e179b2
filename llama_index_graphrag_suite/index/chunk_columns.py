"""The chunks of a loaded version as read-only columns, until a change needs them as records.

Like :mod:`.fact_columns` and :mod:`.entity_columns`: a loaded index keeps its chunks' document ids, titles,
positions, document hashes and texts as Arrow arrays, and the entities each chunk contains as two integer arrays
(offsets per chunk, rows of the entities table), and makes a :class:`~.records.ChunkRecord` only when one is read.
The first change (``journal.change``) turns the table into the dict of records insert and delete edit.

The ids stay one Python list: the chunk order, BM25, the vector table and the graph snapshot name the same strings.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from .records import ChunkRecord
from .row_columns import RowColumns

__all__ = ["ChunkColumns"]

COLUMNS = ("doc_id", "text", "title", "position", "doc_hash")  # ChunkRecord's order, after id (entities apart)


class ChunkColumns(RowColumns):
    """See the module docstring. ``ids``: chunk ids in table order; ``table``: :data:`COLUMNS` in the same order;
    ``link_offsets``/``link_entities``: chunk ``i`` contains ``entity_keys[link_entities[j]]`` for ``j`` in
    ``link_offsets[i]:link_offsets[i + 1]``, in its link order."""

    def __init__(self, ids: list[str], table: pa.Table, link_offsets: np.ndarray, link_entities: np.ndarray,
                 entity_keys: Sequence[str], key_array: pa.Array | None = None) -> None:
        super().__init__(ids, "chunks", key_array)
        if len(table) != len(ids) or len(link_offsets) != len(ids) + 1:
            raise ValueError("the chunks table and its links differ in length")
        self._cols = {c: table.column(c) for c in COLUMNS}  # as read: several row groups stay several chunks
        self._offsets, self._links, self._entity_keys = link_offsets, link_entities, entity_keys

    def column(self, name: str) -> list:
        """One of :data:`COLUMNS` in table order, as a Python list."""
        return self._cols[name].to_pylist()

    def arrow_column(self, name: str) -> pa.ChunkedArray:
        """One of :data:`COLUMNS` in table order, as read (a whole write copies it as it is)."""
        return self._cols[name]

    def links(self) -> tuple[np.ndarray, np.ndarray, Sequence[str]]:
        """``(offsets, entity codes, entity keys)``: what each chunk contains, as arrays (see the class docstring)."""
        return self._offsets, self._links, self._entity_keys

    def _make(self, row: int) -> ChunkRecord:
        c, keys = self._cols, self._entity_keys
        entities = [keys[e] for e in self._links[self._offsets[row]:self._offsets[row + 1]].tolist()]
        return ChunkRecord(self._keys[row], c["doc_id"][row].as_py(), c["text"][row].as_py(), c["title"][row].as_py(),
                           c["position"][row].as_py(), entities, c["doc_hash"][row].as_py())

    def _copy(self, rec: ChunkRecord) -> ChunkRecord:
        return ChunkRecord(rec.id, rec.doc_id, rec.text, rec.title, rec.position, list(rec.entities), rec.doc_hash)
