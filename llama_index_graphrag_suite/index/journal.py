"""One journal of row-level changes: undo of a failed change, and what inserts changed in older chunks.

Every change of the index's tables (an insert, a delete, a refresh) runs inside ``journal.change()``. Before a
row of ``chunks``, ``entities``, ``facts`` or ``synonyms`` is changed, added or removed, the code changing it
calls :meth:`Journal.touch`, which keeps a copy of the row as it was (once per change). Vector tables and corpus
statistics register how to undo their step (:meth:`Journal.on_undo`). So:

* **A failed change is rolled back** from those copies (:meth:`Journal.rollback`): rows as they were, in their
  order, vector rows back in place, statistics and bookkeeping as before, the graph store re-written for the
  rows involved. Costs: a copy of each row the change touches, and of removed vectors; never the whole index.
  (Replaces the insert's own undo and the refresh's copy of every table and vector table.)
* **An insert's effects on older chunks are recorded** from the same copies: when an insert commits, the
  difference between its old rows' copies and the rows now is the record that lets a later delete of the
  inserted documents undo them (:func:`insert_record`, :func:`undo_for_delete`; saved as ``provenance.json``).

An insert links the entities it extracted first to older chunks that mention them, recomputes those chunks'
co-occurrence relations (statistical extractor: new facts, or an old chunk's support for a fact), and may give
an untyped old entity the type its new mention has. A plain delete of the inserted documents would keep that,
so ``insert`` then ``delete`` would not restore the index. Each such insert leaves a record::

    {"chunks": [its new chunk ids], "links": {old chunk: [entity keys linked]},
     "facts": {old chunk: [fact ids it started supporting]}, "types": [entity keys it typed],
     "attributes": {entity key: its attributes before},   (only when the insert changed some)
     "set": {entity key: {attribute: the value the insert gave it}},   (the attributes it changed; likewise)
     "relinked": [keys known before it that it linked to older chunks]}   (only when it linked some)

and ``delete`` then also (:func:`undo_for_delete`):

1. removes an entity whose remaining chunks are all ones it was only linked to, and unlinks it there;
2. takes back an old chunk's fact support once every entity a record linked to that chunk is gone (a fact left
   with no support goes, as in any delete);
3. clears the types a record set, and takes back the attribute values it set (an extractor's description),
   once all of the record's chunks are deleted (when the entity stays): only the record's own part, since a later
   insert may have changed the same attribute (:func:`_take_back`). A value later inserts merged into (the PathRAG
   extractor's ``SEPARATOR``-joined descriptions, which grow by parts) loses the parts the record added and keeps
   theirs; a value a later insert replaced stays theirs; a value still the one the record set goes back to the
   one before it. The later records are rewritten as if the record had never been (their "before" values and
   merged "set" values lose its part), so deleting them afterwards restores the index as before the record.
   Records saved before "set" existed (the attributes before only) get their "set" values when a delete first
   needs them, from the next record's "before" values, else the entity's attributes now (:func:`_with_set_values`);
4. takes back the links a record gave older chunks to entities known before it (a term an earlier insert had
   left unlinked, then over a smaller corpus's hub ceiling), once all of the record's chunks are deleted, and
   with them those chunks' support for the record's facts that name the key.

Changes nest (a refresh deletes and inserts in one change): copies go to every open scope, the insert's record
comes from its own scope, and only the outermost scope rolls back.

**One commit.** A change also carries the document operations it makes (:meth:`Journal.document`: what a save
re-applies on a newer version, ``pending.py``) and the insert records it keeps (:meth:`Journal.keep_record`).
When the outermost change commits, its document operations go into the state's pending log and the journal
keeps what it did as one :class:`ChangeSet` (:attr:`Journal.last`): the rows it added, changed and removed,
its insert records, its document operations. A change that fails records none of them: the rows and records
are rolled back, and its document operations are dropped.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import weakref
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator

from .provenance import ABSENT as _ABSENT  # a row that did not exist before the change, an attribute not set
from .provenance import same_value as _same
from .provenance_file import ProvenanceFile

log = logging.getLogger(__name__)

__all__ = ["ChangeSet", "Journal"]

TABLES = ("chunks", "entities", "facts", "synonyms")


def _copy_row(row: Any) -> Any:
    """A copy of a table row that later in-place changes of the row do not reach (its mutable fields copied)."""
    if hasattr(row, "entities") and isinstance(row.entities, list):  # ChunkRecord
        return replace(row, entities=list(row.entities))
    if hasattr(row, "chunks"):  # EntityRecord, FactRecord (an entity's attributes dict is replaced, never changed)
        return replace(row, chunks=row.chunks.copy())  # a loaded entity's ChunkIds: copied unread (records.py)
    return row  # a synonym score


class _Scope:
    def __init__(self) -> None:
        self.before: dict[str, dict[Any, Any]] = {t: {} for t in TABLES}
        self.documents: list[tuple[str, str | None, Any]] = []  # (doc id, hash before, document after), in order
        self.records: list[dict] = []  # the insert records kept in this scope (and the scopes inside it)


@dataclass
class ChangeSet:
    """What one committed change did (see the module docstring): one record, three readers (undo's bookkeeping,
    provenance, the rebase log)."""

    rows: dict[str, dict[Any, str]] = field(default_factory=dict)
    """Table -> row key -> ``"added"``, ``"changed"`` or ``"removed"`` (a row added and removed again: absent)."""
    records: list[dict] = field(default_factory=list)
    """The insert records it appended to ``state.provenance`` (what a later delete of its documents undoes)."""
    documents: list[tuple[str, str | None, Any]] = field(default_factory=list)
    """``(doc id, hash before, document after)`` per document operation, as given to ``IndexState.record``."""


class Journal:
    """See the module docstring. One per index (``IndexState.journal``); changes run under the index's writer lock."""

    def __init__(self, state: Any, restore_store: Callable[..., None] | None = None) -> None:
        # Weak references: no cycle through the state keeps a large index alive (lazy_store.py).
        self._state_ref = weakref.ref(state)
        self._restore_store = restore_store
        """Called after a rollback that touched the graph store, with the rows to write back (the index's
        ``StoreMirror.restore``, as a ``weakref.WeakMethod``): ``(chunks, entities, facts, added)``."""
        self._scopes: list[_Scope] = []
        self._orders: dict[str, Any] = {}  # table -> its keys in order (or its checkpoint) when first touched
        self._was_empty: dict[str, bool] = {}  # table -> it held no row when first touched
        self._marks: dict[str, dict] = {}  # table -> key -> its IndexState.unsaved mark before the change (or _ABSENT)
        self._undo: list[Callable[[], None]] = []
        self._start: dict[str, Any] = {}
        self.mirrored = False  # the change wrote to the graph store (so a rollback must write it back)
        self.last: ChangeSet | None = None
        """What the last committed change did (None before the first)."""

    @property
    def _state(self) -> Any:
        return self._state_ref()

    @property
    def active(self) -> bool:
        return bool(self._scopes)

    @contextlib.contextmanager
    def change(self) -> Iterator[_Scope]:
        """Scope of one change: rolled back if it raises (when it is the outermost one)."""
        outermost = not self._scopes
        if outermost:
            state = self._state
            state.writable()
            self._start = {"build_info": copy.deepcopy(state.build_info), "provenance": _provenance_mark(state.provenance),
                           "snapshot": state.snapshot, "artefacts": state.artefacts,
                           "saved": dict(state.artefacts.saved), "entity_stats": state.entity_stats, "dim": state.dim}
        scope = _Scope()
        self._scopes.append(scope)
        try:
            yield scope
        except BaseException:
            if outermost:
                self.rollback()
            raise
        else:
            if outermost:
                self.last = self._commit(scope)
            else:  # the outer scope commits what this one did, or rolls it back
                self._scopes[-2].records += scope.records
        finally:
            self._scopes.pop()
            if outermost:
                self._orders, self._marks, self._undo, self._start, self.mirrored = {}, {}, [], {}, False
                self._was_empty = {}
                self._state.read_only()

    def touch(self, table: str, key: Any) -> None:
        """Keep the row ``key`` of ``table`` as it is now (or its absence), before the caller changes it."""
        if not self._scopes:
            return  # not inside a change (a build from a PropertyGraphIndex): nothing to undo
        rows = getattr(self._state, table)
        marks = self._state.unsaved[table]  # what the next save writes (tables.py: changed rows only)
        self._marks.setdefault(table, {}).setdefault(key, marks.get(key, _ABSENT))  # a rollback puts it back
        marks[key] = marks.get(key, False) or key not in rows  # True: (re-)added, so it goes at the table's end
        if table not in self._orders:  # a columnar table keeps a checkpoint of itself, not a list of its keys
            self._orders[table] = rows.checkpoint() if hasattr(rows, "checkpoint") else list(rows)
            self._was_empty[table] = not len(rows)
        if self._was_empty[table]:
            return  # empty when the change began (a first build): a rollback empties it, no copies needed
        old: Any = None
        for scope in self._scopes:
            before = scope.before[table]
            if key not in before:
                if old is None:
                    row = rows.get(key, _ABSENT)
                    old = row if row is _ABSENT else _copy_row(row)
                before[key] = old

    def document(self, doc_id: str, before: str | None, after: Any) -> None:
        """A document operation of the change in progress (``IndexState.record``), recorded when it commits."""
        if self._scopes:
            self._scopes[0].documents.append((doc_id, before, after))
        else:
            self._state.record(doc_id, before, after)

    def keep_record(self, record: dict) -> None:
        """Append an insert's record (:meth:`insert_record`) to ``state.provenance``; a rollback takes it back."""
        self._state.provenance.append(record)
        if self._scopes:
            self._scopes[-1].records.append(record)

    def _commit(self, scope: _Scope) -> ChangeSet:
        """The outermost change succeeded: its document operations go into the pending log; what it did is returned."""
        state = self._state
        for doc_id, before, after in scope.documents:
            state.record(doc_id, before, after)
        rows: dict[str, dict[Any, str]] = {}
        for table, marks in self._marks.items():  # every key the change touched, once
            current, copies, was_empty = getattr(state, table), scope.before[table], self._was_empty[table]
            out = rows[table] = {}
            for key in marks:
                had = not was_empty and copies.get(key, _ABSENT) is not _ABSENT
                has = key in current
                if had or has:
                    out[key] = "changed" if had and has else "added" if has else "removed"
        return ChangeSet(rows, scope.records, scope.documents)

    def on_undo(self, undo: Callable[[], None]) -> None:
        """How to undo a step that is not a table row (vectors, statistics); run last-first by a rollback."""
        if self._scopes:
            self._undo.append(undo)

    def rollback(self) -> None:
        """Put everything the outermost change touched back as it was (see the module docstring)."""
        state, scope = self._state, self._scopes[0]
        for undo in reversed(self._undo):
            undo()
        restored: dict[str, list] = {}
        for table in self._orders:  # every table the change touched (one empty then holds no copies)
            before = scope.before[table]
            current = getattr(state, table)
            if hasattr(current, "restore"):  # rows added since are dropped, removed ones come back where they were
                current.restore(self._orders[table])
                for key, row in before.items():
                    if row is not _ABSENT:
                        current[key] = row
                continue
            rows = {}
            for key in self._orders[table]:  # the old order; rows added by the change are not in it
                row = before.get(key, current.get(key, _ABSENT))
                if row is not _ABSENT:
                    rows[key] = row
            setattr(state, table, rows)
            restored[table] = [k for k, row in before.items() if row is not _ABSENT]
        for table, before_marks in self._marks.items():  # rows are back where they were: so are their save marks
            marks = state.unsaved[table]
            for key, mark in before_marks.items():
                if mark is _ABSENT:
                    marks.pop(key, None)
                else:
                    marks[key] = mark
        start = self._start
        state.build_info, state.provenance = start["build_info"], _provenance_back(start["provenance"])
        state.entity_stats, state.dim = start["entity_stats"], start["dim"]
        if state.snapshot is not start["snapshot"]:  # derived state was rebuilt mid-change: the old one is whole
            state.derive(start["snapshot"])
            state.artefacts = start["artefacts"]
            state.artefacts.saved = start["saved"]
        restore_store = self._restore_store() if self._restore_store is not None else None
        if self.mirrored and restore_store is not None:
            added = [k for t in ("chunks", "entities") for k, row in scope.before[t].items() if row is _ABSENT]
            try:
                restore_store(restored.get("chunks", []), restored.get("entities", []), restored.get("facts", []), added)
            except ConnectionError as exc:  # a server store that is down (stores.StoreUnavailableError): one line
                log.warning("a failed change could not be undone in the property graph store: %s", exc)
            except Exception:  # the tables are whole again; the store is what could not be written
                log.exception("a failed change could not be undone in the property graph store")

    def insert_record(self, scope: _Scope, new_chunks: list[str]) -> dict | None:
        """The record of an insert that just succeeded in ``scope`` (None when it left older chunks alone)."""
        state = self._state
        new = set(new_chunks)
        if len(state.chunks) == len(new):
            return None  # a first build: there are no older chunks
        links = {}
        for cid, old in scope.before["chunks"].items():
            if old is not _ABSENT and cid not in new and cid in state.chunks:
                now = state.chunks[cid].entities
                if len(now) > len(old.entities):
                    links[cid] = list(now[len(old.entities):])
        facts: dict[str, list[str]] = {}
        for fid, old in scope.before["facts"].items():
            fact = state.facts.get(fid)
            if fact is None:
                continue
            had = set() if old is _ABSENT else old.chunks
            for cid in sorted(fact.chunks - had - new):
                facts.setdefault(cid, []).append(fid)
        old_entities = {k: old for k, old in scope.before["entities"].items() if old is not _ABSENT and k in state.entities}
        types = sorted(k for k, old in old_entities.items() if not old.type and state.entities[k].type)
        attributes = {k: dict(old.attributes) for k, old in old_entities.items()
                      if old.attributes != state.entities[k].attributes}
        if not (links or facts or types or attributes):
            return None
        facts = {c: sorted(fids) for c, fids in sorted(facts.items())}
        record = {"chunks": list(new_chunks), "links": links, "facts": facts, "types": types}
        # entities that existed before and got links to older chunks (a term an earlier insert left unlinked)
        relinked = sorted({k for keys in links.values() for k in keys
                           if scope.before["entities"].get(k, _ABSENT) is not _ABSENT})
        if relinked:  # a delete of all the insert's chunks takes those links back
            record["relinked"] = relinked
        if attributes:  # an extractor's description merged from the new chunks: a delete takes back its part
            record["attributes"] = attributes  # whole, as before "set" existed (an older library restores it)
            values = {k: {a: v for a, v in state.entities[k].attributes.items()
                          if not _same(before.get(a, _ABSENT), v)} for k, before in attributes.items()}
            record["set"] = {k: v for k, v in values.items() if v}
        return record


def _provenance_mark(provenance: Any) -> Any:
    """What a rollback puts back as ``state.provenance``: a copy of the list, or a loaded file's own mark (its
    records are not read for that: an insert only appends one)."""
    if isinstance(provenance, ProvenanceFile):
        return provenance, provenance.checkpoint()
    return list(provenance)


def _provenance_back(mark: Any) -> Any:
    if isinstance(mark, tuple):
        provenance, checkpoint = mark
        provenance.restore(checkpoint)
        return provenance
    return mark
