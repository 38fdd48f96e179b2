"""A loaded version's n-gram document frequencies as columns: a read-only mapping n-gram -> chunks holding it.

The statistics behind AGRAG's entity scores (Eq. 2) and PathRAG's LLM-free key phrases hold every candidate
n-gram of the corpus: 4.7 million at 1,000,000 synthetic passages, which as a ``Counter`` took 742 MB of a
serving process and 6.6 s to make on the first question. Held as Arrow keys sorted once, a lookup is a binary
search; a change (insert, delete) asks :meth:`NgramColumns.to_counter` for a Counter it can edit
(``EntityStatistics``).
"""

from __future__ import annotations

import bisect
from collections import Counter
from typing import Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .segment_files import one_array

__all__ = ["COLUMNS_FROM", "NgramColumns", "doc_freq_of"]

COLUMNS_FROM = 1_000_000  # n-grams from which a loaded version keeps them as columns (below: a Counter, faster)
_BATCH = 65_536  # keys turned into Python strings at a time when iterated


class NgramColumns(Mapping):
    """n-gram -> document frequency over Arrow columns sorted by key (UTF-8 byte order, which is code point order:
    the order Python compares strings in, so ``bisect`` finds them)."""

    def __init__(self, keys: pa.Array, df: np.ndarray):
        order = pc.sort_indices(keys)
        self._keys = keys.take(order)
        self._df = np.asarray(df, np.int32)[order.to_numpy()]
        if len(keys) > 1 and pc.any(pc.equal(self._keys.slice(1), self._keys.slice(0, len(keys) - 1))).as_py():
            raise ValueError("the ngrams table lists a key twice")  # sorted: a key listed twice is next to itself

    def _row(self, key: object) -> int:
        if not isinstance(key, str):
            return -1
        keys = self._keys
        at = bisect.bisect_left(range(len(keys)), key, key=lambda i: keys[i].as_py())
        return at if at < len(keys) and keys[at].as_py() == key else -1

    def __getitem__(self, key: str) -> int:
        row = self._row(key)
        if row < 0:
            raise KeyError(key)
        return int(self._df[row])

    def get(self, key: str, default=None):
        row = self._row(key)
        return default if row < 0 else int(self._df[row])

    def __contains__(self, key: object) -> bool:
        return self._row(key) >= 0

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._keys), _BATCH):
            yield from self._keys.slice(start, _BATCH).to_pylist()

    def items(self) -> Iterator[tuple[str, int]]:  # type: ignore[override]
        for start in range(0, len(self._keys), _BATCH):
            yield from zip(self._keys.slice(start, _BATCH).to_pylist(), self._df[start:start + _BATCH].tolist())

    def to_counter(self) -> Counter:
        return Counter(dict(self.items()))


def doc_freq_of(table: pa.Table) -> Mapping:
    """The folded ``ngrams`` table (``key``, ``df``) as a Counter, or as :class:`NgramColumns` from
    :data:`COLUMNS_FROM` rows; ValueError when it lists a key twice (the fold leaves that check to this)."""
    keys, df = one_array(table.column("key")), one_array(table.column("df"))
    if len(keys) >= COLUMNS_FROM:
        return NgramColumns(keys, df.to_numpy(zero_copy_only=False))
    counts = Counter(dict(zip(keys.to_pylist(), df.to_pylist())))
    if len(counts) != len(keys):
        raise ValueError("the ngrams table lists a key twice")
    return counts
