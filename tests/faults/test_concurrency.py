"""One index shared by threads: queries during insert/delete, persist racing insert.

Before the index had a reader-writer lock, about a quarter of the queries run beside an insert raised
(ValueError, KeyError, IndexError) and ``persist`` beside an insert wrote unloadable versions. Here every
query must return exactly the results of the index before or after the mutation, and every saved
version must load as one of those two states.
"""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.registry import get_retriever

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
METHODS = ["dense", "hybrid", "agrag", "pathrag", "a2rag", "archrag"]
QUESTIONS = ["Who taught Ada Lorne?", "Where is the Vant Gallery?", "Which painting hangs in Dunmore?"]
ROUNDS = 4  # insert + delete cycles


def _answers(index: GraphRAGIndex, retrievers: dict) -> dict:
    return {(m, q): _ids(retrievers[m].retrieve(q)) for m in METHODS for q in QUESTIONS}


def _ids(nodes) -> tuple:
    return tuple((n.node.node_id, round(n.score or 0.0, 6)) for n in nodes)


@pytest.fixture
def shared(documents, caplog):
    """The index without the last passage, and the answers to expect before and after inserting it."""
    caplog.set_level(logging.ERROR)
    base, extra = documents[:-1], documents[-1]
    index = GraphRAGIndex.from_documents(base, embed_model=HashEmbedding(dim=64), config=CONFIG)
    retrievers = {m: get_retriever(index, m, top_k=3) for m in METHODS}
    old = _answers(index, retrievers)
    index.insert([extra])
    new = _answers(index, retrievers)
    index.delete(extra.id_)
    assert _answers(index, retrievers) == old  # delete undoes insert exactly (test_roundtrip.py)
    assert old != new
    return index, extra, retrievers, old, new


def test_queries_during_insert_and_delete_see_the_old_or_the_new_index(shared):
    index, extra, retrievers, old, new = shared
    done, errors, seen = threading.Event(), [], {"old": 0, "new": 0}

    def ask(use_async: bool) -> None:
        try:
            while not done.is_set():
                for m in METHODS:
                    for q in QUESTIONS:
                        r = retrievers[m]
                        got = _ids(asyncio.run(r.aretrieve(q)) if use_async else r.retrieve(q))
                        assert got in (old[m, q], new[m, q]), (m, q, got)
                        if old[m, q] != new[m, q]:
                            seen["old" if got == old[m, q] else "new"] += 1
                with index.reading():  # a direct read sees one state too
                    assert index.stats()["documents"] in (5, 6)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
            done.set()

    readers = [threading.Thread(target=ask, args=(use_async,)) for use_async in (False, True)]
    for t in readers:
        t.start()
    try:
        for _ in range(ROUNDS):
            index.insert([extra])
            index.delete(extra.id_)
    finally:
        done.set()
        for t in readers:
            t.join(timeout=120)
    assert not errors, repr(errors[0])
    assert seen["old"] + seen["new"] > 0


def test_persist_racing_insert_writes_only_whole_states(shared, tmp_path):
    index, extra, _, _, _ = shared
    target = tmp_path / "idx"
    done, errors, saved = threading.Event(), [], []

    def mutate() -> None:
        try:
            for _ in range(ROUNDS):
                index.insert([extra])
                index.delete(extra.id_)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            done.set()

    writer = threading.Thread(target=mutate)
    writer.start()
    while not done.is_set() or not saved:
        saved.append(index.persist(target, keep_versions=100).name)
    writer.join(timeout=120)
    assert not errors, repr(errors[0])
    states = {}
    for name in saved:  # every version loads, verified, as the index before or after an insert
        loaded = GraphRAGIndex.load(target, embed_model=HashEmbedding(dim=64), version=int(name[2:]))
        states[name] = loaded.stats()["documents"]
        assert sorted(loaded.chunks) in (sorted(index.chunks), sorted([*index.chunks, f"{extra.id_}#0"]))
    assert set(states.values()) <= {5, 6}
    assert GraphRAGIndex.load(target, embed_model=HashEmbedding(dim=64)).stats() == index.stats()


def test_a_query_cannot_mutate_its_own_index(shared):
    index, extra, _, _, _ = shared
    with index.reading(), pytest.raises(RuntimeError, match="from inside a query"):
        index.insert([extra])  # would wait for itself: refused instead
    with index.reading(), index.reading():  # reading is re-entrant
        assert index.stats()["documents"] == 5
