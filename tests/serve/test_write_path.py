"""The server's write path: a failed save leaves the index as it was; a version saved by another writer is taken in."""

from __future__ import annotations

import json

from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.index import GraphRAGIndex
from llama_index_graphrag_suite.serve import create_app

from .conftest import api_client

DOC = {"doc_id": "oren", "title": "Oren Vask", "text": "Oren Vask was a glassblower born in Tallow Reach. "
       "Oren Vask built the great lantern of the Cawl lighthouse in 1890."}
LANTERN = "Who built the lantern of the Cawl lighthouse?"


def _doc_ids(client) -> set[str]:
    return {d["doc_id"] for d in client.get("/documents", params={"limit": 5000}).json()["documents"]}


def _failing_save(index, monkeypatch, error: Exception):
    real = index.persist
    calls = []

    def persist(*args, **kwargs):
        calls.append(args)
        if len(calls) == 1:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(index, "persist", persist)
    return calls


def test_a_failed_save_rolls_the_insert_back(fresh_index, fresh_index_dir, monkeypatch):
    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    before, ids_before = client.get("/stats").json(), _doc_ids(client)
    _failing_save(fresh_index, monkeypatch, OSError(28, "No space left on device"))
    r = client.post("/documents", json={"documents": [DOC]})
    assert r.status_code == 500, r.text
    assert "No space left on device" in r.json()["detail"] and "rolled back" in r.json()["detail"]
    assert client.get("/stats").json() == before and _doc_ids(client) == ids_before
    top = client.post("/retrieve", json={"question": LANTERN, "method": "bm25", "graph": False}).json()
    assert all(n["doc_id"] != "oren" for n in top["nodes"])
    assert fresh_index.pending_documents() == []  # nothing left for a later save to write
    r = client.post("/documents", json={"documents": [DOC]})  # the retry is a plain insert, not 409
    assert r.status_code == 200 and r.json()["persisted"]
    assert "oren" in {c.doc_id for c in GraphRAGIndex.load(fresh_index_dir, embed_model="hash").chunks.values()}


def test_a_failed_save_rolls_the_delete_back(fresh_index, fresh_index_dir, monkeypatch):
    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    before = client.get("/stats").json()
    _failing_save(fresh_index, monkeypatch, PermissionError(13, "Permission denied"))
    r = client.delete("/documents/doc-05")
    assert r.status_code == 500 and "rolled back" in r.json()["detail"]
    assert client.get("/stats").json() == before and "doc-05" in _doc_ids(client)
    # the next successful write does not carry the failed delete to disk
    assert client.post("/documents", json={"documents": [DOC]}).status_code == 200
    on_disk = {c.doc_id for c in GraphRAGIndex.load(fresh_index_dir, embed_model="hash").chunks.values()}
    assert "doc-05" in on_disk and "oren" in on_disk


def test_a_save_conflict_is_409_and_rolled_back(fresh_index, fresh_index_dir, monkeypatch):
    from llama_index_graphrag_suite.index import IndexConflictError

    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    before = client.get("/stats").json()
    _failing_save(fresh_index, monkeypatch, IndexConflictError("doc 'oren' was changed by another writer"))
    r = client.post("/documents", json={"documents": [DOC]})
    assert r.status_code == 409 and "another writer" in r.json()["detail"]
    assert client.get("/stats").json() == before


def test_the_server_takes_in_a_version_saved_by_another_writer(fresh_index, fresh_index_dir):
    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    assert "oren" not in _doc_ids(client)
    other = GraphRAGIndex.load(fresh_index_dir, embed_model="hash")  # another writer (a CLI --update, say)
    other.insert([make_document(DOC["doc_id"], DOC["text"], DOC["title"])])
    other.persist(fresh_index_dir)
    assert "oren" in _doc_ids(client)  # a read notices the new version
    top = client.post("/retrieve", json={"question": LANTERN, "method": "bm25", "graph": False}).json()
    assert top["nodes"][0]["doc_id"] == "oren"
    # a write: the other writer's document is kept, not overwritten by the server's older state
    other.delete("doc-07")
    other.persist(fresh_index_dir)
    new = {"doc_id": "mira", "text": "Mira Holt charted the tides of Ostravel harbour in 1902."}
    assert client.post("/documents", json={"documents": [new]}).status_code == 200
    on_disk = {c.doc_id for c in GraphRAGIndex.load(fresh_index_dir, embed_model="hash").chunks.values()}
    assert {"oren", "mira"} <= on_disk and "doc-07" not in on_disk


def test_an_index_saved_nowhere_rolls_an_insert_back_by_deleting_it(monkeypatch, tmp_path):
    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.documents import load_documents

    from .conftest import DATA

    built = GraphRAGIndex.from_documents(load_documents(DATA / "corpus.jsonl"), embed_model="hash",
                                         config=IndexConfig(entities="statistical"))
    assert built.loaded_version is None
    client = api_client(create_app(built, persist_dir=tmp_path / "new-index"))
    before = client.get("/stats").json()
    _failing_save(built, monkeypatch, OSError("disk gone"))
    assert client.post("/documents", json={"documents": [DOC]}).status_code == 500
    assert client.get("/stats").json() == before


def test_a_cli_update_beside_the_server_is_kept(fresh_index, fresh_index_dir, tmp_path):
    """With real processes: `graphrag-suite index ... --update` on the folder a server serves; the
    server's next POST /documents keeps the CLI's document (it takes in the new version before writing)."""
    import subprocess
    import sys

    import httpx

    from .conftest import DATA, running_server

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text((DATA / "corpus.jsonl").read_text() + json.dumps(
        {"id": "cli-doc", "title": "Ivo Brand", "text": "Ivo Brand ran the ferry over the Korvath River for forty years."}) + "\n")
    with running_server(create_app(fresh_index, persist_dir=fresh_index_dir)) as url, \
            httpx.Client(base_url=url, timeout=60) as client:
        assert client.get("/stats").json()["documents"] == 40
        done = subprocess.run([sys.executable, "-m", "llama_index_graphrag_suite.cli", "index", str(corpus), "--out",
                               str(fresh_index_dir), "--update", "--embed", "hash",
                               "--quiet"], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert "cli-doc" in _doc_ids(client)  # a read sees the CLI's version
        assert client.post("/documents", json={"documents": [DOC]}).status_code == 200
    on_disk = {c.doc_id for c in GraphRAGIndex.load(fresh_index_dir, embed_model="hash").chunks.values()}
    assert {"cli-doc", "oren"} <= on_disk and len(on_disk) == 42
