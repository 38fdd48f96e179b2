"""What a loaded version's read-only tables share (``chunk_columns.py``, ``entity_columns.py``): a ``Mapping`` from a
list of keys to records made from columns when read, the last :data:`CACHED` of them kept."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["CACHED", "RowColumns"]

CACHED = 4096  # records kept after a read (a query reads tens to hundreds)


class RowColumns(Mapping):
    """Rows keyed by ``keys`` (a list kept as it is: other parts of the index name the same strings); a subclass
    makes a row's record (:meth:`_make`) and a copy of one (:meth:`_copy`)."""

    def __init__(self, keys: list[str], table: str) -> None:
        self._keys = keys
        self._row = {k: r for r, k in enumerate(keys)}
        if len(self._row) != len(keys):
            raise ValueError(f"the {table} table lists a key twice")
        self._cache: dict[int, Any] = {}

    def _make(self, row: int) -> Any:
        raise NotImplementedError

    def _copy(self, record: Any) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._row

    def __getitem__(self, key: str) -> Any:
        return self.record(self._row[key])

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
        return (self._make(r) for r in range(len(self._keys)))

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return ((k, self._make(r)) for r, k in enumerate(self._keys))

    def to_dict(self) -> dict[str, Any]:
        """Every row as a record, in order (what a change edits)."""
        return {k: self._make(r) for r, k in enumerate(self._keys)}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._keys)} rows)"
