"""The graph-store classes the index mirrors into, each a thin subclass of LlamaIndex's store for that database
with what the index needs (imported on first use, so no database package is imported just to ask): LadybugDB
(embedded), FalkorDB (a server; also LlamaIndex's own FalkorDB store's triplet bug worked around) and a Neo4j store
that writes portable Cypher without the APOC plugin. ``stores.py`` chooses, opens and saves them."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Optional

from llama_index.core.graph_stores.types import ChunkNode, EntityNode, LabelledNode, Relation

log = logging.getLogger(__name__)

WRITE_BATCH = 5000  # rows per LadybugDB write transaction (see _write)

# Seconds to wait for a FalkorDB server to accept a connection: a host that drops packets fails in
# seconds rather than hanging the index (queries themselves are not timed out: a big refill is slow).
FALKORDB_CONNECT_TIMEOUT = float(os.environ.get("GRAPHRAG_FALKORDB_CONNECT_TIMEOUT", "5"))
EXTRA_HINT = {"ladybug": "pip install -c constraints.txt -e '.[stores]' (from a clone)",
              "falkordb": "pip install -c constraints.txt -e '.[stores]' (from a clone)",
              "neo4j": "pip install -c constraints.txt -e '.[neo4j]' (from a clone)"}
FALKORDB_GRAPH = "graphrag"  # the graph an index mirrors into when the URL names none


class StoreUnavailableError(ConnectionError):
    """A server store's database cannot be reached (down, refused, cut off mid-write).

    The message names the store kind and its URL without the password; the client library's own
    exception is left out of the traceback (its text is in the message). A ``ConnectionError``, so
    ``load`` does not mistake it for a corrupt index.
    """


def suite_ladybug() -> type:
    """LadybugPropertyGraphStore with three changes the index needs (imported on first use).

    * Chunk -> entity relations (our CONTAINS edges) are stored as the package's MENTIONS edges; the
      package matches both ends of every relation in its Entity table, so it drops them silently.
    * Node properties (the PathRAG extractor's ``description`` and ``entity_type``, the ``surface``
      of a name) are kept as JSON in a ``props`` column and given back by ``get()``; the package keeps
      only a fixed set of file-metadata columns.
    * Writes are UNWIND statements in transactions of ``WRITE_BATCH`` rows (12x faster than a commit
      per statement, measured: every commit syncs the write-ahead log), with no checkpoint and count
      queries after each call: ``persist`` checkpoints.
    """
    global _SUITE_LADYBUG
    if _SUITE_LADYBUG is not None:
        return _SUITE_LADYBUG
    try:
        from llama_index.graph_stores.ladybug import LadybugPropertyGraphStore
    except ImportError:
        raise ImportError(f"the ladybug store needs ladybug and llama-index-graph-stores-ladybug: "
                          f"{EXTRA_HINT['ladybug']}") from None

    class SuiteLadybugPropertyGraphStore(LadybugPropertyGraphStore):
        working_copy: Optional[Path] = None

        def init_schema(self) -> None:
            super().init_schema()
            self.connection.execute("ALTER TABLE Entity ADD IF NOT EXISTS props STRING")

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            # One connection serves every thread of the index (queries run in parallel under its reader
            # lock): statements and transactions take turns on it.
            self._lock = threading.RLock()
            super().__init__(*args, **kwargs)

        def structured_query(self, query: str, param_map: Optional[dict] = None) -> Any:
            with self._lock:
                return super().structured_query(query, param_map)

        @contextlib.contextmanager
        def _transaction(self):
            with self._lock:
                self.connection.execute("BEGIN TRANSACTION")
                try:
                    yield self.connection.execute
                except BaseException:
                    with contextlib.suppress(RuntimeError):  # LadybugDB has already rolled back after its own errors
                        self.connection.execute("ROLLBACK")
                    raise
                self.connection.execute("COMMIT")

        def _write(self, statement: str, rows: dict) -> None:
            """``UNWIND $rows AS row`` + ``statement``, ``WRITE_BATCH`` rows per transaction.

            One statement per batch is 2-3x faster than one per row (measured). Batches, because a
            transaction's changes must fit in the buffer pool (one transaction for a 6,000-document corpus
            did not fit in 256 MB). Rows come deduplicated by key: MERGE does not see rows of its own
            statement. Their values are strings, never None, so that LadybugDB can type the list.
            """
            rows = list(rows.values())
            for start in range(0, len(rows), WRITE_BATCH):
                with self._transaction() as run:
                    run("UNWIND $rows AS row " + statement, parameters={"rows": rows[start:start + WRITE_BATCH]})

        def upsert_nodes(self, nodes: list[LabelledNode]) -> None:
            self._write("MERGE (c:Chunk {id: row.id}) SET c.text = row.text, c.label = row.label, c.ref_doc_id = row.doc",
                        {n.id_: {"id": n.id_, "text": n.text, "label": n.label,
                                 "doc": str(n.properties.get("ref_doc_id") or n.properties.get("doc_id") or "")}
                         for n in nodes if isinstance(n, ChunkNode)})
            self._write("MERGE (e:Entity {id: row.id}) SET e.name = row.id, e.label = row.label, e.props = row.props",
                        {n.name: {"id": n.name, "label": n.label,
                                  "props": json.dumps(n.properties, ensure_ascii=False, default=str)}
                         for n in nodes if isinstance(n, EntityNode)})

        def upsert_relations(self, relations: list[Relation]) -> None:
            sources = sorted({r.source_id for r in relations})
            chunk_ids = {r["c.id"] for r in self.structured_query("MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id",
                                                                  {"ids": sources})} if sources else set()
            mentions, links = {}, {}
            for rel in relations:
                row = {"s": rel.source_id, "t": rel.target_id, "label": rel.label}
                if rel.source_id in chunk_ids:
                    mentions[(rel.source_id, rel.target_id)] = row
                else:
                    row["source"] = str(rel.properties.get("triplet_source_id") or "")
                    links[(rel.source_id, rel.target_id, rel.label)] = row
            # Each row is joined to the Entity table: about 0.05 ms a row at 1,000 documents, 1 ms at 6,000
            # (measured; CREATE instead of MERGE into an empty table made no difference, and COPY, 50x faster,
            # crashed LadybugDB 0.22 in one of our tests, so it is not used).
            self._write("MATCH (c:Chunk {id: row.s}), (e:Entity {id: row.t}) MERGE (c)-[r:MENTIONS]->(e) "
                        "SET r.label = row.label", mentions)
            self._write("MATCH (a:Entity {id: row.s}), (b:Entity {id: row.t}) MERGE (a)-[r:LINKS {label: row.label}]->(b) "
                        "SET r.triplet_source_id = row.source", links)

        def delete(self, entity_names=None, relation_names=None, properties=None, ids=None) -> None:
            with self._transaction():
                super().delete(entity_names=entity_names, relation_names=relation_names, properties=properties, ids=ids)

        def get(self, properties: Optional[dict] = None, ids: Optional[list[str]] = None) -> list[LabelledNode]:
            if ids and not properties:  # PathRAG asks for entities by key at query time: read only their table
                rows = self.structured_query("MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id, e.label, e.props",
                                             {"ids": list(ids)})
                found = [EntityNode(name=r["e.id"], label=r["e.label"] or "entity", properties=json.loads(r["e.props"] or "{}"))
                         for r in rows]
                rest = sorted(set(ids) - {n.name for n in found})
                return found + (self._get_decoded(rest) if rest else [])
            return self._get_decoded(ids, properties)

        def _get_decoded(self, ids: Optional[list[str]], properties: Optional[dict] = None) -> list[LabelledNode]:
            nodes = super().get(properties=properties, ids=ids)
            for node in nodes:
                saved = node.properties.pop("props", None)
                if isinstance(node, EntityNode) and saved:
                    node.properties.pop("label", None)  # a column copy of node.label; the saved properties say the rest
                    node.properties.update(json.loads(saved))
            return nodes

    _SUITE_LADYBUG = SuiteLadybugPropertyGraphStore
    return _SUITE_LADYBUG


_SUITE_LADYBUG: Optional[type] = None


def suite_falkordb() -> type:
    """FalkorDBPropertyGraphStore with what the index needs (imported on first use).

    * A server that cannot be reached (down, killed mid-write, refusing the password) raises
      :class:`StoreUnavailableError` naming the store and its URL without the password, instead of a
      traceback through the Redis client.
    * No sanitising of query results: LlamaIndex's value_sanitize turns a list of 128 or more values into
      None (meant for LLM context), and no schema read on connect (it samples every label: slow, unused).
    * ``get_triplets(ids=...)`` also gives chunk -> entity relations (our CONTAINS edges): the package reads
      only relations between two entity nodes, so ``GraphRAGIndex.from_property_graph_index`` would lose
      which entities each chunk contains.
    * :meth:`empty`: delete the graph and recreate the package's indexes.
    """
    global _SUITE_FALKORDB
    if _SUITE_FALKORDB is not None:
        return _SUITE_FALKORDB
    try:
        import redis
        from llama_index.graph_stores.falkordb import FalkorDBPropertyGraphStore
        from llama_index.graph_stores.falkordb.falkordb_property_graph import BASE_ENTITY_LABEL, CHUNK_LABEL
    except ImportError:
        raise ImportError(f"the falkordb store needs llama-index-graph-stores-falkordb: {EXTRA_HINT['falkordb']}") from None

    class SuiteFalkorDBPropertyGraphStore(FalkorDBPropertyGraphStore):
        def __init__(self, public_url: str, **kwargs: Any) -> None:
            self._graphrag_url = public_url  # for the manifest and error messages (never the password)
            self._database = kwargs.get("database", FALKORDB_GRAPH)
            kwargs.setdefault("socket_connect_timeout", FALKORDB_CONNECT_TIMEOUT)
            with self._reachable():  # the package creates its indexes on connect
                super().__init__(refresh_schema=False, sanitize_query_output=False, **kwargs)

        @contextlib.contextmanager
        def _reachable(self):
            try:
                yield
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, ConnectionError) as exc:
                if isinstance(exc, StoreUnavailableError):
                    raise
                reason = str(exc).strip() or type(exc).__name__
                login = isinstance(exc, (redis.exceptions.AuthenticationError, redis.exceptions.AuthorizationError))
                what = "refused the login (the password is the URL's or FALKORDB_PASSWORD)" if login else "cannot be reached"
                # from None: the Redis client's frames say nothing the reason does not
                raise StoreUnavailableError(f"FalkorDB store at {self._graphrag_url} (graph {self._database!r}) "
                                            f"{what}: {reason}") from None

        def structured_query(self, query: str, param_map: Optional[dict] = None) -> Any:
            with self._reachable():
                return super().structured_query(query, param_map)

        def empty(self) -> int:
            """Delete every node and edge of the graph; returns how many nodes it held."""
            with self._reachable():
                held = self.structured_query("MATCH (n) RETURN count(n) AS n")[0]["n"]
                if held:
                    # GRAPH.DELETE frees the graph at once, where DETACH DELETE walks every node; it takes the
                    # indexes with it, so they are made again (the package made them on connect)
                    self._graph.delete()
                    self._vector_index_dimensions = {}
                    self._create_range_indexes()
            return held

        def get_triplets(self, entity_names=None, relation_names=None, properties=None, ids=None) -> list:
            triplets = super().get_triplets(entity_names=entity_names, relation_names=relation_names,
                                            properties=properties, ids=ids)
            if not ids or entity_names or properties:
                return triplets
            rel_filter = ":" + "|".join(f"`{r.replace('`', '')}`" for r in relation_names) if relation_names else ""
            rows = self.structured_query(
                f"MATCH (c:`{CHUNK_LABEL}`)-[r{rel_filter}]->(t:`{BASE_ENTITY_LABEL}`) WHERE c.id IN $ids OR t.id IN $ids "
                f"RETURN c.id AS source_id, type(r) AS type, properties(r) AS rel_properties, t.id AS target_id, "
                f"[l IN labels(t) WHERE l <> '{BASE_ENTITY_LABEL}'][0] AS target_type, "
                f"t{{.*, embedding: Null, id: Null, name: Null}} AS target_properties", {"ids": list(ids)})
            for row in rows:
                rel_props = {k: v for k, v in (row["rel_properties"] or {}).items() if v is not None}
                target_props = {k: v for k, v in (row["target_properties"] or {}).items() if v not in (None, "")}
                triplets.append([ChunkNode(id_=row["source_id"], text=""),
                                 Relation(label=row["type"], source_id=row["source_id"], target_id=row["target_id"],
                                          properties=rel_props),
                                 EntityNode(name=row["target_id"], label=row["target_type"] or "entity",
                                            properties=target_props)])
            return triplets

    _SUITE_FALKORDB = SuiteFalkorDBPropertyGraphStore
    return _SUITE_FALKORDB


_SUITE_FALKORDB: Optional[type] = None


def suite_neo4j() -> type:
    """Neo4jPropertyGraphStore writing portable Cypher: no APOC plugin needed (imported on first use).

    The package calls APOC to write (``apoc.map.clean``, ``apoc.create.addLabels``,
    ``apoc.merge.relationship``), ``db.create.setNodeVectorProperty`` for embeddings, and APOC again to
    read the schema on connect (``apoc.meta.data``). A Neo4j server without the plugin, and Bolt servers
    that speak Cypher but are not Neo4j (ArcadeDB's Bolt plugin, docs/stores.md), then fail. Here:

    * nodes and relations are written with a statement per label / relation type (labels and types
      cannot be parameters in Cypher: APOC was how the package avoided this), embeddings with plain SET;
    * the schema (what LlamaIndex's text-to-Cypher retriever shows the LLM) is sampled with plain Cypher;
    * a server that cannot be reached raises :class:`StoreUnavailableError` naming the URL without
      its password; no sanitising of query results (value_sanitize turns 128+ values into None).
    """
    global _SUITE_NEO4J
    if _SUITE_NEO4J is not None:
        return _SUITE_NEO4J
    try:
        import neo4j
        from llama_index.graph_stores.neo4j import Neo4jPropertyGraphStore
        from llama_index.graph_stores.neo4j.neo4j_property_graph import (
            BASE_ENTITY_LABEL, BASE_NODE_LABEL, CHUNK_SIZE, VECTOR_INDEX_NAME)
    except ImportError:
        raise ImportError(f"the neo4j store needs llama-index-graph-stores-neo4j: {EXTRA_HINT['neo4j']}") from None

    def quoted(name: str) -> str:
        return "`" + str(name).replace("`", "``") + "`"

    def type_name(value: Any) -> str:
        for kind, name in ((bool, "BOOLEAN"), (int, "INTEGER"), (float, "FLOAT"), (str, "STRING"), (list, "LIST")):
            if isinstance(value, kind):
                return name
        return "UNKNOWN"

    class SuiteNeo4jPropertyGraphStore(Neo4jPropertyGraphStore):
        schema_sample = 1000  # nodes / relations read to describe the schema

        def __init__(self, public_url: str, **kwargs: Any) -> None:
            self._graphrag_url = public_url  # for the manifest and error messages (never the password)
            kwargs.setdefault("sanitize_query_output", False)
            kwargs.setdefault("connection_timeout", 10.0)
            self._database = kwargs.get("database", "neo4j")
            create_indexes = kwargs.pop("create_indexes", True)
            with self._reachable():  # the package reads the schema on connect
                super().__init__(create_indexes=False, **kwargs)
                if create_indexes:
                    self._create_indexes()

        def _create_indexes(self) -> None:
            """The package's uniqueness constraints on Neo4j, plain indexes on other Bolt servers; its vector
            index only where the server has them (the index never runs vector queries on the store: its own
            faiss tables answer those)."""
            agent = self._driver.get_server_info().agent  # "Neo4j/5.26.0", "Neo4j/5.26.0 compatible (ArcadeDB ...)"
            neo4j_itself = agent.startswith("Neo4j/") and "compatible" not in agent
            for label in (BASE_NODE_LABEL, BASE_ENTITY_LABEL):
                if neo4j_itself:
                    self.structured_query(f"CREATE CONSTRAINT IF NOT EXISTS FOR (n:{quoted(label)}) "
                                          "REQUIRE n.id IS UNIQUE")
                else:  # ArcadeDB moves a node to another type when a label is added, which its unique index refuses
                    self.structured_query(f"CREATE INDEX IF NOT EXISTS FOR (n:{quoted(label)}) ON (n.id)")
            if self._supports_vector_index:
                try:
                    self.structured_query(f"CREATE VECTOR INDEX {VECTOR_INDEX_NAME} IF NOT EXISTS "
                                          f"FOR (m:{quoted(BASE_ENTITY_LABEL)}) ON m.embedding")
                except neo4j.exceptions.Neo4jError as exc:  # a Bolt server that is not Neo4j (ArcadeDB)
                    log.info("Neo4j store at %s: no vector index (%s)", self._graphrag_url, exc.message)
                    self._supports_vector_index = False

        @contextlib.contextmanager
        def _reachable(self):
            try:
                yield
            except (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired) as exc:
                reason = str(exc).strip() or type(exc).__name__
                raise StoreUnavailableError(f"Neo4j store at {self._graphrag_url} (database {self._database!r}) "
                                            f"cannot be reached: {reason}") from None

        def structured_query(self, query: str, param_map: Optional[dict] = None) -> Any:
            with self._reachable():
                return super().structured_query(query, param_map)

        def _run_batches(self, statement: str, rows: list) -> None:
            for start in range(0, len(rows), CHUNK_SIZE):
                self.structured_query("UNWIND $data AS row " + statement, {"data": rows[start:start + CHUNK_SIZE]})

        def upsert_nodes(self, nodes: list[LabelledNode]) -> None:
            chunks = [{"id": n.id, "text": n.text, "properties": n.properties, "embedding": n.embedding}
                      for n in nodes if isinstance(n, ChunkNode)]
            self._run_batches(f"MERGE (c:{BASE_NODE_LABEL} {{id: row.id}}) SET c.text = row.text, c:Chunk "
                              "SET c += row.properties "
                              "SET c.embedding = coalesce(row.embedding, c.embedding)", chunks)
            by_label: dict[str, list] = {}
            for n in nodes:
                if isinstance(n, EntityNode):
                    by_label.setdefault(n.label, []).append(
                        {"id": n.id, "name": n.name, "embedding": n.embedding,
                         "properties": {k: v for k, v in n.properties.items() if v is not None}})
            for label, rows in by_label.items():
                self._run_batches(
                    f"MERGE (e:{BASE_NODE_LABEL} {{id: row.id}}) SET e += row.properties "
                    f"SET e.name = row.name, e:{quoted(BASE_ENTITY_LABEL)}, e:{quoted(label)} "
                    "SET e.embedding = coalesce(row.embedding, e.embedding) "
                    # as the package does: an entity extracted from a chunk is linked to it by MENTIONS
                    "WITH e, row WHERE row.properties.triplet_source_id IS NOT NULL "
                    f"MERGE (c:{BASE_NODE_LABEL} {{id: row.properties.triplet_source_id}}) "
                    "MERGE (e)<-[:MENTIONS]-(c)", rows)

        def upsert_relations(self, relations: list[Relation]) -> None:
            by_type: dict[str, list] = {}
            for r in relations:
                by_type.setdefault(r.label, []).append(
                    {"source_id": r.source_id, "target_id": r.target_id,
                     "properties": {k: v for k, v in r.properties.items() if v is not None}})
            for label, rows in by_type.items():
                self._run_batches(
                    f"MERGE (source:{BASE_NODE_LABEL} {{id: row.source_id}}) ON CREATE SET source:Chunk "
                    f"MERGE (target:{BASE_NODE_LABEL} {{id: row.target_id}}) ON CREATE SET target:Chunk "
                    f"MERGE (source)-[r:{quoted(label)}]->(target) SET r += row.properties", rows)

        def refresh_schema(self) -> None:
            """Labels, relation types and their properties, from a sample of the graph (as apoc.meta.data gives)."""
            excluded = [BASE_ENTITY_LABEL, BASE_NODE_LABEL]
            sample = {"sample": self.schema_sample, "excluded": excluded}
            node_rows = self.structured_query(
                "MATCH (n) WITH n LIMIT $sample UNWIND labels(n) AS label WITH n, label WHERE NOT label IN $excluded "
                "UNWIND keys(n) AS key WITH label, key, collect(n[key])[0] AS value "
                "WHERE key <> 'embedding' RETURN label, key, value", sample)
            rel_rows = self.structured_query(
                "MATCH ()-[r]->() WITH r LIMIT $sample UNWIND keys(r) AS key "
                "WITH type(r) AS type, key, collect(r[key])[0] AS value RETURN type, key, value", sample)
            triple_rows = self.structured_query(
                "MATCH (a)-[r]->(b) WITH a, r, b LIMIT $sample UNWIND labels(a) AS start UNWIND labels(b) AS end "
                "WITH start, type(r) AS type, end WHERE NOT start IN $excluded AND NOT end IN $excluded "
                "RETURN DISTINCT start, type, end", sample)
            node_props: dict[str, list] = {}
            for row in node_rows:
                node_props.setdefault(row["label"], []).append({"property": row["key"], "type": type_name(row["value"])})
            rel_props: dict[str, list] = {}
            for row in rel_rows:
                rel_props.setdefault(row["type"], []).append({"property": row["key"], "type": type_name(row["value"])})
            self.structured_schema = {
                "node_props": node_props, "rel_props": rel_props,
                "relationships": [{"start": r["start"], "type": r["type"], "end": r["end"]} for r in triple_rows],
                "metadata": {"constraint": [], "index": []},
            }

    _SUITE_NEO4J = SuiteNeo4jPropertyGraphStore
    return _SUITE_NEO4J


_SUITE_NEO4J: Optional[type] = None
