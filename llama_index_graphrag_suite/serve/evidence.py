"""A method's evidence as a graph: nodes (entities, chunks, communities) and edges, for drawing.

Every method reports its evidence in its own shape (AGRAG's Steiner and MCMI edges, PathRAG's paths,
A2RAG's graph evidence, ArchRAG's per-layer items, HippoRAG's facts and seeds). Rather than one
converter per method, the evidence is walked: any dict with endpoints (``u``/``v`` or
``subject``/``object``) that are index nodes is an edge, any string naming an entity or chunk of the
index is a node, ArchRAG's ``{"id", "kind": "community"}`` items are community nodes. The retrieved
chunks are added and linked to the entities they contain, so methods without graph evidence (dense,
BM25, hybrid) still draw their chunks and what those mention.
"""

from __future__ import annotations

from typing import Any

__all__ = ["evidence_graph"]

MAX_NODES = 150
CHUNKS_PER_ENTITY = 8
TEXT_CHARS = 1200



def chunk_label(title: str, doc_id: str) -> str:
    """A chunk's name in a graph: its title, with the page (or slide) when its document is one page of a file
    (``report.pdf#page=3`` -> "Marlow Annual Report p. 3"), so two pages of one PDF are told apart."""
    _, mark, number = doc_id.rpartition("#page=") if "#page=" in doc_id else doc_id.rpartition("#slide=")
    where = (" p. " if "page" in mark else " slide ") + number if mark else ""
    return (title or doc_id) + where if title else doc_id

class _Builder:
    def __init__(self, index: Any, limit: int):
        self.index, self.limit = index, limit
        self.nodes: dict[str, dict[str, Any]] = {}
        self.edges: dict[tuple, dict[str, Any]] = {}

    def kind_of(self, node_id: Any) -> str | None:
        if not isinstance(node_id, str):
            return None
        if node_id in self.index.entities:
            return "entity"
        if node_id in self.index.chunks:
            return "chunk"
        return None

    def node(self, node_id: str, kind: str, evidence: bool = True, score: float | None = None,
             label: str | None = None) -> bool:
        if node_id not in self.nodes:
            if len(self.nodes) >= self.limit:
                return False
            if kind == "entity":
                label = label or self.index.entities[node_id].surface
            elif kind == "chunk":
                c = self.index.chunks[node_id]
                label = label or chunk_label(c.title, c.doc_id)
            self.nodes[node_id] = {"id": node_id, "kind": kind, "label": label or node_id, "evidence": evidence,
                                   "retrieved": False, "score": score}
        entry = self.nodes[node_id]
        entry["evidence"] = entry["evidence"] or evidence
        if score is not None and entry["score"] is None:
            entry["score"] = score
        return True

    def edge(self, u: str, v: str, label: str, kind: str) -> None:
        ku, kv = self.kind_of(u), self.kind_of(v)
        if ku is None or kv is None or u == v:
            return
        if not (self.node(u, ku) and self.node(v, kv)):
            return
        self._add_edge(u, v, label, kind)

    def _add_edge(self, u: str, v: str, label: str, kind: str) -> None:
        key = (min(u, v), max(u, v), kind)
        if key not in self.edges:
            self.edges[key] = {"id": f"e{len(self.edges)}", "source": u, "target": v, "label": label, "kind": kind}

    def walk(self, obj: Any, depth: int = 0) -> None:
        if depth > 12:
            return
        if isinstance(obj, dict):
            u, v = obj.get("u", obj.get("subject")), obj.get("v", obj.get("object"))
            if isinstance(u, str) and isinstance(v, str):
                kind = str(obj.get("kind") or "relation")
                label = str(obj.get("predicate") or (obj.get("facts") or [{}])[0].get("predicate") or kind)
                self.edge(u, v, label, kind)
            ident = obj.get("node", obj.get("id", obj.get("chunk_id")))
            if obj.get("kind") == "community" and ident is not None:
                self.node(f"community:{ident}", "community", label=str(obj.get("title") or f"community {ident}"),
                          score=float(obj["score"]) if isinstance(obj.get("score"), (int, float)) else None)
            elif (k := self.kind_of(ident)) is not None:
                score = obj.get("score")
                self.node(ident, k, score=float(score) if isinstance(score, (int, float)) else None)
            for key, value in obj.items():
                if (k := self.kind_of(key)) is not None:
                    self.node(key, k, score=float(value) if isinstance(value, (int, float)) else None)
                if key not in ("text", "content"):
                    self.walk(value, depth + 1)
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                self.walk(item, depth + 1)
        elif (k := self.kind_of(obj)) is not None:
            self.node(obj, k)


def evidence_graph(index: Any, result: dict[str, Any], limit: int = MAX_NODES) -> dict[str, Any]:
    """``{"nodes", "edges", "chunks"}`` for a retrieval result (see the module docstring).

    Each entity node lists up to eight of its chunks (retrieved ones first); ``chunks`` holds the text of
    every chunk a node refers to, so a page can show them when the node is clicked.
    """
    with index.reading():
        b = _Builder(index, limit)
        retrieved = [n["id"] for n in result.get("nodes", ()) if n.get("kind") == "chunk" and n["id"] in index.chunks]
        for n in result.get("nodes", ()):
            if n["id"] in index.chunks:
                b.node(n["id"], "chunk", evidence=False, score=n.get("score"))
                b.nodes[n["id"]]["retrieved"] = True
        b.walk(result.get("evidence") or {})
        plain = not any(n["evidence"] for n in b.nodes.values())
        for cid in retrieved:  # the retrieved chunks, linked to the entities they contain
            for key in index.chunks[cid].entities:
                if key in b.nodes or plain:
                    b.edge(cid, key, "contains", "contains")
        by_surface = {n["label"].lower(): n["id"] for n in b.nodes.values() if n["kind"] == "entity"}
        for node in [n for n in b.nodes.values() if n["kind"] == "community"]:  # ArchRAG: titles name members
            for name in node["label"].split(", "):
                if name.lower() in by_surface:
                    b._add_edge(node["id"], by_surface[name.lower()], "member", "member")
        keep = set(retrieved)
        for node in b.nodes.values():
            if node["kind"] == "entity":
                ent = index.entities[node["id"]].chunks
                node["chunks"] = sorted(ent, key=lambda c: (c not in keep, c))[:CHUNKS_PER_ENTITY]
                node["chunk_count"] = len(ent)
            elif node["kind"] == "chunk":
                node["chunks"] = [node["id"]]
            else:
                node["chunks"] = []
        referenced = {c for node in b.nodes.values() for c in node["chunks"]}
        chunks = {c: {"doc_id": index.chunks[c].doc_id, "title": index.chunks[c].title,
                      "text": index.chunks[c].text[:TEXT_CHARS]} for c in sorted(referenced)}
    return {"nodes": list(b.nodes.values()), "edges": list(b.edges.values()), "chunks": chunks,
            "truncated": len(b.nodes) >= limit}
