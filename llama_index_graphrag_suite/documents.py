"""Reading a corpus: a folder of documents, one document file, or a .jsonl of {"id", "title", "text"}.

A folder is read for text and Markdown, PDF, Word (.docx), PowerPoint (.pptx), HTML and EPUB files
(:mod:`.readers`: LlamaIndex's readers; the non-text formats need the ``documents`` extra). A document's id is
its path below the folder (``#page=N`` added for each PDF page, ``#slide=N`` for each slide), its title the
document's own where it has one, else the file name.

Guards: a binary file (NUL bytes, or mostly bytes that are not UTF-8) or a damaged document is skipped with a
warning that names it; a few bad bytes in a text file are replaced (U+FFFD) with a warning; a file in a folder
that is a symlink leading outside the folder is skipped; a PDF without a text layer is a warning naming it.
:func:`warn_if_tiny` (called by ``GraphRAGIndex.from_documents``) warns about a corpus too small for a graph.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterator, Sequence

from llama_index.core import Document

from .readers import (READ_SUFFIXES, TEXT_SUFFIXES, BinaryFileError, CorpusError, MissingReaderError,
                      UnreadableFileError, decode_text, file_title, read_file)
from .text import clean_text

__all__ = ["BinaryFileError", "CorpusError", "MissingReaderError", "READ_SUFFIXES", "TEXT_SUFFIXES", "UnreadableFileError",
           "decode_text", "document_key", "file_title", "iter_jsonl", "iter_jsonl_documents", "load_documents", "load_folder",
           "load_jsonl", "make_document", "read_documents", "warn_if_slow", "warn_if_tiny"]

log = logging.getLogger(__name__)
TINY_PASSAGES, TINY_WORDS = 3, 50  # below either, graph methods have next to nothing to link
LARGE_TEXT_BYTES = 1_000_000  # a corpus bigger than this gets an estimate of the build time, even under --quiet
BUILD_BYTES_PER_SECOND = 15_000  # rough: NER extraction on one core (2 MB took a little over two minutes)


def make_document(doc_id: str, text: str, title: str = "", metadata: dict | None = None) -> Document:
    """A LlamaIndex Document with the project's conventions: id = doc id, title in metadata."""
    if not isinstance(doc_id, str) or not doc_id.strip():
        raise CorpusError(f"a document id must be a non-empty string, got {_shown(doc_id)}")
    if not isinstance(text, str):
        raise CorpusError(f"document {doc_id!r}: its text must be a string, got {_shown(text)}")
    if not isinstance(title, str):
        raise CorpusError(f"document {doc_id!r}: its title must be a string, got {_shown(title)}")
    meta = {**(metadata or {}), "doc_id": doc_id, "title": title}  # our id and title win over extra fields
    return Document(text=clean_text(text), id_=doc_id, metadata=meta)


def _shown(value: Any) -> str:
    """A value's type and a short view of it, for an error message."""
    return "null" if value is None else f"{type(value).__name__} {str(value)[:60]!r}"


def document_key(doc: Document) -> tuple[str, str]:
    """``(doc_id, title)`` of any LlamaIndex Document.

    Ours carry ``doc_id``/``title`` in metadata. A ``SimpleDirectoryReader`` Document has a random ``id_``, so its
    ``file_path`` is the id (loading the folder again gives the same ids; ``#page=N`` added for a page of a PDF,
    which LlamaIndex reads one Document per page) and its file name (or ``# heading``) the title.
    Anything but a Document (a string of text, say) is a TypeError saying what to pass.
    """
    from .extractors.gazetteer import markdown_headings, title_from_metadata

    if not isinstance(getattr(doc, "metadata", None), dict) or not isinstance(getattr(doc, "text", None), str):
        hint = " (a string passed as the documents? its characters are read one by one)" if isinstance(doc, str) else ""
        raise TypeError(f"expected LlamaIndex Documents, got {_shown(doc)}{hint}: pass a list of Documents, e.g. "
                        "load_documents(folder) or [Document(text=...)]")
    meta = doc.metadata
    doc_id = str(meta.get("doc_id") or meta.get("file_path") or doc.id_)
    if not meta.get("doc_id") and meta.get("file_path") and meta.get("page_label") is not None:
        doc_id = f"{doc_id}#page={meta['page_label']}"
    title = str(meta.get("title") or "")
    if not title and meta.get("file_path"):
        headings = [h for h in markdown_headings(doc.text[:2000]) if h[0] == 1]
        title = headings[0][1] if headings else title_from_metadata(meta)
    return doc_id, title


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; a bad line is a CorpusError naming it.

    Reads one line at a time (a corpus of millions of passages is never held whole), each decoded as
    :func:`decode_text` does a file. A UTF-16 file (its NUL bytes split lines wrongly) is decoded whole.
    """
    path = Path(path)
    with path.open("rb") as f:
        if f.read(2) in (b"\xff\xfe", b"\xfe\xff"):
            f.seek(0)
            lines = enumerate(decode_text(f.read(), str(path)).splitlines(), 1)
        else:
            f.seek(0)
            lines = ((n, decode_text(raw, f"{path}:{n}")) for n, raw in enumerate(f, 1))
        for lineno, line in lines:
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise CorpusError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None


def iter_jsonl_documents(path: Path) -> Iterator[Document]:
    """The documents of a .jsonl corpus one at a time (only the ids seen so far are kept, to refuse duplicates).

    An ``id`` is a string or a whole number (then written as one), a ``title`` a string, a number or null (no
    title); anything else (null, a list or an object as the id, a list or object as the title) is an error naming
    the line, not a stringified value.
    """
    path, seen = Path(path), set()
    for lineno, row in iter_jsonl(path):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict) or not isinstance(row.get("text"), str):
            raise CorpusError(f'{where}: expected an object with a "text" string')
        raw_id = row.get("id", f"{path.stem}-{lineno}")
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)) or not str(raw_id).strip():
            raise CorpusError(f'{where}: "id" must be a non-empty string or a whole number, got {_shown(raw_id)}')
        title = row.get("title")
        if isinstance(title, bool) or not isinstance(title, (str, int, float, type(None))):
            raise CorpusError(f'{where}: "title" must be a string, got {_shown(title)}')
        doc_id = str(raw_id)
        if doc_id in seen:
            raise CorpusError(f"{where}: duplicate id {doc_id!r}")
        seen.add(doc_id)
        extra = {k: v for k, v in row.items() if k not in ("id", "title", "text", "doc_id") and isinstance(v, (str, int, float, bool))}
        if "doc_id" in row:  # e.g. the source document a passage was cut from: kept, but it is not our id
            extra["source_doc_id"] = str(row["doc_id"])
        yield make_document(doc_id, row["text"], "" if title is None else str(title), extra)


def load_jsonl(path: Path) -> list[Document]:
    return list(iter_jsonl_documents(path))


def read_documents(file: Path, doc_id: str) -> list[Document]:
    """The Documents of one file (:func:`.readers.read_file`: one per PDF page or slide, else one)."""
    return [make_document(i, text, title, meta) for i, text, title, meta in read_file(file, doc_id)]


def load_folder(path: Path, show_progress: bool = False) -> list[Document]:
    """Every readable file below ``path`` (:data:`.readers.READ_SUFFIXES`), in path order; files that cannot
    be read are skipped with a warning naming them (a missing reader package names the extra, once per format).
    ``show_progress``: a progress bar over the files (reading a folder of PDFs takes a while)."""
    docs: list[Document] = []
    inside = path.resolve()
    missing: dict[str, list[str]] = {}
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in READ_SUFFIXES)
    if show_progress and len(files) > 1:
        from tqdm.auto import tqdm

        files = tqdm(files, desc="reading files", unit="file")
    for file in files:
        rel = file.relative_to(path).as_posix()
        if not file.resolve().is_relative_to(inside):
            log.warning("skipping %s: a symlink to %s, outside %s", rel, file.resolve(), path)
            continue
        try:
            docs.extend(read_documents(file, rel))
        except MissingReaderError as exc:
            missing.setdefault(str(exc), []).append(rel)
        except CorpusError as exc:
            log.warning("skipping %s", exc)
        except OSError as exc:
            log.warning("skipping %s: %s", rel, exc.strerror or exc)
    for message, files in missing.items():
        log.warning("skipping %d file(s) (%s%s): %s", len(files), ", ".join(files[:3]), " ..." if len(files) > 3 else "",
                    message)
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


def load_documents(src: str | Path, show_progress: bool = False) -> list[Document]:
    """Documents from a folder (every readable file below it), one document file, or a .jsonl file; empty
    ones are skipped. ``src`` must name something: "" is refused (it would read the working directory).
    ``show_progress``: a progress bar over a folder's files."""
    if not isinstance(src, (str, Path)) or not str(src).strip():
        raise CorpusError(f"no corpus given ({_shown(src)}): pass a folder, a document file or a .jsonl file")
    path = Path(src)
    if not path.exists():
        raise CorpusError(f"{path} does not exist")
    if path.is_dir():
        docs = load_folder(path, show_progress)
    elif path.suffix.lower() == ".jsonl":
        docs = load_jsonl(path)
    elif path.suffix.lower() in READ_SUFFIXES:
        docs = read_documents(path, path.name)
    else:
        raise CorpusError(f"{path}: expected a folder, a .jsonl file or a document ({', '.join(READ_SUFFIXES)})")
    empty = [d.id_ for d in docs if not d.text.strip()]
    if empty:
        log.warning("skipping %d empty document(s): %s", len(empty), ", ".join(empty[:5]))
    docs = [d for d in docs if d.text.strip()]
    if not docs:
        raise CorpusError(f"{path}: no non-empty documents found{_what_was_there(path) if path.is_dir() else ''}")
    warn_if_slow(docs)
    return docs


def warn_if_slow(docs: Sequence[Document]) -> bool:
    """Warn (and return True) when the corpus is big enough for a build to take minutes: the warning gives a rough
    estimate, so a ``--quiet`` build (no progress bars) does not look hung."""
    size = sum(len(d.text.encode("utf-8", "replace")) for d in docs)
    if size < LARGE_TEXT_BYTES:
        return False
    minutes = size / BUILD_BYTES_PER_SECOND / 60
    log.warning("%.1f MB of text in %d document(s): building the index may take about %d minute(s) on one core "
                "with the default NER entities (--entities statistical is several times faster)",
                size / 1e6, len(docs), max(1, round(minutes)))
    return True


def _what_was_there(folder: Path) -> str:
    """For the empty-corpus error: the formats read, and what the folder holds (e.g. 2 .pdf that gave no text,
    3 .odt that are not read)."""
    read = ", ".join(READ_SUFFIXES)
    unread: dict[str, int] = {}
    empty: dict[str, int] = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.name.startswith("."):
            kind = p.suffix.lower() or "(no extension)"
            counts = empty if kind in READ_SUFFIXES else unread
            counts[kind] = counts.get(kind, 0) + 1

    def listed(counts: dict[str, int]) -> str:
        return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5])

    there = f"; its {listed(empty)} file(s) gave no text (see the warnings above)" if empty else ""
    there += f"; it holds {listed(unread)} file(s), which are not read" if unread else ""
    return (f" (a folder is read for {read} files{there}; convert other formats to one of these first, "
            "or pass a .jsonl file of {\"id\", \"title\", \"text\"})")
