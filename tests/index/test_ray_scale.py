"""``benchmarks/ray_scale.py`` at a small size: a two-node Ray cluster builds the index a single process builds.

The script writes the synthetic corpus (2,000 passages), builds it in one process, starts its own two-node
cluster (``ray start --head`` + ``ray start --address``, one CPU each, loopback), builds the corpus again through
the Ray executor (vectors returned through Ray's object store) and once more with the workers writing their
vector shards into a staging folder, stops both nodes, and compares the two saved indexes table by table (column values in order,
vector ids and float32 bytes). Skipped only when Ray is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray")

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "ray_scale.py"
TABLES = {"chunks", "chunk_links", "entities", "facts", "synonyms", "ngrams", "vocabulary", "chunks_vectors",
          "entities_vectors", "facts_vectors", "manifest"}


def test_a_two_node_build_of_2000_passages_has_the_local_builds_checksums(tmp_path):
    if not Path(sys.executable).with_name("ray").exists():
        pytest.skip("the ray command is not installed beside this Python")
    out = tmp_path / "result.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--n", "2000", "--no-report", "--json", str(out),
                          "--object-store-mb", "100", "--compare-staging"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, (run.stdout + run.stderr)[-4000:]
    got = json.loads(out.read_text())
    local, ray_row = got["local"], got["ray"]
    assert set(local["checksums"]) == TABLES
    assert got["identical"] and local["checksums"] == ray_row["checksums"]
    staged = got["ray_staged"]  # the second Ray build: workers wrote their vector shards as files
    assert ray_row["vectors_via"] == "object store" and staged["vectors_via"] == "staging folder"
    assert staged["checksums"] == local["checksums"] and staged["nodes_used"] == 2
    assert any(t["fn"] == "_embed_shard_to_file" for t in staged["tasks"])
    assert local["counts"]["chunks"] == 2000 and local["counts"]["entities"] > 1000
    assert ray_row["cluster_cpus"] == 2 and ray_row["nodes_used"] == 2  # both nodes ran build tasks
    figures = got["figures"]
    for step in ("chunk", "statistics", "extract", "embed"):  # the sharded steps really ran as several tasks
        assert figures[step]["tasks"] >= 2 and figures[step]["items"] >= 2000, step
    assert {t["node"] for t in ray_row["tasks"]} - {"driver"}  # tasks ran on workers, not only on the driver


def test_checksums_see_a_changed_row(tmp_path):
    """The comparison can fail: one entity's surface changed in a saved index changes that table's checksum only."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import ray_scale

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import load_documents

    docs = load_documents(ROOT / "examples" / "data" / "corpus.jsonl")
    index = GraphRAGIndex.from_documents(docs, embed_model="hash", config=IndexConfig(entities="statistical"))
    index.persist(tmp_path / "a")
    before = ray_scale.checksums(tmp_path / "a")
    again = GraphRAGIndex.from_documents(docs, embed_model="hash", config=IndexConfig(entities="statistical"))
    key = next(iter(again.entities))
    again.state.entities[key].surface += " (changed)"
    again.persist(tmp_path / "b")
    after = ray_scale.checksums(tmp_path / "b")
    assert [k for k in before if before[k] != after[k]] == ["entities"]
