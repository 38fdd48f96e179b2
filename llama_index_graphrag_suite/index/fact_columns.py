"""The facts of a loaded version as read-only Arrow columns, until a change needs them as records.

A process that loads an index to answer questions (``graphrag-suite serve``, a LlamaIndex app) never changes its
facts, and the facts are the index's largest table (about five per passage): as :class:`~.records.FactRecord`
objects they cost about 680 bytes each (a record, a set, an id, a text and four more strings), as Arrow columns
about 130. :class:`FactColumns` is the read-only ``Mapping`` a load gives ``IndexState.facts``; a fact read by id
is made into a record on the way out (the last few thousand are kept). The first change of the index
(``journal.change``) turns the table into the dict of records that insert and delete edit (:meth:`to_dict`).

Lookups by id go through the ids' 64-bit values (``records.fact_id`` is ``"f-"`` and 16 hex digits) in a sorted
array, so no Python object is held per fact; ids of another form are looked up in a dict.

A save writes beside each fact the entity rows of its subject and object and the vector row of its text
(:data:`SAVED_ROWS`, :func:`saved_row_columns`); a load checks them instead of joining millions of names again
(``saved_rows.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..graph.snapshot import ENTITY, RELATION
from .records import FactRecord, text_key
from .row_columns import RowColumns
from .saved_rows import checked_rows
from .segment_files import one_array

__all__ = ["SAVED_ROWS", "TEXT_KEY", "FactColumns", "FactsByText", "saved_row_columns", "with_saved_rows",
           "with_text_keys"]

COLUMNS = ("id", "subject", "predicate", "object", "text", "kind", "chunks")
TEXT_KEY = "text_key"  # saved beside them: ``records.text_key(text)``, so a load need not hash every fact's text
# rows saved beside three of them (see the module docstring): the ends' in the entities table, the text's vector's
SAVED_ROWS = {"subject": "subject_row", "object": "object_row", TEXT_KEY: "text_row"}
_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789abcdef", np.uint8)] = np.arange(16, dtype=np.uint8)


def _id_values(ids: pa.StringArray) -> np.ndarray | None:
    """The 64-bit values, in row order, of ids that are all ``f-`` and 16 lower-case hex digits; else None."""
    n = len(ids)
    if n == 0 or ids.null_count:
        return None
    offsets = np.frombuffer(ids.buffers()[1], np.int32, n + 1, ids.offset * 4)
    if not (np.diff(offsets) == 18).all():
        return None
    raw = np.frombuffer(ids.buffers()[2], np.uint8, 18 * n, int(offsets[0])).reshape(n, 18)
    digits = _HEX[raw[:, 2:]]
    if not ((raw[:, 0] == ord("f")) & (raw[:, 1] == ord("-"))).all() or (digits == 255).any():
        return None
    # two hex digits a byte, eight bytes a big-endian 64-bit value
    return ((digits[:, 0::2] << 4) | digits[:, 1::2]).view(">u8").ravel().astype(np.uint64)


class FactColumns(RowColumns):
    """See the module docstring. ``table``: the folded facts table (columns :data:`COLUMNS`, ids distinct)."""

    def __init__(self, table: pa.Table) -> None:
        # the columns as read (a table of several row groups: several chunks each, not copied together); the ids
        # in one array (their buffers are read as numbers below)
        self._cols = {c: table.column(c) for c in COLUMNS}
        ids = self._cols["id"] = one_array(table.column("id"))
        found = _id_values(ids)
        # ids of the usual form need no Python object each; others are looked up in the base class's dict
        super().__init__(None if found is not None else ids.to_pylist(), "facts", key_array=ids)
        self._values = found  # in row order; sorted with their rows on the first lookup (see _lookup)
        self._sorted: tuple[np.ndarray, np.ndarray, np.ndarray, int] | None = None
        if found is not None and len(found) > 1:
            ordered = np.sort(found)  # a plain sort is several times faster than the argsort a lookup needs
            same = np.flatnonzero(ordered[1:] == ordered[:-1])
            if same.size:
                twice = ids[int(np.flatnonzero(found == ordered[same[0]])[0])].as_py()
                raise ValueError(f"the facts table lists a key twice ({twice!r})")
        # the text keys as saved (versions saved before the facts table held them: computed when first asked)
        names = table.column_names
        self._text_keys: pa.Array | None = table.column(TEXT_KEY) if TEXT_KEY in names else None
        self._text_rows: tuple[Any, int, np.ndarray] | None = None  # (vector table, its moves, rows): see text_rows
        self._end_rows: dict[str, tuple[pa.Array, np.ndarray]] = {}  # see end_rows
        self._saved_rows = {name: table.column(col) for name, col in SAVED_ROWS.items() if col in names}

    def __len__(self) -> int:
        return len(self._cols["id"])

    def __iter__(self) -> Iterator[str]:
        return iter(self._cols["id"].to_pylist())

    def _make(self, row: int) -> FactRecord:
        c = self._cols
        return FactRecord(*(c[k][row].as_py() for k in COLUMNS[:-1]), set(c["chunks"][row].as_py()))

    def _copy(self, rec: FactRecord) -> FactRecord:
        return FactRecord(rec.id, rec.subject, rec.predicate, rec.object, rec.text, rec.kind, set(rec.chunks))

    def lists(self, row: int, name: str, value: Any) -> bool:
        """Whether fact ``row``'s ``chunks`` list ``value``, read from the column (no record)."""
        if name != "chunks":
            return super().lists(row, name, value)
        listed = self._cols["chunks"][row].values
        if len(listed) <= 64:  # most facts: a short list read as Python strings costs less than a compute call
            return value in listed.to_pylist()
        return pc.index(listed, value).as_py() >= 0

    def values(self) -> Iterator[FactRecord]:  # type: ignore[override]
        """Every fact as a record, in order, read column by column (not row by row)."""
        cols = [self._cols[k].to_pylist() for k in COLUMNS]
        for fid, s, p, o, t, k, chunks in zip(*cols):
            yield FactRecord(fid, s, p, o, t, k, set(chunks))

    def column(self, name: str) -> list:
        """One column in table order, as a Python list (``chunks``: lists of chunk ids)."""
        return self._cols[name].to_pylist()

    def arrow_column(self, name: str) -> pa.Array:
        """One column in table order, as the Arrow array it is held in."""
        return self._cols[name]

    def ids(self) -> "FactIds":
        """The fact ids in table order, as a sequence read from the id column (no list of every id)."""
        return FactIds(self._cols["id"])

    def text_keys(self) -> pa.Array:
        """``records.text_key`` of every fact's text, in table order, as an Arrow string array: the saved column
        (read from the vector table's ids once a load found the rows, so the column need not stay in memory), or
        computed from the texts for a version saved without it."""
        if self._text_keys is None:
            kept = self._text_rows
            if kept is not None and kept[1] == kept[0].moves and not (kept[2] < 0).any():
                self._text_keys = kept[0].id_array().take(pa.array(kept[2]))
            else:
                self._text_keys = pa.array([text_key(t) for t in self._cols["text"].to_pylist()], pa.string())
        return self._text_keys

    def text_rows(self, vectors: Any) -> np.ndarray:
        """The row in ``vectors`` (the fact-text ``VectorTable``) of every fact's text, in table order (-1: a text
        it no longer holds, a fact a change removed); kept while the table's rows stay where they are (an insert only
        appends), so a change's derive does not look every fact's text up again."""
        kept = self._text_rows
        if kept is not None and kept[0] is vectors and kept[1] == vectors.moves:
            return kept[2]
        rows = checked_rows(self.text_keys(), vectors.id_array(), self._saved_rows.get(TEXT_KEY))
        rows.flags.writeable = False
        self._text_keys = None
        self._text_rows = (vectors, vectors.moves, rows)
        return rows

    def end_rows(self, end: str, keys: pa.Array, forget: bool = False) -> np.ndarray:
        """The row in ``keys`` (the entity keys, an Arrow array) of every fact's ``end`` ("subject" or "object"), -1
        for a name that is not among them: one hash join, kept for the same ``keys`` until asked with ``forget`` (a
        load's checks and then its graph snapshot read the same rows)."""
        kept = self._end_rows.pop(end, None) if forget else self._end_rows.get(end)
        if kept is not None and kept[0] is keys:
            return kept[1]
        rows = checked_rows(self._cols[end], keys, self._saved_rows.get(end))
        if not forget:
            self._end_rows[end] = (keys, rows)
        return rows

    def to_dict(self, intern: dict[str, str] | None = None) -> dict[str, FactRecord]:
        """Every fact as a record, in order (what a change edits); ``intern``: entity keys and chunk ids to share."""
        intern = intern or {}
        out = {}
        for rec in self.values():
            rec.subject, rec.object = intern.get(rec.subject, rec.subject), intern.get(rec.object, rec.object)
            rec.chunks = {intern.get(c, c) for c in rec.chunks}
            out[rec.id] = rec
        return out

    def arrow(self) -> pa.Table:
        """The columns as a table, text keys last (what a save writes when no fact changed)."""
        return pa.table({**self._cols, TEXT_KEY: self.text_keys()})

    def _find(self, fid: Any) -> int:
        if self._values is None:
            return super()._find(fid)
        if not isinstance(fid, str) or len(fid) != 18 or not fid.startswith("f-") or fid != fid.lower():
            return -1
        try:
            value = int(fid[2:], 16)
        except ValueError:
            return -1
        if f"{value:016x}" != fid[2:]:  # int() also reads a sign, underscores and spaces
            return -1
        # The value's leading bits pick its bucket of the sorted values (one or two each: ids are hashes), searched as
        # a short list: an insert looks up every fact it supports, and np.searchsorted took 2-3 µs a call.
        values, rows, starts, shift = self._lookup()
        lo, hi = starts[value >> shift:(value >> shift) + 2].tolist()
        bucket = values[lo:hi].tolist()
        at = bisect.bisect_left(bucket, value)
        return int(rows[lo + at]) if at < len(bucket) and bucket[at] == value else -1

    def _lookup(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(the id values sorted, their rows, where each bucket of values starts, the shift that gives a value's
        bucket): made on the first lookup by id, not on load."""
        if self._sorted is None:
            order = np.argsort(self._values)  # distinct values: any sort gives the same order
            values = self._values[order]
            bits = max(1, len(values).bit_length() - 1)  # between half as many buckets as values and as many
            shift = 64 - bits
            buckets = (values >> np.uint64(shift)).astype(np.int64)
            starts = np.searchsorted(buckets, np.arange((1 << bits) + 1))
            starts = starts.astype(np.int32 if len(values) < 1 << 31 else np.int64)  # a quarter of the memory
            self._sorted = values, order, starts, shift
        return self._sorted


def saved_row_columns(state: Any, n: int, positions: np.ndarray | None, n_gone: int = 0) -> dict[str, pa.Array]:
    """:data:`SAVED_ROWS` of ``n`` facts at ``positions`` (their places in ``state.facts``' order; None: not known,
    so none saved), after ``n_gone`` removed rows (null). The ends' rows are those of the fact's relation edge in the
    graph snapshot (edge i is fact i), the text's its row in the fact vectors (``fact_text_rows``); either is left
    null when what holds it does not describe the tables being saved (a load then joins those names). The rows are
    those of the tables the same save writes, in their order, which a load folds back the same (``folding.py``)."""
    n_facts = len(state.facts)
    snap, text_rows = state.snapshot, state.fact_text_rows
    known = {"subject": None, "object": None, TEXT_KEY: None}
    if positions is not None and snap is not None and snap.num_edges >= n_facts \
            and int(np.count_nonzero(snap.node_kind == ENTITY)) == len(state.entities) \
            and np.array_equal(snap.edge_fact[:n_facts], np.arange(n_facts)) \
            and int(np.count_nonzero(snap.edge_kind == RELATION)) == n_facts:
        known["subject"], known["object"] = snap.edge_src[:n_facts], snap.edge_dst[:n_facts]
    if positions is not None and text_rows is not None and len(text_rows) == n_facts:
        known[TEXT_KEY] = text_rows
    out = {}
    for name, rows in known.items():
        if rows is None:
            out[SAVED_ROWS[name]] = pa.nulls(n_gone + n, pa.int32())
            continue
        values = np.concatenate([np.zeros(n_gone, np.int32), np.asarray(rows)[np.asarray(positions, np.int64)].astype(np.int32)])
        out[SAVED_ROWS[name]] = pa.array(values, pa.int32(), mask=np.arange(len(values)) < n_gone)
    return out


def with_saved_rows(segments: list[pa.Table]) -> list[pa.Table]:
    """The facts segments, each with :data:`SAVED_ROWS` (nulls where a segment lacks them: one saved before they
    were) when some segment has them."""
    if all(SAVED_ROWS["subject"] not in t.column_names for t in segments):
        return segments
    out = []
    for t in segments:
        for column in SAVED_ROWS.values():
            if column not in t.column_names:
                t = t.append_column(column, pa.nulls(len(t), pa.int32()))
        out.append(t)
    return out


def with_text_keys(segments: list[pa.Table]) -> list[pa.Table]:
    """The facts segments, each with its text keys where some segment has them (one saved before they were saved
    gets them computed; gone rows have none). When none has them, the folded table's are computed (``FactColumns``)."""
    if all(TEXT_KEY not in t.column_names for t in segments):
        return segments
    out = []
    for t in segments:
        if TEXT_KEY not in t.column_names:
            gone, texts = t.column("gone").to_pylist(), t.column("text").to_pylist()
            t = t.append_column(TEXT_KEY, pa.array([None if g else text_key(x) for g, x in zip(gone, texts)], pa.string()))
        out.append(t)
    return out


class FactIds(Sequence):
    """The fact ids of a :class:`FactColumns`, by position (``index.fact_ids``)."""

    def __init__(self, ids: pa.StringArray) -> None:
        self._ids = ids

    def __len__(self) -> int:
        return len(self._ids)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return self._ids[i].to_pylist()
        return self._ids[int(i)].as_py()

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids.to_pylist())


class FactsByText(Mapping):
    """Fact text key -> the ids of the facts with that text, in table order (``index.facts_by_text``), read from
    the facts' vector rows instead of a dict with a list per text."""

    def __init__(self, fact_ids: Sequence[str], text_rows: np.ndarray, text_ids: list[str], row_of: Any) -> None:
        self._fact_ids, self._text_ids, self._row_of, self._text_rows = fact_ids, text_ids, row_of, text_rows
        self._grouped: tuple[np.ndarray, np.ndarray] | None = None  # see _groups

    def _groups(self) -> tuple[np.ndarray, np.ndarray]:
        """(fact positions by text row, bounds per text row): sorted on first use, not on load (most queries map
        fact texts through the vector rows without this table)."""
        if self._grouped is None:
            order = np.argsort(self._text_rows, kind="stable")
            self._grouped = order, np.searchsorted(np.asarray(self._text_rows)[order], np.arange(len(self._text_ids) + 1))
        return self._grouped

    def __getitem__(self, key: str) -> list[str]:
        try:
            row = self._row_of(key)
        except KeyError:
            raise KeyError(key) from None
        order, bounds = self._groups()
        found = order[bounds[row]:bounds[row + 1]].tolist()
        if not found:
            raise KeyError(key)
        return [self._fact_ids[p] for p in found]

    def __iter__(self) -> Iterator[str]:
        counts = np.diff(self._groups()[1])
        return (self._text_ids[r] for r in np.flatnonzero(counts).tolist())

    def __len__(self) -> int:
        return int(np.count_nonzero(np.diff(self._groups()[1])))
