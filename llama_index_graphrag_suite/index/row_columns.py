"""What a loaded version's read-only tables share (``chunk_columns.py``, ``entity_columns.py``, ``fact_columns.py``):
a ``Mapping`` from keys to records made from columns when read, the last :data:`CACHED` of them kept."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from .folding import first_duplicate

__all__ = ["CACHED", "RowColumns"]

CACHED = 4096  # records kept after a read (a query reads tens to hundreds)


class RowColumns(Mapping):
    """Rows keyed by ``keys`` (a list kept as it is: other parts of the index name the same strings); a subclass
    makes a row's record (:meth:`_make`) and a copy of one (:meth:`_copy`). A subclass without a key list (None)
    gives its own ``__len__``, ``__iter__`` and :meth:`_find`."""

    def __init__(self, keys: list[str] | None, table: str, key_array: pa.Array | None = None) -> None:
        self._keys = keys
        self._row = None if keys is None else dict(zip(keys, range(len(keys))))
        if keys is not None and len(self._row) != len(keys):
            raise ValueError(f"the {table} table lists a key twice ({first_duplicate(keys)!r})")
        self._cache: dict[int, Any] = {}
        self._key_array = key_array  # the keys as read (Arrow), for checks and lookups of many keys at once
        self._vector_rows: tuple[Any, int, int, np.ndarray] | None = None  # see vector_rows

    def key_list(self) -> list[str] | None:
        """The keys in table order as the list this table was made with (None: a subclass without one)."""
        return self._keys

    def key_array(self) -> pa.Array:
        """The keys in table order as an Arrow string array."""
        if self._key_array is None:
            self._key_array = pa.array(self._keys if self._keys is not None else list(self), pa.string())
        return self._key_array

    def vector_rows(self, vectors: Any) -> np.ndarray:
        """The row in ``vectors`` (a ``VectorTable``) of every key, in table order (-1: none): one hash join, kept
        while that table neither moves nor grows its rows (a load's checks and then its derive read the same rows)."""
        kept = self._vector_rows
        if kept is not None and kept[0] is vectors and kept[1:3] == (vectors.moves, len(vectors)):
            return kept[3]
        rows = vectors.rows_in(self.key_array())
        rows.flags.writeable = False
        self._vector_rows = (vectors, vectors.moves, len(vectors), rows)
        return rows

    def _find(self, key: Any) -> int:
        """The row of ``key``, or -1."""
        try:
            return self._row.get(key, -1)
        except TypeError:  # an unhashable "key"
            return -1

    def lists(self, row: int, name: str, value: Any) -> bool:
        """Whether the collection field ``name`` of row ``row`` holds ``value`` (a subclass reads its column)."""
        return value in getattr(self.record(row), name)

    def _make(self, row: int) -> Any:
        raise NotImplementedError

    def _copy(self, record: Any) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return self._find(key) >= 0

    def __getitem__(self, key: str) -> Any:
        row = self._find(key)
        if row < 0:
            raise KeyError(key)
        return self.record(row)

    def record(self, row: int) -> Any:
        """The row's record (a copy: changing it changes nothing here)."""
        rec = self._cache.get(row)
        if rec is None:
            rec = self._make(row)
            if len(self._cache) >= CACHED:  # several threads may read: a whole clear is safe under the GIL
                self._cache = {}
            self._cache[row] = rec
        return self._copy(rec)

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return (self._make(r) for r in range(len(self)))

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return zip(self, self.values())

    def to_dict(self) -> dict[str, Any]:
        """Every row as a record, in order (what a change edits)."""
        return dict(self.items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} rows)"
