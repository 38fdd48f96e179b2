"""What the page browses, as JSON: the documents with their counts, one chunk whole, entity search, and each
method's settings with a schema a form can be built from. Plain functions over a loaded index (``app.py``
routes them), each reading under the index's reader lock.
"""

from __future__ import annotations

from typing import Any

__all__ = ["chunk_json", "list_documents", "method_json", "search_entities", "setting_schema"]


def list_documents(index: Any, q: str = "", offset: int = 0, limit: int = 200) -> dict[str, Any]:
    """The documents in index order (``q``: those whose id or title contains it): id, title, chunks,
    characters and entities (distinct, over its chunks); ``total`` counts all that match."""
    needle = q.casefold().strip()
    docs: dict[str, dict[str, Any]] = {}
    with index.reading():
        for cid in index.chunk_order:
            c = index.chunks[cid]
            row = docs.get(c.doc_id)
            if row is None:
                row = docs[c.doc_id] = {"doc_id": c.doc_id, "title": c.title, "chunks": 0, "characters": 0,
                                        "entities": set()}
            row["chunks"] += 1
            row["characters"] += len(c.text)
            row["entities"].update(c.entities)
    rows = [r for r in docs.values()
            if not needle or needle in r["doc_id"].casefold() or needle in (r["title"] or "").casefold()]
    page = [{**r, "entities": len(r["entities"])} for r in rows[offset:offset + limit]]
    return {"total": len(rows), "offset": offset, "documents": page}


def chunk_json(index: Any, chunk_id: str) -> dict[str, Any]:
    """One chunk whole: text, document, title and the entities it mentions. KeyError for an unknown id."""
    with index.reading():
        c = index.chunks.get(chunk_id)
        if c is None:
            raise KeyError(f"no chunk {chunk_id!r} in the index")
        entities = [{"id": k, "label": index.entities[k].surface} for k in c.entities if k in index.entities]
        return {"id": chunk_id, "doc_id": c.doc_id, "title": c.title, "text": c.text, "entities": entities}


def search_entities(index: Any, q: str, limit: int = 20) -> dict[str, Any]:
    """Entities whose name (or key) contains ``q``: exact matches first, then names that start with it, then the
    rest; within each, the entities in more chunks first."""
    needle = " ".join(q.casefold().split())
    found = []
    with index.reading():
        for key, e in index.entities.items():
            name = e.surface.casefold()
            if needle in name or needle in key:
                rank = 0 if needle in (name, key) else 1 if name.startswith(needle) or key.startswith(needle) else 2
                found.append((rank, -len(e.chunks), e.surface, key))
    found.sort()
    return {"query": q, "total": len(found),
            "entities": [{"id": key, "label": surface, "chunk_count": -neg} for _, neg, surface, key in found[:limit]]}


def method_json(name: str, description: str, info: Any) -> dict[str, Any]:
    """A method for ``GET /methods``: name, description, variants, and each setting's default, description
    and :func:`setting_schema`: the method's own, then the guard's for a guarded method (at its preset's defaults)."""
    defaults = {field: default for field, default, _ in info.settings_listing()}
    settings: dict[str, Any] = {}
    for config in info.settings_classes():
        schema = config.model_json_schema()
        props, defs = schema.get("properties", {}), schema.get("$defs", {})
        settings.update({f: {"default": defaults[f], "description": spec.description,
                             "schema": setting_schema(props.get(f, {}), defs)}
                         for f, spec in config.model_fields.items()})
    return {"name": name, "description": description, "variants": info.variants, "settings": settings}


def setting_schema(prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A setting's JSON schema for a form: ``type`` (``nullable`` when None is allowed), bounds, ``enum``
    (``$ref``s inlined), and ``items.enum`` for a list of choices."""
    def inline(p: dict[str, Any]) -> dict[str, Any]:
        if "$ref" in p:
            p = {**defs.get(p["$ref"].rsplit("/", 1)[-1], {}), **{k: v for k, v in p.items() if k != "$ref"}}
        return p

    prop = inline(prop)
    options = [inline(o) for o in prop.get("anyOf", [prop])]
    kinds = [o for o in options if o.get("type") != "null"]
    chosen = kinds[0] if len(kinds) == 1 else prop
    out: dict[str, Any] = {"nullable": len(kinds) < len(options),
                           "type": chosen.get("type", "string" if "enum" in chosen else "json")}
    for key in ("enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key in chosen:
            out[key] = chosen[key]
    if out["type"] == "array" and "enum" in inline(chosen.get("items", {})):
        out["items"] = {"enum": inline(chosen["items"])["enum"]}
    return out
