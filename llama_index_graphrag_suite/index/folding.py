"""How a table's segments fold into the table a version holds (``tables.py``).

Segments are applied in order, as a dict would take the same changes: a segment's ``gone`` rows remove keys, its
other rows replace a key's row where it is (a changed row) or add it at the end (a new row, or one removed and
added again).
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["any_gone", "columns", "fold", "folded", "folded_table"]


def fold(tables: list[pa.Table], key_columns: tuple[str, ...]) -> dict[Any, tuple[int, int]]:
    """Key -> (segment, row) of its current row, in the order a dict taking the segments' changes would have."""
    out: dict[Any, tuple[int, int]] = {}
    for s, t in enumerate(tables):
        cols = [t.column(c).to_pylist() for c in key_columns]
        keys = cols[0] if len(cols) == 1 else list(zip(*cols))
        gone = t.column("gone").to_pylist()
        if s == 0 and not any(gone):  # a whole table: no dict work per change
            if len(set(keys)) != len(keys):
                raise ValueError(f"a table segment lists a key twice ({_first_duplicate(keys)!r})")
            out = dict(zip(keys, ((0, r) for r in range(len(keys)))))
            continue
        for k, g in zip(keys, gone):
            if g:
                out.pop(k, None)
        for r, (k, g) in enumerate(zip(keys, gone)):
            if not g:
                out[k] = (s, r)
    return out


def _first_duplicate(keys: list) -> Any:
    seen: set = set()
    return next((k for k in keys if k in seen or seen.add(k)), None)  # add() returns None: a first sighting


def columns(tables: list[pa.Table], names: Iterable[str]) -> list[dict[str, list]]:
    return [{n: t.column(n).to_pylist() for n in names} for t in tables]


def folded(tables: list[pa.Table], key_columns: tuple[str, ...], names: tuple[str, ...]) -> tuple[list, dict]:
    """A table's keys and columns (Python lists) in its folded order (see :func:`fold`); one whole segment, the
    common case after a compaction or a first save, is read as it is."""
    if len(tables) == 1 and not any_gone(tables[0]):
        t = tables[0]
        keys = [t.column(c).to_pylist() for c in key_columns]
        keys = keys[0] if len(keys) == 1 else list(zip(*keys))
        if len(set(keys)) != len(keys):
            raise ValueError(f"a table segment lists a key twice ({_first_duplicate(keys)!r})")
        return keys, {c: t.column(c).to_pylist() for c in names}
    at = fold(tables, key_columns)
    per_segment = columns(tables, names)
    return list(at), {c: [per_segment[s][c][r] for s, r in at.values()] for c in names}


def folded_table(tables: list[pa.Table], key: str, schema: pa.Schema) -> pa.Table:
    """A table's rows in its folded order (see :func:`fold`) as one Arrow table (``schema``'s when empty)."""
    if not tables:
        return schema.empty_table()
    if len(tables) == 1 and not any_gone(tables[0]):
        keys = tables[0].column(key)
        if pc.count_distinct(keys).as_py() != len(keys):
            raise ValueError(f"a table segment lists a key twice ({_first_duplicate(keys.to_pylist())!r})")
        return tables[0]
    at, starts = fold(tables, (key,)), np.cumsum([0] + [len(t) for t in tables])
    return pa.concat_tables(tables).take(pa.array([int(starts[s]) + r for s, r in at.values()], pa.int64()))


def any_gone(table: pa.Table) -> bool:
    return bool(pc.any(table.column("gone")).as_py())
