"""A load hashes only the segments it has not verified unchanged before (segments/.verified.json)."""

from __future__ import annotations

import os
import time

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import storage
from llama_index_graphrag_suite.index.storage import SEGMENTS, VERIFIED, CorruptIndexError

from conftest import CORPUS


def _age(folder, seconds=60):
    past = time.time() - seconds
    for path in (folder / SEGMENTS).iterdir():
        os.utime(path, (past, past))


def test_a_second_load_hashes_nothing_and_a_changed_segment_is_still_caught(tmp_path, monkeypatch):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=IndexConfig(entities="statistical"))
    folder = tmp_path / "idx"
    index.persist(folder)
    hashed = []
    real = storage.sha256_file
    monkeypatch.setattr(storage, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert hashed  # just written (a save of this size takes well under VERIFY_AGE_NS): hashed
    _age(folder)
    hashed.clear()
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert hashed and (folder / SEGMENTS / VERIFIED).exists()
    hashed.clear()
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert hashed == []
    segment = sorted(p for p in (folder / SEGMENTS).iterdir() if p.suffix == ".npy")[0]
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # same size
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="does not match its checksum"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))


def test_a_save_records_the_segments_it_hashed_as_it_wrote_them(tmp_path, monkeypatch):
    """The segments a save wrote long enough ago (here: any age) are recorded with the checksums their writer took,
    so the first load after the save hashes none of them; one changed since is still caught."""
    from llama_index_graphrag_suite.index import persistence

    monkeypatch.setattr(persistence, "VERIFY_AGE_NS", 0)
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=IndexConfig(entities="statistical"))
    folder = tmp_path / "idx"
    index.persist(folder)
    segments = {p.name for p in (folder / SEGMENTS).iterdir() if p.name != VERIFIED}
    hashed = []
    real = storage.sha256_file
    monkeypatch.setattr(storage, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert segments and not segments & set(hashed)
    segment = sorted(p for p in (folder / SEGMENTS).iterdir() if p.suffix == ".npy")[0]
    data = bytearray(segment.read_bytes())
    data[-1] ^= 0xFF  # same size, a new modification time
    time.sleep(0.01)
    segment.write_bytes(bytes(data))
    with pytest.raises(CorruptIndexError, match="does not match its checksum"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))


def test_a_save_keeps_the_record(tmp_path):
    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs[:3], embed_model=HashEmbedding(dim=64), config=IndexConfig(entities="statistical"))
    folder = tmp_path / "idx"
    index.persist(folder)
    _age(folder)
    loaded = GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    loaded.insert(docs[3:])
    loaded.persist(folder)
    assert (folder / SEGMENTS / VERIFIED).exists()


def test_a_versions_own_files_are_hashed_once_too(tmp_path, monkeypatch):
    """The files a version folder lists (method artefacts, provenance) are recorded like segments: a later load
    hashes none of them, and one changed since is still caught."""
    import json

    from llama_index_graphrag_suite.fileio import sha256_file
    from llama_index_graphrag_suite.index import persistence

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=IndexConfig(entities="statistical"))
    folder = tmp_path / "idx"
    version = index.persist(folder)
    blob = version / "artefacts" / "demo" / "blob.bin"  # as a method's saved artefact would be
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"0123456789" * 100)
    manifest = json.loads((version / "manifest.json").read_text())
    manifest["files"]["artefacts/demo/blob.bin"] = sha256_file(blob)
    (version / "manifest.json").write_text(json.dumps(manifest))
    past = time.time() - 60
    for path in [*(folder / SEGMENTS).iterdir(), blob]:
        os.utime(path, (past, past))
    hashed = []
    real = persistence.sha256_file
    monkeypatch.setattr(persistence, "sha256_file", lambda p: hashed.append(p.name) or real(p))
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert hashed == ["blob.bin"]
    hashed.clear()
    GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
    assert hashed == []
    blob.write_bytes(b"9876543210" * 100)  # same size, another content
    with pytest.raises(CorruptIndexError, match="blob.bin does not match its checksum"):
        GraphRAGIndex.load(folder, embed_model=HashEmbedding(dim=64))
