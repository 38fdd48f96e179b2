"""`graphrag-suite serve` on a busy port: one clear line and exit 2, before loading anything and with no false
"serving at" line; --port 0 takes a free port and the line names the real one."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from llama_index_graphrag_suite.cli import main

pytest.importorskip("uvicorn")


def test_a_busy_port_is_one_line_before_the_index_is_loaded(tmp_path, capsys):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:  # the index folder does not exist: the port is checked first
        code = main(["serve", str(tmp_path / "no-index"), "--port", str(port), "--quiet"])
    finally:
        taken.close()
    err = capsys.readouterr().err
    assert code == 2 and "serving" not in err
    assert err.strip() == (f"error: port {port} on 127.0.0.1 is already in use (another server?): stop it, "
                           "or pass --port N (--port 0 takes any free port)")


def test_port_zero_serves_on_the_port_it_names(demo_index):
    index = demo_index
    script = Path(sys.executable).with_name("graphrag-suite")
    proc = subprocess.Popen([str(script), "serve", str(index), "--embed", "hash", "--port", "0", "--quiet"],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        lines = []
        while not lines or "serving" not in lines[-1]:  # other libraries may log a line first
            lines.append(proc.stderr.readline())
            assert lines[-1] and len(lines) < 20, lines
        found = re.search(r"at http://127\.0\.0\.1:(\d+)/", lines[-1])
        assert found and found.group(1) != "0", lines
        for _ in range(100):  # the line comes just before uvicorn starts accepting
            try:
                health = httpx.get(f"http://127.0.0.1:{found.group(1)}/health", timeout=5)
                break
            except httpx.ConnectError:
                time.sleep(0.1)
        assert health.status_code == 200 and health.json()["status"] == "ok"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
