"""What the page browses: ``GET /methods`` (settings with defaults and form schemas), ``/stats``, one chunk whole
(``/chunks/{chunk_id}``), entity search (``/graph/entities?q=``) and an entity's neighbourhood
(``/graph/neighbourhood?entity=&hops=``). Read-only; each reads under the index's reader lock (``browse.py``)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from ..registry import available_methods, method_info
from .browse import chunk_json, method_json, search_entities

__all__ = ["browse_router"]


def browse_router(server: Any) -> APIRouter:
    """The read-only browsing routes over ``server`` (``app.Server``)."""
    router = APIRouter(dependencies=server.guarded, tags=["browse"])
    index = server.index

    @router.get("/methods")
    def methods() -> list[dict[str, Any]]:
        return [method_json(name, description, method_info(name))
                for name, description in sorted(available_methods(index).items())]

    @router.get("/stats")
    def stats() -> dict[str, Any]:
        with index.reading():
            return index.stats()

    @router.get("/chunks/{chunk_id:path}")
    def chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk whole: its text, document, title and the entities it mentions."""
        try:
            return chunk_json(index, chunk_id)
        except KeyError as exc:
            raise HTTPException(404, str(exc.args[0])) from None

    @router.get("/graph/entities")
    def entities(q: str = Query(..., min_length=1, max_length=200, description="part of an entity's name"),
                 limit: int = Query(20, ge=1, le=200)) -> dict[str, Any]:
        """Entities whose name contains ``q``: exact matches first, then names starting with it, then the
        rest; within each, the entities in more chunks first."""
        return search_entities(index, q, limit)

    @router.get("/graph/neighbourhood")
    def neighbourhood(entity: str = Query(..., min_length=1, description="entity key or surface form"),
                      hops: int = Query(2, ge=0, le=4), limit: int = Query(200, ge=1, le=2000)) -> dict[str, Any]:
        from ..export import as_networkx, graph_json

        try:
            g = as_networkx(index, around=entity, hops=hops, limit=limit)
        except KeyError as exc:
            raise HTTPException(404, str(exc.args[0])) from None
        return {"entity": entity, "hops": hops, "truncated": g.number_of_nodes() >= limit, **graph_json(g, 1200)}

    return router
