"""A named build step builds what a method's first query would (ArchRAG's hierarchy): saved, and never built on
a query of the loaded index."""

from __future__ import annotations

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.methods.archrag.hierarchy import ArchRAGHierarchy

from conftest import CORPUS

QUESTION = "Where was the teacher of Ada Lorne born?"


def _no_build(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the hierarchy was built on a query")

    monkeypatch.setattr(ArchRAGHierarchy, "build", classmethod(refuse))


def test_prepare_builds_the_hierarchy_once_and_a_loaded_index_reads_it(tmp_path, monkeypatch):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    seconds = index.prepare(["archrag"])
    assert set(seconds) == {"archrag"} and "prepare.archrag" in index.build_info["stage_seconds"]
    expected = [n.node.node_id for n in index.as_retriever("archrag").retrieve(QUESTION)]
    version = index.persist(tmp_path / "idx")
    assert any(p.name.startswith("archrag-") for p in (version / "artefacts").iterdir())
    _no_build(monkeypatch)
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert [n.node.node_id for n in loaded.as_retriever("archrag").retrieve(QUESTION)] == expected


def test_the_cli_prepares_archrag_by_default_and_a_query_does_not_build(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "docs"
    corpus.mkdir()
    for i, title, text in CORPUS:
        (corpus / f"{i}.txt").write_text(f"{title}\n\n{text}", encoding="utf-8")
    common = ["--embed", "hash:64", "--entities", "statistical", "--entity-threshold", "0.1"]
    assert main(["index", str(corpus), "--out", str(tmp_path / "idx"), *common]) == 0
    assert "prepared archrag" in capsys.readouterr().out
    _no_build(monkeypatch)
    assert main(["query", str(tmp_path / "idx"), QUESTION, "--embed", "hash:64", "--method", "archrag", "--quiet"]) == 0
    assert main(["index", str(corpus), "--out", str(tmp_path / "bad"), *common, "--prepare", "nosuch", "--quiet"]) == 2
    assert "nosuch" in capsys.readouterr().err
    monkeypatch.undo()
    # an index ArchRAG cannot run on (no entities) is still built, with a warning
    assert main(["index", str(corpus), "--out", str(tmp_path / "plain"), "--embed", "hash:64", "--entities", "statistical",
                 "--quiet"]) == 0
    assert "archrag not prepared" in capsys.readouterr().err


def test_prepare_names_an_unknown_method():
    from llama_index_graphrag_suite.registry import UnknownMethodError

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    with pytest.raises(UnknownMethodError):
        index.prepare(["nosuch"])
