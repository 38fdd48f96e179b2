"""A loaded version's insert records are read when a change first needs them (``provenance_file.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from llama_index_graphrag_suite import CorruptIndexError, GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.fileio import sha256_file
from llama_index_graphrag_suite.index.provenance_file import ProvenanceFile

from conftest import CORPUS

DOCS = [make_document(i, text, title) for i, title, text in CORPUS]


def _version(folder: Path) -> Path:
    return folder / json.loads((folder / "CURRENT").read_text())["version"]


@pytest.fixture
def saved(tmp_path):
    index = GraphRAGIndex.from_documents(DOCS[:5], embed_model=HashEmbedding(dim=64), config=IndexConfig(entities="statistical", entity_threshold=0.1))
    index.insert(DOCS[5:])  # an insert that links older chunks: a record of what it changed
    index.persist(tmp_path / "idx")
    assert (_version(tmp_path / "idx") / "provenance.json").is_file()
    return tmp_path / "idx"


def test_records_are_read_on_first_use_and_a_save_links_the_unread_file(saved):
    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    records = index.state.provenance
    assert isinstance(records, ProvenanceFile) and records.unread
    before = _version(saved) / "provenance.json"
    index.persist(saved)  # nothing changed: the new version holds the same file, not a rewritten one
    after = _version(saved) / "provenance.json"
    assert after != before and after.stat().st_ino == before.stat().st_ino and records.unread
    assert json.loads(after.read_text()) == list(records)  # read now
    index.delete(DOCS[-1].doc_id)  # the delete reads the records and undoes the insert
    assert DOCS[-1].doc_id not in {index.chunks[c].doc_id for c in index.chunk_order}


def test_records_outlive_their_version_folder(saved):
    """Another writer may prune the loaded version before this process's first change reads its records."""
    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    expected = json.loads((_version(saved) / "provenance.json").read_text())
    shutil.rmtree(_version(saved))
    assert list(index.state.provenance) == expected


def test_a_malformed_file_with_a_valid_checksum_is_a_corrupt_index_at_the_first_change(saved):
    version = _version(saved)
    (version / "provenance.json").write_text('[{"chunks": 3}]')
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["files"]["provenance.json"] = sha256_file(version / "provenance.json")
    (version / "manifest.json").write_text(json.dumps(manifest))
    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))  # a serving process never reads them
    with pytest.raises(CorruptIndexError, match="corrupt index at .*provenance.json"):
        index.delete(DOCS[-1].doc_id)


def test_an_insert_appends_its_record_unread_and_a_save_writes_the_text_of_the_whole_list(tmp_path):
    """An insert into a loaded index appends its record without reading the file; the save writes what a save of
    the whole list writes (byte for byte), and it reads back as the records plus the new one."""
    from llama_index_graphrag_suite.index.storage import write_json

    saved = tmp_path / "idx"
    first = GraphRAGIndex.from_documents(DOCS[:1], embed_model=HashEmbedding(dim=64),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    first.insert(DOCS[1:4])  # both inserts link older chunks: a record each
    first.persist(saved)
    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    before = json.loads((_version(saved) / "provenance.json").read_text())
    assert len(before) == 1
    index.insert(DOCS[4:])
    records = index.state.provenance
    assert isinstance(records, ProvenanceFile) and records.unread and len(records._appended) == 1
    index.persist(saved)
    written = (_version(saved) / "provenance.json").read_bytes()
    assert records.unread  # the save did not parse the file either
    whole = list(records)
    assert whole[:len(before)] == before and len(whole) == len(before) + 1
    write_json(saved.parent / "whole.json", whole)
    assert written == (saved.parent / "whole.json").read_bytes()
    again = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    assert list(again.state.provenance) == whole


def test_a_failed_insert_takes_its_appended_record_back(saved, monkeypatch):
    from llama_index_graphrag_suite.index import build

    index = GraphRAGIndex.load(saved, embed_model=HashEmbedding(dim=64))
    records = index.state.provenance

    def broken(ctx, run):
        ctx.state.journal.keep_record({"chunks": [], "links": {}})  # as the insert's own record would be
        raise RuntimeError("the graph step failed")
    monkeypatch.setattr(build, "STEPS", (*build.STEPS[:-1], ("graph", broken)))
    with pytest.raises(RuntimeError):
        index.insert([make_document("late", "Lasgel river and Hollow Mill.", "Late")])
    assert index.state.provenance is records and records.unread and not records._appended
    assert list(records) == json.loads((_version(saved) / "provenance.json").read_text())


def test_a_linked_file_keeps_its_recorded_checksum_and_an_extended_one_is_hashed(tmp_path, monkeypatch):
    """Saved unchanged (a hard link), the records file keeps the SHA-256 its version's manifest records instead of
    being read again; once an insert appends records, the new file is hashed. Either way the manifest holds the
    file's true digest."""
    from llama_index_graphrag_suite.index import storage

    folder, embed = tmp_path / "idx", HashEmbedding(dim=64)
    index = GraphRAGIndex.from_documents(DOCS[:2], embed_model=embed,
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    index.insert(DOCS[2:4])  # links older chunks: a record
    index.persist(folder)
    assert (_version(folder) / "provenance.json").is_file()
    hashed = []
    monkeypatch.setattr(storage, "sha256_file", lambda path: hashed.append(Path(path).name) or sha256_file(path))
    index = GraphRAGIndex.load(folder, embed_model=embed)
    index.persist(folder)
    version = _version(folder)
    assert "provenance.json" not in hashed
    assert json.loads((version / "manifest.json").read_text())["files"]["provenance.json"] == \
        sha256_file(version / "provenance.json")
    # the second passage's words written again: names found in its chunk now, a record appended to the unread file
    index.insert([make_document("again", DOCS[1].text, "Again")])
    assert index.state.provenance.unread and index.state.provenance.appended
    hashed.clear()
    index.persist(folder)
    version = _version(folder)
    assert "provenance.json" in hashed
    assert json.loads((version / "manifest.json").read_text())["files"]["provenance.json"] == \
        sha256_file(version / "provenance.json")
    GraphRAGIndex.load(folder, embed_model=embed)  # checksums verified
