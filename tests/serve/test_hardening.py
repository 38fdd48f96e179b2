"""What a hostile client cannot do: another Host (DNS rebinding), hidden-character questions, lone surrogates.

Also the readable 422 body (``detail`` a sentence, ``errors`` without the input) and the MCP tool's cleaning.
"""

from __future__ import annotations

import json

import httpx
import pytest

from llama_index_graphrag_suite.serve import create_app
from llama_index_graphrag_suite.serve.guards import allowed_hosts, clean_text, host_allowed

from .conftest import QUESTION, api_client, running_server

HIDDEN = ["\x00", "\u200b", "\x00\u200b \ufeff", "\u2060\u200e\t", "\x7f\x1b"]


@pytest.fixture(scope="module")
def client(index):
    return api_client(create_app(index))


def test_host_allow_list_rules():
    allowed = allowed_hosts("127.0.0.1", ["rag.example.org"])
    for host in ("localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "127.0.0.5", "LOCALHOST.",
                 "rag.example.org", "rag.example.org:443"):
        assert host_allowed(host, allowed), host
    for host in ("evil.example.com", "evil.example.com:8000", "127.0.0.1.evil.com", "localhost.evil.com", "", None,
                 "example.org", "0.0.0.0"):
        assert not host_allowed(host, allowed), host
    assert host_allowed("10.1.2.3:8000", allowed_hosts("10.1.2.3"))  # the bound address
    assert not host_allowed("0.0.0.0", allowed_hosts("0.0.0.0"))  # a wildcard bind is not a name
    assert host_allowed("anything.example", allowed_hosts("127.0.0.1", ["*"]))


def test_a_rebound_dns_name_is_refused_on_every_route(index):
    app = create_app(index)
    with running_server(app) as url:
        with httpx.Client(base_url=url, timeout=30) as c:
            assert c.get("/health").status_code == 200  # Host: 127.0.0.1:PORT
            evil = {"Host": "attacker.example:80"}
            for method, path, body in [("GET", "/health", None), ("GET", "/", None), ("GET", "/stats", None),
                                       ("POST", "/retrieve", {"question": QUESTION}),
                                       ("POST", "/documents", {"documents": [{"doc_id": "x", "text": "y"}]}),
                                       ("DELETE", "/documents/doc-01", None)]:
                r = c.request(method, path, json=body, headers=evil)
                assert r.status_code == 400, (method, path, r.status_code)
                assert "host 'attacker.example:80' is not allowed" in r.json()["detail"]
                assert "--allowed-host" in r.json()["detail"]
            assert c.get("/stats", headers={"Host": "localhost"}).status_code == 200
    assert index.stats()["documents"] == 40  # the refused DELETE did nothing
    named = api_client(create_app(index, allowed_host=["rag.internal"]), host="rag.internal")
    assert named.get("/stats").status_code == 200
    assert api_client(create_app(index), host="rag.internal").get("/stats").status_code == 400


@pytest.mark.parametrize("question", HIDDEN)
def test_questions_of_hidden_characters_are_empty(client, question):
    r = client.post("/retrieve", json={"question": question, "method": "hybrid"})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("question: the question is empty")
    assert r.json()["errors"] == [{"field": "question", "message": "the question is empty: send a non-empty 'question'"}]


def test_hidden_characters_are_dropped_from_a_question(client):
    plain = client.post("/retrieve", json={"question": QUESTION, "method": "bm25"}).json()
    noisy = QUESTION.replace(" ", " \u200b").replace("the", "t\x00he")
    r = client.post("/retrieve", json={"question": noisy, "method": "bm25"})
    assert r.status_code == 200 and r.json()["question"] == QUESTION
    assert [n["id"] for n in r.json()["nodes"]] == [n["id"] for n in plain["nodes"]]


@pytest.mark.parametrize("body, field", [
    (b'{"question": "Salt Crown \\ud800?"}', "question"),
    (b'{"question": "\\udfff"}', "question"),
    (b'{"question": "x?", "settings": {"\\udc00": 1}}', "settings"),
    (b'{"question": "x?", "method": "hybrid\\ud83d"}', "method"),
])
def test_lone_surrogates_in_a_question_are_422(client, body, field):
    r = client.post("/retrieve", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    assert "lone surrogate" in r.json()["detail"] and r.json()["errors"][0]["field"] == field


def test_a_surrogate_pair_is_valid_text(client):
    body = json.dumps({"question": "Who designed the theatre of 'The Salt Crown' \U0001F3AD?"}).encode()  # ASCII escapes
    assert b"\\ud83c\\udfad" in body
    r = client.post("/retrieve", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 200 and r.json()["question"].endswith("\U0001F3AD?")


def test_documents_are_cleaned_and_checked(fresh_index):
    client = api_client(create_app(fresh_index))
    before = client.get("/stats").json()
    for text in HIDDEN:
        r = client.post("/documents", json={"documents": [{"doc_id": "blank", "text": text}]})
        assert r.status_code == 422 and "documents.0.text: the document text is empty" in r.json()["detail"]
    for doc_id in ("bad\x00id", "zero\u200bwidth", " "):
        r = client.post("/documents", json={"documents": [{"doc_id": doc_id, "text": "Some text."}]})
        assert r.status_code == 422 and "documents.0.doc_id" in r.json()["detail"], doc_id
    for raw in (b'{"documents": [{"doc_id": "s", "text": "Alma \\ud800 Brask"}]}',
                b'{"documents": [{"doc_id": "s\\udbff", "text": "Alma Brask"}]}',
                b'{"documents": [{"doc_id": "s", "text": "Alma", "metadata": {"k\\udc00": "v"}}]}',
                b'{"documents": [{"doc_id": "s", "text": "Alma", "title": "\\ud800"}]}'):
        r = client.post("/documents", content=raw, headers={"content-type": "application/json"})
        assert r.status_code == 422 and "lone surrogate" in r.json()["detail"], raw
        assert r.json()["detail"].startswith("documents.0.")
    assert client.get("/stats").json() == before  # nothing refused reached the index
    text = "Alma\u200b Brask was a \x00ferry captain of the Korvath River.\nShe sailed the Varrow Sea."
    r = client.post("/documents", json={"documents": [{"doc_id": "alma", "title": "Alma\ufeff Brask", "text": text}]})
    assert r.status_code == 200, r.text
    stored = [c for c in fresh_index.chunks.values() if c.doc_id == "alma"]
    assert stored and "\x00" not in stored[0].text and "\u200b" not in stored[0].text
    assert "ferry captain of the Korvath River.\nShe sailed" in stored[0].text and stored[0].title == "Alma Brask"


def test_validation_errors_are_sentences(client):
    r = client.post("/retrieve", json={"method": "hybrid"})
    assert r.status_code == 422 and r.json()["detail"] == "question: Field required"
    r = client.post("/retrieve", json={"question": "x" * 5000})
    assert r.status_code == 422 and "x" * 100 not in r.text  # the input is not echoed back
    r = client.post("/retrieve", json={"question": "x?", "top_k": 0, "colour": "red"})
    detail = r.json()["detail"]
    assert r.status_code == 422 and "top_k:" in detail and "colour: Extra inputs are not permitted" in detail


def test_clean_text():
    assert clean_text("a\x00b\u200bc\ufeffd") == "abcd"
    assert clean_text("line one\nline\ttwo") == "line one\nline\ttwo"
    assert clean_text("line one\n line\ttwo ", keep_newlines=False) == "line one line two"
    with pytest.raises(ValueError, match="lone surrogate U\\+D800"):
        clean_text("ab\ud800")


def test_mcp_tool_cleans_the_question(index):
    from llama_index_graphrag_suite.serve.mcp_server import retrieve_tool
    from llama_index_graphrag_suite.serve.runner import RequestError

    for question in HIDDEN:
        with pytest.raises(RequestError, match="question is empty"):
            retrieve_tool(index, question)
    with pytest.raises(RequestError, match="lone surrogate"):
        retrieve_tool(index, "Salt \udc00 Crown?")
    out = retrieve_tool(index, "\u200b" + QUESTION + "\x00", method="bm25", top_k=3)
    assert out["question"] == QUESTION and len(out["chunks"]) == 3


def test_serve_cli_passes_allowed_hosts(index_dir, monkeypatch):
    import uvicorn

    from llama_index_graphrag_suite.cli import main

    served = {}
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, **kw: served.update(app=self.config.app))
    assert main(["serve", str(index_dir), "--embed", "hash", "--quiet", "--no-persist", "--port", "0",
                 "--allowed-host", "rag.internal", "--allowed-host", "docs.internal"]) == 0
    for host, code in [("rag.internal", 200), ("docs.internal:8000", 200), ("127.0.0.1:8000", 200), ("evil.test", 400)]:
        assert api_client(served["app"], host=host).get("/stats").status_code == code, host
