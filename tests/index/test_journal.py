"""One journal of row-level changes: a failed insert, delete or refresh is rolled back from
copies of the rows it touched (not a copy of the whole index), exactly: same rows in the same order, vector rows
in their places, the graph store as before; and an insert's effects on older chunks are recorded from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import rows
from llama_index_graphrag_suite.index.journal import Journal
from llama_index_graphrag_suite.index.state import IndexState

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)


def _saved(index: GraphRAGIndex, folder: Path) -> dict:
    """A saved version, byte for byte (row order included), but the manifest and the store file."""
    from conftest import saved_tables

    version = index.persist(folder)
    out = saved_tables(version, index.snapshot)
    out["provenance"] = (version / "provenance.json").read_text() if (version / "provenance.json").exists() else None
    out["statistics"] = (index.entity_statistics().n_chunks, dict(index.entity_statistics().doc_freq))
    return out


def _store(index: GraphRAGIndex) -> tuple:
    graph = json.loads(index.property_graph_store.graph.model_dump_json())
    return graph["nodes"], sorted(map(tuple, graph["triplets"]))


@pytest.fixture
def built(documents):
    index = GraphRAGIndex.from_documents(documents[:5], embed_model=HashEmbedding(dim=64), config=CONFIG)
    index.insert(documents[5:])  # an insert that links older chunks: a provenance record to keep
    assert index.state.provenance
    _store(index)  # the store is used: it is kept in step, and must be rolled back too
    return index


def _spy(monkeypatch) -> dict:
    """Counts the rows the journal copied in the change that rolled back."""
    seen: dict = {}
    rollback = Journal.rollback

    def counting(self):
        seen.update({t: len(b) for t, b in self._scopes[0].before.items()})
        rollback(self)

    monkeypatch.setattr(Journal, "rollback", counting)
    return seen


def test_a_failed_refresh_is_rolled_back_exactly_from_the_rows_it_touched(built, documents, tmp_path, monkeypatch):
    before, store = _saved(built, tmp_path / "a"), _store(built)
    seen = _spy(monkeypatch)
    changed = make_document("p-vant", documents[3].text + " The Vant Gallery closed in 1990.", "Vant Gallery")

    from conftest import embedding_down

    with embedding_down(built), pytest.raises(ConnectionError):
        built.refresh([changed])  # the delete of the old version ran; the insert failed
    assert _saved(built, tmp_path / "b") == before and _store(built) == store
    # copies of the touched rows only, never the whole tables
    assert 0 < seen["chunks"] < len(built.chunks) and 0 < seen["entities"] < len(built.entities)
    assert built.refresh([changed]) == [True]  # and it goes through once the server is back


def test_a_failed_delete_is_rolled_back_store_included(built, tmp_path, monkeypatch):
    before, store = _saved(built, tmp_path / "a"), _store(built)

    def broken(*args, **kwargs):
        raise RuntimeError("store write failed")

    monkeypatch.setattr(IndexState, "derive", broken)  # after the tables, vectors and store changed
    with pytest.raises(RuntimeError, match="store write failed"):
        built.delete("p-ada")
    monkeypatch.undo()
    assert _saved(built, tmp_path / "b") == before and _store(built) == store
    assert built.delete("p-ada") >= 1


def test_a_failed_insert_leaves_rows_order_vectors_and_records_as_they_were(built, tmp_path, monkeypatch):
    before, store = _saved(built, tmp_path / "a"), _store(built)
    doc = make_document("p-new", "Piers Vant founded the Vant Gallery in Dunmore. Ada Lorne met Piers Vant.", "Piers Vant")

    def broken(*args, **kwargs):
        raise RuntimeError("synonyms crashed")

    monkeypatch.setattr(rows, "add_synonyms", broken)  # after rows, links and vectors were added
    with pytest.raises(RuntimeError, match="synonyms crashed"):
        built.insert([doc])
    monkeypatch.undo()
    assert _saved(built, tmp_path / "b") == before and _store(built) == store
    built.insert([doc])
    assert "p-new#0" in built.chunks


def test_nothing_is_journaled_outside_a_change(built):
    journal = built.state.journal
    assert not journal.active
    journal.touch("chunks", next(iter(built.chunks)))  # a no-op: there is no change to undo
    assert not journal.active and journal._orders == {}


def test_a_failed_first_build_leaves_an_empty_index_that_builds_afterwards(documents, monkeypatch):
    index = GraphRAGIndex(embed_model=HashEmbedding(dim=64), config=CONFIG)

    def broken(*args, **kwargs):
        raise RuntimeError("synonyms crashed")

    monkeypatch.setattr(rows, "add_synonyms", broken)
    with pytest.raises(RuntimeError, match="synonyms crashed"):
        index.insert(documents)
    monkeypatch.undo()
    assert not index.chunks and not index.entities and not index.facts and not index.synonyms
    assert index.entity_statistics().n_chunks == 0
    index.insert(documents)
    assert len({c.doc_id for c in index.chunks.values()}) == len(documents)


def test_a_change_commits_its_rows_its_insert_record_and_its_documents_together(documents, tmp_path):
    index = GraphRAGIndex.from_documents(documents[:5], embed_model=HashEmbedding(dim=64), config=CONFIG)
    index.persist(tmp_path / "idx")  # an index with a folder: its document operations are pending until saved
    journal, late = index.state.journal, documents[5:]
    new_chunks = index.insert(late)
    done = journal.last
    assert [(d, before, after) for d, before, after in done.documents] == [(d.id_, None, d) for d in late]
    assert index.pending_documents() == [d.id_ for d in late]
    assert done.records and done.records == index.state.provenance[-len(done.records):]  # it linked older chunks
    assert {c for c, what in done.rows["chunks"].items() if what == "added"} == set(new_chunks)
    assert any(what == "changed" for what in done.rows["chunks"].values())  # older chunks it linked entities to

    def broken(*args, **kwargs):
        raise RuntimeError("synonyms crashed")

    extra = make_document("p-extra", "Piers Vant founded the Vant Gallery in Dunmore.", "Piers Vant")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rows, "add_synonyms", broken)
        with pytest.raises(RuntimeError, match="synonyms crashed"):
            index.insert([extra])
    assert journal.last is done and index.pending_documents() == [d.id_ for d in late]  # a failed change records none

    gone = sum(c.doc_id == late[0].id_ for c in index.chunks.values())
    assert index.delete(late[0].id_) == gone
    (doc_id, before, after), = journal.last.documents
    assert doc_id == late[0].id_ and before and after is None
    assert late[0].id_ not in index.pending_documents()  # inserted, then deleted, since the save: nothing to re-apply
    assert sum(what == "removed" for what in journal.last.rows["chunks"].values()) == gone
