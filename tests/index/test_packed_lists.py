"""Packed list rows: a listed table's rows kept again list by list give the same scores and rows as reading them
from the table, and stay right through saves, loads, inserts, deletes and a failed change's restore."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph import vector_lists
from llama_index_graphrag_suite.graph.vector_lists import VectorLists, row_products, train_lists
from llama_index_graphrag_suite.index import listed_io, rows, vectors
from llama_index_graphrag_suite.index.vectors import LISTED_MIN_ROWS, VectorTable

from conftest import CORPUS
from test_vector_lists import NEW, clustered


def unpacked(table: VectorTable) -> VectorTable:
    """The same rows and lists without packed rows: queries read the rows from the table (the path before)."""
    plain = VectorTable(table.dim, list(table.ids), [table.vectors()])
    plain.lists = VectorLists(table.lists.centroids, table.lists.lists, plain.moves)
    return plain


def packed(table: VectorTable) -> VectorTable:
    """``table`` with its rows packed, as a save packs them (in RAM here)."""
    order = table.lists.grouped()[0]
    table.lists = table.lists.with_packed(table.at(np.sort(order))[np.argsort(np.argsort(order))])
    return table


def assert_same_answers(table: VectorTable, plain: VectorTable, queries: np.ndarray, k: int = 10) -> None:
    for q in queries:
        got, want = table.scores(q), plain.scores(q)
        near = plain.lists.centroids @ q
        probed = np.isin(plain.lists.lists, np.argsort(-near)[:vector_lists.QUERY_NPROBE])
        assert np.array_equal(got, want)  # the same cosines, to the last bit (row_products)
        assert got[~probed].max(initial=-2) <= got[probed].min()  # estimates below every measured row
        rows, sims = table.search(q, k)
        want_rows, want_sims = plain.search(q, k)
        assert rows.tolist() == want_rows.tolist() and np.array_equal(sims, want_sims)


def test_packed_rows_give_the_same_scores_and_top_rows_on_a_table_of_listed_size():
    x = clustered(LISTED_MIN_ROWS, dim=16, centres=300, seed=1)
    table = VectorTable(16, [f"r{i}" for i in range(len(x))], [x[:60_000], x[60_000:]])
    assert table.ensure_lists() is not None
    plain = unpacked(table)
    packed(table)
    assert table.lists.packed is not None and len(table.lists.packed) == len(x)
    queries = np.concatenate([x[:20], clustered(20, dim=16, centres=300, seed=2)])
    assert_same_answers(table, plain, queries)
    q = queries[0]
    found = table.lists.top(q, 10, table.at)  # the top-k path reads the probed lists alone
    assert found is not None and found[0].tolist() == plain.search(q, 10)[0].tolist()
    every = table.lists.scores(q, table.at, nprobe=len(table.lists.centroids))
    assert np.allclose(every, x @ q, atol=1e-6)  # probing every list is the exact scan


def test_rows_added_and_removed_after_packing_and_a_restore_keep_the_answers():
    x = clustered(6000, seed=3)
    table = VectorTable(32, [f"r{i}" for i in range(4000)], [x[:4000]])
    table.lists = train_lists(x[:4000])
    table.lists.moves = table.moves
    packed(table)
    table.add([f"r{i}" for i in range(4000, 6000)], x[4000:])  # the tail: read from the table
    assert table.listed and len(table.lists.packed) == 4000
    assert_same_answers(table, unpacked(table), x[::500])
    point = table.checkpoint()
    table.remove(["r3", "r1000", "r4500", "r5999"])
    assert table.listed and table.lists.packed.gone
    assert_same_answers(table, unpacked(table), x[::500])
    assert "r3" not in table and (table.lists.packed.rows < len(table)).all()
    table.restore(point)
    assert table.listed and len(table) == 6000
    assert_same_answers(table, unpacked(table), x[::500])


def test_a_query_without_packed_rows_reads_the_table_as_before():
    x = clustered(3000, seed=4)
    table = VectorTable(32, [f"r{i}" for i in range(len(x))], [x])
    table.lists = train_lists(x)
    table.lists.moves = table.moves
    assert table.lists.packed is None
    for q in x[:5]:
        members = np.isin(table.lists.lists, np.argsort(-(table.lists.centroids @ q))[:vector_lists.QUERY_NPROBE])
        assert np.array_equal(table.scores(q)[members], row_products(x[members], q))


def _docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def _lists_entry(folder, name):
    version = json.loads((folder / "CURRENT").read_text())["version"]
    return json.loads((folder / version / "manifest.json").read_text())["vector_lists"][name]


def _check(index):
    for name in ("chunk_vectors", "fact_vectors", "entity_vectors"):
        table = getattr(index, name)
        assert table.listed
        queries = table.vectors()[::3]
        assert_same_answers(table, unpacked(table), queries, k=3)


def test_a_row_has_one_cosine_wherever_it_is_read_from():
    x = clustered(3000, seed=6)
    q = x[0]
    once = row_products(x, q)
    for step in (1, 3, 7, 64, 777):  # BLAS rounds a matrix's last rows its own way: these do not
        assert np.array_equal(np.concatenate([row_products(x[i:i + step], q) for i in range(0, len(x), step)]), once)
    x[2001] = x[5]  # twins: the same cosine, so they rank by row, packed or not
    table = VectorTable(32, [f"r{i}" for i in range(len(x))], [x])
    table.lists = train_lists(x)
    table.lists.moves = table.moves
    for way in (table, packed(unpacked(table))):
        assert way.scores(x[5])[5] == way.scores(x[5])[2001]
        assert way.search(x[5], 2)[0].tolist() == [5, 2001]


def test_saves_write_packed_rows_once_and_loads_inserts_and_deletes_keep_them_right(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)  # every table is "large"
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 2)  # most rows get an estimate
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    folder = tmp_path / "idx"
    built.persist(folder)
    first = _lists_entry(folder, "chunks")
    assert len(first) == 3 and built.chunk_vectors.lists.packed.segment == first[2]
    assert len(_lists_entry(folder, "entities")) == 2  # not in PACKED_TABLES: lists only
    _check(built)

    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert loaded.chunk_vectors.lists.packed.segment == first[2]
    _check(loaded)
    loaded.insert([NEW[0]])  # a tail outside the packed rows
    assert len(loaded.chunk_vectors.lists.packed) < len(loaded.chunk_vectors)
    _check(loaded)
    loaded.persist(folder)
    assert _lists_entry(folder, "chunks")[2] == first[2]  # the same file, not written again

    loaded.delete(CORPUS[-1][0])
    assert loaded.chunk_vectors.lists.packed.gone
    _check(loaded)
    loaded.persist(folder)  # one segment, shortened: written whole, packed again
    assert not loaded.chunk_vectors.lists.packed.gone
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert again.chunk_vectors.ids == loaded.chunk_vectors.ids
    assert np.array_equal(again.chunk_vectors.lists.packed.rows, loaded.chunk_vectors.lists.packed.rows)
    _check(again)

    monkeypatch.setattr(rows, "keep_alias_pairs", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    before = list(again.chunk_vectors.ids)
    with pytest.raises(RuntimeError):
        again.insert([NEW[1]])
    assert again.chunk_vectors.ids == before
    _check(again)


def test_a_save_after_removals_names_the_packed_rows_again_with_where_each_entry_is_now(tmp_path):
    from llama_index_graphrag_suite.index.tables import SegmentWriter, read_segment

    x = clustered(4000, seed=5)
    table = VectorTable(32, [f"r{i}" for i in range(len(x))], [x[:3000], x[3000:]])
    table.lists = train_lists(x)
    table.lists.moves = table.moves
    writer = SegmentWriter(tmp_path)
    first = listed_io.write_vector_lists({"chunks": table}, writer, None, {"chunks"})
    assert len(first["vector_lists"]["chunks"]) == 3
    table.remove([f"r{i}" for i in range(3500, 3600)])  # the first block stays as it was (mapped, saved)
    assert table.lists.packed.gone
    second = listed_io.write_vector_lists({"chunks": table}, writer, first, set())
    entry = second["vector_lists"]["chunks"]
    assert len(entry) == 4 and entry[2] == first["vector_lists"]["chunks"][2]
    again = VectorTable(32, list(table.ids), [table.vectors()])
    listed_io.read_vector_lists(tmp_path / "segments", second, {"chunks": again},
                                lambda name: read_segment(tmp_path / "segments" / name))
    assert np.array_equal(again.lists.packed.rows, table.lists.packed.rows)
    assert np.array_equal(again.lists.packed.bounds, table.lists.packed.bounds)
    assert_same_answers(again, unpacked(table), x[::400])
    bad = {"vector_lists": {"chunks": entry[:3]}}  # the entries' rows left out: they no longer fit
    with pytest.raises(ValueError, match="packed"):
        listed_io.read_vector_lists(tmp_path / "segments", bad, {"chunks": VectorTable(32, list(table.ids), [table.vectors()])},
                                    lambda name: read_segment(tmp_path / "segments" / name))


def test_an_index_saved_without_packed_rows_loads_and_answers_from_the_table(tmp_path, monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)
    monkeypatch.setattr(listed_io, "PACKED_TABLES", ())  # as saved before packed rows existed
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    folder = tmp_path / "idx"
    built.persist(folder)
    assert len(_lists_entry(folder, "chunks")) == 2
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert loaded.chunk_vectors.listed and loaded.chunk_vectors.lists.packed is None
    _check(loaded)
    monkeypatch.setattr(listed_io, "PACKED_TABLES", ("chunks", "facts"))
    loaded.persist(folder)  # the first save with this code packs them
    assert len(_lists_entry(folder, "chunks")) == 3 and loaded.chunk_vectors.lists.packed is not None
    _check(GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)))
