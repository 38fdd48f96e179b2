"""Hostile cases for the index folder: writers racing, a writer killed, escaping paths, bad
manifests, versions and rollback.

Each test builds a tiny index with the hashing embedding; the child processes (two writers, a killed
writer) import the library once each, so the module runs in about 15 s on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from llama_index_graphrag_suite import (
    CorruptIndexError,
    GraphRAGIndex,
    IndexConfig,
    IndexNotFoundError,
)
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.eval.bench import build_or_load_index
from llama_index_graphrag_suite.index.storage import (
    CURRENT,
    LOCK,
    MANIFEST,
    IndexLockedError,
    rollback,
    save_version,
)
from llama_index_graphrag_suite.registry import get_retriever

ROOT = Path(__file__).resolve().parents[2]
DOCS = [("Ada Lorne", "Ada Lorne was a painter born in Marlow, a river town on the Teme."),
        ("Marlow", "Marlow lies on the Teme. The painter Ada Lorne was born in Marlow.")]


def _index() -> GraphRAGIndex:
    docs = [make_document(f"d{i}", text, title) for i, (title, text) in enumerate(DOCS)]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entity_threshold=0.1))


@pytest.fixture()
def saved(tmp_path) -> Path:
    _index().persist(tmp_path / "idx")
    return tmp_path / "idx"


def _current(folder: Path) -> str:
    return json.loads((folder / CURRENT).read_text())["version"]


@pytest.mark.parametrize("pointer", ["../elsewhere/v-000001", "/tmp/v-000001", "v-1", "manifest.json"])
def test_current_must_name_a_version_folder_of_the_index(saved, tmp_path, pointer):
    elsewhere = tmp_path / "elsewhere" / "v-000001"
    elsewhere.parent.mkdir()
    os.symlink(saved / _current(saved), elsewhere)  # a well-formed index outside the folder
    (saved / CURRENT).write_text(json.dumps({"version": pointer}))
    with pytest.raises(CorruptIndexError, match="not a version folder"):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())


def test_a_symlinked_version_or_file_is_refused(saved, tmp_path):
    version = saved / _current(saved)
    segment = saved / "segments" / json.loads((version / "manifest.json").read_text())["tables"]["chunks"][0]
    outside = tmp_path / "outside.parquet"
    segment.rename(outside)
    os.symlink(outside, segment)
    with pytest.raises(CorruptIndexError, match="is not a segment file of the index"):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())
    segment.unlink()
    outside.rename(segment)
    (version / "provenance.json").write_text("[]")  # a file of the version folder itself
    os.symlink(version / "provenance.json", version / "extra.json")
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["files"]["extra.json"] = manifest["files"].get("provenance.json", "0")
    (version / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CorruptIndexError, match="symlink or lies outside"):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())


@pytest.mark.parametrize("manifest", ["[]", '"text"', '{"format_version": 1}', '{"format_version": 1, "files": []}',
                                      '{"format_version": 1, "files": {"../x": "00"}}'])
def test_malformed_manifests_are_corrupt_index_errors(saved, manifest):
    (saved / _current(saved) / MANIFEST).write_text(manifest)
    with pytest.raises(CorruptIndexError):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())


def test_a_second_writer_waits_then_fails_clearly(saved):
    # another writer holds the folder
    with FileLock(str(saved / LOCK)), pytest.raises(IndexLockedError, match="being written by another process"):
        save_version(saved, lambda folder: None, {}, timeout=0.2)
    assert GraphRAGIndex.load(saved, embed_model=HashEmbedding()).stats()["chunks"] == 2  # nothing lost


@pytest.mark.parametrize("lock", ["directory", "symlink loop", "symlink"])
def test_a_writer_lock_that_is_no_regular_file_is_a_one_line_error(saved, lock):
    path = saved / LOCK
    path.unlink(missing_ok=True)
    if lock == "directory":
        path.mkdir()
    else:
        path.symlink_to(path if lock == "symlink loop" else saved / CURRENT)
    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding())
    with pytest.raises(CorruptIndexError, match=r"writer lock .* is a (directory|symbolic link); remove it"):
        index.persist(saved)
    assert GraphRAGIndex.load(saved, embed_model=HashEmbedding()).stats()["chunks"] == 2  # nothing lost


@pytest.mark.parametrize("dim", [4, 400_000_000])
def test_a_manifest_asking_for_an_impossible_hash_embedding_is_a_one_line_error(saved, dim):
    manifest = saved / _current(saved) / MANIFEST
    data = json.loads(manifest.read_text())
    data["embed_model"] = f"hash:{dim}"
    manifest.write_text(json.dumps(data))
    with pytest.raises(CorruptIndexError, match=r"a hash embedding has 8 to 16384 dimensions") as err:
        GraphRAGIndex.load(saved)
    assert "\n" not in str(err.value)


WRITER = """
import sys
from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
docs = [make_document(f"p{sys.argv[2]}-{i}", f"Writer {sys.argv[2]} wrote passage {i} about Marlow and the Teme.", "t")
        for i in range(3)]
index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entities="statistical", entity_threshold=0.1))
for _ in range(4):
    index.persist(sys.argv[1])
"""


def test_two_processes_persisting_to_one_folder_never_lose_the_index(tmp_path):
    """Both writers finish (the second waits for the lock); meanwhile CURRENT always loads."""
    target = tmp_path / "shared-idx"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(n)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(2)]
    while any(w.poll() is None for w in writers):
        if (target / CURRENT).exists():  # a reader beside the writers: every load sees a whole version
            assert GraphRAGIndex.load(target, embed_model=HashEmbedding()).stats()["chunks"] == 3
        time.sleep(0.1)
    for w in writers:
        _, err = w.communicate(timeout=240)
        assert w.returncode == 0, err.decode()[-2000:]
    loaded = GraphRAGIndex.load(target, embed_model=HashEmbedding())  # CURRENT names a whole, verified version
    assert loaded.stats()["chunks"] == 3
    kept = sorted(p.name for p in target.glob("v-*"))
    assert kept == ["v-000006", "v-000007", "v-000008"] and _current(target) == "v-000008"  # 8 saves, 3 kept
    assert not list(target.glob(".v-*"))


KILLED = """
import sys, time
from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import storage
from llama_index_graphrag_suite.index.tables import SegmentWriter

def pause(where):  # tell the parent where we are, then give it time to kill us there
    print(where, flush=True)
    time.sleep(30)

stage = sys.argv[2]
docs = [make_document(f"k{i}", f"Passage {i} tells of Marlow, the Teme and the painter Ada Lorne.", "t") for i in range(3)]
index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entities="statistical", entity_threshold=0.1))
index.persist(sys.argv[1])
index.delete("k0")
if stage == "write":  # some segments of version 2 written
    save = SegmentWriter.matrix
    SegmentWriter.matrix = lambda self, matrix: (save(self, matrix), pause("writing"))[0]
else:  # version 2 complete and renamed, CURRENT not flipped yet
    point = storage._point_current
    storage._point_current = lambda root, name: (pause("flipping"), point(root, name))
index.persist(sys.argv[1])
"""


@pytest.mark.parametrize("stage", ["write", "flip"])
def test_a_writer_killed_mid_persist_leaves_a_loadable_index(tmp_path, stage):
    """kill -9 of a real child process while it persists: the old version stays current and loads, the lock
    dies with the process, and the next save cleans up and carries on."""
    target = tmp_path / "idx"
    child = subprocess.Popen([sys.executable, "-c", KILLED, str(target), stage], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = child.stdout.readline().strip()
    assert line in ("writing", "flipping"), child.stderr.read()[-2000:]
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    assert child.returncode == -signal.SIGKILL
    assert _current(target) == "v-000001"
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding()).stats()["chunks"] == 3  # nothing lost
    if stage == "write":
        assert (target / ".v-000002.partial").is_dir() and not (target / "v-000002").exists()  # hidden, never current
    else:  # complete but never made current: kept as a version one may roll forward to
        rows = GraphRAGIndex.versions(target)
        assert [(r["version"], r["current"]) for r in rows] == [(1, True), (2, False)]
    index = _index()
    folder = index.persist(target, keep_versions=5)  # the dead writer's lock is gone; its leftovers too
    assert folder.name == _current(target) and not list(target.glob(".v-*"))
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding()).stats()["chunks"] == 2


def test_versions_are_kept_listed_loaded_and_rolled_back(tmp_path):
    target = tmp_path / "idx"
    index = _index()
    index.persist(target)
    index.insert([make_document("d9", "Teme Bridge crosses the Teme at Marlow. Ada Lorne painted Teme Bridge.", "Teme Bridge")])
    index.persist(target)
    index.delete("d0")
    index.persist(target)
    index.persist(target, keep_versions=3)  # a fourth save: version 1 goes
    rows = GraphRAGIndex.versions(target)
    assert [(r["version"], r["current"], r["counts"]["documents"]) for r in rows] == [(2, False, 3), (3, False, 2), (4, True, 2)]
    assert all(r["created"] and r["error"] is None for r in rows)
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding(), version=2).stats()["documents"] == 3
    reused, build = build_or_load_index(None, target, HashEmbedding(), None, False, version=2)  # bench --version
    assert build["reused"] and reused.stats()["documents"] == 3
    with pytest.raises(IndexNotFoundError, match="no version 1 .kept versions: 2, 3, 4"):
        GraphRAGIndex.load(target, embed_model=HashEmbedding(), version=1)

    GraphRAGIndex.rollback(target, 2)
    assert _current(target) == "v-000002"
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding()).stats()["documents"] == 3
    assert [r["version"] for r in GraphRAGIndex.versions(target)] == [2, 3, 4]  # rolling back deletes nothing
    own = set(json.loads((target / "v-000003" / "manifest.json").read_text())["segments"])
    own -= set(json.loads((target / "v-000002" / "manifest.json").read_text())["segments"])
    damaged = target / "segments" / sorted(own)[0]  # a segment version 3 lists (version 4 too: it changed nothing)
    good = damaged.read_bytes()
    damaged.write_text("[]")
    with pytest.raises(CorruptIndexError, match="checksum"):  # a damaged version is refused, CURRENT unchanged
        GraphRAGIndex.rollback(target, 3)
    assert _current(target) == "v-000002"
    with FileLock(str(target / LOCK)), pytest.raises(IndexLockedError):  # rollback writes: it takes the lock
        rollback(target, 4, timeout=0.2)
    damaged.write_bytes(good)
    GraphRAGIndex.rollback(target, 4)  # and forward again
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding()).stats()["documents"] == 2


def test_versions_rollback_and_version_flags_on_the_cli(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    rows = [{"id": f"d{i}", "title": t, "text": x} for i, (t, x) in enumerate(DOCS)]
    corpus.write_text("\n".join(json.dumps(r) for r in rows))
    idx = tmp_path / "idx"
    common = ["--embed", "hash", "--quiet"]
    assert main(["index", str(corpus), "--out", str(idx), *common]) == 0
    corpus.write_text("\n".join(json.dumps(r) for r in rows[:1]))
    assert main(["index", str(corpus), "--out", str(idx), "--overwrite", "--keep-versions", "2", *common]) == 0
    capsys.readouterr()
    assert main(["versions", str(idx), "--json", *common]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [(r["version"], r["current"], r["counts"]["documents"]) for r in listed] == [(1, False, 2), (2, True, 1)]
    assert main(["versions", str(idx), *common]) == 0
    assert "* " in capsys.readouterr().out
    assert main(["query", str(idx), "Where was Ada Lorne born?", "--json", "--version", "1", "--method", "dense", *common]) == 0
    assert {n["doc_id"] for n in json.loads(capsys.readouterr().out)["nodes"]} == {"d0", "d1"}
    assert main(["methods", str(idx), "--version", "1", *common]) == 0
    assert "2 chunks" in capsys.readouterr().out
    assert main(["query", str(idx), "Ada", "--version", "7", *common]) == 2
    assert "no version 7" in capsys.readouterr().err
    assert main(["rollback", str(idx), "1", *common]) == 0
    assert "now reads version 1" in capsys.readouterr().out and _current(idx) == "v-000001"
    assert main(["query", str(idx), "Where was Ada Lorne born?", "--json", "--method", "dense", *common]) == 0
    assert len(json.loads(capsys.readouterr().out)["nodes"]) == 2
    assert main(["compact", str(idx), "--keep-versions", "0", *common]) == 2
    assert "--keep-versions" in capsys.readouterr().err
    assert main(["compact", str(idx), "--keep-versions", "1", *common]) == 0  # version 1 written again, whole
    assert "v-000003" in capsys.readouterr().out and _current(idx) == "v-000003"
    assert [p.name for p in idx.glob("v-*")] == ["v-000003"]
    assert main(["query", str(idx), "Where was Ada Lorne born?", "--json", "--method", "dense", *common]) == 0
    assert len(json.loads(capsys.readouterr().out)["nodes"]) == 2


def test_index_command_refuses_to_replace_an_index_without_overwrite(tmp_path, capsys):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"d{i}", "title": t, "text": x}) for i, (t, x) in enumerate(DOCS)))
    args = ["index", str(corpus), "--out", str(tmp_path / "idx"), "--embed", "hash", "--quiet"]
    assert main(args) == 0
    before = _current(tmp_path / "idx")
    capsys.readouterr()
    assert main(args) == 2 and "--overwrite" in capsys.readouterr().err
    assert _current(tmp_path / "idx") == before
    assert main([*args, "--overwrite"]) == 0 and _current(tmp_path / "idx") != before


@pytest.mark.parametrize("method", ["dense", "hybrid", "agrag", "a2rag"])
def test_empty_query_is_refused(saved, method):
    retriever = get_retriever(GraphRAGIndex.load(saved, embed_model=HashEmbedding()), method, top_k=2)
    for query in ("", "   \n"):
        with pytest.raises(ValueError, match="query is empty"):
            retriever.retrieve(query)
