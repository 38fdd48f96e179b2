"""Which PropertyGraphStore the index mirrors its tables into, and how each kind is saved and reopened.

The JSON tables of a version folder (chunks, entities, facts, synonyms) are the index's content; the
store is a mirror of them that LlamaIndex's own retrievers and tools can read (our methods read the
derived arrays, never the store). Four kinds, named by ``store=`` / ``--store`` (docs/stores.md):

``simple``
    LlamaIndex's in-memory ``SimplePropertyGraphStore`` (the default), as a lazy mirror
    (``lazy_store.py``): filled from the tables when something other than the index first uses it, and
    not saved while it holds nothing else (the manifest says ``"derived": true``; ``load`` gives an
    unfilled store). Once something else wrote to it (the PathRAG extractor's descriptions, a user's
    upserts), each version folder holds it as ``property_graph_store.json``, as indexes saved before
    the lazy mirror do.
``ladybug``
    LadybugDB (Kùzu's maintained successor), an embedded file-backed graph database, through
    ``llama-index-graph-stores-ladybug``. Each version folder holds its own database file,
    ``graph.lbug``. Why a copy per version rather than one database beside the versions: a save
    must stay atomic and a rollback must give back exactly the graph of that version. A database
    shared by all versions is changed in place by every insert and delete, before any save, so an
    old version's tables and the database would disagree after a rollback (or after a crash
    mid-save). So the live database is a private working copy (a temporary folder); ``persist``
    checkpoints it and copies the file into the new version folder, where it is checksummed like
    every other file; ``load`` copies the version's file into a new working copy. The price is a
    file copy per save and per load, and one database file per kept version on disk.
``neo4j://user:password@host:7687`` (or ``bolt://``, ``neo4j+s://``, ``bolt+s://``; ``/name`` for a database)
    A Neo4j server through ``llama-index-graph-stores-neo4j``, whose writes and schema read we replace
    with portable Cypher (no APOC plugin needed; see :func:`_suite_neo4j`). A server cannot live in a version
    folder: the manifest records the URL without the password, and ``load`` reconnects (the
    password comes from the URL given to ``load(store=...)``, ``GRAPHRAG_NEO4J_URL`` or
    ``NEO4J_PASSWORD``). The server holds the graph of the last version mirrored into it; after a
    rollback, ``load`` upserts the loaded version's tables into it again (see :func:`open_store`).
``falkordb://[user:password@]host:6379[/graph]`` (or ``falkor://``; ``falkordbs://`` / ``falkors://`` for TLS)
    A FalkorDB server (Redis with the FalkorDB module) through ``llama-index-graph-stores-falkordb``;
    the index owns one graph on it (``/graph``, default ``graphrag``). A server kind like Neo4j: the
    manifest records the URL without the password, and ``load`` reconnects to it (a URL without a
    password reconnects by itself; else ``load(store=...)``, ``GRAPHRAG_FALKORDB_URL`` or
    ``FALKORDB_PASSWORD``). Unlike Neo4j, where the database may hold other data, the graph is the
    index's alone, so a new index and every ``load`` empty it and write the tables in: after a rollback
    or a server restart it holds exactly the loaded version. Two indexes must not share a graph.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import unquote, urlsplit

from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import ChunkNode, EntityNode, LabelledNode, PropertyGraphStore, Relation

from .lazy_store import LazySimplePropertyGraphStore

log = logging.getLogger(__name__)

SIMPLE_FILE = "property_graph_store.json"
LADYBUG_FILE = "graph.lbug"
NEO4J_SCHEMES = ("neo4j", "bolt", "neo4j+s", "bolt+s", "neo4j+ssc", "bolt+ssc")
# LadybugDB's buffer pool defaults to ~80% of the machine's memory; an index mirror needs far less,
# and several processes (tests, a server, a CLI) may open indexes at once.
LADYBUG_BUFFER_BYTES = int(os.environ.get("GRAPHRAG_LADYBUG_BUFFER_MB", "256")) << 20
WRITE_BATCH = 5000  # rows per LadybugDB write transaction (see _write)
# Store kinds that are database servers: they outlive a version folder, so a load reconnects and refills them.
SERVER_KINDS = ("neo4j", "falkordb")
# falkor:// and falkors:// are the FalkorDB client's own schemes; the trailing s means TLS (rediss://).
FALKORDB_SCHEMES = ("falkordb", "falkor", "falkordbs", "falkors")
FALKORDB_GRAPH = "graphrag"  # the graph an index mirrors into when the URL names none
# Seconds to wait for a FalkorDB server to accept a connection: a host that drops packets fails in
# seconds rather than hanging the index (queries themselves are not timed out: a big refill is slow).
FALKORDB_CONNECT_TIMEOUT = float(os.environ.get("GRAPHRAG_FALKORDB_CONNECT_TIMEOUT", "5"))
EXTRA_HINT = {"ladybug": "pip install -c constraints.txt -e '.[stores]' (from a clone)",
              "falkordb": "pip install -c constraints.txt -e '.[stores]' (from a clone)",
              "neo4j": "pip install -c constraints.txt -e '.[neo4j]' (from a clone)"}


class StoreSpecError(ValueError):
    """A ``--store`` value that names no store kind, or a malformed server URL."""


class StoreUnavailableError(ConnectionError):
    """A server store's database cannot be reached (down, refused, cut off mid-write).

    The message names the store kind and its URL without the password; the client library's own
    exception is left out of the traceback (its text is in the message). A ``ConnectionError``, so
    ``load`` does not mistake it for a corrupt index.
    """


@dataclass(frozen=True)
class StoreSpec:
    """A parsed ``store=`` value: ``kind`` is simple, ladybug, neo4j or falkordb; ``url`` only for a server."""

    kind: str
    url: str = ""

    @classmethod
    def parse(cls, spec: str) -> "StoreSpec":
        text = str(spec).strip()
        if text.lower() in ("simple", "ladybug"):
            return cls(text.lower())
        scheme = text.split("://", 1)[0].lower() if "://" in text else ""
        if scheme in NEO4J_SCHEMES:
            parts = urlsplit(text)
            if not parts.hostname:
                raise StoreSpecError(f"bad Neo4j URL {redact(text)!r}: no host (expected neo4j://user:password@host:7687)")
            try:
                parts.port  # noqa: B018 - raises ValueError for a port that is not a number
            except ValueError:
                raise StoreSpecError(f"bad Neo4j URL {redact(text)!r}: the port is not a number") from None
            return cls("neo4j", text)
        if scheme in FALKORDB_SCHEMES:
            parts = urlsplit(text)
            if not parts.hostname:
                raise StoreSpecError(f"bad FalkorDB URL {redact(text)!r}: no host (expected falkordb://host:6379/graph)")
            try:
                parts.port  # noqa: B018 - raises ValueError for a port that is not a number
            except ValueError:
                raise StoreSpecError(f"bad FalkorDB URL {redact(text)!r}: the port is not a number") from None
            if "/" in parts.path.strip("/") or parts.query or parts.fragment:
                raise StoreSpecError(f"bad FalkorDB URL {redact(text)!r}: after host:port only /graph may follow")
            return cls("falkordb", text)
        raise StoreSpecError(f"unknown store {redact(text)!r}: use simple, ladybug, a Neo4j URL "
                             "(neo4j://user:password@host:7687 or bolt://...) or a FalkorDB URL "
                             "(falkordb://host:6379/graph)")

    def public(self) -> dict[str, str]:
        """What the manifest records: the kind, and for a server its URL without the password."""
        return {"kind": self.kind, **({"url": redact(self.url)} if self.url else {})}


def redact(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for manifests, logs and error messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]  # host[:port] as written (even a bad port: this runs in error messages)
    return parts._replace(netloc=f"{parts.username}:***@{host}").geturl()


def store_kind(store: PropertyGraphStore) -> str:
    """simple, ladybug, neo4j, falkordb, or external (any other PropertyGraphStore: saved by its owner, not by us)."""
    if isinstance(store, SimplePropertyGraphStore):
        return "simple"
    # By the module of a class it derives from, so that neither package is imported just to ask.
    modules = [c.__module__ for c in type(store).__mro__]
    for kind in ("ladybug", "neo4j", "falkordb"):
        if any(m.startswith(f"llama_index.graph_stores.{kind}") for m in modules):
            return kind
    return "external"


def create_store(spec: "str | StoreSpec | PropertyGraphStore | None") -> PropertyGraphStore:
    """A new, empty store for ``spec`` (a store instance is returned as it is)."""
    if spec is None:
        return LazySimplePropertyGraphStore()
    if isinstance(spec, PropertyGraphStore):
        return spec
    spec = spec if isinstance(spec, StoreSpec) else StoreSpec.parse(spec)
    if spec.kind == "simple":
        return LazySimplePropertyGraphStore()
    if spec.kind == "ladybug":
        return open_ladybug(None)
    if spec.kind == "falkordb":
        return open_falkordb(spec.url, empty=True)
    return open_neo4j(spec.url)


def open_ladybug(seed: Path | None) -> PropertyGraphStore:
    """A Ladybug store on a private working copy: a copy of ``seed`` (a saved ``graph.lbug``), or empty."""
    cls = _suite_ladybug()
    import ladybug

    work = Path(tempfile.mkdtemp(prefix="graphrag-ladybug-"))
    path = work / LADYBUG_FILE
    if seed is not None:
        shutil.copyfile(seed, path)
    db = ladybug.Database(str(path), buffer_pool_size=LADYBUG_BUFFER_BYTES)
    # No vector index: our faiss tables are the index's, and the extension is downloaded. No sanitising:
    # LlamaIndex's value_sanitize turns a result of 128 rows or more into None (meant for LLM context).
    store = cls(db, use_vector_index=False, sanitize_query_output=False)
    store.working_copy = path
    # The working copy goes when the store does (close the database first: it holds the file open).
    weakref.finalize(store, _close_and_remove, db, work)
    return store


def _close_and_remove(db: Any, folder: Path) -> None:
    try:
        db.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def open_neo4j(url: str) -> PropertyGraphStore:
    """A Neo4j store for ``url``; the password is the URL's, else ``NEO4J_PASSWORD``."""
    cls = _suite_neo4j()
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password is not None else os.environ.get("NEO4J_PASSWORD")
    if password is None:
        raise StoreSpecError(f"no password for {redact(url)}: put it in the URL or in NEO4J_PASSWORD")
    server = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    database = parts.path.strip("/") or "neo4j"
    return cls(redact(url), username=unquote(parts.username or "neo4j"), password=password, url=server,
               database=database)


def open_falkordb(url: str, empty: bool = False) -> PropertyGraphStore:
    """A FalkorDB store on ``url``'s graph; the password is the URL's, else ``FALKORDB_PASSWORD`` (or none).

    ``empty``: delete what the graph held first (a new index, and every load: see the module docstring).
    """
    cls = _suite_falkordb()
    parts = urlsplit(url)
    password = unquote(parts.password) if parts.password is not None else os.environ.get("FALKORDB_PASSWORD")
    # The client speaks redis:// (rediss:// with TLS); the URL's path is a Redis database number there, so
    # the graph name is passed on its own.
    scheme = "rediss" if parts.scheme.lower().endswith("s") else "redis"
    host = parts.netloc.rsplit("@", 1)[-1]  # host[:port] as written ([::1]:6379 keeps its brackets)
    if parts.port is None:
        host += ":6379"
    graph = unquote(parts.path.strip("/")) or FALKORDB_GRAPH
    store = cls(redact(url), url=f"{scheme}://{host}", database=graph, username=unquote(parts.username or "") or None,
                password=password)
    if empty:
        held = store.empty()
        if held:
            log.info("FalkorDB graph %r at %s held %d nodes; emptied for this index's tables", graph, redact(url), held)
    return store


def _falkordb_url_for_load(manifest: dict, given: Any, persist_dir: Path) -> str:
    """The URL to reconnect a saved FalkorDB index to: ``given`` (a URL of the same kind passed to ``load``),
    else ``GRAPHRAG_FALKORDB_URL``, else the manifest's own: as it is when it had no password, without the
    ``***`` when ``FALKORDB_PASSWORD`` gives it (read by :func:`open_falkordb`)."""
    url = given or os.environ.get("GRAPHRAG_FALKORDB_URL")
    if url:
        return StoreSpec.parse(url).url
    recorded = manifest.get("store_backend", {}).get("url", "")
    parts = urlsplit(recorded)
    if parts.password == "***" and os.environ.get("FALKORDB_PASSWORD"):
        user = f"{parts.username}@" if parts.username else ""
        recorded = parts._replace(netloc=user + parts.netloc.rsplit("@", 1)[1]).geturl()
    if recorded and urlsplit(recorded).password is None:
        with contextlib.suppress(StoreSpecError):  # not a URL: a store of the user's, whose address is unknown
            return StoreSpec.parse(recorded).url
    raise StoreSpecError(f"index at {persist_dir} was built on FalkorDB at {recorded or 'an unrecorded URL'}; pass "
                         "store='falkordb://user:password@host:port/graph' (CLI: set GRAPHRAG_FALKORDB_URL, or "
                         "FALKORDB_PASSWORD) to load it")


def save_store(store: PropertyGraphStore, folder: Path, derived: bool = False) -> None:
    """Write the store's part of a version into ``folder`` (nothing for a server, an external store, or a
    ``derived`` simple store: see :func:`~.lazy_store.is_derived`)."""
    kind = store_kind(store)
    if kind == "simple":
        if not derived:
            store.persist(str(folder / SIMPLE_FILE))
    elif kind == "ladybug":
        with getattr(store, "_lock", contextlib.nullcontext()):  # no other thread's statement in between
            store.connection.execute("CHECKPOINT;")  # fold the write-ahead log into the file before copying it
            shutil.copyfile(store.db.database_path, folder / LADYBUG_FILE)


def manifest_record(store: PropertyGraphStore, derived: bool = False) -> dict[str, Any]:
    """The manifest's ``store_backend``: kind, class, for a server its URL without the password, and
    ``"derived": true`` for a simple store saved as nothing (filled from the tables after ``load``)."""
    kind = store_kind(store)
    record: dict[str, Any] = {"kind": kind, "class": type(store).__name__}
    if kind in SERVER_KINDS:
        record["url"] = redact(_server_url(store))
    if kind == "simple" and derived:
        record["derived"] = True
    return record


def legacy_name(store: PropertyGraphStore) -> str:
    """The manifest's ``store`` (a class name, read by versions before ``store_backend``): the simple
    kind is ``SimplePropertyGraphStore`` whichever subclass it is."""
    return "SimplePropertyGraphStore" if store_kind(store) == "simple" else type(store).__name__


def _server_url(store: Any) -> str:
    url = getattr(store, "_graphrag_url", None)
    if url:
        return url
    # LlamaIndex's own FalkorDB store given as property_graph_store=: its host, port and graph (never a password),
    # so that a load can reconnect to it
    with contextlib.suppress(AttributeError, KeyError, TypeError):
        options = store._driver.connection.connection_pool.connection_kwargs
        host = f"[{options['host']}]" if ":" in options["host"] else options["host"]
        return f"falkordb://{host}:{options['port']}/{store._database}"
    return "a server given as property_graph_store="


def saved_kind(manifest: dict) -> str:
    """Which store built a saved index; manifests written before ``store_backend`` name only a class."""
    record = manifest.get("store_backend")
    if isinstance(record, dict) and record.get("kind") in ("simple", "ladybug", *SERVER_KINDS, "external"):
        return record["kind"]
    return "simple" if manifest.get("store", "SimplePropertyGraphStore") == "SimplePropertyGraphStore" else "external"


def open_store(folder: Path, manifest: dict, given: "str | PropertyGraphStore | None",
               persist_dir: Path) -> tuple[PropertyGraphStore, bool]:
    """The store of a saved version, and whether it must be filled from the tables.

    It must when its saved file is missing (deleted or never written: it is rebuilt from the tables,
    like any derived file) or for a server (see the module docstring). A simple store never needs it:
    without its JSON (a derived store, or the file was deleted) it comes back lazy, filled from the
    tables on first use; with it, the JSON is read (outside data: the next save writes it again). A
    ``given`` store instance is used as it is and never refilled (the caller owns it).
    """
    if isinstance(given, PropertyGraphStore):
        return given, False
    kind = saved_kind(manifest)
    if kind == "simple":
        if (folder / SIMPLE_FILE).is_file():
            return LazySimplePropertyGraphStore.from_persist_path(str(folder / SIMPLE_FILE)), False
        return LazySimplePropertyGraphStore(), False
    if kind == "ladybug":
        saved = folder / LADYBUG_FILE
        if not saved.is_file():
            return open_ladybug(None), True
        try:
            return open_ladybug(saved), False
        except RuntimeError as exc:  # its checksum matched, so a LadybugDB version that reads another file format
            log.warning("index at %s: %s cannot be opened (%s); refilling it from the tables", persist_dir,
                        LADYBUG_FILE, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return open_ladybug(None), True
    if kind == "neo4j":
        url = given or os.environ.get("GRAPHRAG_NEO4J_URL")
        recorded = manifest.get("store_backend", {}).get("url", "")
        if not url:
            raise StoreSpecError(f"index at {persist_dir} was built on Neo4j at {recorded}; pass store='neo4j://user:"
                                 "password@host:port' (CLI: set GRAPHRAG_NEO4J_URL) to load it")
        return open_neo4j(StoreSpec.parse(url).url), True
    if kind == "falkordb":
        return open_falkordb(_falkordb_url_for_load(manifest, given, persist_dir), empty=True), True
    raise StoreSpecError(f"index at {persist_dir} was built on a {manifest.get('store')}; pass "
                         "property_graph_store= to load it")


def _suite_ladybug() -> type:
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


def _suite_falkordb() -> type:
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


def _suite_neo4j() -> type:
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
