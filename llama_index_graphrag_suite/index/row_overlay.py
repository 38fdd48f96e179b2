"""A loaded table that a change edits: the changed rows as records over the read-only columns of the version.

A loaded version holds its chunks, entities and facts as read-only columns (``*_columns.py``). Before this layer,
the first change of an index turned every row into a record (about 5 KB per passage, and 6 s for 100,000 passages)
although an insert touches a few thousand rows. :class:`RowOverlay` keeps the columns as they are and holds only
the rows a change reached as records, with dict semantics: iteration in table order, a changed row keeps its place,
a removed and added-again row goes to the end.

A row read by key (``table[key]``, ``table.get(key)``) while the index is being changed (``editing``) is made a
record and kept: the change edits that record in place, as it would a dict's. Rows read any other way (iteration,
:meth:`RowOverlay.column`) and every read outside a change are copies: change a row through ``table[key]``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping
from typing import Any

import numpy as np

from .row_columns import RowColumns

__all__ = ["RowOverlay", "table_column"]

_GONE = object()


class RowOverlay(MutableMapping):
    """See the module docstring. ``base``: the loaded version's columns (never changed)."""

    def __init__(self, base: RowColumns) -> None:
        self.base = base
        self.editing = True
        self._rows: dict[Any, Any] = {}  # key -> record: base rows read by key while editing, and added rows
        self._gone: set[Any] = set()  # base keys removed (a key added again after that is in _tail)
        self._tail: dict[Any, None] = {}  # keys added after the base's rows, in order
        # the last key looked up in the base and its base row (-1: none): a change reads one row several times in a
        # row (the journal's copy, then the record, then maybe a set), and a base row never moves
        self._last: tuple[Any, int] | None = None
        self._base_rows: dict[Any, int] = {}  # key -> base row of the rows made records here (see layout)

    # --- where a key is -------------------------------------------------------------------------------------

    def _base_row(self, key: Any) -> int:
        """The row of ``key`` in the base (-1: none), whether or not it was removed since."""
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        row = self.base._find(key)
        self._last = (key, row)
        return row

    def _in_base(self, key: Any) -> bool:
        return key not in self._gone and self._base_row(key) >= 0

    def __contains__(self, key: object) -> bool:
        return key in self._rows or key in self._tail or self._in_base(key)

    def __len__(self) -> int:
        return len(self.base) - len(self._gone) + len(self._tail)

    def __iter__(self) -> Iterator[Any]:
        gone = self._gone
        yield from (iter(self.base) if not gone else (k for k in self.base if k not in gone))
        yield from list(self._tail)

    # --- rows -------------------------------------------------------------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        rec = self.get(key, _GONE)
        if rec is _GONE:
            raise KeyError(key)
        return rec

    def get(self, key: Any, default: Any = None) -> Any:
        """As ``Mapping.get``, without raising and catching a KeyError for an absent key (an insert asks about
        every row it adds)."""
        rec = self._rows.get(key, _GONE)
        if rec is not _GONE:
            return rec
        row = -1 if key in self._gone else self._base_row(key)
        if row < 0:
            return default
        if self.editing:  # made once and kept: not through the base's cache of copies, which would copy it again
            rec = self._rows[key] = self.base._make(row)
            self._base_rows[key] = row
        else:
            rec = self.base.record(row)  # a copy of the base row
        return rec

    def __setitem__(self, key: Any, record: Any) -> None:
        if key not in self._tail and not self._in_base(key):
            self._tail[key] = None
        self._rows[key] = record

    def __delitem__(self, key: Any) -> None:
        if key in self._tail:
            del self._tail[key]
        elif self._in_base(key):
            self._gone.add(key)
        else:
            raise KeyError(key)
        self._rows.pop(key, None)

    def lists(self, key: Any, name: str, value: Any) -> bool:
        """Whether row ``key`` exists and its collection field ``name`` holds ``value``: read from the record when
        one is held, else from the base's column (no record made or kept)."""
        rec = self._rows.get(key, _GONE)
        if rec is not _GONE:
            return value in getattr(rec, name)
        if key in self._gone:
            return False
        row = self._base_row(key)
        return row >= 0 and self.base.lists(row, name, value)

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return (rec for _, rec in self.items())

    def items(self) -> Iterator[tuple[Any, Any]]:  # type: ignore[override]
        rows, gone = self._rows, self._gone
        for key, rec in zip(self.base, self.base.values()):  # the base read column by column, not row by row
            if key not in gone:
                yield key, rows.get(key, rec)
        for key in list(self._tail):
            yield key, rows[key]

    def layout(self) -> tuple[np.ndarray, dict[int, Any], list[Any]]:
        """``(alive, held, tail)``: which base rows are still in the table (bool per base row), the base rows held
        as records (base row -> record), and the records added after the base's rows, in order. The table is
        the alive base rows, with the held ones' records in their place, then the tail."""
        base_row, known = self.base._find, self._base_rows  # a held row's base row, kept when it was made
        alive = np.ones(len(self.base), bool)
        alive[[base_row(k) for k in self._gone]] = False
        held = {known[k] if k in known else base_row(k): rec for k, rec in self._rows.items() if k not in self._tail}
        return alive, held, [self._rows[k] for k in self._tail]

    def positions(self, keys: list[Any]) -> np.ndarray:
        """Each of ``keys``' position in table order (KeyError for a key the table lacks), without a scan of the
        table: an alive base row comes after the alive base rows before it, an added row after every alive base row,
        in the order rows were added. Costs the keys, the removed rows and the added rows, not the table."""
        base_find, gone, tail = self.base._find, self._gone, self._tail
        gone_rows = np.sort(np.fromiter((base_find(k) for k in gone), np.int64, len(gone)))
        tail_at = dict(zip(tail, range(len(tail)))) if tail else {}
        alive = len(self.base) - len(gone)
        # an added row: -2 - its place in the tail; a base row: its row (-1: absent, or removed and not added again)
        rows = np.fromiter((-2 - tail_at[k] if k in tail_at else -1 if k in gone else base_find(k) for k in keys),
                           np.int64, len(keys))
        if (rows == -1).any():
            raise KeyError(keys[int(np.flatnonzero(rows == -1)[0])])
        added = rows < -1
        return np.where(added, alive + (-2 - rows), rows - np.searchsorted(gone_rows, rows))

    def in_order(self, keys: list[Any]) -> list[Any]:
        """The ones of ``keys`` the table holds, each once, in table order (as ``[k for k in table if k in keys]``),
        found by :meth:`positions` instead of a scan of every row."""
        held = [k for k in dict.fromkeys(keys) if k in self]
        return [held[i] for i in np.argsort(self.positions(held), kind="stable").tolist()]

    def column(self, name: str) -> list:
        """One field of every row in table order (the base's column, with the rows held as records put in)."""
        alive, held, tail = self.layout()
        values = self.base.column(name)
        for r, rec in held.items():
            values[r] = getattr(rec, name)
        if not alive.all():
            values = [v for v, keep in zip(values, alive.tolist()) if keep]
        return values + [getattr(rec, name) for rec in tail]

    def held(self) -> int:
        """How many rows are held as records."""
        return len(self._rows)

    # --- the journal's checkpoint of the table (journal.py) ----------------------------------------------------

    def checkpoint(self) -> tuple[set, list]:
        return set(self._gone), list(self._tail)

    def restore(self, checkpoint: tuple[set, list]) -> None:
        """Rows back to the keys and order of ``checkpoint``: rows added since drop out, removed base rows come back
        where they were (with their base values, until the journal writes its copies back)."""
        gone, tail = checkpoint
        for key in list(self._rows):
            if key in self._tail and key not in tail or key in gone:
                del self._rows[key]
        for key in self._gone - gone:
            self._rows.pop(key, None)
        self._gone, self._tail = set(gone), dict.fromkeys(tail)

    def __repr__(self) -> str:
        return f"RowOverlay({len(self)} rows, {len(self._rows)} held as records)"


def table_column(table: Mapping, name: str) -> list:
    """One field of every row of ``table`` in order: read as a column when it is one, from its records otherwise."""
    if isinstance(table, (RowColumns, RowOverlay)):
        return table.column(name)
    return [getattr(rec, name) for rec in table.values()]
