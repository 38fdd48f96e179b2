"""build_in_batches: a corpus indexed a batch at a time, saved and reloaded between batches, resumable."""

from __future__ import annotations

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index.batched import build_in_batches
from llama_index_graphrag_suite.index.row_overlay import RowOverlay

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)


def docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def tables(index) -> dict:
    return {name: [r.to_json() for r in getattr(index, name).values()] for name in ("chunks", "entities", "facts")}


def in_memory(batch_size: int) -> GraphRAGIndex:
    """The same inserts, never saved: the index the batched build must equal."""
    all_docs = docs()
    index = GraphRAGIndex.from_documents(all_docs[:batch_size], embed_model=HashEmbedding(dim=64), config=CONFIG)
    for start in range(batch_size, len(all_docs), batch_size):
        index.insert(all_docs[start:start + batch_size])
    return index


def test_a_batched_build_is_the_sequence_of_its_inserts(tmp_path):
    seen = []
    index = build_in_batches(iter(docs()), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64),
                             config=CONFIG, on_batch=lambda number, held, seconds: seen.append((number, held)))
    assert seen == [(1, 2), (2, 4), (3, 6)][:len(seen)] and seen[-1][1] == len(CORPUS)
    expected = in_memory(2)
    assert tables(index) == tables(expected)
    assert index.stats() == expected.stats()
    assert not isinstance(index.state.facts, (dict, RowOverlay))  # loaded back: read-only columns
    assert index.loaded_version is not None


def test_the_counts_a_batch_kept_are_the_ones_a_load_reads(tmp_path):
    """Each batch hands its n-gram statistics to the next instead of reading them back: the same counts."""
    from llama_index_graphrag_suite.index.build import entity_statistics

    index = build_in_batches(iter(docs()), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64),
                             config=CONFIG)
    kept = index.state.entity_stats
    assert kept is not None  # a plain load leaves them to be read on first use
    fresh = entity_statistics(GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)).state)
    assert fresh is not kept and fresh.n_chunks == kept.n_chunks == len(index.chunks)
    assert dict(fresh.doc_freq) == dict(kept.doc_freq)


def test_a_stopped_build_goes_on_where_it_stopped(tmp_path):
    class Stop(Exception):
        pass

    def stream():
        for n, doc in enumerate(docs()):
            if n == 4:
                raise Stop()  # the reader fails after two batches were saved
            yield doc

    with pytest.raises(Stop):
        build_in_batches(stream(), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64), config=CONFIG)
    partial = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    assert partial.stats()["documents"] == 4
    index = build_in_batches(docs(), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64), config=CONFIG)
    assert tables(index) == tables(in_memory(2))


def test_bad_batches_are_refused(tmp_path):
    with pytest.raises(ValueError, match="batch_size"):
        build_in_batches(docs(), tmp_path / "a", batch_size=0, embed_model=HashEmbedding(dim=64))
    with pytest.raises(ValueError, match="no documents"):
        build_in_batches([], tmp_path / "b", embed_model=HashEmbedding(dim=64))


def test_two_processes_build_the_same_batches_into_the_same_tables(tmp_path):
    """The names a batch links into older chunks are appended in one order whatever the process's string hashing
    (PYTHONHASHSEED): a batched build, or the same batches on Ray, is reproducible table for table."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sys.path.insert(0, str(root / "benchmarks"))
    import synth

    corpus = synth.write(tmp_path / "corpus", 400, seed=0, questions=1)
    script = (
        "import json, sys\nfrom llama_index_graphrag_suite import IndexConfig\n"
        "from llama_index_graphrag_suite.documents import iter_jsonl_documents\n"
        "from llama_index_graphrag_suite.index.batched import build_in_batches\n"
        "index = build_in_batches(iter_jsonl_documents(sys.argv[1]), sys.argv[2], 150, embed_model='hash:32',\n"
        "                         config=IndexConfig(entities='statistical'))\n"
        "print(json.dumps([list(r.entities) for r in index.chunks.values()]))\n")
    import ray_scale

    links, sums = [], []
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", script, str(corpus / "corpus.jsonl"), str(tmp_path / seed)],
                             cwd=root, env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True,
                             timeout=300)
        assert run.returncode == 0, run.stderr[-3000:]
        links.append(json.loads(run.stdout.strip().splitlines()[-1]))
        sums.append(ray_scale.checksums(tmp_path / seed))  # every table and vector, as the Ray test compares them
    assert len(links[0]) == 400 and links[0] == links[1]
    assert any(sorted(e) != e and len(e) > 2 for e in links[0])  # not a table where any order would do
    assert sums[0] == sums[1]


def test_a_build_in_batches_ends_compacted(tmp_path, monkeypatch, caplog):
    """Each batch's save appends its rows; the build then saves once more with every table whole: the chunk and
    fact vectors packed list by list with no appended tail, one segment per table, and (a new folder) only that
    version kept. The rows are the ones the same inserts make. The batches' loads do not suggest a compaction
    (the build makes one)."""
    import json

    from llama_index_graphrag_suite.index import vectors

    monkeypatch.setattr(vectors, "LISTED_MIN_ROWS", 5)  # every table keeps lists, as at 100,000+ rows
    folder = tmp_path / "idx"
    with caplog.at_level("WARNING", logger="llama_index_graphrag_suite.index.persistence"):
        index = build_in_batches(iter(docs()), folder, batch_size=2, embed_model=HashEmbedding(dim=64), config=CONFIG)
    assert "graphrag-suite compact" not in caplog.text
    version = json.loads((folder / "CURRENT").read_text())["version"]
    manifest = json.loads((folder / version / "manifest.json").read_text())
    assert all(len(parts) == 1 for parts in manifest["vectors"].values())
    assert len(manifest["vectors"]["chunks"][0]) == 4 and len(manifest["vectors"]["facts"][0]) == 4
    assert all(len(segments) == 1 for segments in manifest["tables"].values())
    assert not index.chunk_vectors._tail_blocks() and not index.fact_vectors._tail_blocks()
    assert sorted(p.name for p in folder.glob("v-*")) == [version]
    assert tables(index) == tables(in_memory(2))

    kept = tmp_path / "kept"  # asked to keep versions: the batches' versions stay for a rollback
    build_in_batches(iter(docs()), kept, batch_size=2, embed_model=HashEmbedding(dim=64), config=CONFIG,
                     keep_versions=3)
    assert len(list(kept.glob("v-*"))) == 3
    plain = tmp_path / "plain"  # without it, each table is its batches' segments
    build_in_batches(iter(docs()), plain, batch_size=2, embed_model=HashEmbedding(dim=64), config=CONFIG,
                     compact=False)
    version = json.loads((plain / "CURRENT").read_text())["version"]
    manifest = json.loads((plain / version / "manifest.json").read_text())
    assert len(manifest["tables"]["chunks"]) > 1


def test_the_batches_append_and_only_the_end_writes_tables_whole(tmp_path, monkeypatch):
    """More batches than a table may have segments: no batch's save writes a table whole again (each appends its
    rows), the build's last save does; the rows are the ones the same inserts make."""
    import json

    from llama_index_graphrag_suite.index import segment_files, tables as tables_io

    monkeypatch.setattr(tables_io, "MAX_SEGMENTS", 2)  # 6 one-document batches: past it from the third on
    whole_writes = []
    original = tables_io._whole_rows
    monkeypatch.setattr(tables_io, "_whole_rows", lambda state, table, keys: whole_writes.append(
        (segment_files.appending(), table, len(keys))) or original(state, table, keys))
    from_columns = tables_io.whole_columns  # the end's whole writes of the loaded tables: from their columns
    monkeypatch.setattr(tables_io, "whole_columns", lambda state, table, schema: (lambda got: got is not None and (
        whole_writes.append((segment_files.appending(), table, len(got)))) or got)(from_columns(state, table, schema)))
    folder = tmp_path / "idx"
    index = build_in_batches(iter(docs()), folder, batch_size=1, embed_model=HashEmbedding(dim=64), config=CONFIG,
                             keep_versions=10)
    # the chunks written whole: by the first batch (nothing to extend yet) and by the end, never in between
    assert [(appending, n) for appending, table, n in whole_writes if table == "chunks"] == [(True, 1),
                                                                                           (False, len(CORPUS))]
    versions = sorted(folder.glob("v-*"))
    before_end = json.loads((versions[-2] / "manifest.json").read_text())
    assert len(before_end["tables"]["chunks"]) == len(CORPUS)  # one segment per batch
    assert all(len(s) == 1 for s in json.loads((versions[-1] / "manifest.json").read_text())["tables"].values())
    assert tables(index) == tables(in_memory(1))
    assert not segment_files.appending()  # outside the build, saves compact as before


def test_a_whole_write_turns_a_slice_of_rows_into_records_at_a_time(tmp_path, monkeypatch):
    """A table written whole is made WHOLE_SLICE_ROWS rows at a time (never every row as records at once), and
    reads back the same as written in one piece."""
    from llama_index_graphrag_suite.index import tables as tables_io

    index = build_in_batches(iter(docs()), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64),
                             config=CONFIG)
    state = index.state
    one_piece = {t: tables_io._rows(state, t, list(tables_io._rows_dict(state, t)), []) for t in
                 ("chunks", "chunk_links", "entities")}
    asked = []
    original = tables_io._rows
    monkeypatch.setattr(tables_io, "_rows", lambda state, table, keys, gone, positions=None, **kw: asked.append(
        len(keys)) or original(state, table, keys, gone, positions, **kw))
    monkeypatch.setattr(tables_io, "WHOLE_SLICE_ROWS", 2)
    for name, expected in one_piece.items():
        asked.clear()
        got = tables_io._whole_rows(state, name, list(tables_io._rows_dict(state, name)))
        assert asked and max(asked) <= 2 and sum(asked) == len(expected)
        assert got.combine_chunks().equals(expected.combine_chunks())


def test_a_loaded_table_written_whole_from_its_columns_is_the_rows_its_records_make(tmp_path):
    """A compaction writes the loaded chunks, chunk_links and entities tables from their columns and BM25's matrix:
    the very rows (values, order, types) the records make; a table of changed rows goes through records."""
    from llama_index_graphrag_suite.index import tables as tables_io
    from llama_index_graphrag_suite.index.whole_columns import whole_columns

    index = build_in_batches(iter(docs()), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64),
                             config=CONFIG)
    state = index.state
    first = next(iter(state.entities))
    state.entities._attributes[0] = {"description": "a river", "rank": 2}  # as a loaded entity with attributes
    for name in ("chunks", "chunk_links", "entities"):
        got = whole_columns(state, name, tables_io.SCHEMAS[name])
        assert got is not None, name
        expected = tables_io._rows(state, name, list(tables_io._rows_dict(state, name)), [])
        assert got.combine_chunks().equals(expected.combine_chunks()), name
    assert first in state.entities
    index.insert([make_document("late", "The Lasgel river runs by Hollow Mill.", "Late")])
    assert all(whole_columns(state, n, tables_io.SCHEMAS[n]) is None for n in ("chunks", "chunk_links", "entities"))


def test_the_synonym_step_and_a_compaction_let_go_of_the_mapped_vector_pages_they_read(tmp_path, monkeypatch):
    """After the synonym search (each batch) the entity names' mapped pages are dropped from the process, and so are
    each table's after a compaction trains its lists again: pages read once need not stay in the build's RSS."""
    from llama_index_graphrag_suite.index.vectors import VectorTable

    dropped = []
    original = VectorTable.drop_mapped_pages
    monkeypatch.setattr(VectorTable, "drop_mapped_pages", lambda self: dropped.append(self) or original(self))
    index = build_in_batches(iter(docs()), tmp_path / "idx", batch_size=2, embed_model=HashEmbedding(dim=64),
                             config=CONFIG)
    assert tables(index) == tables(in_memory(2))
    assert sum(t is not None and t.dim == 64 for t in dropped) >= 3 + 3  # a synonym step per batch, 3 at the end
    assert any(t.mapped for t in dropped)  # at least one of them read from disk (a loaded batch)
