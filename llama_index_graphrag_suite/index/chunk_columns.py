"""The chunks of a loaded version as read-only columns, until a change needs them as records.

Like :mod:`.fact_columns` and :mod:`.entity_columns`: a loaded index keeps its chunks' document ids, titles,
positions, document hashes and texts as Arrow arrays, and the entities each chunk contains as two integer arrays
(offsets per chunk, rows of the entities table), and makes a :class:`~.records.ChunkRecord` only when one is read.
The first change (``journal.change``) turns the table into the dict of records insert and delete edit.

The ids stay one Python list: the chunk order, BM25, the vector table and the graph snapshot name the same strings.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa

from .records import ChunkRecord

__all__ = ["ChunkColumns"]

COLUMNS = ("doc_id", "text", "title", "position", "doc_hash")  # ChunkRecord's order, after id (entities apart)
_CACHED = 4096


class ChunkColumns(Mapping):
    """See the module docstring. ``ids``: chunk ids in table order; ``table``: :data:`COLUMNS` in the same order;
    ``link_offsets``/``link_entities``: chunk ``i`` contains ``entity_keys[link_entities[j]]`` for ``j`` in
    ``link_offsets[i]:link_offsets[i + 1]``, in its link order."""

    def __init__(self, ids: list[str], table: pa.Table, link_offsets: np.ndarray, link_entities: np.ndarray,
                 entity_keys: Sequence[str]) -> None:
        self._ids = ids
        self._row = {c: r for r, c in enumerate(ids)}
        if len(self._row) != len(ids):
            raise ValueError("the chunks table lists a chunk twice")
        if len(table) != len(ids) or len(link_offsets) != len(ids) + 1:
            raise ValueError("the chunks table and its links differ in length")
        self._cols = {c: table.column(c).combine_chunks() for c in COLUMNS}
        self._offsets, self._links, self._entity_keys = link_offsets, link_entities, entity_keys
        self._cache: dict[int, ChunkRecord] = {}

    def __len__(self) -> int:
        return len(self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __contains__(self, cid: object) -> bool:
        return cid in self._row

    def __getitem__(self, cid: str) -> ChunkRecord:
        return self.record(self._row[cid])

    def record(self, row: int) -> ChunkRecord:
        """The chunk at ``row`` as a record (a copy: changing it changes nothing here)."""
        rec = self._cache.get(row)
        if rec is None:
            rec = self._make(row)
            if len(self._cache) >= _CACHED:  # several threads may read: a whole clear is safe under the GIL
                self._cache = {}
            self._cache[row] = rec
        return ChunkRecord(rec.id, rec.doc_id, rec.text, rec.title, rec.position, list(rec.entities), rec.doc_hash)

    def values(self) -> Iterator[ChunkRecord]:  # type: ignore[override]
        return (self._make(r) for r in range(len(self._ids)))

    def items(self) -> Iterator[tuple[str, ChunkRecord]]:  # type: ignore[override]
        return ((c, self._make(r)) for r, c in enumerate(self._ids))

    def column(self, name: str) -> list:
        """One of :data:`COLUMNS` in table order, as a Python list."""
        return self._cols[name].to_pylist()

    def links(self) -> tuple[np.ndarray, np.ndarray, Sequence[str]]:
        """``(offsets, entity codes, entity keys)``: what each chunk contains, as arrays (see the class docstring)."""
        return self._offsets, self._links, self._entity_keys

    def to_dict(self) -> dict[str, ChunkRecord]:
        """Every chunk as a record, in order (what a change edits)."""
        return {c: self._make(r) for r, c in enumerate(self._ids)}

    def _make(self, row: int) -> ChunkRecord:
        c, keys = self._cols, self._entity_keys
        entities = [keys[e] for e in self._links[self._offsets[row]:self._offsets[row + 1]].tolist()]
        return ChunkRecord(self._ids[row], c["doc_id"][row].as_py(), c["text"][row].as_py(), c["title"][row].as_py(),
                           c["position"][row].as_py(), entities, c["doc_hash"][row].as_py())

    def __repr__(self) -> str:
        return f"ChunkColumns({len(self._ids)} chunks)"
