"""A real uvicorn server on a loopback ephemeral port: parallel clients, writes beside reads, the CLI's host rule."""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.serve import create_app

from .conftest import QUESTION, running_server

QUESTIONS = [QUESTION, "In which town was the painter of 'Morning at the Vellin Bridge' born?",
             "Which shipbuilding company founded the literary prize won by 'The Lantern Ferry'?"]
METHODS = ["hybrid", "agrag", "a2rag", "hipporag"]


def test_parallel_clients_against_a_real_server(fresh_index):
    app = create_app(fresh_index)
    with running_server(app) as url:
        def ask(i: int) -> tuple[int, float, str]:
            with httpx.Client(base_url=url, timeout=60) as c:
                start = time.perf_counter()
                r = c.post("/retrieve", json={"question": QUESTIONS[i % 3], "method": METHODS[i % 4], "top_k": 3})
                return r.status_code, (time.perf_counter() - start) * 1000, r.json()["nodes"][0]["doc_id"]

        def write(i: int) -> int:
            with httpx.Client(base_url=url, timeout=60) as c:
                doc = {"doc_id": f"par-{i}", "text": f"Ilsa Varn{i} was a cartographer of the Korvath River. "
                       f"Ilsa Varn{i} drew the first chart of Ostravel harbour."}
                assert c.post("/documents", json={"documents": [doc]}).status_code == 200
                return c.delete(f"/documents/par-{i}").status_code

        with ThreadPoolExecutor(max_workers=6) as pool:
            reads = [pool.submit(ask, i) for i in range(24)]
            writes = [pool.submit(write, i) for i in range(3)]
            results = [f.result(timeout=120) for f in reads]
            assert [f.result(timeout=120) for f in writes] == [200, 200, 200]
        assert all(code == 200 for code, _, _ in results)
        # reads only, in parallel: each gives what it gives alone (inserts above may legitimately move ranks)
        alone = [ask(i)[2] for i in range(12)]
        with ThreadPoolExecutor(max_workers=6) as pool:
            together = [f.result(timeout=120)[2] for f in [pool.submit(ask, i) for i in range(12)]]
        assert together == alone
        with httpx.Client(base_url=url, timeout=60) as c:
            assert c.get("/stats").json()["documents"] == 40  # every insert was deleted again
            # p50 of sequential /retrieve requests (hybrid), for the record
            times = []
            for _ in range(20):
                start = time.perf_counter()
                assert c.post("/retrieve", json={"question": QUESTION, "method": "hybrid"}).status_code == 200
                times.append((time.perf_counter() - start) * 1000)
        print(f"\n/retrieve hybrid p50 {statistics.median(times):.1f} ms; parallel p50 "
              f"{statistics.median(ms for _, ms, _ in results):.1f} ms")


@pytest.mark.parametrize("argv, message", [
    (["--host", "0.0.0.0"], "--allow-remote"),
    (["--host", "0.0.0.0", "--allow-remote"], "needs an API key"),
    (["--port", "70000"], None),
])
def test_serve_refuses_unsafe_or_bad_options(index_dir, capsys, monkeypatch, argv, message):
    monkeypatch.delenv("GRAPHRAG_SUITE_API_KEY", raising=False)
    try:
        code = main(["serve", str(index_dir), "--embed", "hash", "--quiet", *argv])
    except SystemExit as exc:  # argparse rejects the port
        code = exc.code
    assert code == 2
    if message:
        assert message in capsys.readouterr().err
