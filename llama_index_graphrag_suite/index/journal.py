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
     "relinked": [keys known before it that it linked to older chunks]}   (likewise)

and ``delete`` then also (:func:`undo_for_delete`):

1. removes an entity whose remaining chunks are all ones it was only linked to, and unlinks it there;
2. takes back an old chunk's fact support once every entity a record linked to that chunk is gone (a fact left
   with no support goes, as in any delete);
3. clears the types a record set, and puts back the attributes (an extractor's description) an entity had
   before, once all of the record's chunks are deleted (when the entity stays);
4. takes back the links a record gave older chunks to entities known before it (a term an earlier insert had
   left unlinked, then over a smaller corpus's hub ceiling), once all of the record's chunks are deleted, and
   with them those chunks' support for the record's facts that name the key.

Changes nest (a refresh deletes and inserts in one change): copies go to every open scope, the insert's record
comes from its own scope, and only the outermost scope rolls back.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import weakref
from dataclasses import replace
from typing import Any, Callable, Iterator

from .records import entity_attributes

log = logging.getLogger(__name__)

__all__ = ["Journal", "checked", "prune", "undo_for_delete"]

TABLES = ("chunks", "entities", "facts", "synonyms")
_ABSENT = object()  # a row that did not exist before the change


def _copy_row(row: Any) -> Any:
    """A copy of a table row that later in-place changes of the row do not reach (its mutable fields copied)."""
    if hasattr(row, "entities") and isinstance(row.entities, list):  # ChunkRecord
        return replace(row, entities=list(row.entities))
    if hasattr(row, "chunks"):  # EntityRecord, FactRecord (an entity's attributes dict is replaced, never changed)
        return replace(row, chunks=set(row.chunks))
    return row  # a synonym score


class _Scope:
    def __init__(self) -> None:
        self.before: dict[str, dict[Any, Any]] = {t: {} for t in TABLES}


class Journal:
    """See the module docstring. One per index (``IndexState.journal``); changes run under the index's writer lock."""

    def __init__(self, state: Any, restore_store: Callable[..., None] | None = None) -> None:
        # Weak references: no cycle through the state keeps a large index alive (lazy_store.py).
        self._state_ref = weakref.ref(state)
        self._restore_store = restore_store
        """Called after a rollback that touched the graph store, with the rows to write back (the index's
        ``_mirror_restore``, as a ``weakref.WeakMethod``): ``(chunks, entities, facts, added)``."""
        self._scopes: list[_Scope] = []
        self._orders: dict[str, list] = {}  # table -> its keys in order when the outermost change first touched it
        self._undo: list[Callable[[], None]] = []
        self._start: dict[str, Any] = {}
        self.mirrored = False  # the change wrote to the graph store (so a rollback must write it back)

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
            self._start = {"build_info": copy.deepcopy(state.build_info), "provenance": list(state.provenance),
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
        finally:
            self._scopes.pop()
            if outermost:
                self._orders, self._undo, self._start, self.mirrored = {}, [], {}, False

    def touch(self, table: str, key: Any) -> None:
        """Keep the row ``key`` of ``table`` as it is now (or its absence), before the caller changes it."""
        if not self._scopes:
            return  # not inside a change (a build from a PropertyGraphIndex): nothing to undo
        rows = getattr(self._state, table)
        marks = self._state.unsaved[table]  # what the next save writes (tables.py: changed rows only)
        marks[key] = marks.get(key, False) or key not in rows  # True: (re-)added, so it goes at the table's end
        if table not in self._orders:
            self._orders[table] = list(rows)
        if not self._orders[table]:
            return  # empty when the change began (a first build): a rollback empties it, no copies needed
        old: Any = None
        for scope in self._scopes:
            before = scope.before[table]
            if key not in before:
                if old is None:
                    row = rows.get(key, _ABSENT)
                    old = row if row is _ABSENT else _copy_row(row)
                before[key] = old

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
            rows = {}
            for key in self._orders[table]:  # the old order; rows added by the change are not in it
                row = before.get(key, current.get(key, _ABSENT))
                if row is not _ABSENT:
                    rows[key] = row
            setattr(state, table, rows)
            restored[table] = [k for k, row in before.items() if row is not _ABSENT]
        start = self._start
        state.build_info, state.provenance = start["build_info"], start["provenance"]
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
        if attributes:  # an extractor's description merged from the new chunks: the old one comes back on delete
            record["attributes"] = attributes
        return record


def _linked_only(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Entity key -> the chunks it was linked to by mention (never extracted from)."""
    out: dict[str, set[str]] = {}
    for rec in records:
        for c, keys in rec["links"].items():
            for k in keys:
                out.setdefault(k, set()).add(c)
    return out


def undo_for_delete(state, gone: set[str], candidates: set[str], gone_entities: set[str]) -> set[str]:
    """Steps 1-4 of the module docstring, before ``delete`` removes anything; returns the surviving chunks step 4
    unlinked (a graph store re-writes them).

    ``candidates``: entities that lost a chunk; ``gone_entities`` (extended here): entities left with none.
    """
    records = state.provenance
    unlinked: set[str] = set()
    if not records:
        return unlinked
    journal = state.journal
    linked = _linked_only(records)
    for key in candidates - gone_entities:
        ent = state.entities.get(key)
        if ent is not None and key in linked and ent.chunks <= linked[key]:
            journal.touch("entities", key)
            for c in ent.chunks:
                journal.touch("chunks", c)
                state.chunks[c].entities.remove(key)
            ent.chunks.clear()
            gone_entities.add(key)
    for rec in records:
        for c, keys in rec["links"].items():
            if c in gone or not all(k in gone_entities or k not in state.entities for k in keys):
                continue
            for fid in rec["facts"].get(c, ()):
                fact = state.facts.get(fid)
                if fact is not None:
                    journal.touch("facts", fid)
                    fact.chunks.discard(c)
        if all(c in gone or c not in state.chunks for c in rec["chunks"]):
            relinked = set(rec.get("relinked", ()))
            for c, keys in rec["links"].items():
                for key in relinked.intersection(keys):
                    ent = state.entities.get(key)
                    if c not in gone and c in state.chunks and ent is not None and key not in gone_entities:
                        journal.touch("entities", key)
                        journal.touch("chunks", c)
                        ent.chunks.discard(c)
                        state.chunks[c].entities.remove(key)
                        unlinked.add(c)
                        # the relations the link step recomputed for c with the key (a co-occurrence extractor)
                        # go with the link; a relation left without chunks is deleted with the others
                        for fid in rec["facts"].get(c, ()):
                            fact = state.facts.get(fid)
                            if fact is not None and key in (fact.subject, fact.object):
                                journal.touch("facts", fid)
                                fact.chunks.discard(c)
            for key in rec["types"]:
                ent = state.entities.get(key)
                if ent is not None and key not in gone_entities:
                    journal.touch("entities", key)
                    ent.type = ""
            for key, attributes in rec.get("attributes", {}).items():
                ent = state.entities.get(key)
                if ent is not None and key not in gone_entities:
                    journal.touch("entities", key)
                    ent.attributes = dict(attributes)
    return unlinked


def prune(state, gone: set[str]) -> None:
    """Forget what the delete just undid or removed (after the tables are updated)."""
    kept = []
    for rec in state.provenance:
        chunks = [c for c in rec["chunks"] if c not in gone]
        links = {c: [k for k in keys if k in state.entities] for c, keys in rec["links"].items() if c not in gone}
        links = {c: keys for c, keys in links.items() if keys}
        facts = {c: [f for f in fids if f in state.facts] for c, fids in rec["facts"].items() if c in links}
        facts = {c: fids for c, fids in facts.items() if fids}
        types = [k for k in rec["types"] if k in state.entities] if chunks else []
        attributes = {k: a for k, a in rec.get("attributes", {}).items() if k in state.entities} if chunks else {}
        relinked = [k for k in rec.get("relinked", ()) if any(k in keys for keys in links.values())] if chunks else []
        if links or facts or types or attributes:
            kept.append({"chunks": chunks, "links": links, "facts": facts, "types": types,
                         **({"attributes": attributes} if attributes else {}),
                         **({"relinked": relinked} if relinked else {})})
    state.provenance = kept


def checked(data: Any) -> list[dict[str, Any]]:
    """Records read from ``provenance.json``, or ValueError when they are not what an insert writes."""
    def strings(x: Any) -> bool:
        return isinstance(x, list) and all(isinstance(v, str) for v in x)

    def mapping(x: Any) -> bool:
        return isinstance(x, dict) and all(strings(v) for v in x.values())

    def attributes(x: Any) -> bool:  # optional: entity key -> its attributes before the insert
        return isinstance(x, dict) and all(isinstance(a, dict) and entity_attributes(a) == a for a in x.values())

    if not isinstance(data, list) or not all(
            isinstance(r, dict) and strings(r.get("chunks")) and mapping(r.get("links"))
            and mapping(r.get("facts")) and strings(r.get("types")) and attributes(r.get("attributes", {}))
            and strings(r.get("relinked", []))
            for r in data):
        raise ValueError("provenance.json is not a list of insert records")
    return data
