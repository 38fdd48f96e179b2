"""Document files made inside the tests (no binary fixtures): PDF by hand, Word and PowerPoint with python-docx and
python-pptx, EPUB with EbookLib, HTML as text."""

from __future__ import annotations

from pathlib import Path


def pdf_bytes(pages: list[str], title: str | None = None) -> bytes:
    """A minimal PDF 1.4 with one line of Helvetica text per page ("" = a page without a text layer, as a scan)."""
    n = len(pages)
    page_ids = [4 + 2 * i for i in range(n)]
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>",
               f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {n} >>".encode(),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for i, text in enumerate(pages):
        escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        stream = f"BT /F1 12 Tf 72 720 Td ({escaped}) Tj ET".encode("latin-1") if text else b""
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {page_ids[i] + 1} 0 R >>".encode())
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    info = ""
    if title is not None:
        objects.append(f"<< /Title ({title}) >>".encode("latin-1"))
        info = f"/Info {len(objects)} 0 R"
    data, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(data))
        data += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(data)
    data += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    data += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    data += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R {info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return data


def write_pdf(path: Path, pages: list[str], title: str | None = None) -> Path:
    path.write_bytes(pdf_bytes(pages, title))
    return path


def write_docx(path: Path, paragraphs: list[str], title: str = "") -> Path:
    import docx

    d = docx.Document()
    d.core_properties.title = title
    for p in paragraphs:
        d.add_paragraph(p)
    d.save(str(path))
    return path


def write_pptx(path: Path, slides: list[tuple[str, str]], title: str = "") -> Path:
    from pptx import Presentation

    deck = Presentation()
    deck.core_properties.title = title
    for heading, body in slides:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = heading
        slide.placeholders[1].text = body
    deck.save(str(path))
    return path


def write_epub(path: Path, title: str, chapters: list[tuple[str, str]]) -> Path:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("test-book")
    book.set_title(title)
    book.set_language("en")
    items = []
    for i, (heading, text) in enumerate(chapters, 1):
        item = epub.EpubHtml(title=heading, file_name=f"c{i}.xhtml", lang="en")
        item.content = f"<html><body><h1>{heading}</h1><p>{text}</p></body></html>"
        book.add_item(item)
        items.append(item)
    book.toc = tuple(items)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = ["nav", *items]
    epub.write_epub(str(path), book)
    return path


HTML_PAGE = """<!doctype html><html><head><title>Kell Bridge</title><style>p { color: red }</style>
<script>var secret = "SCRIPT TEXT";</script></head><body>
<nav><a href="/">Home</a> <a href="/about">NAVLINK</a></nav><div role="navigation">MENU TEXT</div>
<main><h1>Kell</h1><p>Kell Bridge crosses the <b>Esk</b> River at Marlow.</p>
<ul><li>Built in 1901.</li><li>Painted by Ada Lorne.</li></ul></main>
<footer>Copyright FOOTER TEXT</footer></body></html>"""
