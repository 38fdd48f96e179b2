"""Hostile cases for the index folder (issue 18, first part): writers racing, escaping paths, bad manifests.

Each test builds a tiny index with the hashing embedding, so the whole module runs in seconds on 2 cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from llama_index_graphrag_suite import CorruptIndexError, GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.storage import CURRENT, LOCK, MANIFEST, IndexLockedError, save_version
from llama_index_graphrag_suite.registry import get_retriever

ROOT = Path(__file__).resolve().parent.parent
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
    outside = tmp_path / "outside.json"
    (version / "chunks.json").rename(outside)
    os.symlink(outside, version / "chunks.json")
    with pytest.raises(CorruptIndexError, match="symlink or lies outside"):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())


@pytest.mark.parametrize("manifest", ["[]", '"text"', '{"format_version": 1}', '{"format_version": 1, "files": []}',
                                      '{"format_version": 1, "files": {"../x": "00"}}'])
def test_malformed_manifests_are_corrupt_index_errors(saved, manifest):
    (saved / _current(saved) / MANIFEST).write_text(manifest)
    with pytest.raises(CorruptIndexError):
        GraphRAGIndex.load(saved, embed_model=HashEmbedding())


def test_a_second_writer_waits_then_fails_clearly(saved):
    with FileLock(str(saved / LOCK)):  # another writer holds the folder
        with pytest.raises(IndexLockedError, match="being written by another process"):
            save_version(saved, lambda folder: None, {}, timeout=0.2)
    assert GraphRAGIndex.load(saved, embed_model=HashEmbedding()).stats()["chunks"] == 2  # nothing lost


WRITER = """
import sys
from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
docs = [make_document(f"p{sys.argv[2]}-{i}", f"Writer {sys.argv[2]} wrote passage {i} about Marlow and the Teme.", "t")
        for i in range(3)]
index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(), config=IndexConfig(entity_threshold=0.1))
for _ in range(4):
    index.persist(sys.argv[1])
"""


def test_two_processes_persisting_to_one_folder_never_lose_the_index(tmp_path):
    target = tmp_path / "shared-idx"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(n)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE) for n in range(2)]
    for w in writers:
        _, err = w.communicate(timeout=240)
        assert w.returncode == 0, err.decode()[-2000:]
    loaded = GraphRAGIndex.load(target, embed_model=HashEmbedding())  # CURRENT names a whole, verified version
    assert loaded.stats()["chunks"] == 3
    assert sorted(p.name for p in target.glob("v-*")) == [_current(target)]


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
