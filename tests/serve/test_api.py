"""The HTTP API in-process (FastAPI's TestClient): routes, validation, limits, auth, writes, streaming."""

from __future__ import annotations

import json

import pytest

from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.registry import available_methods, method_info
from llama_index_graphrag_suite.serve import create_app
from llama_index_graphrag_suite.serve.guards import is_loopback, key_matches

from .conftest import QUESTION, api_client


@pytest.fixture(scope="module")
def client(index):
    return api_client(create_app(index))


def test_health_methods_stats(client, index):
    health = client.get("/health").json()
    assert health["status"] == "ok" and health["llm"] is False and health["chunks"] == len(index.chunks)
    methods = {m["name"]: m for m in client.get("/methods").json()}
    assert set(methods) == set(available_methods())
    assert "no_mcmi" in methods["agrag"]["variants"] and "top_k" not in methods["agrag"]["settings"]
    assert client.get("/stats").json()["chunks"] == len(index.chunks)
    assert "/retrieve" in client.get("/openapi.json").json()["paths"]


@pytest.mark.parametrize("method", sorted(available_methods()))
def test_retrieve_every_method_with_its_evidence_graph(client, index, method):
    r = client.post("/retrieve", json={"question": QUESTION, "method": method, "top_k": 3})
    assert r.status_code == 200, r.text
    body = r.json()
    chunks = [n for n in body["nodes"] if n["kind"] == "chunk"]
    assert 1 <= len(chunks) <= 3 and all(n["doc_id"] for n in chunks)
    graph = body["graph"]
    ids = {n["id"] for n in graph["nodes"]}
    assert {n["id"] for n in chunks} <= ids  # the retrieved chunks are drawn
    assert all(e["source"] in ids and e["target"] in ids for e in graph["edges"])
    for node in graph["nodes"]:  # a click on any entity or chunk node can show text
        assert all(c in graph["chunks"] for c in node["chunks"])
    if method in ("agrag", "pathrag", "hipporag"):
        assert any(e["kind"] == "relation" for e in graph["edges"]), method
    if method == "archrag":
        assert any(n["kind"] == "community" for n in graph["nodes"])


def test_retrieve_variant_and_settings(client):
    r = client.post("/retrieve", json={"question": QUESTION, "method": "agrag:no_mcmi", "settings": {"alpha": 0.5}})
    assert r.status_code in (200, 400)
    r = client.post("/retrieve", json={"question": QUESTION, "method": "pathrag", "settings": {"nope": 1}, "graph": False})
    assert r.status_code == 400 and "no setting 'nope'" in r.json()["detail"]
    r = client.post("/retrieve", json={"question": QUESTION, "method": "pathrag", "settings": {"theta": "high"}})
    assert r.status_code == 400 and "theta" in r.json()["detail"]


def test_bad_requests_have_clear_messages(client):
    r = client.post("/retrieve", json={"question": "   ", "method": "hybrid"})
    assert r.status_code == 422 and "question is empty" in r.text
    r = client.post("/retrieve", json={"question": "x?", "method": "nosuch"})
    assert r.status_code == 400 and "unknown method 'nosuch'" in r.json()["detail"]
    assert "agrag" in r.json()["detail"] and "pathrag" in r.json()["detail"]
    r = client.post("/retrieve", json={"question": "x?", "method": "agrag:nosuch"})
    assert r.status_code == 400 and "variant" in r.json()["detail"]
    assert client.post("/retrieve", json={"question": "x?", "top_k": 0}).status_code == 422
    assert client.post("/retrieve", content=b"{not json", headers={"content-type": "application/json"}).status_code == 422
    r = client.post("/query", json={"question": QUESTION})
    assert r.status_code == 503 and "--llm" in r.json()["detail"]


def test_request_body_limit(index):
    client = api_client(create_app(index, max_body=200))
    r = client.post("/retrieve", json={"question": "x" * 300})
    assert r.status_code == 413 and "limit is 200 bytes" in r.json()["detail"]

    def chunks():  # no content-length: the body streams in and is cut off at the limit
        for _ in range(10):
            yield b"x" * 50

    r = client.post("/retrieve", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert client.post("/retrieve", json={"question": "Salt Crown?"}).status_code == 200


def test_api_key(index):
    client = api_client(create_app(index, api_key="s3cret"))
    assert client.get("/health").status_code == 200 and client.get("/").status_code == 200  # page and probe open
    assert client.get("/stats").status_code == 401
    assert client.get("/stats", headers={"Authorization": "Bearer wrong"}).status_code == 401
    r = client.post("/retrieve", json={"question": QUESTION}, headers={"Authorization": "Bearer s3cret"})
    assert r.status_code == 200
    assert key_matches("bearer s3cret", "s3cret") and not key_matches(None, "s3cret")
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5") and not is_loopback("example.org")


def test_query_with_llm_plain_and_streamed(index):
    llm = ScriptedLLM(responder=lambda prompt: "Cassia Dunmore-Reyes designed it.")
    client = api_client(create_app(index, llm=llm))
    r = client.post("/query", json={"question": QUESTION, "method": "agrag"})
    assert r.status_code == 200 and r.json()["answer"] == "Cassia Dunmore-Reyes designed it."
    assert "Reasoning graph" in llm.prompts[-1]  # AGRAG's evidence reached the prompt
    with client.stream("POST", "/query", json={"question": QUESTION, "method": "hybrid", "stream": True}) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        text = "".join(r.iter_text())
    events = [(b.split("\n")[0][7:], json.loads(b.split("\n")[1][6:])) for b in text.strip().split("\n\n")]
    assert events[0][0] == "retrieval" and events[0][1]["nodes"]
    assert [e for e, _ in events[1:-1]] == ["token"] * (len(events) - 2) and len(events) > 3
    assert events[-1][0] == "done" and events[-1][1]["answer"] == "Cassia Dunmore-Reyes designed it."
    assert set(events[-1][1]) == {"answer", "citations", "timing_ms"}


def test_query_llm_failure_is_502(index):
    client = api_client(create_app(index, llm=ScriptedLLM(fail_from=1)))
    r = client.post("/query", json={"question": QUESTION, "method": "hybrid"})
    assert r.status_code == 502 and "LLM failed" in r.json()["detail"]


def test_insert_and_delete_documents(fresh_index, fresh_index_dir):
    from llama_index_graphrag_suite.index import GraphRAGIndex

    client = api_client(create_app(fresh_index, persist_dir=fresh_index_dir))
    before = client.get("/stats").json()
    doc = {"doc_id": "new-1", "title": "Oren Vask", "text": "Oren Vask was a glassblower born in Tallow Reach. "
           "Oren Vask built the great lantern of the Cawl lighthouse in 1890."}
    r = client.post("/documents", json={"documents": [doc]})
    assert r.status_code == 200 and r.json()["persisted"] and r.json()["stats"]["documents"] == before["documents"] + 1
    assert client.post("/documents", json={"documents": [doc]}).status_code == 409
    found = client.post("/retrieve", json={"question": "Who built the lantern of the Cawl lighthouse?", "method": "bm25"})
    assert found.json()["nodes"][0]["doc_id"] == "new-1"
    assert "new-1" in {c.doc_id for c in GraphRAGIndex.load(fresh_index_dir, embed_model="hash").chunks.values()}
    r = client.delete("/documents/new-1")
    assert r.status_code == 200 and r.json()["chunks_removed"] == 1
    assert client.get("/stats").json() == before
    assert client.delete("/documents/new-1").status_code == 404
    assert client.post("/documents", json={"documents": []}).status_code == 422
    ro = api_client(create_app(fresh_index, read_only=True))
    assert ro.post("/documents", json={"documents": [doc]}).status_code == 403


def test_graph_neighbourhood(client, index):
    r = client.get("/graph/neighbourhood", params={"entity": "Kovalen", "hops": 1})
    assert r.status_code == 200
    body = r.json()
    ids = {n["id"] for n in body["nodes"]}
    assert "kovalen" in ids and ids >= set(index.entities["kovalen"].chunks)
    assert all(e["source"] in ids and e["target"] in ids for e in body["edges"])
    assert client.get("/graph/neighbourhood", params={"entity": "kovalen", "hops": 2}).json()["nodes"].__len__() >= len(ids)
    r = client.get("/graph/neighbourhood", params={"entity": "Nobody At All"})
    assert r.status_code == 404 and "no entity" in r.json()["detail"]
    assert client.get("/graph/neighbourhood", params={"entity": "kovalen", "hops": 9}).status_code == 422


def test_page_and_vendored_library(client):
    page = client.get("/")
    assert page.status_code == 200 and "cytoscape.min.js" in page.text
    lib = client.get("/static/vendor/cytoscape.min.js")
    assert lib.status_code == 200 and len(lib.content) > 100_000
    assert client.get("/static/vendor/cytoscape.LICENSE").status_code == 200
    assert client.get("/static/app.js").status_code == 200


def test_documents_list(client, index):
    from urllib.parse import quote

    body = client.get("/documents").json()
    assert body["total"] == index.stats()["documents"] == len(body["documents"])
    first = body["documents"][0]
    chunks = [c for c in index.chunks.values() if c.doc_id == first["doc_id"]]
    assert first == {"doc_id": first["doc_id"], "title": chunks[0].title, "chunks": len(chunks),
                     "characters": sum(len(c.text) for c in chunks),
                     "entities": len({k for c in chunks for k in c.entities})}
    page = client.get("/documents", params={"offset": 5, "limit": 3}).json()
    assert [d["doc_id"] for d in page["documents"]] == [d["doc_id"] for d in body["documents"][5:8]]
    found = client.get("/documents", params={"q": "KESTRIA"}).json()
    assert found["total"] >= 1 and all("kestria" in (d["title"] + d["doc_id"]).lower() for d in found["documents"])
    assert client.get("/documents", params={"limit": 0}).status_code == 422
    cid = next(iter(index.chunks))
    chunk = client.get("/chunks/" + quote(cid, safe="")).json()  # ids hold '#': sent encoded
    assert chunk["text"] == index.chunks[cid].text and {e["id"] for e in chunk["entities"]} == set(index.chunks[cid].entities)
    assert client.get("/chunks/nope").status_code == 404


def test_entity_search(client, index):
    body = client.get("/graph/entities", params={"q": "kov"}).json()
    assert body["entities"][0]["id"] == "kovalen" and body["entities"][0]["chunk_count"] == len(index.entities["kovalen"].chunks)
    many = client.get("/graph/entities", params={"q": "o", "limit": 50}).json()["entities"]
    assert all("o" in e["label"].lower() or "o" in e["id"] for e in many)
    counts = [e["chunk_count"] for e in many if not e["label"].lower().startswith("o")]
    assert counts == sorted(counts, reverse=True)  # more chunks first within a rank
    assert client.get("/graph/entities", params={"q": "zzzz"}).json()["entities"] == []
    assert client.get("/graph/entities", params={"q": ""}).status_code == 422


def test_methods_list_setting_schemas(client):
    methods = {m["name"]: m for m in client.get("/methods").json()}
    agrag = methods["agrag"]["settings"]
    assert agrag["fact_top_k"]["schema"] == {"nullable": False, "type": "integer", "minimum": 1}
    assert agrag["mcmi_ratio"]["schema"]["enum"] == ["sum", "mean"]
    assert methods["pathrag"]["settings"]["max_hops"]["schema"]["nullable"] is True
    assert methods["a2rag"]["settings"]["stages"]["schema"]["items"]["enum"] == ["local", "bridge", "global"]
    # a guarded method lists the guard's settings too, at its preset (A2RAG's differ from the others')
    guard = {f for f in agrag if f.startswith("guard_")}
    assert guard and guard == {f for f in methods["a2rag"]["settings"] if f.startswith("guard_")}
    assert not any(f.startswith("guard_") for f in methods["hybrid"]["settings"])
    listing = {f: d for f, d, _ in method_info("a2rag").settings_listing()}
    assert all(methods["a2rag"]["settings"][f]["default"] == listing[f] for f in guard)
    assert agrag["guard_max_weight"]["schema"]["type"] == "number"


def test_query_returns_citations_plain_and_streamed(index):
    llm = ScriptedLLM(responder=lambda prompt: "Cassia Dunmore-Reyes designed it [1], not Orrin [7].")
    client = api_client(create_app(index, llm=llm))
    body = client.post("/query", json={"question": QUESTION, "method": "hybrid", "top_k": 3}).json()
    chunks = [n["id"] for n in body["nodes"] if n["kind"] == "chunk"]
    cites = body["citations"]
    assert [p["chunk_id"] for p in cites["passages"]] == chunks
    assert cites["cited_chunk_ids"] == chunks[:1] and cites["invalid"] == [7]
    with client.stream("POST", "/query", json={"question": QUESTION, "method": "hybrid", "top_k": 3, "stream": True}) as r:
        text = "".join(r.iter_text())
    done = json.loads(text.strip().split("\n\n")[-1].split("\n")[1][6:])
    assert done["citations"]["cited_chunk_ids"] == chunks[:1] and done["citations"]["invalid"] == [7]


def test_a_question_releases_mapped_index_pages_above_the_budget(index, monkeypatch):
    """After each answered question the server checks its mapped-pages budget (index/mapped_pages.py): with a
    bound of 0 MB the index folder's pages are released, with none never."""
    from llama_index_graphrag_suite.index import mapped_pages

    released = []
    monkeypatch.setattr(mapped_pages, "release", lambda folder: released.append(folder) or 1)
    r = api_client(create_app(index, mapped_mb=0.0)).post("/retrieve", json={"question": QUESTION, "method": "dense"})
    assert r.status_code == 200 and released == [index.state.origin[0]]
    r = api_client(create_app(index, mapped_mb=None)).post("/retrieve", json={"question": QUESTION, "method": "dense"})
    assert r.status_code == 200 and released == [index.state.origin[0]]
