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
    with portable Cypher (no APOC plugin needed; see :func:`.store_classes.suite_neo4j`). A server cannot live in a version
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
import logging
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import PropertyGraphStore

from .lazy_store import LazySimplePropertyGraphStore
from .store_classes import (  # noqa: F401  (EXTRA_HINT and StoreUnavailableError: named here too)
    EXTRA_HINT,
    FALKORDB_GRAPH,
    StoreUnavailableError,
    suite_falkordb,
    suite_ladybug,
    suite_neo4j,
)

log = logging.getLogger(__name__)

SIMPLE_FILE = "property_graph_store.json"
LADYBUG_FILE = "graph.lbug"
NEO4J_SCHEMES = ("neo4j", "bolt", "neo4j+s", "bolt+s", "neo4j+ssc", "bolt+ssc")
# LadybugDB's buffer pool defaults to ~80% of the machine's memory; an index mirror needs far less,
# and several processes (tests, a server, a CLI) may open indexes at once.
LADYBUG_BUFFER_BYTES = int(os.environ.get("GRAPHRAG_LADYBUG_BUFFER_MB", "256")) << 20
# Store kinds that are database servers: they outlive a version folder, so a load reconnects and refills them.
SERVER_KINDS = ("neo4j", "falkordb")
# falkor:// and falkors:// are the FalkorDB client's own schemes; the trailing s means TLS (rediss://).
FALKORDB_SCHEMES = ("falkordb", "falkor", "falkordbs", "falkors")



class StoreSpecError(ValueError):
    """A ``--store`` value that names no store kind, or a malformed server URL."""


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
            _server_url_parts(text, "Neo4j", "neo4j://user:password@host:7687")
            return cls("neo4j", text)
        if scheme in FALKORDB_SCHEMES:
            parts = _server_url_parts(text, "FalkorDB", "falkordb://host:6379/graph")
            if "/" in parts.path.strip("/") or parts.query or parts.fragment:
                raise StoreSpecError(f"bad FalkorDB URL {redact(text)!r}: after host:port only /graph may follow")
            return cls("falkordb", text)
        raise StoreSpecError(f"unknown store {redact(text)!r}: use simple, ladybug, a Neo4j URL "
                             "(neo4j://user:password@host:7687 or bolt://...) or a FalkorDB URL "
                             "(falkordb://host:6379/graph)")

    def public(self) -> dict[str, str]:
        """What the manifest records: the kind, and for a server its URL without the password."""
        return {"kind": self.kind, **({"url": redact(self.url)} if self.url else {})}


def _server_url_parts(text: str, name: str, example: str):
    """The parts of a server URL with a host and, if any, a numeric port; StoreSpecError otherwise."""
    parts = urlsplit(text)
    if not parts.hostname:
        raise StoreSpecError(f"bad {name} URL {redact(text)!r}: no host (expected {example})")
    try:
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        raise StoreSpecError(f"bad {name} URL {redact(text)!r}: the port is not a number") from None
    return parts


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
    cls = suite_ladybug()
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
    cls = suite_neo4j()
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
    cls = suite_falkordb()
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
