"""Memory at scale: memory-mapped vector tables, streaming JSONL, a snapshot built from whole arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import CorpusError, iter_jsonl_documents, load_jsonl, make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph.snapshot import CHUNK, CONTAINS, ENTITY, RELATION, SYNONYM, GraphSnapshot
from llama_index_graphrag_suite.index.vectors import VectorTable
from llama_index_graphrag_suite.registry import get_retriever

from conftest import CORPUS


def _table(rows: int = 500, dim: int = 32, seed: int = 0) -> VectorTable:
    table = VectorTable(dim)
    table.add([f"v{i}" for i in range(rows)], np.random.default_rng(seed).normal(size=(rows, dim)))
    return table


def _mapped(table: VectorTable, path) -> VectorTable:
    """``table``'s rows written to an .npy file and memory-mapped back, as a load does (tables.py)."""
    with open(path, "wb") as f:
        np.save(f, table.vectors(), allow_pickle=False)
    return VectorTable(table.dim, table.ids, [np.load(path, mmap_mode="r", allow_pickle=False)])


def test_a_mapped_table_searches_exactly_as_in_ram_and_grows_by_a_ram_block(tmp_path):
    table = _table()
    queries = np.random.default_rng(1).normal(size=(5, table.dim))
    mapped = _mapped(table, tmp_path / "t.npy")
    assert mapped.mapped and isinstance(mapped.vectors(), np.memmap) and not mapped.vectors().flags.writeable
    assert mapped.saved_rows == len(table)
    for q in queries:
        np.testing.assert_array_equal(mapped.scores(q), table.scores(q))
        for got, want in zip(mapped.search(q, 7), table.search(q, 7)):
            np.testing.assert_array_equal(got, want)
    extra = np.random.default_rng(2).normal(size=(3, table.dim))
    mapped.add(["x1", "x2", "x3"], extra)
    table.add(["x1", "x2", "x3"], extra)
    assert not mapped.mapped and mapped.saved_rows == 500  # the saved rows stay mapped; the new ones are unsaved
    ids, rows = mapped.unsaved()
    assert ids == ["x1", "x2", "x3"] and np.allclose(rows, table.rows_of(ids))
    for q in queries:
        np.testing.assert_allclose(mapped.scores(q), table.scores(q), rtol=1e-6)


def test_a_mapped_file_is_never_written_and_a_remove_keeps_the_rows_before_it_mapped(tmp_path):
    table = _table()
    mapped = _mapped(table, tmp_path / "t.npy")
    before = (tmp_path / "t.npy").read_bytes()
    mapped.add(["new"], np.ones((1, table.dim)))
    mapped.remove(["v300"])
    table.add(["new"], np.ones((1, table.dim)))
    table.remove(["v300"])
    assert mapped.ids == table.ids and mapped.saved_rows == 0  # the saved block was cut: written whole next save
    np.testing.assert_array_equal(mapped.vectors(), table.vectors())
    assert (tmp_path / "t.npy").read_bytes() == before
    # a checkpoint gives the table back after a remove and an add (how a failed change is undone)
    again = _mapped(table, tmp_path / "u.npy")
    checkpoint = again.checkpoint()
    again.remove(["v10"])
    again.add(["late"], np.ones((1, table.dim)))
    again.restore(checkpoint)
    assert again.ids == table.ids and again.mapped and again.saved_rows == len(table)
    np.testing.assert_array_equal(again.vectors(), table.vectors())


def test_an_index_loaded_with_mapped_tables_retrieves_exactly_as_in_ram(tmp_path):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=config)
    built.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    assert all(t.mapped for t in (loaded.chunk_vectors, loaded.entity_vectors, loaded.fact_vectors))
    for q in ("Which gallery holds The Grey Harbour?", "Where was the teacher of Ada Lorne born?"):
        for method in ("dense", "hybrid", "hipporag", "agrag", "pathrag", "a2rag"):
            a = [(n.node_id, round(n.score, 6)) for n in get_retriever(built, method).retrieve(q)]
            b = [(n.node_id, round(n.score, 6)) for n in get_retriever(loaded, method).retrieve(q)]
            assert a == b, method
    # an insert works on the loaded index, and saving it again writes the tables out
    loaded.insert([make_document("p-new", "Orla Finch sculpted The Copper Hare in Marlow.", "Orla Finch")])
    loaded.persist(tmp_path / "idx")
    again = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    assert len(again.chunks) == len(built.chunks) + 1 and again.chunk_vectors.mapped


def test_refresh_works_on_an_index_loaded_with_mapped_tables(tmp_path):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=config).persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    in_ram = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=config)
    changed = docs[:1] + [make_document("p-marlow", "Marlow is a port on the Esk River with a glass museum.", "Marlow")] + docs[2:]
    assert loaded.refresh(changed) == in_ram.refresh(changed)
    q = "Which town has a glass museum?"
    for method in ("dense", "hybrid", "hipporag"):
        a = [(n.node_id, round(n.score, 6)) for n in get_retriever(in_ram, method).retrieve(q)]
        b = [(n.node_id, round(n.score, 6)) for n in get_retriever(loaded, method).retrieve(q)]
        assert a == b, method


def test_jsonl_is_read_lazily_line_by_line(tmp_path):
    path = tmp_path / "c.jsonl"
    rows = [json.dumps({"id": f"d{i}", "title": "T", "text": f"passage {i}"}) for i in range(3)]
    path.write_text("\n".join(rows) + "\n{not json\n", encoding="utf-8")
    docs = iter_jsonl_documents(path)
    assert next(docs).id_ == "d0"  # the bad last line has not been read yet
    assert [d.id_ for d in (next(docs), next(docs))] == ["d1", "d2"]
    with pytest.raises(CorpusError, match=r"c.jsonl:4: not valid JSON"):
        next(docs)


def test_jsonl_streaming_keeps_the_old_behaviour(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"id": "a", "text": "caf\xc3\xa9 \xe2\x80\xa8 x"}\r\n\n{"id": "b", "text": "bad \xff byte"}\n')
    docs = load_jsonl(path)
    assert [d.id_ for d in docs] == ["a", "b"]
    assert "caf\u00e9" in docs[0].text and "\ufffd" in docs[1].text  # BOM dropped, a bad byte replaced
    utf16 = tmp_path / "u.jsonl"
    utf16.write_bytes('{"id": "u", "text": "wide"}\n'.encode("utf-16"))
    assert [d.id_ for d in load_jsonl(utf16)] == ["u"]
    dup = tmp_path / "d.jsonl"
    dup.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    with pytest.raises(CorpusError, match="duplicate id"):
        load_jsonl(dup)


def _snapshot_by_loops(index: GraphRAGIndex) -> GraphSnapshot:
    """The snapshot as the index built it before, one Python list entry per edge (the reference)."""
    entity_ids = list(index.entities)
    node_ids = entity_ids + index.chunk_order
    row = {n: i for i, n in enumerate(node_ids)}
    src, dst, kind, fact, weight = [], [], [], [], []
    for position, f in enumerate(index.facts.values()):
        src.append(row[f.subject]); dst.append(row[f.object]); kind.append(RELATION); fact.append(position); weight.append(1.0)
    for cid in index.chunk_order:
        for key in index.chunks[cid].entities:
            src.append(row[cid]); dst.append(row[key]); kind.append(CONTAINS); fact.append(-1); weight.append(1.0)
    for (a, b), s in index.synonyms.items():
        src.append(row[a]); dst.append(row[b]); kind.append(SYNONYM); fact.append(-1); weight.append(s)
    return GraphSnapshot(node_ids, np.array([ENTITY] * len(entity_ids) + [CHUNK] * len(index.chunk_order), np.int8),
                         np.array(src, np.int32), np.array(dst, np.int32), np.array(kind, np.int8),
                         np.array(fact, np.int32), np.array(weight, np.float32))


def test_the_array_built_snapshot_equals_the_per_edge_one():
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    # a low synonym threshold so all three edge kinds are present
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1, synonym_threshold=0.3))
    assert index.facts and index.synonyms
    want, got = _snapshot_by_loops(index), index.snapshot
    assert got.node_ids == want.node_ids
    np.testing.assert_array_equal(got.node_kind, want.node_kind)
    for name, arr in want.to_arrays().items():
        np.testing.assert_array_equal(getattr(got, name), arr, err_msg=name)
        assert getattr(got, name).dtype == arr.dtype, name
    # and after an insert and a delete (the snapshot is rebuilt from the changed tables)
    index.insert([make_document("p-new", "Orla Finch sculpted The Copper Hare in Marlow.", "Orla Finch")])
    index.delete("p-ada")
    for name, arr in _snapshot_by_loops(index).to_arrays().items():
        np.testing.assert_array_equal(getattr(index.snapshot, name), arr, err_msg=name)


def test_an_empty_edge_list_builds_a_valid_snapshot():
    empty = np.zeros(0, np.int64)
    snap = GraphSnapshot.from_edges(["c1", "c2"], 0, (empty, empty), (empty, empty), (empty, empty, np.zeros(0)))
    snap.validate()
    assert snap.num_edges == 0 and list(snap.node_kind) == [CHUNK, CHUNK]
