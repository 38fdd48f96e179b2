"""The entities of a loaded version as read-only columns, until a change needs them as records.

Like :mod:`.fact_columns`: an :class:`~.records.EntityRecord` costs about 570 bytes (a record, a set of chunk ids,
a surface string, an attributes dict), so a loaded index keeps its entities as Arrow columns (surface, type,
attributes) and the chunks that mention each entity as two integer arrays (rows of the chunks table, grouped by
entity), and makes a record only when one is read. The first change (``journal.change``) turns the table into
the dict of records that insert and delete edit (:meth:`EntityColumns.to_dict`).

The keys stay one Python list: the graph snapshot and the entity vector table name the same string objects.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .records import ChunkIds, EntityRecord, entity_attributes
from .row_columns import RowColumns

__all__ = ["EntityColumns"]


class EntityColumns(RowColumns):
    """See the module docstring. ``keys``: the entity keys in table order; ``surface``, ``type_``,
    ``attributes``: their columns (attributes as JSON text, "" for none); ``chunk_ids``: the chunks table's ids in
    order, and what each contains as in :class:`~.chunk_columns.ChunkColumns` (offsets, rows of ``keys``)."""

    def __init__(self, keys: list[str], surface: pa.Array, type_: pa.Array, attributes: pa.Array,
                 chunk_ids: Sequence[str], link_offsets: np.ndarray, link_entities: np.ndarray,
                 key_array: pa.Array | None = None) -> None:
        super().__init__(keys, "entities", key_array)
        self._surface, self._type = surface, type_
        self._attributes: dict[int, dict] = {}  # only the entities that have any (most have none)
        filled = pc.fill_null(pc.greater(pc.binary_length(attributes), 0), False)
        for r in np.flatnonzero(np.asarray(filled.to_numpy(zero_copy_only=False), bool)).tolist():
            if text := attributes[r].as_py():
                value = json.loads(text)
                if not isinstance(value, dict) or entity_attributes(value) != value:
                    raise ValueError(f"entity {keys[r]!r} has attributes that are not a mapping of names to scalars")
                self._attributes[r] = value
        self._chunk_ids = chunk_ids
        self._links = (link_offsets, link_entities)
        self._grouped: tuple[np.ndarray, np.ndarray] | None = None  # see _groups

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(chunk rows grouped by entity, bounds per entity row): sorted when an entity's record is first made, not
        on load (the graph snapshot reads the links as they are)."""
        if self._grouped is None:
            offsets, entities = self._links
            chunk_rows = np.repeat(np.arange(len(self._chunk_ids), dtype=np.int32), np.diff(offsets))
            order = np.argsort(entities, kind="stable")  # the chunks of an entity in table order
            self._grouped = chunk_rows[order], np.searchsorted(np.asarray(entities)[order], np.arange(len(self) + 1))
        return self._grouped

    def column(self, name: str) -> list:
        """``surface`` or ``type`` of every entity in table order, as a Python list."""
        if name not in ("surface", "type"):
            raise KeyError(f"no column {name!r} in the entities table's columns")
        values = (self._surface if name == "surface" else self._type).to_pylist()
        return values if name == "surface" else [t or "" for t in values]

    def arrow_column(self, name: str) -> pa.Array:
        """``surface`` or ``type`` of every entity in table order, as read (nulls kept)."""
        if name not in ("surface", "type"):
            raise KeyError(f"no column {name!r} in the entities table's columns")
        return self._surface if name == "surface" else self._type

    def attributes_by_row(self) -> dict[int, dict]:
        """The attributes of the entities that have any, by row (a record's ``attributes``; read-only)."""
        return self._attributes

    def surface_of(self, key: str) -> str:
        """The entity's surface form, read from its column (no record: that would group every entity's chunks)."""
        row = self._find(key)
        if row < 0:
            raise KeyError(key)
        return self._surface[row].as_py()

    def _make(self, row: int) -> EntityRecord:
        grouped, bounds = self._groups()
        # its chunk ids as rows of the grouped links, made a set when read (an insert mostly only adds to it)
        chunks = ChunkIds(self._chunk_ids, grouped[bounds[row]:bounds[row + 1]])
        return EntityRecord(self._keys[row], self._surface[row].as_py(), chunks, self._type[row].as_py() or "",
                            dict(self._attributes.get(row, {})))

    def _copy(self, rec: EntityRecord) -> EntityRecord:
        return EntityRecord(rec.key, rec.surface, set(rec.chunks), rec.type, rec.attributes)
