"""Memory at scale: memory-mapped vector tables, streaming JSONL, a snapshot built from whole arrays."""

from __future__ import annotations

import json

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import CorpusError, iter_jsonl_documents, load_jsonl, make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph.snapshot import CHUNK, CONTAINS, ENTITY, RELATION, SYNONYM, GraphSnapshot
from llama_index_graphrag_suite.index.vectors import MMAP_ENV, VectorTable
from llama_index_graphrag_suite.registry import get_retriever

from conftest import CORPUS


def _table(rows: int = 500, dim: int = 32, seed: int = 0) -> VectorTable:
    table = VectorTable(dim)
    table.add([f"v{i}" for i in range(rows)], np.random.default_rng(seed).normal(size=(rows, dim)))
    return table


def test_a_large_table_is_saved_as_npy_and_memory_mapped_with_the_same_results(tmp_path, monkeypatch):
    table = _table()
    queries = np.random.default_rng(1).normal(size=(5, table.dim))
    monkeypatch.setenv(MMAP_ENV, "0.01")  # 10 KB: this 64 KB table counts as large
    table.save(tmp_path / "t.faiss")
    assert (tmp_path / "t.npy").is_file() and not (tmp_path / "t.faiss").exists()
    mapped = VectorTable.load(tmp_path / "t.faiss", table.ids, table.dim)
    assert mapped.mapped and isinstance(mapped.vectors(), np.memmap) and not mapped.vectors().flags.writeable
    for q in queries:
        np.testing.assert_array_equal(mapped.scores(q), table.scores(q))
        for got, want in zip(mapped.search(q, 7), table.search(q, 7)):
            np.testing.assert_array_equal(got, want)
    # below the threshold the same file is read into RAM; a small table stays a faiss file
    monkeypatch.setenv(MMAP_ENV, "1")
    in_ram = VectorTable.load(tmp_path / "t.faiss", table.ids, table.dim)
    assert not in_ram.mapped
    np.testing.assert_array_equal(in_ram.scores(queries[0]), table.scores(queries[0]))
    _table(10).save(tmp_path / "small.faiss")
    assert (tmp_path / "small.faiss").is_file() and not (tmp_path / "small.npy").exists()


def test_a_mapped_table_is_copied_into_ram_before_a_change_and_the_file_is_untouched(tmp_path, monkeypatch):
    table = _table()
    monkeypatch.setenv(MMAP_ENV, "0")
    table.save(tmp_path / "t.faiss")
    before = (tmp_path / "t.npy").read_bytes()
    mapped = VectorTable.load(tmp_path / "t.faiss", table.ids, table.dim)
    mapped.add(["new"], np.ones((1, table.dim)))
    mapped.remove(["v3"])
    table.add(["new"], np.ones((1, table.dim)))
    table.remove(["v3"])
    assert not mapped.mapped and mapped.ids == table.ids
    np.testing.assert_array_equal(mapped.vectors(), table.vectors())
    assert (tmp_path / "t.npy").read_bytes() == before


def test_an_index_loaded_with_mapped_tables_retrieves_exactly_as_in_ram(tmp_path, monkeypatch):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    built = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=config)
    monkeypatch.setenv(MMAP_ENV, "0")
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


def test_a_mapped_table_clones_cheaply_and_serves_code_that_reads_its_faiss_index(tmp_path, monkeypatch):
    table = _table()
    monkeypatch.setenv(MMAP_ENV, "0")
    table.save(tmp_path / "t.faiss")
    mapped = VectorTable.load(tmp_path / "t.faiss", table.ids, table.dim)
    twin = mapped.clone()
    assert twin.mapped and twin.vectors() is mapped.vectors()  # one map, no copy
    twin.add(["new"], np.ones((1, table.dim)))
    assert mapped.mapped and len(mapped) == len(table) and len(twin) == len(table) + 1
    assert mapped.index.ntotal == len(table) and not mapped.mapped  # .index reads the rows into RAM first
    q = np.random.default_rng(2).normal(size=table.dim)
    np.testing.assert_array_equal(mapped.scores(q), table.scores(q))


def test_refresh_works_on_an_index_loaded_with_mapped_tables(tmp_path, monkeypatch):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    config = IndexConfig(entities="statistical", entity_threshold=0.1)
    monkeypatch.setenv(MMAP_ENV, "0")
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
