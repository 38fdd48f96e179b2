"""The build's steps on a real two-node Ray cluster, not only ``ray.init()`` in-process.

A head (``ray start --head``) and a second node (``ray start --address``), each with one CPU and its own
``--temp-dir``, both on this machine and both started by this test (``--block``: each stays a child process,
stopped by its own pid). Token authentication, as Ray enables it by default, with a token made for the test.
A driver process builds the example corpus through the Ray executor and in-process; the two indexes must be
the same, and both nodes must have run build tasks. Skipped only when Ray is not installed.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
RAY = Path(sys.executable).with_name("ray")
sys.path.insert(0, str(ROOT / "benchmarks"))
import ray_scale  # noqa: E402  (starts and stops the nodes, as the two-node bench does)
CORPUS = ROOT / "examples" / "data" / "corpus.jsonl"

DRIVER = r"""
import json, sys
import numpy as np
import ray
from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import load_documents
from llama_index_graphrag_suite.index.distributed import ray_build

address, corpus = sys.argv[1], sys.argv[2]
docs = load_documents(corpus)
config = IndexConfig(entities="statistical", chunk_size=128, chunk_overlap=16)
local = GraphRAGIndex.from_documents(docs, embed_model="hash", config=config)
sharded = GraphRAGIndex(embed_model="hash", config=config)
with ray_build(sharded, address) as runner:
    runner.min_shard = 4  # the 40 passages in several shards per step
    sharded.insert(docs)
    nodes = [n for n in ray.nodes() if n["Alive"]]
vectors_equal = all(getattr(local, t).ids == getattr(sharded, t).ids and
                    np.allclose(getattr(local, t).vectors(), getattr(sharded, t).vectors(), atol=1e-5)
                    for t in ("chunk_vectors", "entity_vectors", "fact_vectors"))
snap_equal = all(np.array_equal(a, b) for a, b in zip(local.snapshot.to_arrays().values(), sharded.snapshot.to_arrays().values()))
print(json.dumps({
    "alive_nodes": len(nodes), "cpus": runner.cpus, "nodes_used": len(runner.nodes_used),
    "executor_after": sharded.executor.name, "chunks": len(sharded.chunks),
    "same_tables": list(local.chunks) == list(sharded.chunks) and local.entities == sharded.entities
                   and local.facts == sharded.facts and local.synonyms == sharded.synonyms,
    "same_vectors": bool(vectors_equal), "same_snapshot": bool(snap_equal),
}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _start(args: list[str], log: Path, env: dict) -> subprocess.Popen:
    """``ray start ARGS --block`` as a child in its own session, up (the bench's own helper, benchmarks/ray_scale.py)."""
    try:
        return ray_scale.start_node(args, log, env, object_store_mb=80)
    except RuntimeError as exc:
        pytest.fail(str(exc))


def _stop(node: subprocess.Popen) -> None:
    ray_scale.stop_node(node)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    if not RAY.exists():
        pytest.skip("the ray command is not installed beside this Python")
    work = tmp_path_factory.mktemp("ray")
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32), "HF_HUB_OFFLINE": "1"}
    port = _free_port()
    head = _start(["--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={work / 'head'}",
                   "--include-dashboard=false"], work / "head.log", env)
    try:
        second = _start([f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1", f"--temp-dir={work / 'second'}"],
                        work / "second.log", env)
        try:
            yield f"127.0.0.1:{port}", env
        finally:
            _stop(second)
    finally:
        _stop(head)


def test_a_build_on_a_two_node_cluster_equals_the_local_build(cluster):
    address, env = cluster
    run = subprocess.run([sys.executable, "-c", DRIVER, address, str(CORPUS)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got["alive_nodes"] == 2 and got["cpus"] == 2
    assert got["nodes_used"] == 2  # build tasks ran on both nodes
    assert got["chunks"] > 40 and got["same_tables"] and got["same_vectors"] and got["same_snapshot"]
    assert got["executor_after"] == "local"


BATCHED = r"""
import json, sys
import ray
from llama_index_graphrag_suite import IndexConfig
from llama_index_graphrag_suite.documents import load_documents
from llama_index_graphrag_suite.index import distributed
from llama_index_graphrag_suite.index.batched import build_in_batches

address, corpus, here, there = sys.argv[1:5]
distributed._MIN_TEXTS_PER_SHARD = 4  # each batch in several shards
config = IndexConfig(entities="statistical", chunk_size=128, chunk_overlap=16)
nodes = set()
real_init = distributed.RayRunner.__init__
def init(self, *args, **kwargs):
    real_init(self, *args, **kwargs)
    runners.append(self)
runners = []
distributed.RayRunner.__init__ = init
build_in_batches(iter(load_documents(corpus)), here, batch_size=15, embed_model="hash", config=config)
build_in_batches(iter(load_documents(corpus)), there, batch_size=15, embed_model="hash", config=config,
                 ray_address=address)
print(json.dumps({"batches_on_ray": len(runners), "nodes_used": len(set().union(*(r.nodes_used for r in runners))),
                  "ray_left_running": ray.is_initialized()}))
"""


def test_a_build_in_batches_on_two_nodes_equals_the_same_batches_in_one_process(cluster, tmp_path):
    """Each batch's work on the cluster, the driver holding one batch: the saved index has the same table, vector
    and manifest checksums (benchmarks/ray_scale.py's) as the batches built in one process."""
    address, env = cluster
    here, there = tmp_path / "here", tmp_path / "there"
    run = subprocess.run([sys.executable, "-c", BATCHED, address, str(CORPUS), str(here), str(there)], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"batches_on_ray": 3, "nodes_used": 2, "ray_left_running": False}
    want, have = ray_scale.checksums(here), ray_scale.checksums(there)
    assert {"chunks", "entities", "facts", "chunks_vectors", "entities_vectors", "facts_vectors", "manifest"} <= set(want)
    assert have == want
