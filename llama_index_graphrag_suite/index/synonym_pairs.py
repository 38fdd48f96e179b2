"""The synonym edges, ``(entity key, entity key) -> cosine``, held as columns instead of a dict of tuples.

A corpus whose names look alike has many more synonym pairs than entities (the synthetic scale corpus with the
hash embedding: 38 per entity at 100,000 passages, 6.3 million pairs). As a dict, each pair costs a tuple, a float
and a dict slot (about 150 bytes); here it is two int32 name codes, a float32 score and a live flag (13 bytes), and
names are held once each.

:class:`SynonymPairs` is a ``MutableMapping`` with the dict semantics the index relies on: iteration in insertion
order, a changed score keeps its row, a removed and added-again pair goes to the end. Removal only clears a row's
live flag; a save writes the live rows only, so the next load holds no dead ones. Lookups go through a sorted array of pair codes (rows added since it
was sorted sit in a small dict), so a lookup never builds a Python object per pair.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, MutableMapping
from typing import Any

import numpy as np

__all__ = ["SynonymPairs"]

Pair = tuple[str, str]


class SynonymPairs(MutableMapping):
    """See the module docstring."""

    def __init__(self, items: Iterable[tuple[Pair, float]] | dict | None = None) -> None:
        self._names: list[str] = []
        self._code: dict[str, int] = {}
        self._a = np.zeros(0, np.int32)
        self._b = np.zeros(0, np.int32)
        self._score = np.zeros(0, np.float32)
        self._alive = np.zeros(0, bool)
        self._rows = 0  # rows used (the arrays may hold more)
        self._live = 0
        self._sorted_codes = np.zeros(0, np.int64)  # pair codes of the live rows below _indexed, sorted
        self._sorted_rows = np.zeros(0, np.int64)
        self._indexed = 0
        self._recent: dict[int, int] = {}  # pair code -> row, for rows added at or after _indexed
        for key, score in (items.items() if isinstance(items, dict) else items or ()):
            self[key] = score

    @classmethod
    def from_columns(cls, names: list[str], a: np.ndarray, b: np.ndarray, score: np.ndarray) -> "SynonymPairs":
        """Pairs ``(names[a[i]], names[b[i]]) -> score[i]`` in row order; ``names`` distinct. Raises ValueError when
        a pair is listed twice or a code names no name."""
        out = cls()
        n = len(a)
        if not (len(b) == len(score) == n) or len(set(names)) != len(names):
            raise ValueError("synonym columns of different lengths, or a name listed twice")
        a, b = np.array(a, np.int32), np.array(b, np.int32)  # own, writable copies (Arrow's buffers are read-only)
        if n and (min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= len(names)):
            raise ValueError("a synonym pair names an entity code out of range")
        out._names, out._code = list(names), {k: i for i, k in enumerate(names)}
        out._a, out._b, out._score = a, b, np.array(score, np.float32)
        out._alive = np.ones(n, bool)
        out._rows = out._live = n
        out._reindex()
        if n > 1 and not np.diff(out._sorted_codes).all():  # sorted: a pair listed twice sits next to itself
            raise ValueError("a synonym pair is listed twice")
        return out

    # --- the Mapping protocol ----------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._live

    def __iter__(self) -> Iterator[Pair]:
        names, a, b = self._names, self._a, self._b
        for r in np.flatnonzero(self._alive[:self._rows]).tolist():
            yield names[a[r]], names[b[r]]

    def __contains__(self, key: object) -> bool:
        return self._find(key) >= 0

    def __getitem__(self, key: Pair) -> float:
        row = self._find(key)
        if row < 0:
            raise KeyError(key)
        return float(self._score[row])

    def __setitem__(self, key: Pair, score: float) -> None:
        row = self._find(key)
        if row >= 0:
            self._score[row] = score
            return
        a, b = key
        ca, cb = self._name_code(a), self._name_code(b)
        row = self._rows
        if row == len(self._a):  # grow by doubling: appends cost amortised O(rows added)
            size = max(64, 2 * row)
            self._a, self._b = np.resize(self._a, size), np.resize(self._b, size)
            self._score, self._alive = np.resize(self._score, size), np.resize(self._alive, size)
        self._a[row], self._b[row], self._score[row], self._alive[row] = ca, cb, score, True
        self._rows, self._live = row + 1, self._live + 1
        self._recent[(ca << 32) | cb] = row
        if len(self._recent) > 65536 + self._indexed // 4:
            self._reindex()

    def __delitem__(self, key: Pair) -> None:
        row = self._find(key)
        if row < 0:
            raise KeyError(key)
        self._alive[row] = False
        self._live -= 1
        self._recent.pop((int(self._a[row]) << 32) | int(self._b[row]), None)

    def items(self) -> Iterator[tuple[Pair, float]]:  # type: ignore[override]
        names, a, b, s = self._names, self._a, self._b, self._score
        for r in np.flatnonzero(self._alive[:self._rows]).tolist():
            yield (names[a[r]], names[b[r]]), float(s[r])

    def values(self) -> Iterator[float]:  # type: ignore[override]
        return iter(self._score[:self._rows][self._alive[:self._rows]].tolist())

    def __repr__(self) -> str:
        return f"SynonymPairs({self._live} pairs)"

    # --- whole-column access -------------------------------------------------------------------------------------

    def columns(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
        """``(names, a, b, score)`` of the live pairs in order (copies of the code and score arrays)."""
        live = self._alive[:self._rows]
        return self._names, self._a[:self._rows][live], self._b[:self._rows][live], self._score[:self._rows][live]

    def in_order(self, keys: Iterable[Pair]) -> list[Pair]:
        """``keys`` (live pairs) sorted by their row."""
        return sorted(keys, key=self._find)

    def used_names(self) -> list[str]:
        """The names some live pair has at an end."""
        used = np.zeros(len(self._names), bool)
        live = self._alive[:self._rows]
        used[self._a[:self._rows][live]] = True
        used[self._b[:self._rows][live]] = True
        return [self._names[i] for i in np.flatnonzero(used).tolist()]

    def touching(self, keys: Iterable[str]) -> list[tuple[Pair, float]]:
        """The live pairs with an end among ``keys``, in order."""
        codes = np.fromiter((c for c in map(self._code.get, keys) if c is not None), np.int64)
        if not codes.size:
            return []
        n = self._rows
        hit = self._alive[:n] & (np.isin(self._a[:n], codes) | np.isin(self._b[:n], codes))
        names, a, b, s = self._names, self._a, self._b, self._score
        return [((names[a[r]], names[b[r]]), float(s[r])) for r in np.flatnonzero(hit).tolist()]

    # --- undo of a failed change (journal.py) --------------------------------------------------------------------

    def checkpoint(self) -> tuple:
        """What :meth:`restore` needs: rows added after it are dropped, removals after it undone (scores changed
        after it are the journal's to put back, from its copies of the touched rows)."""
        return self._rows, self._alive[:self._rows].copy()

    def restore(self, checkpoint: tuple) -> None:
        rows, alive = checkpoint
        self._alive[:rows] = alive
        self._alive[rows:self._rows] = False
        self._rows, self._live = rows, int(alive.sum())
        self._reindex()

    # --- internals -----------------------------------------------------------------------------------------------

    def _name_code(self, name: str) -> int:
        code = self._code.get(name)
        if code is None:
            code = self._code[name] = len(self._names)
            self._names.append(name)
        return code

    def _find(self, key: Any) -> int:
        """Row of the live pair ``key``, or -1."""
        try:
            a, b = key
            ca, cb = self._code.get(a), self._code.get(b)
        except (TypeError, ValueError):
            return -1
        if ca is None or cb is None:
            return -1
        code = (ca << 32) | cb
        row = self._recent.get(code)
        if row is not None:
            return row if self._alive[row] else -1
        at = int(np.searchsorted(self._sorted_codes, code))
        if at < len(self._sorted_codes) and self._sorted_codes[at] == code:
            row = int(self._sorted_rows[at])
            return row if self._alive[row] else -1
        return -1

    def _reindex(self) -> None:
        """Sort the codes of the live rows (rows later added go to ``_recent`` until the next one)."""
        rows = np.flatnonzero(self._alive[:self._rows])
        codes = (self._a[rows].astype(np.int64) << 32) | self._b[rows].astype(np.int64)
        order = np.argsort(codes, kind="stable")
        self._sorted_codes, self._sorted_rows = codes[order], rows[order]
        self._indexed, self._recent = self._rows, {}


# --- on disk (tables.py: the ``synonyms`` table, columns a, b, gone, score) -------------------------------------

def whole_table(pairs: SynonymPairs, schema: Any) -> Any:
    """All live pairs as one Arrow table of ``schema`` (no Python object per pair)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    names, a, b, score = pairs.columns()
    dictionary = pa.array(names, pa.string())
    return pa.table({"a": pc.take(dictionary, pa.array(a)), "b": pc.take(dictionary, pa.array(b)),
                     "gone": pa.array(np.zeros(len(a), bool)), "score": pa.array(score, pa.float32())}, schema=schema)


def read_segments(tables: list, keys: list[str] = (), key_array=None) -> SynonymPairs:
    """The pairs a version's ``synonyms`` segments fold to (``tables.py``, ``folding.py``: gone rows remove, others
    set), read as columns; a name that is an entity key (``keys``, and as the Arrow array ``key_array``) is that
    key's string object (one per key, however often pairs name it)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from .folding import fold_rows

    if not tables:
        return SynonymPairs()
    if len(tables) == 1 and not pc.any(tables[0].column("gone")).as_py():
        table = tables[0]  # the whole table: its rows as they are (a pair listed twice is refused by from_columns)
    else:
        table = pa.concat_tables(tables).take(pa.array(fold_rows(tables, ("a", "b")), pa.int64()))
    n = len(table)
    both = pc.dictionary_encode(pa.concat_arrays([table.column("a").combine_chunks(), table.column("b").combine_chunks()]))
    codes = np.asarray(both.indices, np.int32)
    names = both.dictionary.to_pylist()
    if key_array is not None:
        at = pc.index_in(both.dictionary, value_set=key_array).fill_null(-1).to_numpy(zero_copy_only=False).tolist()
        names = [keys[r] if r >= 0 else k for r, k in zip(at, names)]
    score = np.asarray(table.column("score").fill_null(0.0).to_numpy(), np.float32)
    return SynonymPairs.from_columns(names, codes[:n], codes[n:], score)
