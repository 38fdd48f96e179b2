"""The HTTP API and web page over one loaded index (FastAPI; OpenAPI docs at ``/docs``).

    from llama_index_graphrag_suite.serve import create_app
    app = create_app(index, llm=None, api_key=None)        # then: uvicorn.run(app, host="127.0.0.1")

One router per area, each over the :class:`Server` this module builds:

* ``routes_query.py``: ``POST /retrieve`` (ranked chunks + evidence + the evidence as a graph) and ``POST /query``
  (the same and the LLM's answer; ``"stream": true`` sends server-sent events);
* ``routes_documents.py``: ``GET /documents`` (ids, titles and counts), ``POST /documents`` (JSON texts),
  ``POST /documents/files`` (PDF, Word, PowerPoint, HTML, EPUB, Markdown or text files, read as
  ``graphrag-suite index`` reads a folder) and ``DELETE /documents/{doc_id}``, through the index's own insert and
  delete (which hold its writer lock), saved to ``persist_dir`` when given;
* ``routes_browse.py``: ``GET /methods`` (with each setting's default, description and form schema), ``/stats``,
  ``/chunks/{chunk_id}``, ``/graph/entities?q=...`` (entity search), ``/graph/neighbourhood?entity=...&hops=2``.

``/`` is the page (``static/``), ``/health`` says what the server can do. Handlers are plain functions, so
FastAPI runs them in its thread pool: requests run in parallel, and the index's reader-writer lock keeps each
query on one state of the index.

Before every API request (one small file read) and again before each write, the server takes in a newer
version of the index that another process saved into its folder (``GraphRAGIndex.is_stale``/``reload``);
a write whose save fails is rolled back (the index reloads the saved version without the change) and
answered with 5xx (409 for a conflicting writer). Every request must name an allowed ``Host``
(``guards.HostAllowList``). Errors are JSON with a readable ``detail`` string; a request that fails validation
also lists ``errors`` (field and message).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from .._version import __version__
from .guards import BodyLimit, HostAllowList, ValidUnicodeBody, allowed_hosts, key_matches
from ..index.mapped_pages import MappedBudget
from .runner import RequestError

__all__ = ["DEFAULT_MAPPED_MB", "DEFAULT_MAX_BODY", "DEFAULT_MAX_UPLOAD", "STATIC", "Server", "create_app"]

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_MAX_BODY = 1_000_000
DEFAULT_MAX_UPLOAD = 50_000_000  # POST /documents/files: PDFs and Office files are larger than JSON requests
UPLOAD_PATH = "/documents/files"
# the file-backed part of the RSS (mapped segment pages queries read) above which they are unmapped again: they stay
# in the kernel's page cache, not the process (index/mapped_pages.py)
DEFAULT_MAPPED_MB = 1024


@dataclass
class Server:
    """What every router reads: the index, the LLM, the options the server was started with, one writer lock."""

    index: Any
    llm: Any = None
    api_key: str | None = None
    read_only: bool = False
    persist_dir: str | Path | None = None
    max_body: int = DEFAULT_MAX_BODY
    max_upload: int = DEFAULT_MAX_UPLOAD
    write_lock: threading.Lock = field(default_factory=threading.Lock)  # the duplicate check and the insert: one step
    mapped: MappedBudget = field(default_factory=lambda: MappedBudget(DEFAULT_MAPPED_MB))

    def after_question(self) -> None:
        """After a question is answered: the index's mapped file pages given back above the budget
        (``index/mapped_pages.py``)."""
        self.mapped.check(self.index)

    def authorised(self, request: Request) -> None:
        if self.api_key and not key_matches(request.headers.get("authorization"), self.api_key):
            raise HTTPException(401, "missing or wrong API key: send 'Authorization: Bearer KEY'",
                                headers={"WWW-Authenticate": "Bearer"})

    def caught_up(self) -> None:
        """Take in a newer version another process saved into the index's folder (a CLI ``--update``):
        one small file read when nothing changed. A read goes on with the state it has if that fails."""
        try:
            if self.stale():
                self.index.reload()
        except Exception as exc:  # noqa: BLE001 - a read still has a whole index to answer from
            log.warning("could not take in the newer index version on disk: %s", exc)

    def stale(self) -> bool:
        """Whether another writer saved a newer version of the index (False for an index saved nowhere)."""
        is_stale = getattr(self.index, "is_stale", None)
        return bool(is_stale and is_stale())

    @property
    def guarded(self) -> list[Any]:
        """The dependencies of every API route: the key, then the newest saved version."""
        return [Depends(self.authorised), Depends(self.caught_up)]


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


def create_app(index: Any, llm: Any = None, api_key: str | None = None, *, max_body: int = DEFAULT_MAX_BODY,
               max_upload: int = DEFAULT_MAX_UPLOAD, persist_dir: str | Path | None = None, read_only: bool = False,
               title: str = "graphrag-suite", host: str | None = "127.0.0.1",
               allowed_host: Iterable[str] = (), mapped_mb: float | None = DEFAULT_MAPPED_MB) -> FastAPI:
    """The app over ``index`` (see the module docstring). ``api_key`` makes every API route want ``Bearer KEY``.

    Requests must name in their ``Host`` header a loopback name, ``host`` (the address the server is bound
    to) or one of ``allowed_host`` (``"*"``: any). Bodies are at most ``max_body`` bytes, file uploads
    ``max_upload``. ``mapped_mb``: the bound on mapped index pages kept after a question (None: no bound).
    """
    from .routes_browse import browse_router
    from .routes_documents import documents_router
    from .routes_query import query_router

    server = Server(index, llm, api_key, read_only, persist_dir, max_body, max_upload, mapped=MappedBudget(mapped_mb))
    app = FastAPI(title=title, version=__version__, description="Graph RAG methods over one shared index.")
    app.add_middleware(ValidUnicodeBody)
    # outside ValidUnicodeBody: the body is bounded before it is read whole
    app.add_middleware(BodyLimit, max_bytes=max_body, larger={UPLOAD_PATH: max_upload})
    app.add_middleware(HostAllowList, allowed=allowed_hosts(host, allowed_host))  # outermost: checked first

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
                "read_only": read_only, "max_body": max_body, "max_upload": max_upload, "chunks": len(index.chunks)}

    for router in (query_router(server), documents_router(server), browse_router(server)):
        app.include_router(router)
    return app
