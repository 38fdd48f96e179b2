"""Cache, usage counting, retries, ScriptedLLM and build_llm against a loopback HTTP server."""

from __future__ import annotations

import asyncio
import json
import socket
import sqlite3
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests
from llama_index.core.callbacks import CallbackManager, TokenCountingHandler
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.schema import TextNode

from llama_index_graphrag_suite.extractors.llm_relations import LLMRelationExtractor
from llama_index_graphrag_suite.llm import (
    LLMRequestError,
    LLMUnavailableError,
    LLMUsage,
    ResponseCache,
    ResponseCacheError,
    RobustLLM,
    ScriptedLLM,
    build_llm,
    count_tokens,
    parse_llm_url,
)


def robust(inner, **kwargs) -> RobustLLM:
    kwargs.setdefault("base_delay", 0.001)
    return RobustLLM(inner, **kwargs)


# -- ResponseCache -----------------------------------------------------------------------------------
def test_cache_roundtrip_persists_and_keys_differ(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    key = ResponseCache.make_key("m", "prompt", {"temperature": 0})
    assert key == ResponseCache.make_key("m", "prompt", {"temperature": 0})
    assert key != ResponseCache.make_key("m", "prompt", {"temperature": 0.5})
    assert key != ResponseCache.make_key("other", "prompt", {"temperature": 0})
    with ResponseCache(path) as cache:
        assert cache.get(key) is None
        cache.put(key, "answer")
        assert cache.get(key) == "answer"
    with ResponseCache(path) as reopened:
        assert reopened.get(key) == "answer" and len(reopened) == 1
        mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
        assert mode == "wal"


def test_cache_is_thread_safe(tmp_path):
    cache = ResponseCache(tmp_path / "c.sqlite")

    def work(i: int) -> None:
        for j in range(50):
            cache.put(f"{i}-{j}", f"v{i}-{j}")
            assert cache.get(f"{i}-{j}") == f"v{i}-{j}"

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 300


def test_corrupt_cache_file_gives_clear_error(tmp_path):
    path = tmp_path / "broken.sqlite"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ResponseCacheError, match="broken.sqlite"):
        ResponseCache(path)


# -- RobustLLM: cache and usage ---------------------------------------------------------------------
def test_second_identical_call_hits_cache_and_different_params_miss(tmp_path):
    inner = ScriptedLLM(responses=["first", "second", "third"])
    llm = robust(inner, cache=tmp_path / "c.sqlite", cache_params={"temperature": 0})
    assert llm.complete("What is X?").text == "first"
    assert llm.complete("What is X?").text == "first"
    assert inner.call_count == 1
    assert llm.complete("What is X?", max_new_tokens=5).text == "second"  # call kwargs are in the key
    assert inner.call_count == 2

    # Same file, other sampling settings: a miss. Same settings in a new instance: a hit.
    hotter = robust(inner, cache=tmp_path / "c.sqlite", cache_params={"temperature": 0.7})
    assert hotter.complete("What is X?").text == "third"
    again = robust(ScriptedLLM(), cache=tmp_path / "c.sqlite", cache_params={"temperature": 0})
    assert again.complete("What is X?").text == "first"

    snap = llm.usage.snapshot()
    assert snap["calls"] == 2 and snap["cache_hits"] == 1 and snap["failures"] == 0
    assert snap["prompt_tokens"] == 2 * count_tokens("What is X?")
    assert snap["completion_tokens"] == count_tokens("first") + count_tokens("second")
    assert snap["seconds"] >= 0


def test_usage_track_gives_per_scope_deltas():
    usage = LLMUsage()
    llm = robust(ScriptedLLM(responder=lambda p: "ok"), usage=usage)
    llm.complete("before")
    with usage.track() as build:
        llm.complete("during build")
        with usage.track() as query:
            llm.complete("a query")
    llm.complete("after")
    assert usage.calls == 4
    assert build.calls == 2 and query.calls == 1
    assert query.prompt_tokens == count_tokens("a query")
    assert build.prompt_tokens == count_tokens("during build") + count_tokens("a query")
    usage.reset()
    assert usage.snapshot() == {
        "calls": 0, "cache_hits": 0, "prompt_tokens": 0, "completion_tokens": 0, "failures": 0, "seconds": 0.0,
        "exact_calls": 0, "estimated_calls": 0,
    }


def test_usage_scopes_of_concurrent_tasks_do_not_mix():
    usage = LLMUsage()
    llm = robust(ScriptedLLM(responder=lambda p: "ok"), usage=usage)

    async def query(n_calls: int) -> int:
        with usage.track() as scope:
            for i in range(n_calls):
                await llm.acomplete(f"q{n_calls}-{i}")
                await asyncio.sleep(0)
        return scope.calls

    async def main():
        return await asyncio.gather(query(1), query(3), query(5))

    assert asyncio.run(main()) == [1, 3, 5]
    assert usage.calls == 9


def test_token_counting_callbacks_fire_once_per_call():
    counter = TokenCountingHandler()
    llm = robust(ScriptedLLM(responder=lambda p: "four words of answer"), callback_manager=CallbackManager([counter]))
    llm.complete("hello there")
    asyncio.run(llm.acomplete("hello there"))
    assert len(counter.llm_token_counts) == 2
    assert counter.completion_llm_token_count == 2 * count_tokens("four words of answer")


def test_metadata_overrides_context_window():
    llm = robust(ScriptedLLM(context_window=3900, num_output=256), context_window=32768, num_output=1024)
    assert llm.metadata.context_window == 32768
    assert llm.metadata.num_output == 1024
    assert llm.metadata.model_name == "scripted"
    assert robust(ScriptedLLM(context_window=3900)).metadata.context_window == 3900


def test_stream_complete_streams_then_replays_from_cache(tmp_path):
    inner = ScriptedLLM(responses=["alpha beta gamma"])
    llm = robust(inner, cache=tmp_path / "c.sqlite")
    chunks = list(llm.stream_complete("p"))
    assert [c.delta for c in chunks] == ["alpha ", "beta ", "gamma"]
    assert chunks[-1].text == "alpha beta gamma"
    replay = list(llm.stream_complete("p"))
    assert [c.text for c in replay] == ["alpha beta gamma"]
    assert inner.call_count == 1 and llm.usage.cache_hits == 1


def test_prompt_echo_is_stripped_in_complete_and_stream():
    llm = robust(ScriptedLLM(responder=lambda p: p + " the answer"), strip_prompt_echo=True)
    assert llm.complete("Q?").text == " the answer"
    assert "".join(c.delta for c in llm.stream_complete("Q?")) == " the answer"


def test_acomplete_does_not_block_the_event_loop():
    llm = robust(ScriptedLLM(responder=lambda p: time.sleep(0.2) or "done"))

    async def main():
        ticks = 0

        async def ticker():
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick_task = asyncio.create_task(ticker())
        start = time.perf_counter()
        results = await asyncio.gather(*(llm.acomplete(f"p{i}") for i in range(4)))
        elapsed = time.perf_counter() - start
        tick_task.cancel()
        return results, elapsed, ticks

    results, elapsed, ticks = asyncio.run(main())
    assert [r.text for r in results] == ["done"] * 4
    assert elapsed < 0.6  # four 0.2 s calls overlapped
    assert ticks >= 5  # the loop kept running meanwhile


# -- RobustLLM: retries ------------------------------------------------------------------------------
def test_retry_succeeds_on_third_attempt():
    inner = ScriptedLLM(responses=["finally"], fail_on={1, 2})
    llm = robust(inner, max_retries=3)
    assert llm.complete("x").text == "finally"
    assert inner.call_count == 3
    assert llm.usage.calls == 3 and llm.usage.failures == 2


def test_always_failing_raises_llm_unavailable():
    inner = ScriptedLLM(responses=["never"], fail_from=1)
    llm = robust(inner, max_retries=2, url="http://example.invalid/v1")
    with pytest.raises(LLMUnavailableError) as info:
        llm.complete("x")
    assert info.value.attempts == 3 and inner.call_count == 3
    assert "http://example.invalid/v1" in str(info.value)
    assert isinstance(info.value.cause, ConnectionError)
    with pytest.raises(LLMUnavailableError):
        asyncio.run(llm.acomplete("x"))


def _http_error(status: int) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError(f"{status} error", response=response)


def test_http_status_decides_whether_to_retry():
    rejected = ScriptedLLM(fail_from=1, error=lambda n: _http_error(400))
    with pytest.raises(LLMRequestError) as info:
        robust(rejected, max_retries=3).complete("x")
    assert info.value.status == 400 and rejected.call_count == 1

    throttled = ScriptedLLM(responses=["ok"], fail_on={1}, error=lambda n: _http_error(429))
    assert robust(throttled).complete("x").text == "ok" and throttled.call_count == 2


def test_non_transient_errors_propagate_without_retry():
    inner = ScriptedLLM(fail_from=1, error=lambda n: ValueError("bug"))
    with pytest.raises(ValueError, match="bug"):
        robust(inner, max_retries=3).complete("x")
    assert inner.call_count == 1


# -- ScriptedLLM ---------------------------------------------------------------------------------------
def test_scripted_llm_rules_responses_responder_and_exhaustion():
    llm = ScriptedLLM(responses=["one", "two"], rules=[(r"weather", "sunny")], responder=lambda p: p.upper())
    assert llm.complete("the weather?").text == "sunny"
    assert [llm.complete("a").text, llm.complete("b").text, llm.complete("c").text] == ["one", "two", "C"]
    assert llm.prompts == ["the weather?", "a", "b", "c"]
    cycling = ScriptedLLM(responses=["x", "y"], cycle=True)
    assert [cycling.complete("?").text for _ in range(3)] == ["x", "y", "x"]
    exhausted = ScriptedLLM(responses=["only"])
    assert exhausted.complete("1").text == "only"
    with pytest.raises(RuntimeError, match="no response left"):
        exhausted.complete("2")
    deltas = [c.delta for c in ScriptedLLM(responses=["a  b\nc"]).stream_complete("p")]
    assert deltas == ["a  ", "b\n", "c"]


# -- build_llm / URLs --------------------------------------------------------------------------------
def test_build_llm_without_url_is_none():
    assert build_llm(None) is None
    assert build_llm("  ") is None


def test_parse_llm_url_forms():
    chat = "http://h:8000/v1/chat/completions"
    assert parse_llm_url("http://h:8000/v1").api_url == chat
    assert parse_llm_url("http://h:8000/v1/").api_url == chat
    assert parse_llm_url(chat).base_url == "http://h:8000/v1"
    assert parse_llm_url("http://h:8000").api_url == chat
    legacy = parse_llm_url("vllm+http://h:8000")
    assert (legacy.kind, legacy.api_url) == ("generate", "http://h:8000/generate")
    assert parse_llm_url("https://h/generate").kind == "generate"
    for bad in ["ftp://h/v1", "h:8000", "http://h:8000/api"]:
        with pytest.raises(ValueError):
            parse_llm_url(bad)


class _FakeServer:
    """A loopback server speaking OpenAI chat-completions, /v1/models and vLLM's legacy /generate."""

    def __init__(self, answer):
        self.answer = answer  # prompt -> completion text
        self.fail_next = 0  # answer this many POSTs with HTTP 500 first
        self.posts: list[dict] = []
        self.headers: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, status: int, payload: dict) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.posts.append(payload)
                server.headers.append(dict(self.headers))
                if server.fail_next > 0:
                    server.fail_next -= 1
                    self._send(500, {"error": "internal"})
                elif self.path == "/v1/chat/completions":
                    prompt = payload["messages"][-1]["content"]
                    text = server.answer(prompt)
                    self._send(200, {
                        "id": "cmpl-1",
                        "object": "chat.completion",
                        "model": payload["model"],
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                     "finish_reason": "stop"}],
                        "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": len(text.split()),
                                  "total_tokens": len(prompt.split()) + len(text.split())},
                    })
                elif self.path == "/generate":
                    self._send(200, {"text": [payload["prompt"] + server.answer(payload["prompt"])]})
                else:
                    self._send(404, {"error": "not found"})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


PASSAGE = "Marie Curie was born in Warsaw. She married Pierre Curie in Paris."


def _answer(prompt: str) -> str:
    if "Passage: Marie Curie" in prompt:
        return json.dumps({"triples": [["Marie Curie", "born in", "Warsaw"], ["Marie Curie", "met", "Einstein"]]})
    return "hello"


def test_openai_compatible_server_with_extractor_and_cache(tmp_path):
    with _FakeServer(_answer) as server:
        url = f"http://127.0.0.1:{server.port}/v1"
        llm = build_llm(url, api_key="secret", cache_path=tmp_path / "cache.sqlite", context_window=16384)
        assert llm.metadata.model_name == "test-model"  # discovered via GET /v1/models
        assert llm.metadata.context_window == 16384
        assert llm.complete("Say hi").text == "hello"
        assert server.posts[-1]["temperature"] == 0.0 and server.posts[-1]["max_tokens"] == 1024
        assert server.headers[-1]["Authorization"] == "Bearer secret"

        def chunk():
            node = TextNode(text=PASSAGE, id_="c1")
            node.metadata["nodes"] = [
                EntityNode(name="marie curie", properties={"surface": "Marie Curie"}),
                EntityNode(name="warsaw", properties={"surface": "Warsaw"}),
            ]
            return node

        extractor = LLMRelationExtractor(llm=llm, num_workers=2)
        (node,) = extractor([chunk()])
        rels = [(r.source_id, r.label, r.target_id) for r in node.metadata["relations"]]
        assert rels == [("marie curie", "born in", "warsaw")]
        assert extractor.stats["kept"] == 1 and extractor.stats["dropped_ungrounded"] == 1
        posts = len(server.posts)

        # A rebuild with a new client on the same cache file sends nothing to the server.
        again = build_llm(url, model="test-model", cache_path=tmp_path / "cache.sqlite")
        (node,) = LLMRelationExtractor(llm=again)([chunk()])
        assert len(node.metadata["relations"]) == 1
        assert len(server.posts) == posts and again.usage.cache_hits == 1


def test_legacy_generate_server_echo_is_stripped():
    with _FakeServer(lambda p: " world") as server:
        llm = build_llm(f"vllm+http://127.0.0.1:{server.port}")
        assert llm.complete("Hello").text == " world"
        assert server.posts[-1]["prompt"] == "Hello" and server.posts[-1]["temperature"] == 0.0


def test_server_error_500_then_200_is_retried():
    with _FakeServer(lambda p: "recovered") as server:
        server.fail_next = 2
        llm = build_llm(f"http://127.0.0.1:{server.port}/v1", model="m", retry_delay=0.01)
        assert llm.complete("x").text == "recovered"
        assert len(server.posts) == 3
        assert llm.usage.failures == 2 and llm.usage.calls == 3


def test_closed_port_fails_fast_with_llm_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    start = time.perf_counter()
    llm = build_llm(url, model="m", timeout=2, max_retries=1, retry_delay=0.01)
    with pytest.raises(LLMUnavailableError, match=f"127.0.0.1:{port}"):
        llm.complete("x")
    with pytest.raises(LLMUnavailableError, match="/v1/models"):
        build_llm(url, timeout=2)  # model discovery needs the server too
    assert time.perf_counter() - start < 5
