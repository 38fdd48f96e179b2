"""Reading a corpus: a folder of .txt/.md files or a .jsonl of {"id", "title", "text"}."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator

from llama_index.core import Document

from .text import clean_text

log = logging.getLogger(__name__)
TEXT_SUFFIXES = {".txt", ".md", ".markdown"}


class CorpusError(ValueError):
    """The corpus cannot be read (missing, empty, or a malformed line); the message says where."""


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        # Keep the document: replace the undecodable bytes and say so, rather than drop it.
        text = data.decode("utf-8", errors="replace")
        log.warning("%s: not valid UTF-8 (%s); %d bytes replaced with U+FFFD", where, exc.reason, text.count("\ufffd"))
        return text


def make_document(doc_id: str, text: str, title: str = "", metadata: dict | None = None) -> Document:
    """A LlamaIndex Document with the project's conventions: id = doc id, title in metadata."""
    meta = {**(metadata or {}), "doc_id": doc_id, "title": title}  # our id and title win over extra fields
    return Document(text=clean_text(text), id_=doc_id, metadata=meta)


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; a bad line is a CorpusError naming it."""
    for lineno, line in enumerate(_decode(path.read_bytes(), str(path)).splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise CorpusError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None


def load_jsonl(path: Path) -> list[Document]:
    docs, seen = [], set()
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise CorpusError(f'{path}:{lineno}: expected an object with a "text" string')
        doc_id = str(row.get("id", f"{path.stem}-{lineno}"))
        if doc_id in seen:
            raise CorpusError(f"{path}:{lineno}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        extra = {k: v for k, v in row.items() if k not in ("id", "title", "text", "doc_id") and isinstance(v, (str, int, float, bool))}
        if "doc_id" in row:  # e.g. the source document a passage was cut from: kept, but it is not our id
            extra["source_doc_id"] = str(row["doc_id"])
        docs.append(make_document(doc_id, row["text"], str(row.get("title") or ""), extra))
    return docs


def load_folder(path: Path) -> list[Document]:
    docs = []
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        rel = file.relative_to(path).as_posix()
        docs.append(make_document(rel, _decode(file.read_bytes(), rel), file.stem.replace("_", " ")))
    return docs


def load_documents(src: str | Path) -> list[Document]:
    """Documents from a folder (every .txt/.md below it) or a .jsonl file; empty ones are skipped."""
    path = Path(src)
    if not path.exists():
        raise CorpusError(f"{path} does not exist")
    if path.is_dir():
        docs = load_folder(path)
    elif path.suffix.lower() == ".jsonl":
        docs = load_jsonl(path)
    elif path.suffix.lower() in TEXT_SUFFIXES:
        docs = [make_document(path.name, _decode(path.read_bytes(), str(path)), path.stem)]
    else:
        raise CorpusError(f"{path}: expected a folder of .txt/.md files or a .jsonl file")
    empty = [d.id_ for d in docs if not d.text.strip()]
    if empty:
        log.warning("skipping %d empty document(s): %s", len(empty), ", ".join(empty[:5]))
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise CorpusError(f"{path}: no non-empty documents found")
    return docs
