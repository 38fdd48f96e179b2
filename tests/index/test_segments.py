"""The tables on disk as segments shared by versions (index/tables.py): a save writes what changed, every version
reads back as it was saved, old (format 1) indexes load, and unlisted segments go."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.bm25 import BM25Table
from llama_index_graphrag_suite.index.storage import FORMAT_VERSION
from llama_index_graphrag_suite.index.tables import MAX_SEGMENTS
from llama_index_graphrag_suite.registry import get_retriever

from conftest import CORPUS, saved_tables

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
QUESTIONS = ("Which gallery holds The Grey Harbour?", "Where was the teacher of Ada Lorne born?")
EXTRA = [make_document(f"x{i}", f"Orla Finch{i} sculpted The Copper Hare in Marlow with Ada Lorne.", f"Orla Finch{i}")
         for i in range(3)]


def _manifest(version: Path) -> dict:
    return json.loads((version / "manifest.json").read_text())


def _built() -> GraphRAGIndex:
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=CONFIG)


def _results(index) -> list:
    return [[(n.node_id, round(n.score, 5)) for n in get_retriever(index, m).retrieve(q)]
            for m in ("bm25", "hybrid", "agrag", "pathrag") for q in QUESTIONS]


def _same_index(a: GraphRAGIndex, b: GraphRAGIndex) -> None:
    """Two indexes hold the same rows in the same order, vectors, BM25 scores and answers."""
    assert list(a.chunks) == list(b.chunks) and list(a.entities) == list(b.entities) and list(a.facts) == list(b.facts)
    assert [c.to_json() for c in a.chunks.values()] == [c.to_json() for c in b.chunks.values()]
    assert [e.to_json() for e in a.entities.values()] == [e.to_json() for e in b.entities.values()]
    assert [f.to_json() for f in a.facts.values()] == [f.to_json() for f in b.facts.values()]
    assert a.synonyms == b.synonyms
    for name in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        assert getattr(a, name).ids == getattr(b, name).ids
        np.testing.assert_array_equal(getattr(a, name).vectors(), getattr(b, name).vectors())
    for q in QUESTIONS:
        np.testing.assert_allclose(a.bm25.scores(q), b.bm25.scores(q), rtol=1e-6)
    assert _results(a) == _results(b)


def test_a_save_after_an_insert_writes_only_the_new_rows_and_reads_back_identical(tmp_path):
    index = _built()
    first = index.persist(tmp_path / "idx")
    base = _manifest(first)
    index.insert(EXTRA[:1])
    second = index.persist(tmp_path / "idx")
    grown = _manifest(second)
    for table, segments in grown["tables"].items():
        assert segments[:len(base["tables"][table])] == base["tables"][table]  # the old segments are shared
    new = set(grown["segments"]) - set(base["segments"])
    assert len([s for s in grown["tables"]["chunks"] if s in new]) == 1  # one new chunk segment...
    from llama_index_graphrag_suite.index.segment_files import read_segment

    (segment,) = [s for s in grown["tables"]["chunks"] if s in new]
    rows = read_segment(tmp_path / "idx" / "segments" / segment).to_pylist()
    assert [r["id"] for r in rows if not r["gone"]] == ["x0#0"]  # ...of one row (after the key's "gone" mark: an
    # added key goes at the table's end even if an older version had it)
    for name, parts in grown["vectors"].items():  # vectors: the saved parts, then the new rows
        assert parts[:-1] == base["vectors"][name] or parts == base["vectors"][name]
    new_bytes = sum((tmp_path / "idx" / "segments" / s).stat().st_size for s in new)
    all_bytes = sum((tmp_path / "idx" / "segments" / s).stat().st_size for s in grown["segments"])
    assert new_bytes < all_bytes / 2
    _same_index(index, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)))


def test_deletes_refreshes_and_reinserts_across_saves_read_back_in_the_same_order(tmp_path):
    index = _built()
    index.persist(tmp_path / "idx")
    steps = [lambda: index.insert(EXTRA[:2]), lambda: index.delete("p-ada"),
             lambda: index.refresh([make_document("x0", "Orla Finch0 carved The Tin Owl in Dunmore.", "Orla Finch0")]),
             lambda: index.insert([make_document(i, text, title) for i, title, text in CORPUS if i == "p-ada"]),
             lambda: index.delete("x1")]
    for step in steps:
        step()
        index.persist(tmp_path / "idx", keep_versions=10)
        _same_index(index, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)))
    # a fresh build of the same documents in the same order holds the same rows
    assert GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)).stats() == index.stats()


def test_every_kept_version_reads_back_as_it_was_saved_and_rollback_gives_it_back(tmp_path):
    index = _built()
    saved = []
    for step in (lambda: None, lambda: index.insert(EXTRA[:1]), lambda: index.delete("p-vant"),
                 lambda: index.insert(EXTRA[1:])):
        step()
        version = index.persist(tmp_path / "idx", keep_versions=10)
        saved.append((version, saved_tables(version, index.snapshot)))
    for n, (version, tables) in enumerate(saved, start=1):
        assert saved_tables(version) | {"graph": tables["graph"]} == tables
        loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64), version=n)
        assert saved_tables(version, loaded.snapshot) == tables  # the snapshot rebuilt on load is the saved one
    GraphRAGIndex.rollback(tmp_path / "idx", 2)
    back = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert "x0" in {c.doc_id for c in back.chunks.values()} and "p-vant" in {c.doc_id for c in back.chunks.values()}
    back.insert(EXTRA[2:])  # a save on a rolled-back version extends that version
    after = back.persist(tmp_path / "idx", keep_versions=10)
    assert set(_manifest(saved[1][0])["segments"]) <= set(_manifest(after)["segments"])


def test_segments_no_kept_version_lists_are_removed(tmp_path):
    index = _built()
    for i in range(5):
        index.insert([make_document(f"g{i}", f"Gull{i} nests on Teme Bridge near Marlow.", f"Gull{i}")])
        index.persist(tmp_path / "idx", keep_versions=2)
    listed = set()
    for version in (tmp_path / "idx").glob("v-*"):
        listed |= set(_manifest(version)["segments"])
    assert {p.name for p in (tmp_path / "idx" / "segments").iterdir()} == listed


def test_many_saves_compact_a_table_into_one_segment(tmp_path):
    index = _built()
    index.persist(tmp_path / "idx")
    for i in range(MAX_SEGMENTS + 1):
        index.insert([make_document(f"g{i}", f"Gull{i} nests on Teme Bridge near Marlow.", f"Gull{i}")])
        version = index.persist(tmp_path / "idx")
    manifest = _manifest(version)
    assert all(len(s) <= MAX_SEGMENTS for s in manifest["tables"].values())
    assert all(len(p) <= MAX_SEGMENTS for p in manifest["vectors"].values())
    _same_index(index, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)))


def test_an_index_saved_in_format_1_loads_answers_the_same_and_is_saved_as_segments(tmp_path):
    from format1 import to_format_1

    index = _built()
    index.persist(tmp_path / "idx")
    version = to_format_1(tmp_path / "idx", index.snapshot)
    assert _manifest(version)["format_version"] == 1 and (version / "chunks.json").is_file()
    old = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    _same_index(index, old)
    old.insert(EXTRA[:1])
    index.insert(EXTRA[:1])
    again = old.persist(tmp_path / "idx")
    assert _manifest(again)["format_version"] == FORMAT_VERSION and "tables" in _manifest(again)
    _same_index(index, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)))


@pytest.mark.parametrize("order", ["append", "delete", "interleave"])
def test_bm25_updated_scores_as_a_table_built_from_scratch(order):
    texts = {f"c{i}": f"word{i % 7} shared text {'marlow ' * (i % 3)} teme{i % 4}" for i in range(40)}
    ids = list(texts)
    table = BM25Table([texts[c] for c in ids[:25]], ids=ids[:25])
    if order == "append":
        target = ids
    elif order == "delete":
        target = [c for c in ids[:25] if int(c[1:]) % 4]
    else:
        target = [c for c in ids if int(c[1:]) % 3] + ["c0"]
    updated = table.updated(target, texts.__getitem__)
    scratch = BM25Table([texts[c] for c in target], ids=target)
    for q in ("marlow teme1", "word3 shared", "teme2 teme2 nothing"):
        np.testing.assert_allclose(updated.scores(q), scratch.scores(q), rtol=1e-6)


def test_a_failed_refresh_of_a_loaded_index_leaves_nothing_for_the_next_save_to_move(tmp_path):
    """A refresh deletes and adds a document's chunks in one change; rolled back, they are where they were, and the
    save marks with them (journal.py), so a save of the loaded index writes nothing and reads back in order."""
    _built().persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    text = next(t for i, _, t in CORPUS if i == "p-vant")
    changed = make_document("p-vant", text + " The Vant Gallery closed in 1990.", "Vant Gallery")

    from conftest import embedding_down

    with embedding_down(loaded), pytest.raises(ConnectionError):
        loaded.refresh([changed])
    assert not any(loaded.state.unsaved.values())
    before = _manifest(next((tmp_path / "idx").glob("v-*")))
    after = _manifest(loaded.persist(tmp_path / "idx"))
    assert after["tables"] == before["tables"] and after["vectors"] == before["vectors"]
    _same_index(loaded, GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)))


def test_entity_rows_count_the_chunks_that_link_each_entity(tmp_path):
    from llama_index_graphrag_suite.index.audit import entity_rows

    index = _built()
    index.insert(EXTRA)
    index.delete("p-ada")
    version = index.persist(tmp_path / "idx")
    rows = {r["key"]: (r["surface"], r["type"], r["chunks"]) for r in entity_rows(version)}
    assert rows == {k: (e.surface, e.type, len(e.chunks)) for k, e in index.entities.items()}


@pytest.mark.parametrize("columns_from", [0, 10**9])  # a loaded version's n-grams as columns, or as a Counter
def test_the_ngram_statistics_are_saved_and_a_loaded_index_never_refits_them_from_its_chunks(tmp_path, monkeypatch,
                                                                                             columns_from):
    from llama_index_graphrag_suite.extractors.entity_stats import EntityStatistics
    from llama_index_graphrag_suite.index import ngram_columns

    monkeypatch.setattr(ngram_columns, "COLUMNS_FROM", columns_from)
    index = _built()
    index.persist(tmp_path / "idx")
    fitted: list[int] = []
    fit = EntityStatistics.fit

    def counting(self, texts):
        texts = list(texts)
        fitted.append(len(texts))
        fit(self, texts)

    monkeypatch.setattr(EntityStatistics, "fit", counting)
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    loaded.insert(EXTRA[:2])  # the statistics are read from the version, then fitted on the new chunks only
    assert fitted == [2]
    loaded.persist(tmp_path / "idx")
    loaded.delete("p-ada")
    loaded.persist(tmp_path / "idx")
    again = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    saved = again.entity_statistics()
    assert fitted == [2]
    assert isinstance(saved.doc_freq, ngram_columns.NgramColumns) == (columns_from == 0)
    monkeypatch.undo()
    scratch = EntityStatistics(saved.max_ngram)
    scratch.fit(c.text for c in again.chunks.values())
    assert (saved.n_chunks, dict(saved.doc_freq)) == (scratch.n_chunks, dict(scratch.doc_freq))
    manifest = _manifest(sorted((tmp_path / "idx").glob("v-*"))[-1])
    assert len(manifest["ngrams"]) == 3  # the whole table, then what each save changed


def test_an_index_without_saved_statistics_computes_them(tmp_path):
    from format1 import to_format_1

    index = _built()
    index.persist(tmp_path / "idx")
    to_format_1(tmp_path / "idx", index.snapshot)
    old = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    stats = old.entity_statistics()
    assert (stats.n_chunks, dict(stats.doc_freq)) == (index.entity_statistics().n_chunks,
                                                      dict(index.entity_statistics().doc_freq))


def test_a_matrix_written_from_blocks_is_the_file_np_save_writes(tmp_path):
    """A compaction writes a vector table's mapped blocks one after another, never joined in memory: the file is
    byte for byte the one ``np.save`` writes from the joined rows."""
    import io

    from llama_index_graphrag_suite.index.tables import SegmentWriter

    rng = np.random.default_rng(0)
    blocks = [rng.random((n, 8), dtype=np.float32) for n in (3, 70_000, 0, 5)]
    writer = SegmentWriter(tmp_path)
    name = writer.matrix(blocks)
    expected = io.BytesIO()
    np.save(expected, np.concatenate(blocks), allow_pickle=False)
    assert (tmp_path / "segments" / name).read_bytes() == expected.getvalue()
    np.testing.assert_array_equal(np.load(tmp_path / "segments" / name, mmap_mode="r"), np.concatenate(blocks))


def test_write_json_writes_the_text_json_dump_writes(tmp_path):
    """The index's JSON files (manifest, provenance) are json.dumps' text: the same as the streaming json.dump."""
    import json

    from llama_index_graphrag_suite.index.storage import write_json

    data = [{"doc": "é\u2028x", "n": 1.5, "chunks": ["a", "b"], "none": None, "t": True}, {"k": [1e-7, 10 ** 20]}]
    write_json(tmp_path / "a.json", data)
    with open(tmp_path / "b.json", "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
