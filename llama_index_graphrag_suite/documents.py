"""Reading a corpus: a folder of .txt/.md files or a .jsonl of {"id", "title", "text"}.

Guards: a binary file (NUL bytes, or mostly bytes that are not UTF-8) is skipped with a warning that
names it; a few bad bytes in a text file are replaced (U+FFFD) with a warning; a file in a folder that
is a symlink leading outside the folder is skipped. :func:`warn_if_tiny` (called by
``GraphRAGIndex.from_documents``) warns about a corpus too small for a graph.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from llama_index.core import Document

from .text import clean_text

log = logging.getLogger(__name__)
TEXT_SUFFIXES = {".txt", ".md", ".markdown"}
BINARY_BAD_SHARE = 0.3  # a file whose characters are more than this share undecodable bytes is binary
TINY_PASSAGES, TINY_WORDS = 3, 50  # below either, graph methods have next to nothing to link


class CorpusError(ValueError):
    """The corpus cannot be read (missing, empty, or a malformed line); the message says where."""


class BinaryFileError(CorpusError):
    """A file that is not text (NUL bytes, or mostly undecodable bytes)."""


def _decode(data: bytes, where: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with a byte order mark: text, despite its NULs
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            pass
    if b"\x00" in data:
        raise BinaryFileError(f"{where}: a binary file (NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd")
        if bad > BINARY_BAD_SHARE * len(text):
            raise BinaryFileError(f"{where}: a binary file ({bad} of {len(text)} characters are not UTF-8), not text") from None
        # Keep the document: replace the undecodable bytes and say so, rather than drop it.
        log.warning("%s: not valid UTF-8 (%s); %d bytes replaced with U+FFFD", where, exc.reason, bad)
        return text


def make_document(doc_id: str, text: str, title: str = "", metadata: dict | None = None) -> Document:
    """A LlamaIndex Document with the project's conventions: id = doc id, title in metadata."""
    meta = {**(metadata or {}), "doc_id": doc_id, "title": title}  # our id and title win over extra fields
    return Document(text=clean_text(text), id_=doc_id, metadata=meta)


def document_key(doc: Document) -> tuple[str, str]:
    """``(doc_id, title)`` of any LlamaIndex Document.

    Ours carry ``doc_id``/``title`` in metadata. A ``SimpleDirectoryReader`` Document has a random ``id_``, so its
    ``file_path`` is the id (loading the folder again gives the same ids) and its file name (or ``# heading``)
    the title.
    """
    from .extractors.gazetteer import markdown_headings, title_from_metadata

    meta = doc.metadata
    doc_id = str(meta.get("doc_id") or meta.get("file_path") or doc.id_)
    title = str(meta.get("title") or "")
    if not title and meta.get("file_path"):
        headings = [h for h in markdown_headings(doc.text[:2000]) if h[0] == 1]
        title = headings[0][1] if headings else title_from_metadata(meta)
    return doc_id, title


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; a bad line is a CorpusError naming it.

    Reads one line at a time (a corpus of millions of passages is never held whole), each decoded as
    :func:`_decode` does a file. A UTF-16 file (its NUL bytes split lines wrongly) is decoded whole.
    """
    path = Path(path)
    with path.open("rb") as f:
        if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            f.seek(0)
            lines = enumerate(_decode(f.read(), str(path)).splitlines(), 1)
        else:
            f.seek(0)
            lines = ((n, _decode(raw, f"{path}:{n}")) for n, raw in enumerate(f, 1))
        for lineno, line in lines:
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None


def iter_jsonl_documents(path: Path) -> Iterator[Document]:
    """The documents of a .jsonl corpus one at a time (only the ids seen so far are kept, to refuse duplicates)."""
    path, seen = Path(path), set()
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
        yield make_document(doc_id, row["text"], str(row.get("title") or ""), extra)


def load_jsonl(path: Path) -> list[Document]:
    return list(iter_jsonl_documents(path))


def load_folder(path: Path) -> list[Document]:
    docs = []
    inside = path.resolve()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES):
        rel = file.relative_to(path).as_posix()
        if not file.resolve().is_relative_to(inside):
            log.warning("skipping %s: a symlink to %s, outside %s", rel, file.resolve(), path)
            continue
        try:
            text = _decode(file.read_bytes(), rel)
        except BinaryFileError as exc:
            log.warning("skipping %s", exc)
            continue
        docs.append(make_document(rel, text, file.stem.replace("_", " ")))
    return docs


def warn_if_tiny(docs: Sequence[Any], where: str = "the corpus") -> bool:
    """Warn (and return True) when ``docs`` (anything with a ``text``: documents, chunks) hold fewer than
    3 passages or 50 words in all: too little for a graph to link anything."""
    words = sum(len(d.text.split()) for d in docs)
    if len(docs) >= TINY_PASSAGES and words >= TINY_WORDS:
        return False
    log.warning("%s is tiny (%d passage(s), %d words): graph methods need more text to find entities and "
                "relations, and will rank much like dense/BM25 retrieval", where, len(docs), words)
    return True


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
        raise CorpusError(f"{path}: no non-empty documents found{_what_was_there(path) if path.is_dir() else ''}")
    return docs


def _what_was_there(folder: Path) -> str:
    """For the empty-corpus error: the formats read, and what the folder holds instead (e.g. 3 .pdf)."""
    read = ", ".join(sorted(TEXT_SUFFIXES))
    kinds: dict[str, int] = {}
    for p in folder.rglob("*"):
        if p.is_file() and p.suffix.lower() not in TEXT_SUFFIXES and not p.name.startswith("."):
            kinds[p.suffix.lower() or "(no extension)"] = kinds.get(p.suffix.lower() or "(no extension)", 0) + 1
    held = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))[:5])
    there = f"; it holds {held} file(s), which are not read" if held else ""
    return (f" (a folder is read for {read} files with text{there}; convert other formats to text first, "
            "or pass a .jsonl file of {\"id\", \"title\", \"text\"})")
