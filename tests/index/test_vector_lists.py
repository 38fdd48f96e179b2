"""Vector lists: an insert's new names find their synonyms in the rows of a few lists, saved with the index."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph import vector_lists
from llama_index_graphrag_suite.graph.synonyms import listed_synonym_pairs, synonym_pairs
from llama_index_graphrag_suite.graph.vector_lists import train_lists
from llama_index_graphrag_suite.index import rows

from conftest import CORPUS


def clustered(n: int, dim: int = 32, centres: int = 20, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centre = rng.normal(size=(centres, dim))
    x = centre[rng.integers(0, centres, n)] + 0.3 * rng.normal(size=(n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_probing_every_list_is_the_exact_search():
    x = clustered(3000)
    lists = train_lists(x)
    queries = x[:50]
    sims, found = lists.search(queries, lambda r: x[r], k=10, nprobe=len(lists.centroids))
    exact = queries @ x.T
    top = np.argsort(-exact, axis=1, kind="stable")[:, :10]
    assert np.allclose(sims, np.take_along_axis(exact, top, axis=1), atol=1e-5)
    assert (np.sort(found, axis=1) == np.sort(top, axis=1)).mean() > 0.99  # ties may swap


def test_a_few_lists_find_nearly_every_close_pair():
    x = clustered(5000)
    rows = np.arange(4800, 5000)
    exact = set(zip(*[a.tolist() for a in synonym_pairs(x, 0.9, 20, rows)[:2]]))
    listed = set(zip(*[a.tolist() for a in listed_synonym_pairs(train_lists(x), lambda r: x[r], rows, 0.9, 20)[:2]]))
    assert exact and listed <= exact and len(listed) >= 0.95 * len(exact)


def test_extending_puts_new_rows_in_their_nearest_list():
    x = clustered(2000)
    lists = train_lists(x[:1500])
    grown = lists.extended(x[1500:])
    assert len(grown) == 2000 and (grown.lists[:1500] == lists.lists).all()
    nearest = np.argmax(x[1500:] @ lists.centroids.T, axis=1)
    assert (grown.lists[1500:] == nearest).mean() > 0.99


def _docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


NEW = [make_document("n1", "Orla Finch sculpted The Copper Hare in Marlow with Ada Lorne.", "Orla Finch"),
       make_document("n2", "Ada Lorne wrote about Marlow and The Copper Hare.", "Marlow notes")]


def test_an_insert_searches_the_saved_lists_and_finds_the_exact_pairs_when_it_probes_them_all(tmp_path, monkeypatch):
    config = IndexConfig(entities="statistical", entity_threshold=0.1, synonym_threshold=0.3)
    exact = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    for doc in NEW:
        exact.insert([doc])
    monkeypatch.setattr(rows, "LISTED_MIN_ROWS", 10)  # every table is "large"
    monkeypatch.setattr(vector_lists, "NPROBE", 10_000)  # probe every list: the exact pairs
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    assert built.state.entity_lists is not None and len(built.state.entity_lists) == len(built.entity_vectors)
    built.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert (loaded.state.entity_lists.lists == built.state.entity_lists.lists).all()
    calls = []
    monkeypatch.setattr(rows, "listed_synonym_pairs", lambda *a, **k: calls.append(1) or listed_synonym_pairs(*a, **k))
    for doc in NEW:
        loaded.insert([doc])
    assert calls and len(loaded.state.entity_lists) == len(loaded.entity_vectors)
    assert len(exact.synonyms) > len(built.synonyms)  # the inserts added pairs
    assert dict(loaded.synonyms.items()) == pytest.approx(dict(exact.synonyms.items()))
    again = GraphRAGIndex.load(loaded.persist(tmp_path / "idx").parent, embed_model=HashEmbedding(dim=64))
    assert len(again.state.entity_lists) == len(again.entity_vectors)


def test_a_delete_makes_the_lists_again_and_a_failed_insert_keeps_them(tmp_path, monkeypatch):
    monkeypatch.setattr(rows, "LISTED_MIN_ROWS", 10)
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    index = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    index.delete(CORPUS[0][0])
    index.insert(NEW[:1])  # rows moved: the lists are made again, for every row
    lists = index.state.entity_lists
    assert len(lists) == len(index.entity_vectors) and lists.moves == index.entity_vectors.moves

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(rows, "keep_alias_pairs", fail)  # after the lists were extended
    with pytest.raises(RuntimeError):
        index.insert(NEW[1:])
    assert index.state.entity_lists is lists and len(lists) == len(index.entity_vectors)
