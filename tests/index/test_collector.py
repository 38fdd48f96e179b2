"""The cyclic garbage collector is paused while an insert runs (its steps and its commit) and while a save writes
(``index/collector.py``), and through a batched build's batches: its full passes over every object the index keeps
found little garbage and cost a quarter of a batched build's CPU. The caller's collector setting is restored, after
a failure too, and across nested and overlapping pauses."""

from __future__ import annotations

import gc
import threading

import pytest
from llama_index.core.schema import TransformComponent

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import persistence
from llama_index_graphrag_suite.index.batched import build_in_batches
from llama_index_graphrag_suite.index.state import IndexState
from llama_index_graphrag_suite.index.collector import collector_paused

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)


class CollectorWatch(TransformComponent):
    """An extractor that notes whether the collector is on when the insert runs it, and can fail."""

    seen: list = []
    fail: bool = False

    def __call__(self, nodes, **kwargs):
        self.seen.append(gc.isenabled())
        if self.fail:
            raise RuntimeError("this extractor fails")
        return nodes


@pytest.fixture(autouse=True)
def collector_on():
    gc.enable()
    yield
    gc.enable()


def _documents():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def test_an_insert_and_a_save_run_with_the_collector_paused_and_restore_it(tmp_path, monkeypatch):
    watch = CollectorWatch(seen=[])
    index = GraphRAGIndex.from_documents(_documents()[:3], embed_model=HashEmbedding(dim=64), config=CONFIG,
                                         extra_extractors=[watch])
    index.insert(_documents()[3:])
    assert watch.seen == [False, False]  # from_documents' insert, then this one
    assert gc.isenabled()

    writes: list[bool] = []
    write_tables = persistence.write_tables
    monkeypatch.setattr(persistence, "write_tables", lambda *a, **k: (writes.append(gc.isenabled()), write_tables(*a, **k))[1])
    index.persist(tmp_path / "idx")
    assert writes == [False] and gc.isenabled()
    assert GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)).stats() == index.stats()


def test_an_inserts_commit_runs_with_the_collector_paused(tmp_path, monkeypatch):
    """The commit reads every inserted document (the pending-operations log) while the insert's records are held."""
    index = GraphRAGIndex.from_documents(_documents()[:3], embed_model=HashEmbedding(dim=64), config=CONFIG)
    index.persist(tmp_path / "idx")  # a saved index records its document operations
    seen: list[bool] = []
    record = IndexState.record
    monkeypatch.setattr(IndexState, "record", lambda self, *a: (seen.append(gc.isenabled()), record(self, *a))[1])
    index.insert(_documents()[3:5])
    assert seen == [False, False] and gc.isenabled()


def test_a_batched_build_reads_inserts_and_saves_its_batches_with_the_collector_paused(tmp_path):
    seen: list[bool] = []

    def documents():
        for doc in _documents():
            seen.append(gc.isenabled())  # read while the batch before it is inserted, saved and loaded back
            yield doc

    index = build_in_batches(documents(), tmp_path / "idx", 2, embed_model=HashEmbedding(dim=64), config=CONFIG)
    assert len(seen) == len(CORPUS) > 4 and not any(seen)
    assert gc.isenabled()
    assert index.stats()["documents"] == len(CORPUS)


def test_a_failed_insert_restores_the_collector():
    watch = CollectorWatch(seen=[])
    index = GraphRAGIndex.from_documents(_documents()[:3], embed_model=HashEmbedding(dim=64), config=CONFIG,
                                         extra_extractors=[watch])
    watch.fail = True
    with pytest.raises(RuntimeError, match="this extractor fails"):
        index.insert(_documents()[3:])
    assert watch.seen == [False, False] and gc.isenabled()


def test_pauses_nest_and_overlap_and_keep_a_callers_choice():
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()

    inside, leave = threading.Event(), threading.Event()

    def other_thread():
        with collector_paused():
            inside.set()
            leave.wait(5)

    worker = threading.Thread(target=other_thread)
    worker.start()
    assert inside.wait(5)
    with collector_paused():
        pass
    assert not gc.isenabled()  # this thread's pause ended, the other's goes on
    leave.set()
    worker.join(5)
    assert gc.isenabled()

    gc.disable()  # a caller who turned it off keeps it off
    with collector_paused():
        pass
    assert not gc.isenabled()
