"""How a table's segments fold into the table a version holds (``tables.py``).

Segments are applied in order, as a dict would take the same changes: a segment's ``gone`` rows remove keys, its
other rows replace a key's row where it is (a changed row) or add it at the end (a new row, or one removed and
added again).

The fold is computed on arrays, not by replaying the changes into a dict row by row (a load of a million-passage
index folds millions of rows): every change gets a time (segment after segment; in a segment its removals, then
its other rows), a key's row is its last set after its last removal, and its place in the table is its first set
after that removal.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["any_gone", "columns", "first_duplicate", "fold", "fold_rows", "folded", "folded_table"]


def _key_codes(tables: list[pa.Table], key_columns: tuple[str, ...]) -> tuple[np.ndarray, int]:
    """One integer per row of the segments placed one after the other, equal for equal keys, numbered in order of
    first sight (an Arrow hash, not a Python dict); and how many keys there are."""
    codes: np.ndarray | None = None
    for c in key_columns:
        values = pa.chunked_array([part for t in tables for part in t.column(c).chunks], tables[0].schema.field(c).type)
        encoded = pc.dictionary_encode(values, null_encoding="encode").chunks  # one dictionary: the last chunk's
        own = np.concatenate([np.asarray(part.indices, np.int64) for part in encoded]) if encoded else np.zeros(0, np.int64)
        n_keys = len(encoded[-1].dictionary) if encoded else 0
        codes = own if codes is None else codes * n_keys + own
    if len(key_columns) > 1:  # a pair of codes: make them dense again
        unique, codes = np.unique(codes, return_inverse=True)
        codes, n_keys = codes.reshape(-1), len(unique)
    return codes, n_keys


def fold_rows(tables: list[pa.Table], key_columns: tuple[str, ...]) -> np.ndarray:
    """Rows of the segments placed one after the other that the folded table holds, in its order (see the module
    docstring); ValueError when a first segment without removals lists a key twice (a whole table)."""
    lengths = np.array([len(t) for t in tables], np.int64)
    n = int(lengths.sum())
    if n == 0:
        return np.zeros(0, np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    codes, n_keys = _key_codes(tables, key_columns)
    gone = np.concatenate([t.column("gone").fill_null(False).to_numpy(zero_copy_only=False).astype(bool)
                           for t in tables])
    first = int(lengths[0])
    if first and not gone[:first].any() and np.bincount(codes[:first], minlength=n_keys).max() > 1:
        raise ValueError(f"a table segment lists a key twice ({first_duplicate(_key_list(tables[0], key_columns))!r})")
    segment = np.repeat(np.arange(len(tables)), lengths)
    # a change's time: segment after segment; in one, its removals (in row order) and then its sets
    time = 2 * starts[segment] + np.where(gone, 0, lengths[segment]) + np.arange(n) - starts[segment]
    last_removal = np.full(n_keys, -1, np.int64)
    np.maximum.at(last_removal, codes[gone], time[gone])
    sets = np.flatnonzero(~gone & (time > last_removal[codes]))  # the sets that count, in time order (as rows are)
    place = np.full(n_keys, n, np.int64)  # a key's first set after its last removal: its place in the table
    np.minimum.at(place, codes[sets], sets)
    row = np.full(n_keys, -1, np.int64)  # its last set: its row
    np.maximum.at(row, codes[sets], sets)
    present = row >= 0
    return row[present][np.argsort(place[present], kind="stable")]


def _key_list(table: pa.Table, key_columns: tuple[str, ...]) -> list:
    cols = [table.column(c).to_pylist() for c in key_columns]
    return cols[0] if len(cols) == 1 else list(zip(*cols))


def fold(tables: list[pa.Table], key_columns: tuple[str, ...]) -> dict[Any, tuple[int, int]]:
    """Key -> (segment, row) of its current row, in the order a dict taking the segments' changes would have."""
    rows = fold_rows(tables, key_columns)
    starts = np.cumsum([0] + [len(t) for t in tables])
    segment = np.searchsorted(starts, rows, side="right") - 1
    keys = [k for t in tables for k in _key_list(t, key_columns)]
    return {keys[g]: (s, g - int(starts[s])) for g, s in zip(rows.tolist(), segment.tolist())}


def first_duplicate(keys: list) -> Any:
    seen: set = set()
    return next((k for k in keys if k in seen or seen.add(k)), None)  # add() returns None: a first sighting


def columns(tables: list[pa.Table], names: Iterable[str]) -> list[dict[str, list]]:
    return [{n: t.column(n).to_pylist() for n in names} for t in tables]


def folded(tables: list[pa.Table], key_columns: tuple[str, ...], names: tuple[str, ...]) -> tuple[list, dict]:
    """A table's keys and columns (Python lists) in its folded order (see :func:`fold`)."""
    table = _folded_concat(tables, key_columns)
    return _key_list(table, key_columns), {c: table.column(c).to_pylist() for c in names}


def folded_table(tables: list[pa.Table], key: str, schema: pa.Schema, checked: bool = False) -> pa.Table:
    """A table's rows in its folded order (see :func:`fold`) as one Arrow table (``schema``'s when empty); rows
    are copied only when the fold moves or drops some (segments that only add rows are joined as they are).
    ``checked``: the caller refuses a key listed twice itself (a whole table is then not hashed here too)."""
    if not tables:
        return schema.empty_table()
    return _folded_concat(tables, (key,), checked)


def _folded_concat(tables: list[pa.Table], key_columns: tuple[str, ...], checked: bool = False) -> pa.Table:
    if len(tables) == 1 and not any_gone(tables[0]):
        keys = tables[0].column(key_columns[0]) if len(key_columns) == 1 else None
        if keys is not None and not checked and pc.count_distinct(keys).as_py() != len(keys):
            raise ValueError(f"a table segment lists a key twice ({first_duplicate(keys.to_pylist())!r})")
        if keys is not None:
            return tables[0]
    rows = fold_rows(tables, key_columns)
    joined = pa.concat_tables(tables)
    if len(rows) == len(joined) and (len(rows) == 0 or (rows == np.arange(len(rows))).all()):
        return joined  # only new rows were added: nothing moves
    return joined.take(pa.array(rows, pa.int64()))


def any_gone(table: pa.Table) -> bool:
    return bool(pc.any(table.column("gone")).as_py())
