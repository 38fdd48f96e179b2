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
from llama_index_graphrag_suite.index import rows, vectors
from llama_index_graphrag_suite.index.vectors import VectorTable

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
    # φ = 0.2995, not 0.3: hashed names have cosines like 3/10 exactly, which the two searches (faiss's product and
    # numpy's over a list's rows) round a last bit apart, so a pair at 0.3 was kept by one of them only (AMD EPYC)
    config = IndexConfig(entities="statistical", entity_threshold=0.1, synonym_threshold=0.2995)
    exact = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    for doc in NEW:
        exact.insert([doc])
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)  # every table is "large"
    monkeypatch.setattr(vector_lists, "NPROBE", 10_000)  # probe every list: the exact pairs
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    for table in (built.chunk_vectors, built.entity_vectors, built.fact_vectors):
        assert table.listed and len(table.lists) == len(table)
    built.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    for name in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        assert getattr(loaded, name).listed
        assert (getattr(loaded, name).lists.lists == getattr(built, name).lists.lists).all()
    calls = []
    monkeypatch.setattr(rows, "listed_synonym_pairs", lambda *a, **k: calls.append(1) or listed_synonym_pairs(*a, **k))
    for doc in NEW:
        loaded.insert([doc])
    assert calls and loaded.entity_vectors.listed and len(loaded.entity_vectors.lists) == len(loaded.entity_vectors)
    assert len(exact.synonyms) > len(built.synonyms)  # the inserts added pairs
    assert dict(loaded.synonyms.items()) == pytest.approx(dict(exact.synonyms.items()))
    again = GraphRAGIndex.load(loaded.persist(tmp_path / "idx").parent, embed_model=HashEmbedding(dim=64))
    assert again.entity_vectors.listed and len(again.entity_vectors.lists) == len(again.entity_vectors)


def test_a_delete_keeps_each_row_in_its_list_and_a_failed_insert_gives_the_lists_back(monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    index = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    table = index.entity_vectors
    list_of = dict(zip(table.ids, table.lists.lists.tolist()))
    index.delete(CORPUS[0][0])
    assert table.listed and len(table.lists) == len(table) < len(list_of)
    assert dict(zip(table.ids, table.lists.lists.tolist())) == {k: list_of[k] for k in table.ids}
    index.insert(NEW[:1])
    before = (list(table.ids), table.lists.lists.copy())
    assert table.listed

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(rows, "keep_alias_pairs", fail)  # after the lists were extended
    with pytest.raises(RuntimeError):
        index.insert(NEW[1:])
    assert table.listed and table.ids == before[0] and (table.lists.lists == before[1]).all()


def test_a_listed_table_scores_the_rows_near_the_query_exactly_and_the_others_below_them():
    x = clustered(20_000, centres=40)
    table = VectorTable(32, [f"r{i}" for i in range(len(x))], [x])
    exact = table.scores(x[7])
    table.lists = train_lists(x)
    assert table.listed
    got = table.scores(x[7])
    probed = np.argsort(-(table.lists.centroids @ x[7]))[:vector_lists.QUERY_NPROBE]
    measured = np.isin(table.lists.lists, probed)
    assert measured.mean() < 0.5  # most rows were not read (32 of 141 lists)
    assert np.allclose(got[measured], exact[measured], atol=1e-6)
    assert got[~measured].max() <= got[measured].min()  # no estimate above a measured row
    top = np.argsort(-exact, kind="stable")[:10]
    assert measured[top].all()  # the query's nearest rows are among the measured
    rows, sims = table.search(x[7], 10)
    assert (rows == top).all() and np.allclose(sims, exact[top])
    every = table.lists.scores(x[7], table.at, nprobe=len(table.lists.centroids))
    assert np.allclose(every, exact, atol=1e-6)  # probing every list is the exact scan
    far = np.flatnonzero(~measured)[:50]
    assert np.allclose(table.scores_at(x[7], far), exact[far], atol=1e-6)  # rows asked for by number: exact


def test_lists_follow_adds_and_removes_and_a_restore():
    x = clustered(3000)
    table = VectorTable(32, [f"r{i}" for i in range(2000)], [x[:2000]])
    table.lists = train_lists(x[:2000])
    table.lists.moves = table.moves
    table.add([f"r{i}" for i in range(2000, 3000)], x[2000:])
    assert table.listed and len(table.lists) == 3000
    point = table.checkpoint()
    table.remove(["r5", "r2500"])
    assert table.listed and len(table.lists) == 2998
    table.restore(point)
    assert table.listed and len(table.lists) == 3000
    nearest = np.argmax(x @ table.lists.centroids.T, axis=1)
    assert (table.lists.lists == nearest).mean() > 0.99


def test_on_a_listed_chunk_table_the_bm25_leaders_dense_cosines_are_exact(monkeypatch):
    """Hybrid fuses dense with BM25: a chunk BM25 ranks first must not carry an estimated cosine."""
    from llama_index_graphrag_suite.methods import query_scores
    from llama_index_graphrag_suite.methods.baselines import HybridRetriever
    from llama_index_graphrag_suite.methods.query_scores import bm25_scores, dense_scores, shared_query_scores

    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 1)  # read one list: most chunks get an estimate
    monkeypatch.setattr(query_scores, "BM25_LEADERS", 2)
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    index = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    assert index.chunk_vectors.listed
    question = "Who sculpted The Copper Hare?"
    query = index.embed_query(question)
    index.chunk_vectors.lists, lists = None, index.chunk_vectors.lists
    exact = index.chunk_dense_scores(query)
    index.chunk_vectors.lists = lists
    leaders = np.argsort(-bm25_scores(index, question), kind="stable")[:2]
    with shared_query_scores():
        got = dense_scores(index, question)
    assert np.allclose(got[leaders], exact[leaders], atol=1e-6)
    assert not np.allclose(got, exact, atol=1e-6)  # the others were estimated
    from llama_index.core import QueryBundle

    from llama_index_graphrag_suite.methods.scoring import hybrid

    fused = HybridRetriever(index, top_k=1).chunk_scores(QueryBundle(question))  # the hybrid baseline reads them too
    assert np.allclose(fused, hybrid(got, bm25_scores(index, question)))


def test_refit_trains_new_lists_once_adds_have_outgrown_them(monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 100)
    x = clustered(2000, centres=40)
    table = VectorTable(32, [f"r{i}" for i in range(400)], [x[:400]])
    first = table.ensure_lists()
    assert len(first.centroids) == 20  # √400
    table.add([f"r{i}" for i in range(400, 800)], x[400:800])
    assert table.ensure_lists(refit=True) is table.lists and len(table.lists.centroids) == 20  # 800 = 2·20²: kept
    table.add([f"r{i}" for i in range(800, 2000)], x[800:])
    assert table.ensure_lists() is table.lists and len(table.lists.centroids) == 20  # no refit asked: kept
    refit = table.ensure_lists(refit=True)
    whole = train_lists(table.vectors())  # what a table built whole trains: the same lists, row for row
    assert table.listed and len(refit.centroids) == 45 and (refit.lists == whole.lists).all()
    assert np.array_equal(refit.centroids, whole.centroids)
    assert table.ensure_lists(refit=True) is refit  # 2000 < 2·45²: kept


def test_a_failed_insert_gives_back_the_lists_it_trained_again(monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)
    monkeypatch.setattr(vectors, "REFIT_GROWTH", 0)  # every insert trains the entity lists again
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    index = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    table = index.entity_vectors
    index.insert(NEW[:1])
    before = table.lists
    assert table.listed and len(before.centroids) == round(len(table) ** 0.5)

    def fail(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(rows, "keep_alias_pairs", fail)  # after the lists were trained again
    with pytest.raises(RuntimeError):
        index.insert(NEW[1:])
    assert table.listed and np.array_equal(table.lists.centroids, before.centroids)
    assert (table.lists.lists == before.lists).all()


def test_a_large_insert_into_a_listed_index_searches_the_kept_lists(monkeypatch):
    """Fewer new names than known ones: the lists, whatever the number of new names (a batch of a batched build)."""
    from llama_index_graphrag_suite.graph import synonyms

    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)
    monkeypatch.setenv(synonyms.APPROX_ENV, "1")  # every insert has "many" new names
    config = IndexConfig(entities="statistical", entity_threshold=0.1, synonym_threshold=0.3)
    index = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    calls = []
    monkeypatch.setattr(rows, "listed_synonym_pairs", lambda *a, **k: calls.append(1) or listed_synonym_pairs(*a, **k))
    index.insert(NEW[:1])
    assert calls and index.entity_vectors.listed
    monkeypatch.setenv(synonyms.APPROX_ENV, "0")  # 0: always exact, lists or not
    calls.clear()
    index.insert(NEW[1:])
    assert not calls
