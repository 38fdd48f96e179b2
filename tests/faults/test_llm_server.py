"""Fault injection against a loopback fake LLM server: refusals, 5xx, garbage, slow drip, silence, huge
answers; the cache's keys, modes and what it refuses to keep; the CLI's exit code and flags."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.schema import TextNode

from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.extractors.llm_relations import LLMRelationExtractor
from llama_index_graphrag_suite.llm import (
    LLMRequestError,
    LLMTimeoutError,
    LLMUnavailableError,
    LLMUnusableError,
    ResponseCache,
    build_llm,
    llm_budget,
)

TRIPLES = json.dumps({"triples": [["Marie Curie", "born in", "Warsaw"]]})
PASSAGE = "Marie Curie was born in Warsaw. She married Pierre Curie in Paris."


def _completion(text: str, model: str = "test-model") -> dict:
    return {"id": "x", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}


class FakeLLMServer:
    """OpenAI-compatible server on 127.0.0.1 whose behaviour is set by ``mode``:
    ok, 401, 400, 500, html, badjson, drip, silent, huge."""

    def __init__(self, mode: str = "ok", answer: str = TRIPLES) -> None:
        self.mode, self.answer, self.posts = mode, answer, []
        self.stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    self.wfile.write(body)
                except OSError:
                    pass  # the client refused to read it all (the huge answer)

            def do_GET(self):
                if server.mode == "401":
                    return self._send(401, b'{"error": {"message": "Invalid API key"}}')
                self._send(200, json.dumps({"object": "list", "data": [{"id": "test-model"}]}).encode())

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.posts.append(payload)
                mode = server.mode
                if mode == "silent":
                    server.stop.wait(30)
                elif mode in ("401", "400", "500"):
                    self._send(int(mode), b'{"error": {"message": "no"}}')
                elif mode == "html":
                    self._send(200, b"<html><body>Welcome to nginx</body></html>", "text/html")
                elif mode == "badjson":
                    self._send(200, b'{"choices": [ {"message": ')
                elif mode == "huge":
                    self._send(200, json.dumps(_completion("x" * 5_000_000)).encode())
                elif mode == "drip":
                    body = json.dumps(_completion(server.answer)).encode()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    try:
                        for i in range(len(body)):
                            if server.stop.is_set():
                                return
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(0.05)
                    except OSError:
                        return  # the client hung up, as it should at its deadline
                else:
                    self._send(200, json.dumps(_completion(server.answer, payload["model"])).encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self) -> "FakeLLMServer":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _chunk(id_: str) -> TextNode:
    node = TextNode(text=PASSAGE, id_=id_)
    node.metadata["nodes"] = [EntityNode(name="marie curie", properties={"surface": "Marie Curie"}),
                              EntityNode(name="warsaw", properties={"surface": "Warsaw"})]
    return node


def _llm(server: FakeLLMServer, **kwargs):
    kwargs.setdefault("model", "test-model")
    kwargs.setdefault("retry_delay", 0.01)
    kwargs.setdefault("timeout", 5)
    return build_llm(server.url, **kwargs)


# -- failure policy ------------------------------------------------------------------------------
def test_401_aborts_build_after_consecutive_failures_and_is_not_retried():
    with FakeLLMServer("401") as server:
        extractor = LLMRelationExtractor(llm=_llm(server), num_workers=1)
        with pytest.raises(LLMUnusableError, match=r"refused the request: 401 Unauthorized.*3 consecutive"):
            extractor([_chunk(f"c{i}") for i in range(5)])
        assert len(server.posts) == 3  # one per chunk, no retries, nothing after the abort
        assert server.url in str(extractor.failure_policy.aborted)


def test_skip_policy_completes_and_counts_chunks_without_relations():
    with FakeLLMServer("400") as server:
        llm = _llm(server, on_error="skip")
        nodes = LLMRelationExtractor(llm=llm, num_workers=2)([_chunk(f"c{i}") for i in range(4)])
        assert all(n.metadata["relations"] == [] for n in nodes)
        assert llm.skipped_items == 4


def test_500_is_retried_then_the_build_stops():
    with FakeLLMServer("500") as server:
        llm = _llm(server, max_retries=2)
        with pytest.raises(LLMUnavailableError, match="after 3 attempts"):
            LLMRelationExtractor(llm=llm, num_workers=1)([_chunk("a"), _chunk("b")])
        assert len(server.posts) == 3


@pytest.mark.parametrize("mode", ["html", "badjson"])
def test_garbage_is_a_protocol_failure_and_never_cached(tmp_path, mode):
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer(mode) as server:
        llm = _llm(server, cache_path=cache)
        with pytest.raises(LLMRequestError, match="unusable answer") as info:
            llm.complete("hi")
        assert info.value.kind == "protocol" and len(server.posts) == 1  # not retried
        with pytest.raises(LLMUnusableError):
            LLMRelationExtractor(llm=llm, num_workers=1)([_chunk(f"c{i}") for i in range(3)])
        assert len(llm.cache) == 0
        server.mode = "ok"  # the server is fixed: its answer is used, not a replayed failure
        (node,) = LLMRelationExtractor(llm=_llm(server, cache_path=cache), num_workers=1)([_chunk("c9")])
        assert [r.label for r in node.metadata["relations"]] == ["born in"]


def test_unparseable_answer_is_not_cached_so_a_fixed_server_is_asked_again(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer("ok", answer="Sorry, I am overloaded.") as server:
        LLMRelationExtractor(llm=_llm(server, cache_path=cache), num_workers=1)([_chunk("c")])
        server.answer = TRIPLES
        (node,) = LLMRelationExtractor(llm=_llm(server, cache_path=cache), num_workers=1)([_chunk("c")])
        assert len(node.metadata["relations"]) == 1 and len(server.posts) == 2
        (node,) = LLMRelationExtractor(llm=_llm(server, cache_path=cache), num_workers=1)([_chunk("c")])
        assert len(server.posts) == 2  # the good answer was cached


# -- deadlines and size ----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["drip", "silent"])
def test_slow_drip_and_silent_server_are_cut_off_at_the_deadline(mode):
    with FakeLLMServer(mode) as server:
        llm = _llm(server, timeout=1.0, max_retries=3)
        start = time.monotonic()
        with pytest.raises(LLMTimeoutError, match=r"no complete answer within 1s"):
            llm.complete("hi")
        assert time.monotonic() - start < 1.8


def test_job_budget_bounds_all_calls_together():
    with FakeLLMServer("silent") as server:
        llm = _llm(server, timeout=10, build_timeout=0.8)
        start = time.monotonic()
        with pytest.raises(LLMTimeoutError):
            LLMRelationExtractor(llm=llm, num_workers=2)([_chunk(f"c{i}") for i in range(4)])
        assert time.monotonic() - start < 2.0
        with llm_budget(0.5), pytest.raises(LLMTimeoutError, match="before the deadline"):
            llm.complete("hi")


def test_huge_answer_is_refused_with_a_clear_error():
    with FakeLLMServer("huge") as server:
        llm = _llm(server, max_response_bytes=1_000_000)
        with pytest.raises(LLMRequestError, match="1000000-byte limit"):
            llm.complete("hi")


# -- cache -----------------------------------------------------------------------------------------
def test_cache_key_depends_on_url_model_and_params_never_the_api_key(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer("ok", answer="A") as one, FakeLLMServer("ok", answer="B") as two:
        assert _llm(one, cache_path=cache, api_key="sk-secret-1").complete("q").text == "A"
        assert _llm(two, cache_path=cache).complete("q").text == "B"  # another server: no replay of A
        assert _llm(one, cache_path=cache, model="other").complete("q").text == "A"
        assert _llm(one, cache_path=cache, temperature=0.7).complete("q").text == "A"
        assert len(one.posts) == 3
        assert _llm(one, cache_path=cache, api_key="sk-secret-2").complete("q").text == "A"
        assert len(one.posts) == 3  # same server, model and params: cached whatever the key
    assert b"sk-secret" not in b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert len(ResponseCache(cache)) == 4


def test_cached_answers_are_not_served_to_a_refused_key(tmp_path):
    cache = tmp_path / "cache.sqlite"
    with FakeLLMServer("ok") as server:
        _llm(server, cache_path=cache, api_key="good").complete("q")
        server.mode = "401"
        with pytest.raises(LLMRequestError, match="401"):
            _llm(server, cache_path=cache, api_key="bad").complete("q")


def test_cache_files_are_private(tmp_path):
    path = tmp_path / "cache.sqlite"
    with FakeLLMServer("ok") as server:
        llm = _llm(server, cache_path=path)
        llm.complete("q")
        files = [p for p in tmp_path.iterdir() if p.name.startswith("cache.sqlite")]
        assert path in files
        for p in files:
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
        llm.cache.close()
    os.chmod(path, 0o644)  # a cache made by an older version is tightened on open
    ResponseCache(path).close()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- CLI ---------------------------------------------------------------------------------------------
@pytest.fixture
def corpus(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for i, text in enumerate([PASSAGE, "Albert Einstein lived in Berlin and Princeton.",
                              "Niels Bohr worked in Copenhagen with Werner Heisenberg."]):
        (folder / f"d{i}.txt").write_text(text, encoding="utf-8")
    return folder


def _index(corpus, tmp_path, url, *extra):
    return main(["index", str(corpus), "--out", str(tmp_path / "idx"), "--embed", "hash", "--entities",
                 "statistical", "--quiet", "--llm", url, "--llm-model", "m", "--llm-timeout", "5", *extra])


def test_cli_exits_2_naming_the_cause_when_the_server_refuses(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FakeLLMServer("401") as server:
        assert _index(corpus, tmp_path, server.url, "--llm-cache", str(tmp_path / "c.sqlite")) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: LLM server at " + server.url) and "401 Unauthorized" in err
        assert "--on-llm-error skip" in err and len(err.splitlines()) == 1
        assert _index(corpus, tmp_path, server.url, "--on-llm-error", "skip", "--no-cache") == 0
        assert "chunks_without_llm_relations=3" in capsys.readouterr().out
    assert not (tmp_path / ".cache" / "llm-responses.sqlite").exists()  # --no-cache wrote nothing


def test_cli_index_prints_the_llm_cost_saying_the_tokens_are_estimated(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FakeLLMServer("ok") as server:  # this server sends no usage field
        assert _index(corpus, tmp_path, server.url, "--no-cache") == 0
        out = capsys.readouterr().out
        assert "\nLLM: 3 LLM calls, " in out and "completion tokens (estimated)" in out


def test_cli_llm_timeout_flag_bounds_a_silent_server(corpus, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with FakeLLMServer("silent") as server:
        start = time.monotonic()
        assert _index(corpus, tmp_path, server.url, "--llm-timeout", "0.5", "--no-cache") == 2
        assert time.monotonic() - start < 5
        assert "no complete answer within 0.5s" in capsys.readouterr().err


def test_llm_budget_bounds_a_whole_a2rag_loop():
    from llama_index.core.schema import NodeWithScore

    from langgraph_agents.a2rag_loop import build_a2rag_graph

    class OneDoc:
        def retrieve(self, query):
            return [NodeWithScore(node=TextNode(text=PASSAGE, id_="d1"), score=1.0)]

    with FakeLLMServer("drip") as server:
        graph = build_a2rag_graph(OneDoc(), _llm(server, timeout=10))
        start = time.monotonic()
        with llm_budget(0.7):  # reaches LangGraph's node threads through the copied context
            out = graph.invoke({"question": "Where was Marie Curie born?"})
        assert time.monotonic() - start < 2.5
        assert out["status"] == "fail" and "LLMTimeoutError" in out["error"]


def test_cli_structured_output_flag_reaches_the_llm():
    import argparse

    from llama_index_graphrag_suite.cli.llm import add_llm_arguments, build_llm_from_args

    parser = argparse.ArgumentParser()
    add_llm_arguments(parser)
    with FakeLLMServer("ok") as server:
        args = parser.parse_args(["--llm", server.url, "--llm-model", "m", "--no-cache", "--structured-output", "json_object"])
        assert build_llm_from_args(args).structured_output == "json_object"
        args = parser.parse_args(["--llm", server.url, "--llm-model", "m", "--no-cache"])
        assert build_llm_from_args(args).structured_output is None  # off unless asked for
