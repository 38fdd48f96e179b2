"""Serving processes run BLAS on one thread unless the user chose a thread count (cli/serve.py one_blas_thread)."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import numpy, threadpoolctl
from llama_index_graphrag_suite.cli.serve import one_blas_thread
limited = one_blas_thread()
blas = [i for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
print(limited, sorted({i["num_threads"] for i in blas}))
"""


def _run(env_extra: dict) -> str:
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def test_a_serving_process_uses_one_blas_thread():
    pytest.importorskip("threadpoolctl")
    assert _run({}) == "True [1]"


def test_a_thread_count_the_user_set_is_kept():
    pytest.importorskip("threadpoolctl")
    assert _run({"OPENBLAS_NUM_THREADS": "2"}).startswith("False")
