"""ArchRAG's community hierarchy is built once per saved version: the first process that needs it builds it and
adds it to the version's folder at once (atomically, under the folder's writer lock); later processes load it."""

from __future__ import annotations

import logging

import pytest

from llama_index_graphrag_suite.index import GraphRAGIndex
from llama_index_graphrag_suite.index.storage import list_versions, open_version
from llama_index_graphrag_suite.methods.archrag.hierarchy import ArchRAGHierarchy
from llama_index_graphrag_suite.registry import get_retriever

QUESTION = "Where did the painter of The Grey Harbour study?"


@pytest.fixture
def saved(documents, embed, tmp_path):
    from llama_index_graphrag_suite.config import IndexConfig

    index = GraphRAGIndex.from_documents(documents, embed_model=embed, config=IndexConfig(entities="statistical",
                                                                                          entity_threshold=0.1))
    index.persist(tmp_path / "idx")
    return tmp_path / "idx"


def _artefacts(folder):
    version, _ = open_version(folder)
    artefacts = version / "artefacts"
    return sorted(p.name for p in artefacts.iterdir()) if artefacts.is_dir() else []


def _chunks(index):
    return [n.node.node_id for n in get_retriever(index, "archrag", top_k=3).retrieve(QUESTION)]


def test_built_once_then_loaded_by_the_next_process(saved, embed, monkeypatch):
    assert _artefacts(saved) == []
    first = _chunks(GraphRAGIndex.load(saved, embed_model=embed))
    names = _artefacts(saved)
    assert len(names) == 1 and names[0].startswith("archrag-extractive-")
    assert len(list_versions(saved)) == 1  # added to the loaded version, not saved as a new one
    open_version(saved, verify=True)  # the index's own checksums still hold

    def no_rebuild(*args, **kwargs):
        raise AssertionError("the hierarchy was rebuilt although a saved one exists")

    monkeypatch.setattr(ArchRAGHierarchy, "build", classmethod(no_rebuild))
    assert _chunks(GraphRAGIndex.load(saved, embed_model=embed)) == first  # same results from the loaded one


def test_a_later_save_carries_the_hierarchy_into_the_new_version(saved, embed, documents, monkeypatch):
    index = GraphRAGIndex.load(saved, embed_model=embed)
    _chunks(index)
    index.persist(saved)  # nothing changed, but a new version: it must hold the hierarchy too
    assert len(list_versions(saved)) == 2 and len(_artefacts(saved)) == 1
    monkeypatch.setattr(ArchRAGHierarchy, "build", classmethod(lambda *a, **k: pytest.fail("rebuilt")))
    _chunks(GraphRAGIndex.load(saved, embed_model=embed))


def test_not_written_for_unsaved_changes(saved, embed):
    from llama_index_graphrag_suite.documents import make_document

    index = GraphRAGIndex.load(saved, embed_model=embed)
    index.insert([make_document("p-new", "Ada Lorne later taught at the Vant Gallery school.", "Later years")])
    _chunks(index)  # built for the in-memory state, which is not the saved version
    assert _artefacts(saved) == []


def test_not_written_when_another_writer_saved_since(saved, embed):
    reader = GraphRAGIndex.load(saved, embed_model=embed)
    GraphRAGIndex.load(saved, embed_model=embed).persist(saved)  # another process saves a newer version
    _chunks(reader)
    assert _artefacts(saved) == []  # the hierarchy of the older version is not put into the newer one


def test_a_folder_it_cannot_write_keeps_it_in_memory(saved, embed, caplog, monkeypatch):
    from llama_index_graphrag_suite.index import artefacts

    def read_only(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(saved))

    monkeypatch.setattr(artefacts, "folder_writer", read_only)
    with caplog.at_level(logging.WARNING):
        assert _chunks(GraphRAGIndex.load(saved, embed_model=embed))
    assert "kept in memory" in caplog.text and _artefacts(saved) == []


def test_a_hierarchy_saved_with_a_setting_since_removed_still_loads():
    """A retrieval setting renamed or removed later (the guard's settings changed more than once) must not make
    every saved hierarchy unreadable and force a rebuild: only the hierarchy's own fields name and shape it."""
    from llama_index_graphrag_suite.methods.archrag.config import ArchRAGConfig
    from llama_index_graphrag_suite.methods.archrag.hierarchy import _saved_config

    saved = {**ArchRAGConfig().hierarchy_config().model_dump(mode="json"), "guard_setting_from_an_older_release": 0.02}
    with pytest.raises(ValueError):
        ArchRAGConfig.model_validate(saved)  # what load() did: the hierarchy was rebuilt
    config = _saved_config(saved)
    assert config.hierarchy_digest() == ArchRAGConfig().hierarchy_digest()
