"""How a table's segments fold into the table a version holds (``tables.py``).

Segments are applied in order, as a dict would take the same changes: a segment's ``gone`` rows remove keys, its
other rows replace a key's row where it is (a changed row) or add it at the end (a new row, or one removed and
added again).

The fold is computed on arrays, not by replaying the changes into a dict row by row (a load of a million-passage
index folds millions of rows): every change gets a time (segment after segment; in a segment its removals, then
its other rows), a key's row is its last set after its last removal, and its place in the table is its first set
after that removal.

A version is usually one segment written whole and a few small ones (the changes of the saves since): then only the
first segment's rows whose keys a later segment names take part in the fold (found by probing a hash set of the
later keys, not by hashing every key into one), and the others keep their rows and places.
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["any_gone", "columns", "first_duplicate", "fold", "fold_rows", "folded", "folded_table", "gathered"]

#: The fold reads a first segment's keys only to find the ones later segments name when those segments hold at most
#: this share of its rows (a few saves' changes on a table written whole); above it, every key is hashed.
SMALL_TAIL_SHARE = 0.25

#: A folded table whose rows form at most this many runs of consecutive segment rows is joined from slices of the
#: segments (no copy: a few saves' changes on a table written whole); more runs, and its rows are copied into one.
MAX_SLICES = 1024


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


def fold_rows(tables: list[pa.Table], key_columns: tuple[str, ...], checked: bool = False) -> np.ndarray:
    """Rows of the segments placed one after the other that the folded table holds, in its order (see the module
    docstring); ValueError when a first segment without removals lists a key twice (a whole table). ``checked``: the
    caller refuses such a first segment itself, so a small tail is folded onto it (:func:`_fold_onto_first`)."""
    lengths = np.array([len(t) for t in tables], np.int64)
    n = int(lengths.sum())
    if n == 0:
        return np.zeros(0, np.int64)
    if checked:
        rows = _fold_onto_first(tables, key_columns, lengths)
        if rows is not None:
            return rows
    return _fold_every_key(tables, key_columns, lengths)[0]


def _fold_every_key(tables: list[pa.Table], key_columns: tuple[str, ...], lengths: np.ndarray
                    ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`fold_rows` over every key, and each returned row's place (its key's first set after its last
    removal, as a row of the segments placed one after the other)."""
    n = int(lengths.sum())
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
    order = np.argsort(place[present], kind="stable")
    return row[present][order], place[present][order]


def _fold_onto_first(tables: list[pa.Table], key_columns: tuple[str, ...], lengths: np.ndarray) -> np.ndarray | None:
    """:func:`fold_rows` of a first segment without removals and later segments of at most :data:`SMALL_TAIL_SHARE`
    of its rows (None for other shapes). Only the first segment's rows whose keys a later segment names are folded
    with the later rows (a hash set of the later keys probed with the first's: no hash table of every key); the
    other rows of the first segment stay as they are, in place. The first segment's keys are taken as distinct."""
    first = int(lengths[0])
    if len(tables) < 2 or len(key_columns) != 1 or not first or lengths[1:].sum() > SMALL_TAIL_SHARE * first:
        return None
    key = key_columns[0]
    base_keys = tables[0].column(key)
    later_keys = pa.chunked_array([c for t in tables[1:] for c in t.column(key).chunks], base_keys.type)
    if base_keys.null_count or later_keys.null_count or any_gone(tables[0]):
        return None
    named = pc.is_in(base_keys, value_set=pc.unique(later_keys))
    hit = np.flatnonzero(named.to_numpy(zero_copy_only=False)) if pc.any(named).as_py() else np.zeros(0, np.int64)
    # the fold of the named rows of the first segment (in its order) and the later segments, over their keys alone
    reduced = [pa.table({key: base_keys.take(pa.array(hit, pa.int64())), "gone": pa.array(np.zeros(hit.size, bool))})]
    reduced += [t.select([key, "gone"]) for t in tables[1:]]
    rows, places = _fold_every_key(reduced, key_columns, np.array([hit.size, *lengths[1:]], np.int64))
    # back to rows of the segments placed one after the other: the named rows are first-segment rows, the rest
    # follow it
    mapped = rows - hit.size + first
    if hit.size:
        rows = np.where(rows < hit.size, hit[np.minimum(rows, hit.size - 1)], mapped)
    else:
        rows = mapped
    in_first = places < hit.size  # a key placed where the first segment has it: it stays there (changed or not)
    out = np.arange(first, dtype=np.int64)
    alive = np.ones(first, bool)
    alive[hit] = False  # a named row is in the table only where the fold keeps its key at its place
    at = hit[places[in_first]]
    out[at], alive[at] = rows[in_first], True
    return np.concatenate([out[alive], rows[~in_first]])


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
    rows = fold_rows(tables, key_columns, checked)
    joined = pa.concat_tables(tables)
    if len(rows) == len(joined) and (len(rows) == 0 or (rows == np.arange(len(rows))).all()):
        return joined  # only new rows were added: nothing moves
    return gathered(joined, rows)


def gathered(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)``: as slices of ``table`` where the rows run in at most :data:`MAX_SLICES` stretches of
    consecutive rows (a table written whole with a few rows replaced or added: its columns are then shared, not
    copied, in as many chunks), else copied."""
    rows = np.asarray(rows, np.int64)
    starts = np.flatnonzero(np.diff(rows) != 1) + 1 if rows.size else np.zeros(0, np.int64)
    if not rows.size or starts.size >= MAX_SLICES:
        return table.take(pa.array(rows, pa.int64()))
    bounds = np.concatenate(([0], starts, [rows.size]))
    return pa.concat_tables([table.slice(int(rows[a]), int(b - a)) for a, b in zip(bounds[:-1], bounds[1:])])


def any_gone(table: pa.Table) -> bool:
    return bool(pc.any(table.column("gone")).as_py())
