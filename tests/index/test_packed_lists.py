"""Packed tables: a listed chunk or fact table saved list by list holds its rows only there (one copy), and gives
the same rows, scores and top rows, bit for bit, as a plain table of the same rows and lists, through adds,
removes, restores, saves, loads, inserts, deletes, a rebase and a rollback."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig, IndexConflictError
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph import vector_lists
from llama_index_graphrag_suite.graph.vector_lists import PackedRows, VectorLists, row_products, train_lists
from llama_index_graphrag_suite.index import rows, vector_io, vectors
from llama_index_graphrag_suite.index.compaction_hint import compaction_reason
from llama_index_graphrag_suite.index.segment_files import read_segment
from llama_index_graphrag_suite.index.storage import CorruptIndexError, rollback
from llama_index_graphrag_suite.index.vectors import LISTED_MIN_ROWS, VectorTable

from conftest import CORPUS
from test_vector_lists import NEW, clustered

TABLES = ("chunk_vectors", "fact_vectors", "entity_vectors")
PACKED = vector_io.PACKED_TABLES  # what this code packs (a test that saves as older code did puts it back)


def unpacked(table: VectorTable) -> VectorTable:
    """The same rows and lists as a plain table: its rows in row order, queries gather them (the path before)."""
    plain = VectorTable(table.dim, list(table.ids), [np.array(table.vectors())])
    plain.lists = VectorLists(table.lists.centroids, table.lists.lists, plain.moves)
    return plain


def packed(table: VectorTable) -> VectorTable:
    """``table`` packed as a save packs it (in RAM here): every row list by list, the blocks dropped."""
    order, bounds = table.lists.grouped()
    table.pack(PackedRows(table.at(order), bounds, order.astype(np.int64)))
    return table


def assert_same_answers(table: VectorTable, plain: VectorTable, queries: np.ndarray, k: int = 10) -> None:
    every = np.arange(len(plain))
    assert table.ids == plain.ids and np.array_equal(table.at(every), plain.at(every))
    shuffled = np.random.default_rng(len(plain)).permutation(every)[:500]
    assert np.array_equal(table.at(shuffled), plain.at(shuffled))  # rows in any order, packed and not mixed
    for q in queries:
        got, want = table.scores(q), plain.scores(q)
        near = plain.lists.centroids @ q
        probed = np.isin(plain.lists.lists, np.argsort(-near)[:vector_lists.QUERY_NPROBE])
        assert np.array_equal(got, want)  # the same cosines, to the last bit (row_products)
        assert got[~probed].max(initial=-2) <= got[probed].min()  # estimates below every measured row
        rows_, sims = table.search(q, k)
        want_rows, want_sims = plain.search(q, k)
        assert rows_.tolist() == want_rows.tolist() and np.array_equal(sims, want_sims)
        assert np.array_equal(table.scores_at(q, shuffled), plain.scores_at(q, shuffled))
    got_s, got_r = table.lists.search(queries, table.at, k)  # many queries at once (synonyms, PathRAG's names):
    want_s, want_r = plain.lists.search(queries, plain.at, k)  # a BLAS product, whose last bit depends on the slice
    assert np.array_equal(got_r, want_r) and np.allclose(got_s, want_s, rtol=0, atol=1e-6)


def test_a_packed_table_holds_its_rows_once_and_answers_as_the_plain_one_on_a_table_of_listed_size():
    x = clustered(LISTED_MIN_ROWS, dim=16, centres=300, seed=1)
    table = VectorTable(16, [f"r{i}" for i in range(len(x))], [x[:60_000], x[60_000:]])
    assert table.ensure_lists() is not None
    plain = unpacked(table)
    packed(table)
    assert table.blocks() and not table._tail_blocks() and table.packed.size == len(x)  # no other copy
    assert table.lists.packed is table.packed
    queries = np.concatenate([x[:20], clustered(20, dim=16, centres=300, seed=2)])
    assert_same_answers(table, plain, queries)
    assert np.array_equal(table.vectors(), x)
    q = queries[0]
    found = table.lists.top(q, 10, table.at)  # the top-k path reads the probed lists alone
    assert found is not None and found[0].tolist() == plain.search(q, 10)[0].tolist()
    every = table.lists.scores(q, table.at, nprobe=len(table.lists.centroids))
    assert np.allclose(every, x @ q, atol=1e-6)  # probing every list is the exact scan


def test_rows_added_and_removed_after_packing_and_a_restore_keep_the_rows_and_answers():
    x = clustered(6000, seed=3)
    table = VectorTable(32, [f"r{i}" for i in range(4000)], [x[:4000]])
    table.lists = train_lists(x[:4000])
    table.lists.moves = table.moves
    packed(table)
    table.add([f"r{i}" for i in range(4000, 6000)], x[4000:])  # the tail: a block after the packed rows
    assert table.listed and table.packed.size == 4000 and table.lists.packed is table.packed
    assert_same_answers(table, unpacked(table), x[::500])
    added = table.at(np.arange(4000, 6000))
    point = table.checkpoint()
    table.remove(["r3", "r1000", "r4500", "r5999"])  # packed rows and rows after them
    assert table.listed and table.packed.gone and table.packed.size == 3998 and table.lists.packed is table.packed
    assert_same_answers(table, unpacked(table), x[::500])
    assert "r3" not in table and np.array_equal(table.at([0, 3, 3997]), x[[0, 4, 3999]])
    table.remove(["r5000"])  # after the packed rows only: they stay as they are
    assert table.packed.size == 3998 and len(table) == 5995
    assert_same_answers(table, unpacked(table), x[::500])
    table.restore(point)
    assert table.listed and len(table) == 6000 and table.packed.size == 4000 and not table.packed.gone
    assert_same_answers(table, unpacked(table), x[::500])
    table.remove([f"r{i}" for i in range(4000)])  # every packed row: the table is its tail
    assert table.packed.size == 0 and np.array_equal(table.vectors(), added)
    assert_same_answers(table, unpacked(table), x[4000::500])


def test_a_query_without_packed_rows_reads_the_table_as_before():
    x = clustered(3000, seed=4)
    table = VectorTable(32, [f"r{i}" for i in range(len(x))], [x])
    table.lists = train_lists(x)
    table.lists.moves = table.moves
    assert table.lists.packed is None and table.packed is None
    for q in x[:5]:
        members = np.isin(table.lists.lists, np.argsort(-(table.lists.centroids @ q))[:vector_lists.QUERY_NPROBE])
        assert np.array_equal(table.scores(q)[members], row_products(x[members], q))


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


def _docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def _manifest(folder, version=None):
    version = version or json.loads((folder / "CURRENT").read_text())["version"]
    return json.loads((folder / version / "manifest.json").read_text())


def _check(index, plain=None):
    """Every table answers as a plain table of its rows; ``plain``: also the same rows as those tables."""
    for name in TABLES:
        table = getattr(index, name)
        assert table.listed
        if plain is not None:
            assert np.array_equal(table.vectors(), plain[name].vectors()) and table.ids == plain[name].ids
        assert_same_answers(table, unpacked(table), table.vectors()[::3], k=3)


def _large(monkeypatch):
    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)  # every table is "large"
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 2)  # most rows get an estimate
    return IndexConfig(entities="statistical", entity_threshold=0.1)


def _stored_rows(manifest, name):
    """How many rows the version's matrices hold for table ``name`` (each row once, or some twice)."""
    return sum(p[2] for p in manifest["vectors"][name]) + sum(
        1 for _ in manifest["vector_lists"][name][2:3])  # a second copy (format 3) would show here


def test_saves_store_each_row_once_and_loads_inserts_and_deletes_keep_the_rows_right(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    folder = tmp_path / "idx"
    built.persist(folder)
    first = _manifest(folder)
    head = first["vectors"]["chunks"][0]
    assert first["format_version"] == 4 and len(first["vectors"]["chunks"]) == 1 and len(head) == 4
    assert len(first["vector_lists"]["chunks"]) == 2 and _stored_rows(first, "chunks") == len(built.chunk_vectors)
    for name, table in (("chunks", built.chunk_vectors), ("entities", built.entity_vectors),
                        ("facts", built.fact_vectors)):  # every listed table: read list by list by some query
        assert len(first["vectors"][name]) == 1 and len(first["vectors"][name][0]) == 4
        assert table.packed.segment == first["vectors"][name][0][1] and table.mapped  # the saved file, read
    _check(built)

    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert loaded.chunk_vectors.packed.segment == head[1] and not loaded.chunk_vectors._tail_blocks()
    _check(loaded, {n: getattr(built, n) for n in TABLES})
    loaded.insert([NEW[0]])  # a tail after the packed rows
    assert loaded.chunk_vectors.packed.size < len(loaded.chunk_vectors)
    _check(loaded)
    loaded.persist(folder)
    second = _manifest(folder)["vectors"]["chunks"]
    assert second[0] == head and len(second) == 2  # the same part, not written again, and the new rows
    assert _stored_rows(_manifest(folder), "chunks") == len(loaded.chunk_vectors)
    at_second = {n: unpacked(getattr(loaded, n)) for n in TABLES}

    loaded.delete(CORPUS[0][0])  # a packed row: marked gone, the others renumbered
    assert loaded.chunk_vectors.packed.gone
    _check(loaded)
    loaded.persist(folder)
    third = _manifest(folder)["vectors"]["chunks"]
    assert third[0][1] == head[1] and third[0][3] != head[3]  # the same matrix, where each row is now
    assert _stored_rows(_manifest(folder), "chunks") == len(loaded.chunk_vectors)
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert np.array_equal(again.chunk_vectors.packed.rows, loaded.chunk_vectors.packed.rows)
    _check(again, {n: getattr(loaded, n) for n in TABLES})
    loaded.persist(folder)  # nothing changed: the same parts named again
    assert _manifest(folder)["vectors"]["chunks"] == third

    monkeypatch.setattr(rows, "keep_alias_pairs", lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom")))
    before = {n: unpacked(getattr(again, n)) for n in TABLES}
    with pytest.raises(RuntimeError):
        again.insert([NEW[1]])
    _check(again, before)  # a failed insert leaves nothing

    rollback(folder, 2)  # the version before the delete: the same packed matrix, its own entries
    _check(GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)), at_second)


def test_a_save_packs_again_when_the_new_rows_outgrow_the_packed_ones_and_at_compaction(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs()[:2], embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    head = _manifest(folder)["vectors"]["chunks"][0]
    index.insert(_docs()[2:])  # more new rows than packed ones
    index.persist(folder)
    parts = _manifest(folder)["vectors"]["chunks"]
    assert len(parts) == 1 and parts[0][1] != head[1] and parts[0][2] == len(index.chunk_vectors)
    monkeypatch.setattr(vector_io, "MAX_SEGMENTS", 2)
    index.insert([NEW[0]])
    index.persist(folder)
    assert len(_manifest(folder)["vectors"]["chunks"]) == 2
    index.insert([NEW[1]])
    index.persist(folder)
    assert len(_manifest(folder)["vectors"]["chunks"]) == 1  # compaction: one packed part again
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    _check(again, {n: getattr(index, n) for n in TABLES})


def test_a_packed_part_whose_entries_do_not_fit_is_refused(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    manifest = _manifest(folder)
    part = manifest["vectors"]["chunks"][0]
    read = lambda name: read_segment(folder / "segments" / name)  # noqa: E731

    nlist = len(np.load(folder / "segments" / manifest["vector_lists"]["chunks"][0]))
    vector_io.read_vector_parts(folder / "segments", [part], read, 64, nlist)  # as saved: fits
    for bad in ([part[0], part[1], part[2] - 1, part[3]],  # fewer rows than the entries hold
                [part[0], part[1], part[2], manifest["vector_lists"]["chunks"][1]]):  # not an entries table
        with pytest.raises((ValueError, KeyError)):
            vector_io.read_vector_parts(folder / "segments", [bad], read, 64, nlist)
    plain = part[:3]  # its ids and matrix read as plain rows
    with pytest.raises(ValueError, match="after other rows"):
        vector_io.read_vector_parts(folder / "segments", [plain, part], read, 64, nlist)


def test_a_damaged_packed_matrix_is_refused_by_its_checksum(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    path = folder / "segments" / _manifest(folder)["vectors"]["facts"][0][1]
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="checksum"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))


def test_two_writers_of_a_packed_index_both_keep_their_documents_or_conflict(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    a = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    b = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    a.insert([NEW[0]])
    a.persist(folder)
    b.delete(CORPUS[1][0])
    b.persist(folder)  # a rebase: b takes in a's version, deletes again, saves
    fresh = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    docs = {c.doc_id for c in fresh.chunks.values()}
    assert "n1" in docs and CORPUS[1][0] not in docs and CORPUS[0][0] in docs
    _check(fresh, {n: getattr(b, n) for n in TABLES})
    c = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    fresh.delete(CORPUS[2][0])
    fresh.persist(folder)
    c.refresh([make_document(CORPUS[2][0], "Ada Lorne taught at Kell Academy in Dunmore.", "changed")])
    saved = _manifest(folder)
    with pytest.raises(IndexConflictError):
        c.persist(folder)
    assert _manifest(folder) == saved


def test_an_index_saved_without_packed_rows_loads_and_answers_from_the_table(tmp_path, monkeypatch):
    config = _large(monkeypatch)
    monkeypatch.setattr(vector_io, "PACKED_TABLES", ())  # as saved before packed rows existed
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    folder = tmp_path / "idx"
    built.persist(folder)
    assert len(_manifest(folder)["vectors"]["chunks"][0]) == 3
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert loaded.chunk_vectors.listed and loaded.chunk_vectors.lists.packed is None
    _check(loaded, {n: getattr(built, n) for n in TABLES})
    monkeypatch.setattr(vector_io, "PACKED_TABLES", PACKED)
    loaded.persist(folder)  # the first save with this code packs them
    assert len(_manifest(folder)["vectors"]["chunks"][0]) == 4 and loaded.chunk_vectors.packed is not None
    _check(GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)), {n: getattr(built, n) for n in TABLES})


def test_a_format_3_index_with_a_second_copy_of_its_rows_loads_reads_it_and_is_stored_once_by_its_next_save(
        tmp_path, monkeypatch):
    from llama_index_graphrag_suite.index.segment_files import SegmentWriter

    config = _large(monkeypatch)
    monkeypatch.setattr(vector_io, "PACKED_TABLES", ())
    built = GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config)
    folder = tmp_path / "idx"
    built.persist(folder)
    version = json.loads((folder / "CURRENT").read_text())["version"]
    manifest = _manifest(folder)
    writer = SegmentWriter(folder)
    for name, table in (("chunks", built.chunk_vectors), ("facts", built.fact_vectors)):  # as format 3 saved them
        copy = writer.matrix(table.at(table.lists.grouped()[0]))
        manifest["vector_lists"][name].append(copy)
    manifest["segments"].update(writer.written)
    manifest["format_version"] = 3
    (folder / version / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(vector_io, "PACKED_TABLES", PACKED)

    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    table = loaded.chunk_vectors
    assert table.packed is None and table.lists.packed is not None  # queries read the second copy
    assert loaded.fact_vectors.lists.packed.segment == copy and loaded.fact_vectors.packed is None
    _check(loaded, {n: getattr(built, n) for n in TABLES})
    loaded.insert([NEW[0]])
    _check(loaded)
    loaded.persist(folder)
    after = _manifest(folder)
    assert len(after["vectors"]["facts"]) == 1 and len(after["vectors"]["facts"][0]) == 4
    assert len(after["vector_lists"]["facts"]) == 2 and _stored_rows(after, "facts") == len(loaded.fact_vectors)
    _check(GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64)), {n: getattr(loaded, n) for n in TABLES})


def test_a_compacting_save_writes_every_table_whole_and_the_rows_stay(tmp_path, monkeypatch):
    """``persist(compact=True)``: after inserts the packed tables hold every row list by list again (no tail
    read row by row), each row table is one segment, answers and rows are the same, and a load reads that."""
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs(), embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    for doc in NEW[:2]:
        index.insert([doc])
        index.persist(folder)
    appended = _manifest(folder)
    assert len(appended["vectors"]["chunks"]) == 3 and len(appended["tables"]["chunks"]) == 3
    before = {n: unpacked(getattr(index, n)) for n in TABLES}
    assert index.chunk_vectors.packed.size < len(index.chunk_vectors)

    index.persist(folder, compact=True)
    whole = _manifest(folder)
    assert all(len(parts) == 1 for parts in whole["vectors"].values())
    assert len(whole["vectors"]["chunks"][0]) == 4 and len(whole["vectors"]["facts"][0]) == 4  # packed
    assert all(len(segments) == 1 for segments in whole["tables"].values())
    assert index.chunk_vectors.packed.size == len(index.chunk_vectors)  # the tail is in the packed rows now
    _check(index, before)
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert not again.chunk_vectors._tail_blocks() and not again.fact_vectors._tail_blocks()
    _check(again, before)
    assert [r.to_json() for r in again.chunks.values()] == [r.to_json() for r in index.chunks.values()]
    rollback(folder, 2)  # the versions before the compaction are kept, each with its own files
    older = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert older.stats()["documents"] == index.stats()["documents"] - 1
    _check(older)


def test_a_compacting_save_trains_outgrown_lists_again(tmp_path, monkeypatch):
    """Lists trained when a table was small hold ever more rows as it grows: a compacting save trains them again
    (round(sqrt(rows)) lists) before it packs, and the table still answers as a plain table of its rows."""
    config = _large(monkeypatch)
    monkeypatch.setattr(vectors, "REFIT_GROWTH", 0.5)  # outgrown at half the lists' square: these small tables are
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs()[:2], embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    index.insert(_docs()[2:] + NEW[:2])
    index.persist(folder)
    before = {n: unpacked(getattr(index, n)) for n in TABLES}
    grown = {n: len(getattr(index, n).lists.centroids) for n in TABLES}
    assert any(round(len(getattr(index, n)) ** 0.5) != grown[n] for n in TABLES)  # some lists are outgrown
    index.persist(folder, compact=True)
    for name in TABLES:
        table = getattr(index, name)
        assert table.listed and len(table.lists.centroids) == max(1, round(len(table) ** 0.5))
    _check(index, before)
    again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    _check(again, before)


def test_a_load_says_when_the_index_has_outgrown_its_lists_and_a_compacted_one_does_not(tmp_path, monkeypatch, caplog):
    """Inserts extend lists and append rows but never train or pack again: a load names the tables whose searches
    read more rows than they need and the command that fixes it; after ``compact`` it says nothing."""
    config = _large(monkeypatch)
    folder = tmp_path / "idx"
    GraphRAGIndex.from_documents(_docs()[:2], embed_model=HashEmbedding(dim=64), config=config).persist(folder)
    with caplog.at_level("WARNING", logger="llama_index_graphrag_suite.index.persistence"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert "graphrag-suite compact" not in caplog.text  # lists trained on every row: nothing to say
    index = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    index.insert(_docs()[2:] + NEW[:2])
    index.persist(folder)
    outgrown = [n for n in TABLES if compaction_reason(getattr(index, n)) is not None]
    assert outgrown
    caplog.clear()
    with caplog.at_level("WARNING", logger="llama_index_graphrag_suite.index.persistence"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert f"graphrag-suite compact {folder}" in caplog.text and "lists trained for about" in caplog.text
    index.persist(folder, compact=True)
    caplog.clear()
    with caplog.at_level("WARNING", logger="llama_index_graphrag_suite.index.persistence"):
        again = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert "graphrag-suite compact" not in caplog.text
    assert all(compaction_reason(getattr(again, n)) is None for n in TABLES)


def test_a_packed_table_with_many_rows_appended_is_worth_compacting_and_one_with_few_is_not():
    x = clustered(400, dim=16, centres=20, seed=3)
    table = VectorTable(16, [f"r{i}" for i in range(300)], [x[:300]])
    table.lists = train_lists(table.vectors())
    packed(table)
    assert compaction_reason(table) is None
    table.add([f"r{i}" for i in range(300, 360)], x[300:360])  # 60 of 360 appended: under the share
    assert compaction_reason(table) is None
    table.add([f"r{i}" for i in range(360, 400)], x[360:])  # 100 of 400
    assert compaction_reason(table) == "100 of 400 rows appended after the packed ones"
    assert compaction_reason(VectorTable(16, ["a"], [x[:1]])) is None  # no lists: scanned whole, nothing to pack
