"""What an insert changed in chunks indexed before it, so that deleting the inserted documents undoes it.

An insert does more than add its own chunks: it links entities it extracted for the first time to the
old chunks that mention them, recomputes those chunks' co-occurrence relations (statistical extractor:
new facts, or an old chunk's support for a fact), and may give an untyped old entity the type its new
mention has. A plain delete of the inserted documents would keep all that (the linked entities still
have chunks), so ``insert`` then ``delete`` would not restore the index. Each insert that changes old
chunks leaves a record (saved with the index as ``provenance.json``)::

    {"chunks": [its new chunk ids], "links": {old chunk: [entity keys linked]},
     "facts": {old chunk: [fact ids it started supporting]}, "types": [entity keys it typed]}

``delete`` then also (see :func:`undo_for_delete`):

1. removes an entity whose remaining chunks are all ones it was only linked to, and unlinks it there;
2. takes back an old chunk's fact support once every entity a record linked to that chunk is gone
   (a fact left with no support goes, as in any delete);
3. clears the types a record set once all of its chunks are deleted (when the entity stays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Before", "before_insert", "checked", "prune", "record_insert", "undo_for_delete"]


@dataclass
class Before:
    chunks: set[str]
    entity_counts: dict[str, int]  # old chunk -> how many entities it had
    support: dict[str, frozenset[str]]  # fact id -> its chunks
    untyped: set[str]


def before_insert(index) -> Before | None:
    """What :func:`record_insert` compares with (None for a first build: there are no old chunks)."""
    if not index.chunks:
        return None
    return Before(set(index.chunks), {c: len(r.entities) for c, r in index.chunks.items()},
                  {f: frozenset(r.chunks) for f, r in index.facts.items()},
                  {k for k, e in index.entities.items() if not e.type})


def record_insert(index, before: Before | None, new_chunks: list[str]) -> None:
    """Append the record of an insert that just succeeded (nothing when it left old chunks alone)."""
    if before is None or not new_chunks:
        return
    links = {c: list(index.chunks[c].entities[n:]) for c, n in before.entity_counts.items()
             if c in index.chunks and len(index.chunks[c].entities) > n}
    facts: dict[str, list[str]] = {}
    for fid, f in index.facts.items():
        for c in sorted((f.chunks & before.chunks) - before.support.get(fid, frozenset())):
            facts.setdefault(c, []).append(fid)
    types = sorted(k for k in before.untyped if k in index.entities and index.entities[k].type)
    if links or facts or types:
        index._provenance.append({"chunks": list(new_chunks), "links": links, "facts": facts, "types": types})


def _linked_only(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Entity key -> the chunks it was linked to by mention (never extracted from)."""
    out: dict[str, set[str]] = {}
    for rec in records:
        for c, keys in rec["links"].items():
            for k in keys:
                out.setdefault(k, set()).add(c)
    return out


def undo_for_delete(index, gone: set[str], candidates: set[str], gone_entities: set[str]) -> None:
    """Steps 1-3 of the module docstring, before ``delete`` removes anything.

    ``candidates``: entities that lost a chunk; ``gone_entities`` (extended here): entities left with none.
    """
    records = index._provenance
    if not records:
        return
    linked = _linked_only(records)
    for key in candidates - gone_entities:
        ent = index.entities.get(key)
        if ent is not None and key in linked and ent.chunks <= linked[key]:
            for c in ent.chunks:
                index.chunks[c].entities.remove(key)
            ent.chunks.clear()
            gone_entities.add(key)
    for rec in records:
        for c, keys in rec["links"].items():
            if c in gone or not all(k in gone_entities or k not in index.entities for k in keys):
                continue
            for fid in rec["facts"].get(c, ()):
                fact = index.facts.get(fid)
                if fact is not None:
                    fact.chunks.discard(c)
        if all(c in gone or c not in index.chunks for c in rec["chunks"]):
            for key in rec["types"]:
                ent = index.entities.get(key)
                if ent is not None and key not in gone_entities:
                    ent.type = ""


def prune(index, gone: set[str]) -> None:
    """Forget what the delete just undid or removed (after the tables are updated)."""
    kept = []
    for rec in index._provenance:
        chunks = [c for c in rec["chunks"] if c not in gone]
        links = {c: [k for k in keys if k in index.entities] for c, keys in rec["links"].items() if c not in gone}
        links = {c: keys for c, keys in links.items() if keys}
        facts = {c: [f for f in fids if f in index.facts] for c, fids in rec["facts"].items() if c in links}
        facts = {c: fids for c, fids in facts.items() if fids}
        types = [k for k in rec["types"] if k in index.entities] if chunks else []
        if links or facts or types:
            kept.append({"chunks": chunks, "links": links, "facts": facts, "types": types})
    index._provenance = kept


def checked(data: Any) -> list[dict[str, Any]]:
    """Records read from ``provenance.json``, or ValueError when they are not what :func:`record_insert` writes."""
    def strings(x: Any) -> bool:
        return isinstance(x, list) and all(isinstance(v, str) for v in x)

    def mapping(x: Any) -> bool:
        return isinstance(x, dict) and all(strings(v) for v in x.values())

    if not isinstance(data, list) or not all(
            isinstance(r, dict) and strings(r.get("chunks")) and mapping(r.get("links"))
            and mapping(r.get("facts")) and strings(r.get("types")) for r in data):
        raise ValueError("provenance.json is not a list of insert records")
    return data
