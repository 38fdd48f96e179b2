"""The ``simple`` store as a lazy mirror (index/lazy_store.py): filled from the tables on first outside use,
the same graph as the eager mirror, kept in step afterwards, saved only when something else wrote to it."""

from __future__ import annotations

import copy
import gc
import json
import logging
import threading
import weakref

import pytest
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import EntityNode

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.index import stores
from llama_index_graphrag_suite.index.lazy_store import LazySimplePropertyGraphStore
from llama_index_graphrag_suite.index.mirror import StoreMirror
from llama_index_graphrag_suite.index.storage import open_version
from llama_index_graphrag_suite.methods.pathrag.render import _stored_entity

from conftest import CORPUS

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)  # six passages: a low τ keeps a real graph


def _docs(ids=None):
    return [make_document(i, text, title) for i, title, text in CORPUS if ids is None or i in ids]


def _build(docs=None, **kwargs) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents(_docs() if docs is None else docs, embed_model=HashEmbedding(dim=128),
                                        config=CONFIG, **kwargs)


def _load(path) -> GraphRAGIndex:
    return GraphRAGIndex.load(path, embed_model=HashEmbedding(dim=128))


def _graph(store) -> tuple:
    """Every node (kind, label, properties, text), every relation (label, ends, properties) and the triplets."""
    g = store.graph
    nodes = {k: (type(n).__name__, n.label, json.dumps(n.properties, sort_keys=True, default=str), getattr(n, "text", None))
             for k, n in g.nodes.items()}
    relations = {k: (r.label, r.source_id, r.target_id, json.dumps(r.properties, sort_keys=True, default=str))
                 for k, r in g.relations.items()}
    return nodes, relations, set(g.triplets)


def _eager(index: GraphRAGIndex) -> SimplePropertyGraphStore:
    """A plain store filled from the index's tables the way load filled an empty store before the lazy mirror."""
    plain = SimplePropertyGraphStore()
    index._mirror.fill(plain)
    return plain


def test_a_build_does_not_fill_the_mirror_and_queries_do_not_either():
    index = _build()
    store = index.property_graph_store
    assert isinstance(store, LazySimplePropertyGraphStore) and stores.store_kind(store) == "simple"
    assert not store.materialised and not store.outside_writes
    for method in ("hybrid", "agrag", "pathrag", "hipporag"):
        assert index.as_retriever(method, top_k=3).retrieve("Who taught Ada Lorne at Kell Academy?")
    assert _stored_entity(index, "ada lorne") == {}  # no descriptions in a store only the index wrote
    index.insert([make_document("p-new", "Piers Vant was a banker in Marlow.", "Piers Vant")])
    index.delete("p-new")
    assert not store.materialised


@pytest.mark.parametrize("read", ["get_triplets", "get", "get_llama_nodes", "graph", "get_rel_map", "to_dict"])
def test_the_first_read_gives_the_graph_an_eager_mirror_holds(read):
    # the same documents in two inserts: an eager store (a plain one, kept in step insert by insert, as
    # before the lazy mirror) against the lazy store filled at the first read from the final tables
    first, second = _docs(["p-ada", "p-marlow", "p-harbour"]), _docs(["p-vant", "p-kell", "p-brey"])
    eager, lazy = _build(first, property_graph_store=SimplePropertyGraphStore()), _build(first)
    eager.insert(second)
    lazy.insert(second)
    store, plain = lazy.property_graph_store, eager.property_graph_store
    assert not store.materialised
    if read == "get_triplets":
        got, want = store.get_triplets(entity_names=["grey harbour"]), plain.get_triplets(entity_names=["grey harbour"])
        assert got and {(s.id, r.label, o.id) for s, r, o in got} == {(s.id, r.label, o.id) for s, r, o in want}
    elif read == "get":
        assert {n.id: n.properties for n in store.get()} == {n.id: n.properties for n in plain.get()}
    elif read == "get_llama_nodes":
        (chunk,) = store.get_llama_nodes(["p-ada#0"])
        assert chunk.text == lazy.chunks["p-ada#0"].text == plain.get_llama_nodes(["p-ada#0"])[0].text
        assert chunk.metadata == {"doc_id": "p-ada", "title": "Ada Lorne"}
    elif read == "graph":
        assert store.graph.nodes.keys() == plain.graph.nodes.keys()
    elif read == "get_rel_map":
        nodes = store.get(ids=["ada lorne"])
        assert len(store.get_rel_map(nodes, depth=2, limit=100)) == len(plain.get_rel_map(nodes, depth=2, limit=100))
    else:
        assert store.to_dict()["triplets"] == plain.to_dict()["triplets"]
    assert store.materialised and not store.outside_writes  # a read is not a write
    assert _graph(store) == _graph(plain) == _graph(_eager(lazy))


def test_insert_delete_and_refresh_keep_a_filled_mirror_in_step():
    eager, lazy = _build(_docs()[:4], property_graph_store=SimplePropertyGraphStore()), _build(_docs()[:4])
    lazy.property_graph_store.get()  # filled: from now on the index keeps it in step
    changed = make_document("p-marlow", "Marlow is a port on the Esk River. Ada Lorne was born in Marlow.", "Marlow")
    for index in (eager, lazy):
        index.insert(_docs()[4:])
        index.delete("p-vant")
        index.refresh([changed])
    store = lazy.property_graph_store
    assert not store.outside_writes  # the index's own updates are derivable
    assert _graph(store) == _graph(eager.property_graph_store) == _graph(_eager(lazy))
    assert "p-vant#0" not in store.graph.nodes and "p-kell#0" in store.graph.nodes


def test_updates_before_the_first_read_are_skipped_and_read_from_the_tables():
    index = _build(_docs()[:4])
    index.insert(_docs()[4:])
    index.delete("p-vant")
    store = index.property_graph_store
    assert not store.materialised
    assert _graph(store) == _graph(_eager(index))


def test_persist_writes_no_json_for_a_derived_mirror_and_load_is_lazy(tmp_path, caplog):
    index = _build()
    folder = index.persist(tmp_path / "lazy")
    assert not (folder / stores.SIMPLE_FILE).exists()
    manifest = open_version(tmp_path / "lazy")[1]
    assert manifest["store_backend"] == {"kind": "simple", "class": "LazySimplePropertyGraphStore", "derived": True}
    assert manifest["store"] == "SimplePropertyGraphStore" and stores.SIMPLE_FILE not in manifest["files"]

    index.property_graph_store.get()  # a filled mirror nobody else wrote to is still derived
    folder = index.persist(tmp_path / "filled")
    assert not (folder / stores.SIMPLE_FILE).exists()

    with caplog.at_level(logging.WARNING):
        loaded = _load(tmp_path / "lazy")
    assert "missing" not in caplog.text  # a derived store is not a missing file
    store = loaded.property_graph_store
    assert isinstance(store, LazySimplePropertyGraphStore) and not store.materialised and not store.outside_writes
    assert _graph(store) == _graph(index.property_graph_store)


def test_an_outside_upsert_is_saved_and_loaded_back(tmp_path):
    index = _build()
    store = index.property_graph_store
    store.upsert_nodes([EntityNode(name="ada lorne", label="entity",
                                   properties={"surface": "Ada Lorne", "description": "A painter.", "entity_type": "person"})])
    assert store.materialised and store.outside_writes
    assert _stored_entity(index, "ada lorne")["description"] == "A painter."
    folder = index.persist(tmp_path)
    manifest = open_version(tmp_path)[1]
    assert (folder / stores.SIMPLE_FILE).is_file() and stores.SIMPLE_FILE in manifest["files"]
    assert "derived" not in manifest["store_backend"]

    loaded = _load(tmp_path)
    back = loaded.property_graph_store
    assert isinstance(back, LazySimplePropertyGraphStore) and back.materialised and back.outside_writes
    assert _graph(back) == _graph(store)
    assert _stored_entity(loaded, "ada lorne")["entity_type"] == "person"
    loaded.delete("p-vant")  # kept in step; still holding outside data
    assert "p-vant#0" not in back.graph.nodes and back.graph.nodes["ada lorne"].properties["description"] == "A painter."
    assert (loaded.persist(tmp_path) / stores.SIMPLE_FILE).is_file()


def test_an_old_folder_with_the_json_still_loads(tmp_path, caplog):
    # a plain SimplePropertyGraphStore is never derived: saved as before the lazy mirror (JSON, no flag)
    old = _build(property_graph_store=SimplePropertyGraphStore())
    folder = old.persist(tmp_path)
    manifest = open_version(tmp_path)[1]
    manifest.pop("store_backend")  # and from before store_backend, too
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    loaded = _load(tmp_path)
    store = loaded.property_graph_store
    assert isinstance(store, LazySimplePropertyGraphStore) and store.materialised and store.outside_writes
    assert _graph(store) == _graph(old.property_graph_store) == _graph(_eager(loaded))
    again = loaded.persist(tmp_path)  # holds outside data as far as anyone knows: saved again
    assert (again / stores.SIMPLE_FILE).is_file()

    (again / stores.SIMPLE_FILE).unlink()  # a listed JSON that is gone: rebuilt from the tables, with a warning
    with caplog.at_level(logging.WARNING):
        rebuilt = _load(tmp_path)
    assert stores.SIMPLE_FILE in caplog.text and not rebuilt.property_graph_store.materialised
    assert _graph(rebuilt.property_graph_store) == _graph(store)


def test_concurrent_first_reads_fill_once(monkeypatch):
    index = _build()
    fills = []
    fill = StoreMirror.fill
    monkeypatch.setattr(StoreMirror, "fill", lambda self, store: (fills.append(1), fill(self, store)))
    store, results, barrier = index.property_graph_store, [], threading.Barrier(4)

    def read():
        barrier.wait()
        results.append(len(store.get_triplets(entity_names=["ada lorne"])))

    threads = [threading.Thread(target=read) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fills == [1] and len(set(results)) == 1 and results[0] > 0


def test_no_cycle_and_a_property_graph_index_keeps_its_source():
    index = _build()
    gone = weakref.ref(index)
    store = index.property_graph_store
    gc.disable()
    try:
        del index
        assert gone() is None  # freed by reference counting alone: the store holds its index weakly, no cycle
    finally:
        gc.enable()
    with pytest.raises(ReferenceError, match="no longer exists"):
        store.get()

    pg = _build().as_property_graph_index()  # all the caller keeps
    gc.collect()
    assert pg.property_graph_store.get_triplets(entity_names=["grey harbour"])
    twin = copy.deepcopy(pg.property_graph_store)  # a copy is a filled store of its own
    assert twin.materialised and twin.outside_writes and _graph(twin) == _graph(pg.property_graph_store)
