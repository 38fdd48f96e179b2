"""Reading real documents: PDF, Word, PowerPoint, HTML, EPUB and Markdown files made in the test, through
``load_documents`` and ``graphrag-suite index`` (and ``--update``), with the project's ids, titles and pages."""

from __future__ import annotations

import logging

import pytest

from document_files import HTML_PAGE, write_docx, write_epub, write_pdf, write_pptx
from llama_index_graphrag_suite import CorpusError, GraphRAGIndex, IndexConfig, load_documents
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import document_key
from llama_index_graphrag_suite.embeddings import HashEmbedding

pytest.importorskip("llama_index.readers.file", reason="the 'documents' extra is not installed")


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "docs"
    (d / "sub").mkdir(parents=True)
    write_pdf(d / "report.pdf", ["Ada Lorne was a painter born in Marlow.", "",
                                 "Brey Vant founded the Marlow Gallery in 1901."], title="Marlow Annual Report")
    write_docx(d / "notes.docx", ["The Esk River reaches the sea at Marlow.", "Kell Bridge crosses the Esk."],
               title="Esk River notes")
    write_pptx(d / "sub" / "deck.pptx", [("Marlow Gallery", "Brey Vant founded the Marlow Gallery."),
                                         ("Ada Lorne", "Ada Lorne painted The Grey Harbour.")], title="Gallery history")
    (d / "page.html").write_text(HTML_PAGE, encoding="utf-8")
    write_epub(d / "book.epub", "The Marlow Book", [("Chapter One", "Ada Lorne painted the Kell Bridge."),
                                                    ("Chapter Two", "Tomas Brey taught at Kell Academy.")])
    (d / "guide.md").write_text("# Marlow guide\n\nMarlow is a town on the Esk River.\n", encoding="utf-8")
    (d / "plain_notes.txt").write_text("Dunmore is a town north of Marlow.", encoding="utf-8")
    return d


def by_id(docs):
    return {d.id_: d for d in docs}


def test_a_folder_of_documents_is_read_with_ids_titles_and_pages(folder):
    docs = by_id(load_documents(folder))
    assert sorted(docs) == ["book.epub", "guide.md", "notes.docx", "page.html", "plain_notes.txt",
                            "report.pdf#page=1", "report.pdf#page=3", "sub/deck.pptx#slide=1", "sub/deck.pptx#slide=2"]
    titles = {i: d.metadata["title"] for i, d in docs.items()}
    assert titles["report.pdf#page=1"] == "Marlow Annual Report"  # the document's own title
    assert titles["notes.docx"] == "Esk River notes"
    assert titles["sub/deck.pptx#slide=2"] == "Gallery history"
    assert titles["page.html"] == "Kell Bridge"
    assert titles["book.epub"] == "The Marlow Book"
    assert titles["guide.md"] == "Marlow guide"
    assert titles["plain_notes.txt"] == "plain notes"  # no title of its own: the file name
    page = docs["report.pdf#page=3"]
    assert page.metadata["page"] == 3 and page.metadata["source"] == "report.pdf"
    assert "Brey Vant founded the Marlow Gallery in 1901." in page.text
    assert docs["sub/deck.pptx#slide=2"].metadata["page"] == 2 and "Grey Harbour" in docs["sub/deck.pptx#slide=2"].text
    assert "Kell Bridge crosses the Esk." in docs["notes.docx"].text
    book = docs["book.epub"].text
    assert book.index("Chapter One") < book.index("Chapter Two") and "c1.xhtml" not in book  # no table of contents
    assert not docs["guide.md"].text.startswith("#")  # the heading became the title (the index puts it back on top)
    assert all(document_key(d) == (i, d.metadata["title"]) for i, d in docs.items())


def test_html_loses_scripts_styles_navigation_and_keeps_sentences_whole(folder):
    text = load_documents(folder / "page.html")[0].text
    assert "Kell Bridge crosses the Esk River at Marlow." in text  # inline <b> does not split the sentence
    assert "Built in 1901." in text.splitlines()
    for junk in ("SCRIPT TEXT", "color: red", "NAVLINK", "MENU TEXT", "FOOTER TEXT"):
        assert junk not in text


def test_a_scanned_pdf_gets_a_warning_naming_it(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    write_pdf(tmp_path / "scan.pdf", ["", ""])
    (tmp_path / "ok.txt").write_text("Marlow is a town on the Esk River.")
    assert [d.id_ for d in load_documents(tmp_path)] == ["ok.txt"]
    assert "scan.pdf: no text layer on any of its 2 page(s)" in caplog.text and "OCR" in caplog.text
    with pytest.raises(CorpusError, match="no non-empty documents"):
        load_documents(tmp_path / "scan.pdf")
    write_pdf(tmp_path / "half.pdf", ["Ada Lorne was a painter.", ""])
    caplog.clear()
    assert [d.id_ for d in load_documents(tmp_path / "half.pdf")] == ["half.pdf#page=1"]
    assert "half.pdf: 1 of 2 pages have no text layer" in caplog.text


def test_damaged_documents_are_skipped_with_a_warning_naming_them(tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    (tmp_path / "junk.pdf").write_bytes(b"not a pdf at all" * 10)
    (tmp_path / "cut.pdf").write_bytes(write_pdf(tmp_path / "x.pdf", ["Ada Lorne."]).read_bytes()[:60])
    (tmp_path / "x.pdf").unlink()
    (tmp_path / "fake.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "fake.pptx").write_text("plain text, not a deck")
    (tmp_path / "fake.epub").write_bytes(b"\x00\x01\x02")
    (tmp_path / "blob.html").write_bytes(b"\x00\x01\x02<html>")
    (tmp_path / "ok.txt").write_text("Marlow is a town on the Esk River.")
    assert [d.id_ for d in load_documents(tmp_path)] == ["ok.txt"]
    for name in ("junk.pdf", "cut.pdf", "fake.docx", "fake.pptx", "fake.epub", "blob.html"):
        assert f"skipping {name}:" in caplog.text, name
    with pytest.raises(CorpusError, match=r"fake\.docx: not a readable DOCX file"):
        load_documents(tmp_path / "fake.docx")


def test_an_unknown_format_alone_is_refused_and_listed_when_a_folder_holds_nothing_readable(tmp_path):
    (tmp_path / "sheet.odt").write_bytes(b"PK")
    with pytest.raises(CorpusError, match="expected a folder, a .jsonl file or a document"):
        load_documents(tmp_path / "sheet.odt")
    with pytest.raises(CorpusError, match=r"1 \.odt file\(s\), which are not read"):
        load_documents(tmp_path)


def test_index_and_update_read_documents_and_a_cited_passage_names_its_page(folder, tmp_path, capsys):
    out = tmp_path / "idx"
    assert main(["index", str(folder), "--out", str(out), "--embed", "hash", "--entities", "statistical", "--quiet",
                 "--prepare", ""]) == 0
    assert "indexed 9 documents" in capsys.readouterr().out
    write_pdf(folder / "report.pdf", ["Ada Lorne was a painter born in Marlow.", "",
                                      "Piers Vant founded the Marlow Gallery in 1880."], title="Marlow Annual Report")
    assert main(["index", str(folder), "--out", str(out), "--update", "--embed", "hash", "--quiet"]) == 0
    assert "new=0, changed=1, unchanged=8" in capsys.readouterr().out
    index = GraphRAGIndex.load(out, embed_model=HashEmbedding())
    hits = index.as_retriever("bm25", top_k=1).retrieve("Who founded the Marlow Gallery in 1880?")
    assert hits[0].node.metadata["doc_id"] == "report.pdf#page=3"
    assert hits[0].node.metadata["title"] == "Marlow Annual Report"


def test_simple_directory_reader_pages_keep_distinct_ids(folder):
    """A Python user's own SimpleDirectoryReader reads a PDF one Document per page: each page is its own document."""
    from llama_index.core import SimpleDirectoryReader

    docs = SimpleDirectoryReader(input_files=[str(folder / "report.pdf")]).load_data()
    ids = [document_key(d)[0] for d in docs]
    assert len(set(ids)) == len(ids) == 3 and ids[0].endswith("report.pdf#page=1")
    index = GraphRAGIndex.from_documents([d for d in docs if d.text.strip()], embed_model=HashEmbedding(),
                                         config=IndexConfig(entities="statistical"))
    assert len({c.doc_id for c in index.chunks.values()}) == 2


def test_importing_the_readers_leaves_root_logging_alone(folder):
    import subprocess
    import sys

    code = ("import logging; from llama_index_graphrag_suite.documents import load_documents; "
            f"load_documents({str(folder / 'sub')!r}); r = logging.getLogger(); print(len(r.handlers), r.level)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["0", "30"], out.stderr[-500:]


def test_a_missing_reader_package_names_the_extra(folder, monkeypatch, caplog):
    import sys

    caplog.set_level(logging.WARNING)
    monkeypatch.setitem(sys.modules, "pypdf", None)  # as if pypdf were not installed
    docs = load_documents(folder)
    assert "report.pdf#page=1" not in {d.id_ for d in docs} and "notes.docx" in {d.id_ for d in docs}
    assert "skipping 1 file(s) (report.pdf): reading .pdf files needs pypdf" in caplog.text
    assert "'.[documents]'" in caplog.text
    with pytest.raises(CorpusError, match=r"reading \.pdf files needs pypdf: .*documents"):
        load_documents(folder / "report.pdf")


def test_reading_a_folder_can_show_progress(folder, capsys, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # a --quiet CLI test earlier in the session may have set it
    load_documents(folder, show_progress=True)
    assert "reading files" in capsys.readouterr().err
    load_documents(folder)
    assert "reading files" not in capsys.readouterr().err
