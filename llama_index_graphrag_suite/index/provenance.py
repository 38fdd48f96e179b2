"""What inserts changed in older chunks, taken back when their documents are deleted (the records ``journal.py``
makes: see its module docstring, steps 1-4), and the check of saved records (``provenance.json``)."""

from __future__ import annotations

from typing import Any

from ..extractors.pathrag_extractor import SEPARATOR  # how the PathRAG extractor joins an entity's descriptions
from .records import entity_attributes

__all__ = ["ABSENT", "checked", "prune", "same_value", "undo_for_delete"]

ABSENT = object()  # a row or an attribute that is not there
_ABSENT = ABSENT


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
    unlinked: set[str] = set()
    if not state.provenance:
        return unlinked
    # a copy: step 3 rewrites later records (as new dicts: a rollback puts back the list the change began with)
    records = _with_set_values(state.provenance, state)
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
    for i, rec in enumerate(records):
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
            for key, values in rec.get("set", {}).items():
                ent = state.entities.get(key)
                if ent is None or key in gone_entities:
                    continue
                before = rec.get("attributes", {}).get(key, {})
                attributes = dict(ent.attributes)
                for name, value in values.items():
                    now = _take_back(records, i, key, name, before.get(name, _ABSENT), value,
                                     attributes.get(name, _ABSENT))
                    if now is _ABSENT:
                        attributes.pop(name, None)
                    else:
                        attributes[name] = now
                if attributes != ent.attributes:
                    journal.touch("entities", key)
                    ent.attributes = attributes  # replaced, never changed in place (records.py)
    state.provenance = records
    return unlinked


def same_value(a: Any, b: Any) -> bool:
    """The same attribute value (True is not 1 here), ``_ABSENT`` only the same as itself."""
    return a is b or (type(a) is type(b) and a == b)


def _added_parts(before: Any, after: Any) -> list[str] | None:
    """The parts a merge added to a ``SEPARATOR``-joined value (``after``'s parts not in ``before``), or None when
    ``after`` is no merge into ``before`` (a scalar replaced, a description the extractor wrote anew)."""
    if not isinstance(after, str) or not (before is _ABSENT or isinstance(before, str)):
        return None
    old = [] if before is _ABSENT else before.split(SEPARATOR)
    new = after.split(SEPARATOR)
    if not set(old) <= set(new):
        return None
    return [p for p in new if p not in old] or None


def _with_values(rec: dict, key: str, name: str, before: Any, after: Any) -> dict:
    """A copy of ``rec`` whose entity ``key`` had ``before`` as attribute ``name`` and was given ``after``."""
    was = {**rec.get("attributes", {}).get(key, {})}
    if before is _ABSENT:
        was.pop(name, None)
    else:
        was[name] = before
    return {**rec, "attributes": {**rec.get("attributes", {}), key: was},
            "set": {**rec["set"], key: {**rec["set"][key], name: after}}}


def _take_back(records: list[dict], i: int, key: str, name: str, before: Any, after: Any, current: Any) -> Any:
    """Step 3 for one attribute: record ``i`` (being deleted) changed attribute ``name`` of entity ``key`` from
    ``before`` (``_ABSENT``: none) to ``after``; the value is ``current`` now. Returns the value it gets without
    the record's part, and rewrites the later records that changed the attribute too (in ``records``) as if
    record ``i`` had never been.

    The later changes are replayed on ``before``: a merge (its value grew by parts) adds its parts to the value
    before it, anything else sets its value again. When ``current`` is still what the last of those changes set,
    it gets the replayed value; else (changed by something no record holds) it only loses the parts record ``i``
    added, if any.
    """
    value, last = before, after  # the attribute's value as replayed so far; what the last change set
    for j in range(i + 1, len(records)):
        rec = records[j]
        if name not in rec.get("set", {}).get(key, {}):
            continue
        was = rec.get("attributes", {}).get(key, {}).get(name, _ABSENT)
        last = rec["set"][key][name]
        added = _added_parts(was, last) if was is not _ABSENT else None
        if added is not None and (value is _ABSENT or isinstance(value, str)):
            kept = [] if value is _ABSENT else value.split(SEPARATOR)
            now = SEPARATOR.join(kept + [p for p in added if p not in kept])
        else:
            now = last
        records[j] = _with_values(rec, key, name, value, now)
        value = now
    if same_value(current, last):
        return value
    added = _added_parts(before, after)
    if added is not None and isinstance(current, str):
        parts = [p for p in current.split(SEPARATOR) if p not in added]
        return SEPARATOR.join(parts) if parts else value
    return current


def _with_set_values(records: list[dict], state) -> list[dict]:
    """``records`` (a new list), each record that changed attributes with its "set" values: those saved before
    "set" existed get them from the next record's "before" values of the entity, else its attributes now."""
    out = list(records)
    for i, rec in enumerate(out):
        if "set" in rec or not rec.get("attributes"):
            continue
        values = {}
        for key, before in rec["attributes"].items():
            after = next((r["attributes"][key] for r in out[i + 1:] if key in r.get("attributes", {})), None)
            if after is None:
                ent = state.entities.get(key)
                if ent is None:
                    continue
                after = ent.attributes
            changed = {a: v for a, v in after.items() if not same_value(before.get(a, _ABSENT), v)}
            if changed:
                values[key] = changed
        out[i] = {**rec, "set": values}
    return out


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
        values = {k: v for k, v in rec.get("set", {}).items() if k in attributes}
        relinked = [k for k in rec.get("relinked", ()) if any(k in keys for keys in links.values())] if chunks else []
        if links or facts or types or attributes:
            kept.append({"chunks": chunks, "links": links, "facts": facts, "types": types,
                         **({"attributes": attributes} if attributes else {}),
                         **({"set": values} if "set" in rec and attributes else {}),
                         **({"relinked": relinked} if relinked else {})})
    state.provenance = kept


def checked(data: Any) -> list[dict[str, Any]]:
    """Records read from ``provenance.json``, or ValueError when they are not what an insert writes."""
    def strings(x: Any) -> bool:  # the types of a JSON list's items, collected in C rather than item by item
        return isinstance(x, list) and set(map(type, x)) <= {str}

    def mapping(x: Any) -> bool:
        return isinstance(x, dict) and all(strings(v) for v in x.values())

    def attributes(x: Any) -> bool:  # optional: entity key -> its attributes before the insert
        return isinstance(x, dict) and all(isinstance(a, dict) and entity_attributes(a) == a for a in x.values())

    if not isinstance(data, list) or not all(
            isinstance(r, dict) and strings(r.get("chunks")) and mapping(r.get("links"))
            and mapping(r.get("facts")) and strings(r.get("types")) and attributes(r.get("attributes", {}))
            and attributes(r.get("set", {}))  # optional, absent in older records: the values the insert set
            and strings(r.get("relinked", []))
            for r in data):
        raise ValueError("provenance.json is not a list of insert records")
    return data
