"""Graph stores behind the index: the embedded LadybugDB store against the simple one, and Neo4j when a server is given.

The index's methods read arrays derived from the JSON tables, so an index on LadybugDB must answer
every query exactly as the same index on SimplePropertyGraphStore; what differs is where the mirror
lives (a database file in each version folder) and what LlamaIndex's own tools read from it.
"""

from __future__ import annotations

import json
import os

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.index import stores
from llama_index_graphrag_suite.index.storage import CorruptIndexError, open_version

from conftest import CORPUS

pytest.importorskip("ladybug", reason="the ladybug store needs the `stores` extra (make install has it)")
pytest.importorskip("llama_index.graph_stores.ladybug", reason="the ladybug store needs the `stores` extra")

from llama_index_graphrag_suite.documents import make_document  # noqa: E402
from llama_index_graphrag_suite.embeddings import HashEmbedding  # noqa: E402

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)  # six passages: a low τ keeps a real graph
QUESTIONS = ["Who taught Ada Lorne at Kell Academy?", "Where does The Grey Harbour hang?"]
METHODS = ["agrag", "pathrag", "hybrid"]


def _docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def _build(store: str, docs=None) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents(docs or _docs(), embed_model=HashEmbedding(dim=128), config=CONFIG, store=store)


def _load(path, **kwargs) -> GraphRAGIndex:
    return GraphRAGIndex.load(path, embed_model=HashEmbedding(dim=128), **kwargs)


def _answers(index: GraphRAGIndex) -> dict:
    return {(m, q): [(n.node.node_id, round(n.score, 6)) for n in index.as_retriever(m, top_k=4).retrieve(q)]
            for m in METHODS for q in QUESTIONS}


def _saved(index: GraphRAGIndex, path):
    index.persist(path)
    return path


def _count(store, cypher: str) -> int:
    return int(next(iter(store.connection.execute(cypher)))[0])


@pytest.fixture(scope="module")
def pair():
    return _build("simple"), _build("ladybug")


def test_ladybug_store_holds_the_graph(pair):
    simple, lady = pair
    store = lady.property_graph_store
    assert stores.store_kind(store) == "ladybug"
    assert _count(store, "MATCH (n:Entity) RETURN count(n)") == len(lady.entities)
    assert _count(store, "MATCH (c:Chunk) RETURN count(c)") == len(lady.chunks)
    # CONTAINS edges become the package's MENTIONS edges (its own upsert drops chunk -> entity relations)
    assert _count(store, "MATCH ()-[r:MENTIONS]->() RETURN count(r)") == lady.stats()["contains_edges"]
    assert _count(store, "MATCH ()-[r:LINKS]->() RETURN count(r)") > 0
    node = store.get(ids=["ada lorne"])[0]
    assert node.properties["surface"] == "Ada Lorne"  # node properties survive (kept as JSON)
    assert [n.text for n in store.get_llama_nodes(["p-ada#0"])] == [simple.chunks["p-ada#0"].text]


def test_large_reads_and_writes(monkeypatch):
    """Hundreds of rows in one call: nothing dropped (LlamaIndex's sanitiser turns 128+ rows into None), and
    writes split into transactions of WRITE_BATCH rows."""
    from llama_index.core.graph_stores.types import ChunkNode, EntityNode, Relation

    from llama_index_graphrag_suite.index import store_classes

    monkeypatch.setattr(store_classes, "WRITE_BATCH", 64)
    store = stores.create_store("ladybug")
    names = [f"name {i}" for i in range(300)]
    store.upsert_nodes([ChunkNode(id_="c", text="chunk")] + [EntityNode(name=n, label="entity") for n in names])
    store.upsert_relations([Relation(label="CONTAINS", source_id="c", target_id=n) for n in names]
                           + [Relation(label="next", source_id=a, target_id=b) for a, b in zip(names, names[1:])])
    assert len(store.get(ids=names)) == 300 and len(store.get()) == 301
    assert _count(store, "MATCH ()-[r:MENTIONS]->() RETURN count(r)") == 300
    assert _count(store, "MATCH ()-[r:LINKS]->() RETURN count(r)") == 299


def test_queries_equal_the_simple_store(pair):
    simple, lady = pair
    assert lady.stats() == simple.stats()
    assert _answers(lady) == _answers(simple)


def test_persist_load_insert_delete(tmp_path, pair):
    docs = _docs()
    # the same history on the simple store: an insert scores new chunks against the corpus so far, so
    # an index grown by inserts is compared with one grown the same way
    simple = _load(_saved(_build("simple", docs[:4]), tmp_path / "simple"))
    simple.insert(docs[4:])
    tmp_path = tmp_path / "lady"
    index = _build("ladybug", docs[:4])
    index.persist(tmp_path)
    folder, manifest = open_version(tmp_path)
    assert (folder / stores.LADYBUG_FILE).is_file() and not (folder / stores.SIMPLE_FILE).exists()
    assert manifest["store_backend"] == {"kind": "ladybug", "class": "SuiteLadybugPropertyGraphStore"}
    assert stores.LADYBUG_FILE in manifest["files"]  # checksummed like every other file

    loaded = _load(tmp_path)
    assert stores.store_kind(loaded.property_graph_store) == "ladybug"
    # the loaded index works on a private copy: the saved version's file is never written to
    assert loaded.property_graph_store.working_copy.parent != folder
    loaded.insert(docs[4:])
    assert loaded.stats() == simple.stats() and _answers(loaded) == _answers(simple)
    assert _count(loaded.property_graph_store, "MATCH (c:Chunk) RETURN count(c)") == len(docs)
    loaded.persist(tmp_path)
    open_version(tmp_path, version=1)  # still verifies: the first version's database was left alone

    loaded.delete("p-brey")
    loaded.delete("p-kell")
    simple.delete("p-brey")
    simple.delete("p-kell")
    assert loaded.stats() == simple.stats() and _answers(loaded) == _answers(simple)
    store = loaded.property_graph_store
    assert _count(store, "MATCH (c:Chunk) RETURN count(c)") == len(loaded.chunks) == 4
    assert _count(store, "MATCH (n:Entity) RETURN count(n)") == len(loaded.entities)
    assert _count(store, "MATCH ()-[r:MENTIONS]->() RETURN count(r)") == loaded.stats()["contains_edges"]
    assert {n.name for n in store.get() if hasattr(n, "name")} == set(loaded.entities)

    # rollback is honest: version 1 brings back its own database, four documents
    GraphRAGIndex.rollback(tmp_path, 1)
    back = _load(tmp_path)
    assert _count(back.property_graph_store, "MATCH (c:Chunk) RETURN count(c)") == len(back.chunks) == 4
    assert {c.doc_id for c in back.chunks.values()} == {d.doc_id for d in docs[:4]}


@pytest.mark.parametrize("lost", ["graph.lbug"])
def test_missing_derived_file_is_rebuilt(tmp_path, pair, lost, caplog):
    simple, lady = pair
    lady.persist(tmp_path)
    folder, _ = open_version(tmp_path)
    (folder / lost).unlink()
    loaded = _load(tmp_path)
    assert lost in caplog.text  # said once, as a warning
    assert _answers(loaded) == _answers(simple)
    store = loaded.property_graph_store
    assert _count(store, "MATCH ()-[r:MENTIONS]->() RETURN count(r)") == loaded.stats()["contains_edges"]
    loaded.persist(tmp_path)  # the next save writes the file again
    assert (open_version(tmp_path)[0] / lost).exists()


def test_missing_method_artefact_is_built_again(tmp_path, caplog):
    index = _build("ladybug")
    before = [n.node.node_id for n in index.as_retriever("archrag", top_k=4).retrieve(QUESTIONS[0])]
    folder = index.persist(tmp_path)
    saved = sorted(p for p in (folder / "artefacts").rglob("*") if p.is_file())
    assert saved, "ArchRAG saves its hierarchy"
    saved[0].unlink()  # one file of the artefact: the whole artefact is built again
    loaded = _load(tmp_path)
    assert "method artefacts when first used" in caplog.text
    assert [n.node.node_id for n in loaded.as_retriever("archrag", top_k=4).retrieve(QUESTIONS[0])] == before


def test_unreadable_database_is_refilled(tmp_path, pair, caplog):
    """A graph.lbug whose checksum matches but that LadybugDB cannot open (another version's file format) is
    refilled from the tables."""
    from llama_index_graphrag_suite.fileio import sha256_file

    simple, lady = pair
    lady.persist(tmp_path)
    folder, manifest = open_version(tmp_path)
    (folder / stores.LADYBUG_FILE).write_bytes(b"not a LadybugDB file" * 100)
    manifest["files"][stores.LADYBUG_FILE] = sha256_file(folder / stores.LADYBUG_FILE)
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    loaded = _load(tmp_path)
    assert "cannot be opened" in caplog.text
    assert _answers(loaded) == _answers(simple)
    assert _count(loaded.property_graph_store, "MATCH (n:Entity) RETURN count(n)") == len(loaded.entities)


def test_missing_table_or_bad_checksum_is_still_corrupt(tmp_path, pair):
    _, lady = pair
    lady.persist(tmp_path)
    folder, _ = open_version(tmp_path)
    with open(folder / stores.LADYBUG_FILE, "r+b") as f:
        f.seek(100)
        f.write(b"\xff\xfe")
    with pytest.raises(CorruptIndexError, match="graph.lbug does not match its checksum"):
        _load(tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    (facts,) = manifest["tables"]["facts"]
    (tmp_path / "segments" / facts).unlink()
    with pytest.raises(CorruptIndexError, match=f"segment {facts} is missing"):
        _load(tmp_path)
    vectors = manifest["vectors"]["entities"][0][1]
    (tmp_path / "segments" / vectors).unlink()  # vectors are not rebuilt on load: that is embedding the corpus again
    with pytest.raises(CorruptIndexError, match="is missing"):
        _load(tmp_path)


def test_move_between_stores_and_old_manifests(tmp_path, pair):
    simple, _ = pair
    simple.persist(tmp_path / "s")
    moved = _load(tmp_path / "s", store="ladybug")  # filled from the tables; the next save keeps it
    assert stores.store_kind(moved.property_graph_store) == "ladybug"
    assert _count(moved.property_graph_store, "MATCH (c:Chunk) RETURN count(c)") == len(simple.chunks)
    moved.persist(tmp_path / "s")
    assert open_version(tmp_path / "s")[1]["store_backend"]["kind"] == "ladybug"

    # an index saved before store_backend existed names only the class: it loads as the simple store
    simple.persist(tmp_path / "old")
    folder, manifest = open_version(tmp_path / "old")
    manifest.pop("store_backend")
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    old = _load(tmp_path / "old")
    assert stores.store_kind(old.property_graph_store) == "simple" and old.stats() == simple.stats()


def test_store_specs():
    assert stores.StoreSpec.parse("LadyBug").kind == "ladybug"
    spec = stores.StoreSpec.parse("neo4j://neo4j:s3cret@db.example:7687/graphs")
    assert spec.kind == "neo4j" and spec.public() == {"kind": "neo4j", "url": "neo4j://neo4j:***@db.example:7687/graphs"}
    assert stores.StoreSpec.parse("bolt+s://u:p@h").kind == "neo4j"
    for bad, match in [("postgres://x", "unknown store"), ("sqlite", "unknown store"),
                       ("neo4j://u:p@h:port", "port is not a number"), ("bolt://", "no host")]:
        with pytest.raises(stores.StoreSpecError, match=match):
            stores.StoreSpec.parse(bad)
    with pytest.raises(ValueError, match="not both"):
        GraphRAGIndex(embed_model=HashEmbedding(dim=8), store="simple",
                      property_graph_store=stores.create_store("simple"))


def test_neo4j_index_needs_its_url_to_load(tmp_path, pair, monkeypatch):
    """Without a server: an index whose manifest says Neo4j asks for the URL in one line, password never shown."""
    simple, _ = pair
    simple.persist(tmp_path)
    folder, manifest = open_version(tmp_path)
    manifest["store_backend"] = {"kind": "neo4j", "class": "Neo4jPropertyGraphStore", "url": "neo4j://neo4j:***@db:7687"}
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.delenv("GRAPHRAG_NEO4J_URL", raising=False)
    with pytest.raises(stores.StoreSpecError, match=r"built on Neo4j at neo4j://neo4j:\*\*\*@db:7687; pass store="):
        _load(tmp_path)


def test_cli_index_store_option(tmp_path, capsys):
    from llama_index_graphrag_suite.cli import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS), encoding="utf-8")
    assert main(["index", str(corpus), "--out", str(tmp_path / "ix"), "--embed", "hash", "--entities", "statistical",
                 "--entity-threshold", "0.1", "--store", "ladybug", "--quiet"]) == 0
    assert open_version(tmp_path / "ix")[1]["store_backend"]["kind"] == "ladybug"
    assert main(["query", str(tmp_path / "ix"), "Who taught Ada Lorne?", "--embed", "hash", "--quiet"]) == 0
    assert main(["index", str(corpus), "--out", str(tmp_path / "iy"), "--store", "mongodb"]) != 0
    assert "unknown store" in capsys.readouterr().err


NEO4J_URL = os.environ.get("GRAPHRAG_NEO4J_URL")


@pytest.mark.skipif(not NEO4J_URL, reason="set GRAPHRAG_NEO4J_URL=neo4j://user:password@host:7687 (a server whose "
                    "database may be emptied; no APOC needed) to run the Neo4j store tests")
def test_neo4j_store(tmp_path, pair):
    simple, _ = pair
    index = _build(NEO4J_URL)
    try:
        assert stores.store_kind(index.property_graph_store) == "neo4j"
        assert _answers(index) == _answers(simple)
        index.persist(tmp_path)
        manifest = open_version(tmp_path)[1]
        assert "***" in manifest["store_backend"]["url"] or "@" not in manifest["store_backend"]["url"]
        loaded = _load(tmp_path, store=NEO4J_URL)
        assert _answers(loaded) == _answers(simple)
        loaded.delete("p-ada")
        assert not loaded.property_graph_store.get(ids=["p-ada#0"])
    finally:
        index.property_graph_store.structured_query("MATCH (n) DETACH DELETE n")
