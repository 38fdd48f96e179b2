"""Upsert on re-ingest: ``GraphRAGIndex.refresh`` / ``refresh_ref_docs`` / ``sync`` and ``index --update``."""

from __future__ import annotations

import threading

import pytest
from conftest import CORPUS

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.cli import main
from llama_index_graphrag_suite.documents import load_documents, make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.registry import get_retriever

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
TEXT = {doc_id: text for doc_id, _, text in CORPUS}
EDIT = " Ada Lorne later moved to Quellport, where she opened a printing press."
QUERY = "Where did Ada Lorne open a printing press?"


def build(docs) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128), config=CONFIG)


def write_folder(folder, names):
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / f"{name}.txt").write_text(TEXT[name])


def chunks_of(index, doc_id):
    return {c: (r.text, r.doc_hash) for c, r in index.chunks.items() if r.doc_id == doc_id}


def top_ids(index, method, k=3):
    return [n.node_id for n in get_retriever(index, method, top_k=k).retrieve(QUERY)]


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "docs"
    write_folder(d, ["p-ada", "p-marlow", "p-vant", "p-brey"])
    return d


def edit_folder(folder):
    """One file edited, one added, the others unchanged."""
    (folder / "p-ada.txt").write_text(TEXT["p-ada"] + EDIT)
    write_folder(folder, ["p-kell"])


def test_refresh_inserts_new_replaces_changed_and_skips_unchanged(folder, tmp_path):
    index = build(load_documents(folder))
    before_ada, before_vant = chunks_of(index, "p-ada.txt"), chunks_of(index, "p-vant.txt")
    edit_folder(folder)
    docs = load_documents(folder)
    flags = index.refresh(docs)
    assert dict(zip([d.metadata["doc_id"] for d in docs], flags)) == {
        "p-ada.txt": True, "p-brey.txt": False, "p-kell.txt": True, "p-marlow.txt": False, "p-vant.txt": False}
    after_ada = chunks_of(index, "p-ada.txt")
    assert after_ada != before_ada and any("Quellport" in text for text, _ in after_ada.values())
    assert chunks_of(index, "p-vant.txt") == before_vant  # left alone, hash included
    assert chunks_of(index, "p-kell.txt")
    assert index.refresh(docs) == [False] * len(docs)  # a second refresh finds nothing to do

    fresh = build(docs)  # the same folder indexed from scratch ranks the same chunks first
    assert index.stats()["documents"] == fresh.stats()["documents"] == 5
    for method in ("dense", "bm25", "agrag", "pathrag", "a2rag"):
        assert top_ids(index, method, 1) == top_ids(fresh, method, 1), method
    assert top_ids(index, "dense", 1) == ["p-ada.txt#0"]


def test_refresh_ref_docs_is_refresh_and_sync_reports_what_it_did(documents):
    index = build(documents[:4])
    assert GraphRAGIndex.refresh_ref_docs is GraphRAGIndex.refresh
    changed = make_document("p-marlow", TEXT["p-marlow"] + " Marlow has a lighthouse.", "Marlow")
    result = index.sync([documents[0], changed, documents[4]], prune=True)
    assert (result.inserted, result.updated, result.unchanged) == (["p-kell"], ["p-marlow"], ["p-ada"])
    assert result.removed == ["p-harbour", "p-vant"] and result.changed == [False, True, True]
    assert result.counts() == {"new": 1, "changed": 1, "unchanged": 1, "removed": 2}
    assert sorted({r.doc_id for r in index.chunks.values()}) == ["p-ada", "p-kell", "p-marlow"]
    emptied = make_document("p-kell", "   ", "Kell Academy")  # a document emptied: its old version goes
    assert index.sync([emptied]).updated == ["p-kell"] and "p-kell" not in {r.doc_id for r in index.chunks.values()}


def test_a_document_given_twice_is_refused(documents):
    index = build(documents[:2])
    with pytest.raises(ValueError, match="given twice"):
        index.refresh([documents[2], documents[2]])
    with pytest.raises(ValueError, match="use refresh"):
        index.insert([documents[0]])


def test_persist_load_refresh(folder, tmp_path):
    build(load_documents(folder)).persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    assert all(r.doc_hash.startswith("sha256:") for r in loaded.chunks.values())  # the hash is saved
    edit_folder(folder)
    assert sorted(loaded.sync(load_documents(folder)).counts().items()) == [
        ("changed", 1), ("new", 1), ("removed", 0), ("unchanged", 3)]
    loaded.persist(tmp_path / "idx")
    again = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    assert again.refresh(load_documents(folder)) == [False] * 5
    assert top_ids(again, "dense", 1) == ["p-ada.txt#0"]


def test_an_index_saved_without_hashes_loads_and_counts_every_document_as_changed(documents, tmp_path):
    index = build(documents)
    for rec in index.chunks.values():  # as an index saved by an older version has them
        rec.doc_hash = ""
    index.persist(tmp_path / "old")
    loaded = GraphRAGIndex.load(tmp_path / "old", embed_model=HashEmbedding(dim=128))
    assert loaded.refresh(documents) == [True] * len(documents)
    assert loaded.refresh(documents) == [False] * len(documents)  # hashes stored now


def test_a_failed_refresh_leaves_the_index_as_it_was(documents):
    index = build(documents[:4])
    tables = (dict(index.stats()), {c: (r.text, list(r.entities)) for c, r in index.chunks.items()},
              {k: set(e.chunks) for k, e in index.entities.items()})
    ranked = top_ids(index, "agrag", 3)
    store_nodes = len(index.property_graph_store.get())
    embed = index.embed_model

    def down(*args, **kwargs):
        raise ConnectionError("embedding server down")

    original = embed.get_text_embedding_batch
    object.__setattr__(embed, "get_text_embedding_batch", down)
    changed = make_document("p-ada", TEXT["p-ada"] + EDIT, "Ada Lorne")
    try:
        with pytest.raises(ConnectionError):
            index.refresh([changed, documents[4]])
    finally:
        object.__setattr__(embed, "get_text_embedding_batch", original)
    assert (dict(index.stats()), {c: (r.text, list(r.entities)) for c, r in index.chunks.items()},
            {k: set(e.chunks) for k, e in index.entities.items()}) == tables
    assert top_ids(index, "agrag", 3) == ranked
    assert len(index.property_graph_store.get()) == store_nodes
    assert index.refresh([changed, documents[4]]) == [True, True]  # once the server is back


def test_a_query_during_a_refresh_waits_and_sees_the_new_document(documents):
    """The query starts after the refresh has deleted the old version and while it embeds the new one: it must
    wait for the writer lock and then see the new chunks (never the document missing, never half of it)."""
    index = build(documents)
    retriever = get_retriever(index, "dense", top_k=len(index.chunks))
    changed = make_document("p-ada", TEXT["p-ada"] + EDIT, "Ada Lorne")
    embed, original = index.embed_model, index.embed_model.get_text_embedding_batch
    seen: list = []
    asker = threading.Thread(target=lambda: seen.append(retriever.retrieve(QUERY)))

    def embed_while_asked(texts, **kwargs):
        if not asker.is_alive() and not seen:  # first call: the old p-ada is gone by now
            asker.start()
            asker.join(0.3)
            assert asker.is_alive() and not seen, "the query ran inside the refresh"
        return original(texts, **kwargs)

    object.__setattr__(embed, "get_text_embedding_batch", embed_while_asked)
    try:
        assert index.refresh([changed]) == [True]
    finally:
        object.__setattr__(embed, "get_text_embedding_batch", original)
    asker.join(10)
    texts = {n.node.get_content() for n in seen[0] if n.node.metadata.get("doc_id") == "p-ada"}
    assert texts and all("Quellport" in t for t in texts)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_update_and_prune(folder, tmp_path, capsys):
    out_dir = str(tmp_path / "idx")
    common = ("--embed", "hash", "--quiet")
    assert run(capsys, "index", str(folder), "--out", out_dir, "--entities", "statistical", *common)[0] == 0
    code, out, err = run(capsys, "index", str(folder), "--out", out_dir, "--update", *common)
    assert code == 0 and "up to date" in out and "nothing saved" in out, err
    edit_folder(folder)
    (folder / "p-brey.txt").unlink()
    code, out, err = run(capsys, "index", str(folder), "--out", out_dir, "--update", *common)
    assert code == 0, err
    assert "new=1, changed=1, unchanged=2, removed=0" in out and "documents=5" in out
    code, out, err = run(capsys, "index", str(folder), "--out", out_dir, "--update", "--prune", *common)
    assert code == 0, err
    assert "new=0, changed=0, unchanged=4, removed=1" in out and "documents=4" in out
    code, out, err = run(capsys, "query", out_dir, QUERY, "--method", "dense", "--top-k", "1", "--json", "--embed", "hash")
    assert code == 0 and '"id": "p-ada.txt#0"' in out, err

    code, _, err = run(capsys, "index", str(folder), "--out", out_dir, "--prune", *common)
    assert code == 2 and "--prune goes with --update" in err
    code, _, err = run(capsys, "index", str(folder), "--out", out_dir, "--update", "--chunk-size", "64", *common)
    assert code == 2 and "--chunk-size" in err
    code, _, err = run(capsys, "index", str(folder), "--out", str(tmp_path / "none"), "--update", *common)
    assert code == 2
