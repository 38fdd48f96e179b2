"""Reading one file into Documents: text and Markdown here, PDF, Word, PowerPoint, HTML and EPUB through
LlamaIndex's readers (``SimpleDirectoryReader.load_file`` with the ``llama-index-readers-file`` readers).

    rows = read_file(Path("docs/report.pdf"), "report.pdf")   # [(doc_id, text, title, metadata)], one per page

``documents.load_documents`` makes them Documents. A document's id is the path given
(``#page=N`` for a PDF page, ``#slide=N`` for a slide: the page is part of the id, so a cited passage names
it, and ``page`` is in the metadata too), its title the document's own (PDF and Office document properties,
an HTML ``<title>`` or first ``<h1>``, an EPUB's title, a Markdown file's opening ``# heading``), else the file
name. An EPUB's chapters are read in reading order with the HTML reader, without the book's table of contents. Problems a user can act on raise :class:`UnreadableFileError` naming the file; a PDF without a text
layer (scanned pages) is a warning naming it and the pages. LlamaIndex's PDF, Word and PowerPoint
readers come with the ``documents`` extra; HTML (and EPUB, with EbookLib) is read with BeautifulSoup (also in that
extra), without its scripts, styles and navigation.
"""

from __future__ import annotations

import logging
import re
import zipfile
from pathlib import Path
from typing import Any

from llama_index.core import Document
from llama_index.core.readers.base import BaseReader

log = logging.getLogger(__name__)

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
DOCUMENT_SUFFIXES = (".pdf", ".docx", ".pptx", ".html", ".htm", ".xhtml", ".epub")
READ_SUFFIXES = TEXT_SUFFIXES + DOCUMENT_SUFFIXES
EXTRA_HINT = "pip install -c constraints.txt -e '.[documents]' (the 'documents' extra)"
BINARY_BAD_SHARE = 0.3  # a file whose characters are more than this share undecodable bytes is binary
PAGE_KIND = {".pdf": "page", ".pptx": "slide"}  # formats read one Document per page: the id's fragment name

# Elements that are not the page's text: code, styling, and the site's navigation around the content.
HTML_DROP = ("script", "style", "noscript", "template", "nav", "iframe", "svg", "canvas", "form", "button", "select")
HTML_BLOCKS = ("p", "div", "section", "article", "main", "li", "ul", "ol", "dl", "dt", "dd", "tr", "table", "pre",
               "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "header", "footer", "aside", "figure", "figcaption",
               "caption", "td", "th", "hr")


class CorpusError(ValueError):
    """The corpus cannot be read (missing, empty, or a malformed line); the message says where."""


class BinaryFileError(CorpusError):
    """A file that is not text (NUL bytes, or mostly undecodable bytes)."""


def decode_text(data: bytes, where: str) -> str:
    """``data`` as text: UTF-16 with a byte order mark, else UTF-8 with bad bytes replaced (and a warning);
    :class:`BinaryFileError` naming ``where`` for NUL bytes or mostly undecodable bytes."""
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


class UnreadableFileError(CorpusError):
    """A file that cannot be read as a document (damaged, encrypted, not the format its name says); names it."""


class MissingReaderError(CorpusError):
    """The packages that read a format are not installed; the message names the extra that brings them."""


def file_title(path: Path) -> str:
    """The title a file without one of its own gets: its name without the suffix, underscores as spaces."""
    return path.stem.replace("_", " ")


# ---- formats this module reads itself -------------------------------------------------------------------


class TextReader(BaseReader):
    """.txt and .md files, with :func:`decode_text`'s guards (binary junk refused, bad bytes replaced);
    a Markdown file's title is its opening ``# heading``."""

    def load_data(self, file: Path, extra_info: dict | None = None, fs: Any = None) -> list[Document]:
        file = Path(file)
        text = decode_text(file.read_bytes(), str((extra_info or {}).get("where", file)))
        title = ""
        if file.suffix.lower() != ".txt":
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            if re.match(r"#\s+\S", first):  # the title; the index puts it back at the top of the text it chunks
                title = first.lstrip("#").strip().rstrip("#").strip()
                text = text.split(first, 1)[1].lstrip("\n")
        return [Document(text=text, metadata={**(extra_info or {}), "title": title})]


class HTMLReader(BaseReader):
    """An HTML page's text (BeautifulSoup): without scripts, styles, forms and navigation (``<nav>``,
    ``role="navigation"``), one line per block element; the title is ``<title>``, else the first ``<h1>``."""

    def load_data(self, file: Path, extra_info: dict | None = None, fs: Any = None) -> list[Document]:
        data = Path(file).read_bytes()
        if b"\x00" in data[:4096] and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise BinaryFileError(f"{(extra_info or {}).get('where', file)}: a binary file (NUL bytes), not HTML")
        soup = _soup(data)
        title = html_title(soup)  # before html_text, which drops <head>
        return [Document(text=html_text(soup), metadata={**(extra_info or {}), "title": title})]


class EpubReader(BaseReader):
    """An EPUB's chapters in reading order (EbookLib), each read as :class:`HTMLReader` reads a page; the book's
    table of contents (its navigation document) is left out. LlamaIndex's own EpubReader reads every HTML item in
    file order, the table of contents included, into Markdown with link targets; this keeps only the text."""

    def load_data(self, file: Path, extra_info: dict | None = None, fs: Any = None) -> list[Document]:
        try:
            import ebooklib
            from ebooklib import epub
        except ImportError:
            raise MissingReaderError(f"reading .epub files needs EbookLib: {EXTRA_HINT}") from None
        book = epub.read_epub(str(file), options={"ignore_ncx": True})
        parts = []
        for idref, *_ in book.spine:
            item = book.get_item_with_id(idref)
            if item is None or item.get_type() != ebooklib.ITEM_DOCUMENT or isinstance(item, epub.EpubNav):
                continue
            parts.append(html_text(_soup(item.get_content())))
        titles = book.get_metadata("DC", "title")
        title = " ".join(str(titles[0][0]).split()) if titles else ""
        return [Document(text="\n\n".join(p for p in parts if p), metadata={**(extra_info or {}), "title": title})]


def _soup(data: bytes | str):
    try:
        from bs4 import BeautifulSoup
    except ImportError:
        raise MissingReaderError(f"reading HTML needs beautifulsoup4: {EXTRA_HINT}") from None
    return BeautifulSoup(data, "html.parser")  # detects the charset from a BOM or <meta>, else tries UTF-8


def html_title(soup) -> str:
    for node in (soup.title, soup.find("h1")):
        if node is not None and node.get_text(strip=True):
            return " ".join(node.get_text(" ").split())
    return ""


def html_text(soup) -> str:
    """The visible text of a parsed page, a line per paragraph, heading, list item or table row."""
    for tag in soup.find_all(HTML_DROP):
        tag.decompose()
    for tag in soup.find_all(attrs={"role": "navigation"}):
        tag.decompose()
    for tag in soup.find_all(["head"]):
        tag.decompose()
    for tag in soup.find_all("footer"):  # the site's footer (copyright, links), not an article's own
        if tag.find_parent(["article", "main"]) is None:
            tag.decompose()
    for br in soup.find_all("br"):
        br.replace_with("\n")
    for tag in soup.find_all(HTML_BLOCKS):
        tag.insert_before("\n")
        tag.insert_after("\n")
    lines = (" ".join(line.split()) for line in soup.get_text().splitlines())
    return "\n".join(line for line in lines if line)


# ---- LlamaIndex's readers, with the title and page each format knows ---------------------------------------


def _office_title(path: Path) -> str:
    """``dc:title`` from an Office file's ``docProps/core.xml`` (DOCX, PPTX), "" if it has none."""
    from defusedxml import ElementTree  # the file is untrusted XML: no entity expansion

    try:
        with zipfile.ZipFile(path) as z:
            root = ElementTree.fromstring(z.read("docProps/core.xml"))
    except Exception:  # noqa: BLE001 - no core.xml, not a zip, bad or hostile XML: a title is a nicety
        return ""
    node = root.find("{http://purl.org/dc/elements/1.1/}title")
    return " ".join((node.text or "").split()) if node is not None else ""


def _pdf_title(path: Path) -> str:
    import pypdf

    try:
        meta = pypdf.PdfReader(path).metadata
        return " ".join(str(meta.title or "").split()) if meta is not None else ""
    except Exception:  # noqa: BLE001 - a title is a nicety; the text was read
        return ""


def _library_reader(suffix: str) -> BaseReader:
    """LlamaIndex's reader for a format (``llama-index-readers-file``), or MissingReaderError naming the extra."""
    try:
        if suffix == ".pdf":
            import pypdf  # noqa: F401 - PDFReader imports it only when reading
            from llama_index.readers.file import PDFReader

            return PDFReader()
        if suffix == ".docx":
            import docx2txt  # noqa: F401
            from llama_index.readers.file import DocxReader

            return DocxReader()
        if suffix == ".pptx":
            import pptx  # noqa: F401
            from llama_index.readers.file import PptxReader

            return PptxReader(extract_images=False, num_workers=0, raise_on_error=True)  # no image captions: no model
    except ImportError as exc:
        raise MissingReaderError(f"reading {suffix} files needs {exc.name or 'llama-index-readers-file'}: "
                                 f"{EXTRA_HINT}") from None
    raise ValueError(f"no reader for {suffix}")


_TITLES = {".pdf": _pdf_title, ".docx": _office_title, ".pptx": _office_title}


def _quietly_import_readers() -> None:
    """Import ``llama_index.readers.file`` without the root logging set-up one of its modules does on import
    (``logging.basicConfig`` in its slides reader): a library must leave logging to the application."""
    import sys

    if "llama_index.readers.file" in sys.modules:
        return
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import llama_index.readers.file  # noqa: F401
    except ImportError:
        return
    finally:
        root.handlers[:], root.level = handlers, level


def _load(file: Path, where: str, suffix: str) -> list[Document]:
    """The file's Documents: text and HTML by this module's readers, other formats by LlamaIndex's through
    ``SimpleDirectoryReader.load_file``, whose errors become UnreadableFileError."""
    from llama_index.core import SimpleDirectoryReader

    if suffix in TEXT_SUFFIXES:  # our own readers: their errors are already ours
        return TextReader().load_data(file, {"where": where})
    if suffix in (".html", ".htm", ".xhtml"):
        return HTMLReader().load_data(file, {"where": where})
    if suffix == ".epub":
        try:
            return EpubReader().load_data(file, {"where": where})
        except (CorpusError, OSError):
            raise
        except Exception as exc:  # noqa: BLE001 - a damaged book: one line naming it
            raise UnreadableFileError(f"{where}: not a readable EPUB file ({type(exc).__name__}: {exc})") from None
    if suffix == ".pdf" and b"%PDF-" not in _head(file):  # junk named .pdf: said once here, not three times by pypdf
        raise UnreadableFileError(f"{where}: not a PDF file (no %PDF- header)")
    _quietly_import_readers()
    reader = _library_reader(suffix)
    try:
        return SimpleDirectoryReader.load_file(file, lambda _: {"where": where}, {suffix: reader}, raise_on_error=True)
    except ImportError as exc:
        raise MissingReaderError(f"reading {suffix} files needs a package that is missing ({exc}): {EXTRA_HINT}") from None
    except Exception as exc:  # noqa: BLE001 - any reader's failure is this file's problem, said in one line
        cause = _root_cause(exc)
        if isinstance(cause, CorpusError):
            raise cause from None
        raise UnreadableFileError(f"{where}: not a readable {suffix[1:].upper()} file "
                                  f"({type(cause).__name__}: {str(cause).splitlines()[0][:200] if str(cause) else ''})") from None


def _head(file: Path, size: int = 1024) -> bytes:
    with file.open("rb") as f:
        return f.read(size)


def _root_cause(exc: BaseException) -> BaseException:
    """The error under LlamaIndex's "Error loading file" wrapper and tenacity's RetryError."""
    seen = 0
    while seen < 10:
        seen += 1
        last = getattr(exc, "last_attempt", None)  # tenacity.RetryError
        if last is not None and last.exception() is not None:
            exc = last.exception()
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            break
    return exc


def read_file(file: Path, doc_id: str) -> list[tuple[str, str, str, dict[str, Any]]]:
    """``(doc_id, text, title, metadata)`` for each document of one file: one for most formats, one per PDF page
    (id ``doc_id#page=N``) and per slide (``doc_id#slide=N``), with ``page`` (and ``page_label``) in the metadata.

    Raises :class:`UnreadableFileError`, :class:`BinaryFileError` or :class:`MissingReaderError`, each naming the
    file. A PDF's pages without a text layer (scanned) are left out with a warning naming them; a PDF with no text
    at all gives nothing and a warning that it needs OCR.
    """
    file = Path(file)
    suffix = file.suffix.lower()
    if suffix not in READ_SUFFIXES:
        raise UnreadableFileError(f"{doc_id}: {suffix or 'a file without a suffix'} is not a format read here "
                                  f"({', '.join(READ_SUFFIXES)})")
    loaded = _load(file, doc_id, suffix)
    kind = PAGE_KIND.get(suffix)
    title = _TITLES[suffix](file) if suffix in _TITLES else ""
    if not title and kind is None:
        title = next((str(d.metadata.get("title") or "") for d in loaded), "")
    title = title or file_title(file)
    if kind is None:
        return [(doc_id, "\n\n".join(d.text for d in loaded), title, {"file_type": suffix[1:]})]
    out, blank = [], []
    for number, d in enumerate(loaded, 1):
        label = str(d.metadata.get("page_label") or number)
        if not d.text.strip():
            blank.append(label)
            continue
        meta: dict[str, Any] = {"file_type": suffix[1:], "source": doc_id, "page": number, "page_label": label}
        if kind == "slide" and d.metadata.get("title"):
            meta["slide_title"] = str(d.metadata["title"])
        out.append((f"{doc_id}#{kind}={number}", d.text, title, meta))
    if suffix == ".pdf" and blank:
        if not out:
            log.warning("%s: no text layer on any of its %d page(s) (a scanned PDF?): nothing read from it; "
                        "run OCR on it first (e.g. ocrmypdf) to index it", doc_id, len(blank))
        else:
            log.warning("%s: %d of %d pages have no text layer (scanned?) and are not indexed: %s", doc_id,
                        len(blank), len(loaded), ", ".join(blank[:20]) + (" ..." if len(blank) > 20 else ""))
    return out
