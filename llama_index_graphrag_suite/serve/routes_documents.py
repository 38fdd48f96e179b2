"""The documents: ``GET /documents`` lists them, ``POST /documents`` adds texts sent as JSON, ``POST
/documents/files`` adds files (PDF, Word, PowerPoint, HTML, EPUB, Markdown, text: read as ``graphrag-suite index``
reads a folder, a PDF one document per page), ``DELETE /documents/{doc_id}`` removes one (a file's id removes all
its pages). Writes go one at a time through the index's insert and delete, are saved to the server's
``persist_dir``, and are rolled back if that save fails.
"""

from __future__ import annotations

import logging
import tempfile
import threading
import unicodedata
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from fastapi import APIRouter, File, HTTPException, Query, UploadFile

from .browse import list_documents
from .schemas import DeleteResponse, InsertRequest, InsertResponse

__all__ = ["documents_router"]

log = logging.getLogger(__name__)
PAGE_MARKS = ("#page=", "#slide=")  # a file read one document per page: its pages' ids (readers.PAGE_KIND)


class _Warnings(logging.Handler):
    """The warnings reading the uploaded files logs (a scanned page, bad bytes), to send back with the answer."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.thread = threading.get_ident()  # this request's: another upload read at the same time logs its own

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread:
            self.messages.append(record.getMessage())


def upload_name(filename: str | None) -> str:
    """The document id of an uploaded file: its base name (a browser sends no folders; any sent are dropped),
    which must be visible text with a suffix the readers know."""
    from ..documents import READ_SUFFIXES

    name = PureWindowsPath(PurePosixPath(filename or "").name).name.strip()
    if not name or any(unicodedata.category(ch) in ("Cc", "Cf", "Cs") for ch in name) or len(name) > 255:
        raise HTTPException(422, f"an uploaded file needs a plain file name, got {str(filename)[:80]!r}")
    if Path(name).suffix.lower() not in READ_SUFFIXES:
        raise HTTPException(422, f"{name}: not a format read here ({', '.join(READ_SUFFIXES)}); .jsonl corpora go "
                                 "through POST /documents")
    return name


def documents_router(server: Any) -> APIRouter:
    """The document routes over ``server`` (``app.Server``)."""
    router = APIRouter(dependencies=server.guarded, tags=["documents"])
    index = server.index

    def writable() -> None:
        if server.read_only:
            raise HTTPException(403, "this server is read-only (started with --read-only)")

    def catch_up_for_write() -> None:
        """Before a write, under the write lock: the newest version on disk, so the save does not rebase."""
        from ..index.storage import IndexConflictError

        if not server.stale():
            return
        try:
            index.reload()
        except IndexConflictError as exc:
            raise HTTPException(409, f"the index changed on disk and cannot be taken in: {exc}") from None

    def save_or_roll_back(undo_insert: list[str] | None = None) -> bool:
        """Save the change just made; if the save fails, put the index back as it was and answer 5xx.

        The save is atomic, so the folder still holds the state before the change: reloading it with the
        pending change discarded is the roll-back (for an index saved nowhere yet, an insert is deleted again).
        """
        from ..index.storage import IndexConflictError, IndexLockedError

        if server.persist_dir is None:
            return False
        try:
            index.persist(server.persist_dir)
            return True
        except Exception as exc:  # noqa: BLE001 - any failed save: roll back, then say what failed
            saved_error = exc
        rolled_back = roll_back(undo_insert)
        code, what = ((409, "another writer changed the same document") if isinstance(saved_error, IndexConflictError)
                      else (503, "the index folder is locked by another writer") if isinstance(saved_error, IndexLockedError)
                      else (500, "saving the index failed"))
        state = ("the change was rolled back: the index is as it was" if rolled_back else
                 "and rolling the change back failed too: restart the server to read the index from disk")
        raise HTTPException(code, f"{what} ({type(saved_error).__name__}: {saved_error}); {state}")

    def roll_back(undo_insert: list[str] | None) -> bool:
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

    def insert(docs: list[Any], warnings: list[str] = ()) -> dict[str, Any]:
        ids = [d.id_ for d in docs]
        if len(set(ids)) != len(ids):
            raise HTTPException(400, "the same doc_id appears twice in the request")
        with server.write_lock:
            catch_up_for_write()
            with index.reading():
                present = sorted(set(ids) & {c.doc_id for c in index.chunks.values()})
            if present:
                raise HTTPException(409, f"already in the index: {', '.join(present[:10])} (DELETE /documents/ID first)")
            new_chunks = index.insert(docs)
            persisted = save_or_roll_back(undo_insert=ids)
            return {"inserted": ids, "chunks": new_chunks, "stats": index.stats(), "persisted": persisted,
                    "warnings": list(warnings)}

    @router.post("/documents", response_model=InsertResponse)
    def insert_documents(req: InsertRequest) -> dict[str, Any]:
        from ..documents import make_document

        writable()
        return insert([make_document(d.doc_id, d.text, d.title, d.metadata) for d in req.documents])

    @router.post("/documents/files", response_model=InsertResponse)
    def insert_files(files: list[UploadFile] = File(..., description="PDF, Word, PowerPoint, HTML, EPUB, Markdown "
                                                                      "or text files; each file's name is its id")):
        """Files read as ``graphrag-suite index`` reads a folder (a PDF one document per page, ``NAME#page=N``)."""
        from ..documents import CorpusError, read_documents

        writable()
        names = [upload_name(f.filename) for f in files]
        if len(set(names)) != len(names):
            raise HTTPException(400, "two uploaded files have the same name")
        docs: list[Any] = []
        caught = _Warnings()
        readers_log = logging.getLogger("llama_index_graphrag_suite.readers")
        readers_log.addHandler(caught)
        try:
            with tempfile.TemporaryDirectory(prefix="graphrag-upload-") as tmp:
                for i, (f, name) in enumerate(zip(files, names)):
                    path = Path(tmp) / f"{i}{Path(name).suffix.lower()}"  # the user's name is the id, not a path here
                    with path.open("wb") as out:
                        while block := f.file.read(1 << 20):
                            out.write(block)
                    try:
                        found = [d for d in read_documents(path, name) if d.text.strip()]
                    except CorpusError as exc:
                        raise HTTPException(422, str(exc).replace(str(path), name)) from None
                    if not found:
                        raise HTTPException(422, f"{name}: no text found in it" + "".join(
                            f"; {m}" for m in caught.messages if m.startswith(name)))
                    docs.extend(found)
        finally:
            readers_log.removeHandler(caught)
        return insert(docs, caught.messages)

    @router.delete("/documents/{doc_id:path}", response_model=DeleteResponse)
    def delete_document(doc_id: str) -> dict[str, Any]:
        writable()
        with server.write_lock:
            catch_up_for_write()
            with index.reading():
                known = {c.doc_id for c in index.chunks.values()}
            targets = [doc_id] if doc_id in known else sorted(
                d for d in known if d.startswith(tuple(doc_id + mark for mark in PAGE_MARKS)))
            if not targets:
                raise HTTPException(404, f"no document {doc_id!r} in the index")
            removed = sum(index.delete(d) for d in targets)
            persisted = save_or_roll_back()
            return {"deleted": doc_id, "chunks_removed": removed, "stats": index.stats(), "persisted": persisted}

    @router.get("/documents")
    def documents(q: str = Query("", max_length=200, description="keep documents whose id or title contains this"),
                  offset: int = Query(0, ge=0), limit: int = Query(200, ge=1, le=5000)) -> dict[str, Any]:
        """The documents in index order: id, title, chunks, characters and entities (distinct, over its chunks)."""
        return list_documents(index, q, offset, limit)

    return router
