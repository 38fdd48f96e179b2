"""POST /documents/files: files read as `graphrag-suite index` reads a folder, saved, refused with a reason."""

from __future__ import annotations

import pytest

from document_files import HTML_PAGE, pdf_bytes
from llama_index_graphrag_suite.index import GraphRAGIndex
from llama_index_graphrag_suite.serve import create_app

from .conftest import api_client

pytest.importorskip("llama_index.readers.file", reason="the 'documents' extra is not installed")
PDF = pdf_bytes(["Piers Vant founded the Marlow Gallery in 1880.", "", "Ada Lorne painted the Kell Bridge in 1901."],
                title="Marlow Annual Report")


def upload(client, *files):
    return client.post("/documents/files", files=[("files", f) for f in files])


def test_uploaded_files_are_read_paged_saved_and_deleted_by_file(fresh_index, fresh_index_dir):
    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    r = upload(client, ("C:\\Users\\me\\report.pdf", PDF, "application/pdf"),
               ("kell.html", HTML_PAGE.encode(), "text/html"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["inserted"] == ["report.pdf#page=1", "report.pdf#page=3", "kell.html"] and body["persisted"]
    assert any("report.pdf: 1 of 3 pages have no text layer" in w for w in body["warnings"])
    on_disk = GraphRAGIndex.load(fresh_index_dir, embed_model="hash")
    titles = {c.doc_id: c.title for c in on_disk.chunks.values()}
    assert titles["report.pdf#page=3"] == "Marlow Annual Report" and titles["kell.html"] == "Kell Bridge"
    assert "SCRIPT TEXT" not in "".join(c.text for c in on_disk.chunks.values() if c.doc_id == "kell.html")
    hit = client.post("/retrieve", json={"question": "Who founded the Marlow Gallery in 1880?", "method": "bm25",
                                         "top_k": 1, "graph": False}).json()["nodes"][0]
    assert hit["doc_id"] == "report.pdf#page=1"
    assert upload(client, ("report.pdf", PDF, "application/pdf")).status_code == 409  # already there
    r = client.delete("/documents/report.pdf")  # the file's id: all its pages
    assert r.status_code == 200 and r.json()["chunks_removed"] == 2
    assert not any(c.doc_id.startswith("report.pdf") for c in fresh_index.chunks.values())


def test_uploads_that_cannot_be_read_are_refused_with_a_reason(fresh_index):
    client = api_client(create_app(fresh_index, max_upload=5_000))
    before = len(fresh_index.chunks)
    for files, status, reason in (
        ([("sheet.odt", b"PK", "application/octet-stream")], 422, "sheet.odt: not a format read here"),
        ([("scan.pdf", pdf_bytes(["", ""]), "application/pdf")], 422, "scan.pdf: no text found in it; scan.pdf: no "
                                                                         "text layer on any of its 2 page(s)"),
        ([("bad.pdf", b"%PDF-1.4 broken", "application/pdf")], 422, "bad.pdf: not a readable PDF file"),
        ([("a.pdf", PDF, "application/pdf"), ("a.pdf", PDF, "application/pdf")], 400, "same name"),
        ([("\u200b.pdf", PDF, "application/pdf")], 422, "plain file name"),
        ([("big.txt", b"Marlow. " * 1000, "text/plain")], 413, "the limit is 5000 bytes"),
    ):
        r = upload(client, *files)
        assert r.status_code == status and reason in r.json()["detail"], (files[0][0], r.status_code, r.text)
    assert len(fresh_index.chunks) == before


def test_a_read_only_server_refuses_uploads(index):
    r = upload(api_client(create_app(index, read_only=True)), ("report.pdf", PDF, "application/pdf"))
    assert r.status_code == 403 and "read-only" in r.json()["detail"]
