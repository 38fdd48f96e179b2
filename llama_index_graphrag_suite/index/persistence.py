"""Saving and loading the index: JSON tables, numpy arrays and faiss files in an atomic version folder.

A mixin of :class:`~.graph_index.GraphRAGIndex`; the folder layout and checks are in ``storage.py``.
"""

from __future__ import annotations

import logging
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import (
    PropertyGraphStore,
)
from typing_extensions import Self  # the GraphRAGIndex these mixins are part of

from .._version import __version__
from ..config import IndexConfig
from ..embeddings import embed_model_name
from ..fileio import sha256_file
from ..graph.snapshot import GraphSnapshot
from . import pending, stores
from .checks import check_snapshot, check_tables, check_vector_rows
from .journal import checked as checked_provenance
from .lazy_store import LazySimplePropertyGraphStore, is_derived
from .records import ChunkRecord, EntityRecord, FactRecord, entity_attributes
from .storage import (
    KEEP_VERSIONS,
    MANIFEST,
    CorruptIndexError,
    current_token,
    current_version,
    folder_writer,
    list_versions,
    open_version,
    read_json,
    save_version,
    version_token,
    write_json,
)
from .storage import (
    rollback as rollback_to,
)
from .vectors import VectorTable

log = logging.getLogger(__name__)
STORE_FILE = stores.SIMPLE_FILE
ARTEFACTS = "artefacts"  # sub-folder of a version holding methods' derived artefacts (see ArtefactCache.artefact)
PROVENANCE = "provenance.json"  # what inserts changed in older chunks (see journal.py); absent in older indexes
# Files computed cheaply from the JSON tables: a load that finds one missing rebuilds it (the next save
# writes it again; the simple store's JSON only if the store comes to hold more than the tables, see
# lazy_store.py). A missing table, or any file whose checksum differs, is still a corrupt index; so is a
# missing vector file (rebuilding it means embedding the corpus again: build the index again for that).
DERIVED_FILES = {"graph.npz", STORE_FILE, stores.LADYBUG_FILE}


class IndexPersistence:
    """``persist`` (atomic, checksummed, versioned) and ``load`` (one-line errors for a missing, corrupt or newer index)."""

    def persist(self, persist_dir: str | Path, keep_versions: int = KEEP_VERSIONS) -> Path:
        """Save atomically under ``persist_dir`` as a new version (see ``index/storage.py``); returns its folder.

        The newest ``keep_versions`` versions stay on disk (the new one included), so a bad save can be
        undone with :meth:`rollback`. Holds the folder's writer lock (another process saving to it waits,
        then gets ``IndexLockedError``) and this index's reader lock: queries go on meanwhile, an insert
        or delete in another thread waits until the tables are on disk.

        No lost update (``pending.py``): when this index was loaded from (or last saved to) ``persist_dir`` and
        another process has saved a version there since, this index takes in that version and re-applies its
        own pending document operations on it (under its writer lock), then saves; a document both changed
        differently raises ``IndexConflictError`` and nothing is saved. A fresh build, or an index saved into
        another folder than its own, replaces what the folder holds, as a new version.
        """
        with folder_writer(persist_dir):  # held from the version check to the flip of CURRENT
            with self._rw.reading():
                if not self._behind(persist_dir):
                    return self._persist(persist_dir, keep_versions)
            with self._rw.writing():  # another writer saved meanwhile: re-apply our changes on its version
                if self._behind(persist_dir):
                    fresh = self._load_newest(Path(persist_dir))
                    pending.apply(fresh, self._pending, str(persist_dir))  # or IndexConflictError: nothing saved
                    self._adopt(fresh)
                return self._persist(persist_dir, keep_versions)

    def _behind(self, persist_dir: str | Path) -> bool:
        """Whether ``persist_dir`` is the folder this index came from and another writer saved a version there since."""
        origin = self._origin
        if origin is None or Path(persist_dir).resolve() != origin[0]:
            return False  # a fresh build, or a copy into another folder: it replaces what is there, as it always did
        token = current_token(persist_dir)
        return token is not None and token != origin[1]

    def _persist(self, persist_dir: str | Path, keep_versions: int) -> Path:
        if self.snapshot is None:
            raise ValueError("nothing to persist: the index is empty")
        store = self.property_graph_store
        derived = is_derived(store, self)  # decided once: the files and the manifest must agree

        def write(folder: Path) -> None:
            write_json(folder / "chunks.json", [self.chunks[c].to_json() for c in self._chunk_order])
            write_json(folder / "entities.json", [e.to_json() for e in self.entities.values()])
            write_json(folder / "facts.json", [f.to_json() for f in self.facts.values()])
            write_json(folder / "synonyms.json", [[a, b, s] for (a, b), s in self.synonyms.items()])
            if self._provenance:
                write_json(folder / PROVENANCE, self._provenance)
            write_json(folder / "vector_ids.json", {
                "chunks": self.chunk_vectors.ids, "entities": self.entity_vectors.ids, "facts": self.fact_vectors.ids})
            np.savez(folder / "graph.npz", **self.snapshot.to_arrays())
            self.chunk_vectors.save(folder / "chunks.faiss")
            self.entity_vectors.save(folder / "entities.faiss")
            self.fact_vectors.save(folder / "facts.faiss")
            stores.save_store(store, folder, derived)  # a JSON file, a database file, or nothing (a server, a derived mirror)
            in_memory = self._artefacts_to_save()
            for name, obj in in_memory.items():
                obj.save(folder / ARTEFACTS / name)
            for name, old in self._saved_artefacts.items():  # loaded from disk, never used: carry over
                if name not in in_memory and old.is_dir():
                    shutil.copytree(old, folder / ARTEFACTS / name)

        manifest = {
            "library": "llama-index-graphrag-suite",
            "library_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "config": self.config.model_dump(),
            "embed_model": embed_model_name(self.embed_model),
            "embed_dim": self._dim,
            "store": stores.legacy_name(store),  # read by older versions of the library
            "store_backend": stores.manifest_record(store, derived),
            "counts": self.stats(),
            "build": self.build_info,
        }
        saved = save_version(persist_dir, write, manifest, keep=keep_versions, lock_held=True)
        self._origin = (Path(persist_dir).resolve(), version_token(saved, read_json(saved / MANIFEST)))
        self._pending.clear()
        artefacts = saved / ARTEFACTS
        self._saved_artefacts = {p.name: p for p in artefacts.iterdir()} if artefacts.is_dir() else {}
        return saved

    @staticmethod
    def versions(persist_dir: str | Path) -> list[dict[str, Any]]:
        """The versions kept in ``persist_dir``, oldest first: ``{"version", "name", "current", "created", "counts", "error"}``."""
        return list_versions(persist_dir)

    @staticmethod
    def rollback(persist_dir: str | Path, version: int) -> Path:
        """Make kept version ``version`` the one :meth:`load` reads (checked first; under the folder's writer
        lock). Later versions stay, so rolling forward works the same way. Returns the version folder."""
        return rollback_to(persist_dir, version)

    @classmethod
    def load(
        cls,
        persist_dir: str | Path,
        embed_model: BaseEmbedding | str | None = None,
        llm: Any = None,
        property_graph_store: PropertyGraphStore | None = None,
        show_progress: bool = False,
        version: int | None = None,
        store: str | None = None,
    ) -> Self:
        """Load an index saved by :meth:`persist`: the current version, or kept version ``version``.

        ``embed_model`` defaults to the one named in the manifest; a different model must have the
        same dimension (and should be the same model, or scores are meaningless). The graph store is
        the one the index was saved with (see ``index/stores.py``); ``store`` gives a Neo4j URL with its
        password, or names another kind (``"simple"``, ``"ladybug"``) to move the index into: that
        store is filled from the tables, and the next save keeps it. Pass ``property_graph_store``
        (used as it is) when the index was built on a store of your own.
        Raises IndexNotFoundError, CorruptIndexError or IndexFormatError with a one-line reason.
        """
        args = (persist_dir, embed_model, llm, property_graph_store or store, show_progress, version)
        pointed = current_version(persist_dir) if version is None else None
        try:
            return cls._load(*args)
        except (CorruptIndexError, OSError):
            if version is not None or current_version(persist_dir) == pointed:
                raise
        # another process saved meanwhile (and may have pruned the version being read): read the new one
        return cls._load(*args)

    @classmethod
    def _load(cls, persist_dir, embed_model, llm, store_arg, show_progress, version) -> Self:
        folder, manifest = open_version(persist_dir, verify=False, version=version)
        missing = _verify(folder, manifest, persist_dir)
        # Outside the try: "pass store=..." and a missing package are not a corrupt index.
        store, fill_store = _store_for_load(folder, manifest, store_arg, persist_dir)
        try:
            config = IndexConfig.from_manifest(manifest["config"])
            embed = embed_model if embed_model is not None else manifest["embed_model"]
            index = cls(embed_model=embed, config=config, llm=llm, property_graph_store=store, show_progress=show_progress)
            dim = int(manifest["embed_dim"])
            index._dim = dim
            chunk_rows = read_json(folder / "chunks.json")
            entity_rows, fact_rows = read_json(folder / "entities.json"), read_json(folder / "facts.json")
            index.chunks = {d["id"]: ChunkRecord(**d) for d in chunk_rows}
            index.entities = {d["key"]: EntityRecord.from_json(d) for d in entity_rows}
            index.facts = {d["id"]: FactRecord.from_json(d) for d in fact_rows}
            index.synonyms = {(a, b): float(s) for a, b, s in read_json(folder / "synonyms.json")}
            index.build_info = dict(manifest.get("build", {}))
            index._stats = None  # recomputed from chunk texts if an insert or delete needs it
            ids = read_json(folder / "vector_ids.json")
            index.chunk_vectors = VectorTable.load(folder / "chunks.faiss", ids["chunks"], dim)
            index.entity_vectors = VectorTable.load(folder / "entities.faiss", ids["entities"], dim)
            index.fact_vectors = VectorTable.load(folder / "facts.faiss", ids["facts"], dim)
            check_tables(index, {"chunks": [d["id"] for d in chunk_rows], "entities": [d["key"] for d in entity_rows],
                                 "facts": [d["id"] for d in fact_rows]}, str(persist_dir))
            snapshot = None  # rebuilt from the tables by _refresh_derived when its file is missing
            if "graph.npz" not in missing:
                with np.load(folder / "graph.npz", allow_pickle=False) as arrays:
                    snapshot = GraphSnapshot.from_arrays(list(index.entities) + list(index.chunks), arrays)
                check_snapshot(index, snapshot, str(persist_dir))
            index._refresh_derived(snapshot)
            _attributes_from_saved_store(index, store)
            if fill_store:  # an empty store (its file was missing, or another kind was asked for) or a server
                index._mirror_all()  # nothing for a lazy simple store: its first use fills it
            if (folder / ARTEFACTS).is_dir():
                incomplete = {m.split("/")[1] for m in missing if m.startswith(f"{ARTEFACTS}/")}
                index._saved_artefacts = {p.name: p for p in (folder / ARTEFACTS).iterdir()
                                          if p.is_dir() and p.name not in incomplete}
            if (folder / PROVENANCE).is_file():
                index._provenance = checked_provenance(read_json(folder / PROVENANCE))
        except (KeyError, TypeError, ValueError, RuntimeError) as exc:
            if isinstance(exc, CorruptIndexError):
                raise
            raise CorruptIndexError(f"corrupt index at {persist_dir}: {type(exc).__name__}: {exc}") from exc
        index._origin = (Path(persist_dir).resolve(), version_token(folder, manifest))
        if missing:
            log.warning("index at %s: %s missing, rebuilt from the tables (method artefacts when first used, "
                        "the simple store too); the next save writes them again", persist_dir, ", ".join(sorted(missing)))
        if embed_model_name(index.embed_model) == manifest["embed_model"]:  # rows must hold their ids' vectors
            probe = check_vector_rows(index, str(persist_dir))
        else:  # another model of the same dimension may be used (at the user's risk): only the dimension is checked
            probe = index.embed_model.get_query_embedding("dimension check")
        if len(probe) != dim:
            raise ValueError(f"embed model gives {len(probe)}-dim vectors but the index at {persist_dir} holds {dim}-dim ones")
        return index


def _attributes_from_saved_store(index, store) -> None:
    """Entity attributes of an index saved before the tables held them: they lived only in the saved simple
    store's nodes (the PathRAG extractor's descriptions); the tables take them over."""
    graph = store._graph if isinstance(store, LazySimplePropertyGraphStore) else None
    if graph is None:
        return
    for key, node in graph.nodes.items():
        ent = index.entities.get(key)
        if ent is not None and not ent.attributes:
            ent.attributes = entity_attributes(node.properties)


def _verify(folder: Path, manifest: dict, persist_dir) -> set[str]:
    """Check every file the manifest lists against its checksum; returns the derived files that are missing
    (paths relative to the version folder).

    A missing table or a checksum that differs raises CorruptIndexError: only what can be computed
    again from the tables (``DERIVED_FILES``, method artefacts) may be absent.
    """
    missing = set()
    for name, digest in manifest["files"].items():
        path = folder / name
        if not path.is_file():
            if name in DERIVED_FILES:
                missing.add(name)
                continue
            if name.startswith(f"{ARTEFACTS}/"):  # a method artefact: the method builds it again when it needs it
                missing.add(name)
                continue
            raise CorruptIndexError(f"corrupt index at {persist_dir}: {name} is missing")
        if sha256_file(path) != digest:
            raise CorruptIndexError(f"corrupt index at {persist_dir}: {name} does not match its checksum")
    return missing


def _store_for_load(folder: Path, manifest: dict, given, persist_dir):
    """The loaded index's graph store and whether to fill it from the tables (see ``stores.open_store``).

    ``given`` names a kind other than the saved one: a new store of that kind, filled from the tables.
    """
    if isinstance(given, str):
        spec = stores.StoreSpec.parse(given)
        if spec.kind != stores.saved_kind(manifest):
            return stores.create_store(spec), True
        if spec.kind != "neo4j":
            given = None  # the saved store of that kind
    return stores.open_store(folder, manifest, given, persist_dir)
