"""A tiny index of the demo corpus (hash embedding, statistical entities) and a real uvicorn server on a loopback port."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
QUESTION = "Who designed the theatre where the opera 'The Salt Crown' premiered?"


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory) -> Path:
    from tests.conftest import index_demo_corpus

    return index_demo_corpus(tmp_path_factory.mktemp("serve") / "index")


@pytest.fixture(scope="session")
def index(index_dir):
    """Shared, read-only: tests that insert or delete use ``fresh_index``."""
    from llama_index_graphrag_suite.index import GraphRAGIndex

    return GraphRAGIndex.load(index_dir, embed_model="hash")


@pytest.fixture
def fresh_index_dir(index_dir, tmp_path) -> Path:
    copy = tmp_path / "index"
    shutil.copytree(index_dir, copy)
    return copy


@pytest.fixture
def fresh_index(fresh_index_dir):
    from llama_index_graphrag_suite.index import GraphRAGIndex

    return GraphRAGIndex.load(fresh_index_dir, embed_model="hash")


def api_client(app, host: str = "localhost"):
    """FastAPI's TestClient with a loopback ``Host`` (its default, ``testserver``, is not an allowed host)."""
    from fastapi.testclient import TestClient

    return TestClient(app, base_url=f"http://{host}")


@contextlib.contextmanager
def running_server(app, timeout: float = 20.0):
    """Serve ``app`` with uvicorn on 127.0.0.1 and an ephemeral port in a thread; yields the base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
