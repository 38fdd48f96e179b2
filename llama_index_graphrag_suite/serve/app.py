"""The HTTP API and web page over one loaded index (FastAPI; OpenAPI docs at ``/docs``).

    from llama_index_graphrag_suite.serve import create_app
    app = create_app(index, llm=None, api_key=None)        # then: uvicorn.run(app, host="127.0.0.1")

Routes: ``GET /health``, ``/methods`` (with each setting's default, description and form schema),
``/stats``, ``/documents`` (ids, titles and counts), ``/chunks/{chunk_id}``, ``/graph/entities?q=...``
(entity search), ``/graph/neighbourhood?entity=...&hops=2``;
``POST /retrieve`` (ranked chunks + evidence + the evidence as a graph), ``POST /query`` (the same and
the LLM's answer; ``"stream": true`` sends server-sent events), ``POST /documents`` and ``DELETE
/documents/{doc_id}`` (through the index's own insert/delete, which hold its writer lock; saved to
``persist_dir`` when given). ``/`` is the page (``static/``). Handlers are plain functions, so FastAPI
runs them in its thread pool: requests run in parallel, and the index's reader-writer lock keeps each
query on one state of the index.

Before every API request (one small file read) and again before each write, the server takes in a newer
version of the index that another process saved into its folder (``GraphRAGIndex.is_stale``/``reload``);
a write whose save fails is rolled back (the index reloads the saved version without the change) and
answered with 5xx (409 for a conflicting writer). Every request must name an allowed ``Host``
(``guards.HostAllowList``). Errors are JSON with a readable
``detail`` string; a request that fails validation also lists ``errors`` (field and message).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.staticfiles import StaticFiles

from .._version import __version__
from ..registry import available_methods, method_info
from .browse import chunk_json, list_documents, method_json, search_entities
from .evidence import evidence_graph
from .guards import BodyLimit, HostAllowList, ValidUnicodeBody, allowed_hosts, key_matches
from .runner import RequestError, answer, retrieve, stream_answer
from .schemas import DeleteResponse, InsertRequest, InsertResponse, QueryRequest, RetrieveRequest, RetrieveResponse

__all__ = ["DEFAULT_MAX_BODY", "STATIC", "create_app"]

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_MAX_BODY = 1_000_000


def _llm_errors() -> tuple[type[BaseException], ...]:
    from ..llm.errors import LLMError

    return (LLMError, ConnectionError, TimeoutError)


def _stale(index: Any) -> bool:
    """Whether another writer saved a newer version of ``index`` (False for an index saved nowhere)."""
    is_stale = getattr(index, "is_stale", None)
    return bool(is_stale and is_stale())


def _readable(errors: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Pydantic's errors as ``{"field", "message"}``, without the input (it may be huge, or not valid Unicode)."""
    out = []
    for e in errors:
        where = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
        message = str(e.get("msg", "invalid"))
        for prefix in ("Value error, ", "Assertion failed, "):
            message = message.removeprefix(prefix)
        out.append({"field": where, "message": message})
    return out


def _sse(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def create_app(index: Any, llm: Any = None, api_key: str | None = None, *, max_body: int = DEFAULT_MAX_BODY,
               persist_dir: str | Path | None = None, read_only: bool = False, title: str = "graphrag-suite",
               host: str | None = "127.0.0.1", allowed_host: Iterable[str] = ()) -> FastAPI:
    """The app over ``index`` (see the module docstring). ``api_key`` makes every API route want ``Bearer KEY``.

    Requests must name in their ``Host`` header a loopback name, ``host`` (the address the server is bound
    to) or one of ``allowed_host`` (``"*"``: any).
    """

    def authorised(request: Request) -> None:
        if api_key and not key_matches(request.headers.get("authorization"), api_key):
            raise HTTPException(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                                headers={"WWW-Authenticate": "Bearer"})

    app = FastAPI(title=title, version=__version__, description="Graph RAG methods over one shared index.")
    app.add_middleware(ValidUnicodeBody)
    app.add_middleware(BodyLimit, max_bytes=max_body)  # outside ValidUnicodeBody: the body is bounded before it is read whole
    app.add_middleware(HostAllowList, allowed=allowed_hosts(host, allowed_host))  # outermost: checked first
    write_lock = threading.Lock()  # one writer at a time: the duplicate check and the insert are one step

    def caught_up() -> None:
        """Take in a newer version another process saved into the index's folder (a CLI ``--update``):
        one small file read when nothing changed. A read goes on with the state it has if that fails."""
        try:
            if _stale(index):
                index.reload()
        except Exception as exc:  # noqa: BLE001 - a read still has a whole index to answer from
            log.warning("could not take in the newer index version on disk: %s", exc)

    guarded = [Depends(authorised), Depends(caught_up)]

    @app.exception_handler(RequestError)
    async def _bad_request(request: Request, exc: RequestError):
        return JSONResponse({"detail": str(exc)}, status_code=400)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        errors = _readable(exc.errors())
        detail = "; ".join(f"{e['field']}: {e['message']}" for e in errors) or "invalid request"
        return JSONResponse({"detail": detail, "errors": errors}, status_code=422)

    @app.get("/", include_in_schema=False)
    def page():
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/health")
    def health() -> dict[str, Any]:
        return {"status": "ok", "version": __version__, "llm": llm is not None, "auth": bool(api_key),
                "read_only": read_only, "max_body": max_body, "chunks": len(index.chunks)}

    @app.get("/methods", dependencies=guarded)
    def methods() -> list[dict[str, Any]]:
        return [method_json(name, description, method_info(name))
                for name, description in sorted(available_methods(index).items())]

    @app.get("/stats", dependencies=guarded)
    def stats() -> dict[str, Any]:
        with index.reading():
            return index.stats()

    def _retrieve(req: RetrieveRequest) -> tuple[dict[str, Any], Any]:
        run = retrieve(index, req.question, req.method, req.top_k, req.settings)
        if req.graph:
            start = time.perf_counter()
            run.result["graph"] = evidence_graph(index, run.result)
            run.result["timing_ms"]["graph"] = round((time.perf_counter() - start) * 1000, 2)
        return run.result, run

    @app.post("/retrieve", dependencies=guarded, response_model=RetrieveResponse)
    def post_retrieve(req: RetrieveRequest) -> dict[str, Any]:
        return _retrieve(req)[0]

    @app.post("/query", dependencies=guarded, response_model=RetrieveResponse,
              responses={200: {"content": {"text/event-stream": {}}}})
    def post_query(req: QueryRequest):
        if llm is None:
            raise HTTPException(503, "this server has no LLM: start it with --llm URL (or GRAPHRAG_LLM_URL) to answer; "
                                     "POST /retrieve works without one")
        result, run = _retrieve(req)
        if not req.stream:
            start = time.perf_counter()
            try:
                result["answer"] = answer(run, llm)
            except _llm_errors() as exc:
                raise HTTPException(502, f"the LLM failed: {exc}") from None
            result["timing_ms"]["answer"] = round((time.perf_counter() - start) * 1000, 2)
            return result

        def events():
            yield _sse("retrieval", result)
            start, parts = time.perf_counter(), []
            try:
                for delta in stream_answer(run, llm):
                    parts.append(delta)
                    yield _sse("token", {"delta": delta})
            except Exception as exc:  # noqa: BLE001 - the stream has started: report in-band
                yield _sse("error", {"detail": f"the LLM failed: {exc}"})
                return
            yield _sse("done", {"answer": "".join(parts).strip(), "citations": run.result.get("citations"),
                                "timing_ms": {"answer": round((time.perf_counter() - start) * 1000, 2)}})

        return StreamingResponse(events(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    def _writable() -> None:
        if read_only:
            raise HTTPException(403, "this server is read-only (started with --read-only)")

    def _catch_up_for_write() -> None:
        """Before a write, under ``write_lock``: the newest version on disk, so the save does not rebase."""
        from ..index.storage import IndexConflictError

        if not _stale(index):
            return
        try:
            index.reload()
        except IndexConflictError as exc:
            raise HTTPException(409, f"the index changed on disk and cannot be taken in: {exc}") from None

    def _save_or_roll_back(undo_insert: list[str] | None = None) -> bool:
        """Save the change just made; if the save fails, put the index back as it was and answer 5xx.

        The save is atomic, so the folder still holds the state before the change: reloading it with the
        pending change discarded is the roll-back (for an index saved nowhere yet, an insert is deleted again).
        """
        from ..index.storage import IndexConflictError, IndexLockedError

        if persist_dir is None:
            return False
        try:
            index.persist(persist_dir)
            return True
        except Exception as exc:  # noqa: BLE001 - any failed save: roll back, then say what failed
            saved_error = exc
        rolled_back = _roll_back(undo_insert)
        code, what = ((409, "another writer changed the same document") if isinstance(saved_error, IndexConflictError)
                      else (503, "the index folder is locked by another writer") if isinstance(saved_error, IndexLockedError)
                      else (500, "saving the index failed"))
        state = ("the change was rolled back: the index is as it was" if rolled_back else
                 "and rolling the change back failed too: restart the server to read the index from disk")
        raise HTTPException(code, f"{what} ({type(saved_error).__name__}: {saved_error}); {state}")

    def _roll_back(undo_insert: list[str] | None) -> bool:
        try:
            if getattr(index, "loaded_version", None) is not None:
                index.reload(discard_pending=True)
                return True
            for doc_id in undo_insert or ():
                index.delete(doc_id)
            return undo_insert is not None
        except Exception:  # noqa: BLE001 - reported to the client, logged here
            log.exception("rolling back a change whose save failed")
            return False

    @app.post("/documents", dependencies=guarded, response_model=InsertResponse)
    def insert_documents(req: InsertRequest) -> dict[str, Any]:
        from ..documents import make_document

        _writable()
        ids = [d.doc_id for d in req.documents]
        if len(set(ids)) != len(ids):
            raise HTTPException(400, "the same doc_id appears twice in the request")
        with write_lock:
            _catch_up_for_write()
            with index.reading():
                present = sorted(set(ids) & {c.doc_id for c in index.chunks.values()})
            if present:
                raise HTTPException(409, f"already in the index: {', '.join(present)} (DELETE /documents/ID first)")
            docs = [make_document(d.doc_id, d.text, d.title, d.metadata) for d in req.documents]
            new_chunks = index.insert(docs)
            persisted = _save_or_roll_back(undo_insert=ids)
            return {"inserted": ids, "chunks": new_chunks, "stats": index.stats(), "persisted": persisted}

    @app.delete("/documents/{doc_id:path}", dependencies=guarded, response_model=DeleteResponse)
    def delete_document(doc_id: str) -> dict[str, Any]:
        _writable()
        with write_lock:
            _catch_up_for_write()
            try:
                removed = index.delete(doc_id)
            except KeyError:
                raise HTTPException(404, f"no document {doc_id!r} in the index") from None
            persisted = _save_or_roll_back()
            return {"deleted": doc_id, "chunks_removed": removed, "stats": index.stats(), "persisted": persisted}

    @app.get("/documents", dependencies=guarded)
    def documents(q: str = Query("", max_length=200, description="keep documents whose id or title contains this"),
                  offset: int = Query(0, ge=0), limit: int = Query(200, ge=1, le=5000)) -> dict[str, Any]:
        """The documents in index order: id, title, chunks, characters and entities (distinct, over its chunks)."""
        return list_documents(index, q, offset, limit)

    @app.get("/chunks/{chunk_id:path}", dependencies=guarded)
    def chunk(chunk_id: str) -> dict[str, Any]:
        """One chunk whole: its text, document, title and the entities it mentions."""
        try:
            return chunk_json(index, chunk_id)
        except KeyError as exc:
            raise HTTPException(404, str(exc.args[0])) from None

    @app.get("/graph/entities", dependencies=guarded)
    def entities(q: str = Query(..., min_length=1, max_length=200, description="part of an entity's name"),
                 limit: int = Query(20, ge=1, le=200)) -> dict[str, Any]:
        """Entities whose name contains ``q``: exact matches first, then names starting with it, then the
        rest; within each, the entities in more chunks first."""
        return search_entities(index, q, limit)

    @app.get("/graph/neighbourhood", dependencies=guarded)
    def neighbourhood(entity: str = Query(..., min_length=1, description="entity key or surface form"),
                      hops: int = Query(2, ge=0, le=4), limit: int = Query(200, ge=1, le=2000)) -> dict[str, Any]:
        from ..export import as_networkx, graph_json

        try:
            g = as_networkx(index, around=entity, hops=hops, limit=limit)
        except KeyError as exc:
            raise HTTPException(404, str(exc.args[0])) from None
        return {"entity": entity, "hops": hops, "truncated": g.number_of_nodes() >= limit, **graph_json(g, 1200)}

    return app
