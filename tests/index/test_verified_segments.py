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
    assert hashed and not (folder / SEGMENTS / VERIFIED).exists()  # just written: not recorded, hashed every time
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
