"""Saving and loading the index: segments of the tables (``tables.py``) listed by an atomic version folder.

Functions behind :class:`~.graph_index.GraphRAGIndex`'s ``persist``, ``load``, ``reload`` and version queries
(their docstrings there); they write the index's ``state`` (``state.py``). The folder layout and checks are in
``storage.py``. Also the version on disk the index is based on: several processes on one folder (``pending.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa

from .._version import __version__
from ..config import IndexConfig
from ..embeddings import EmbedModelError, embed_model_name, manifest_embed_spec
from ..fileio import file_stamp, sha256_file
from ..graph.snapshot import GraphSnapshot
from . import build, pending, stores
from .artefacts import ARTEFACTS
from .carried import carry_folder, recorded_digests
from .checks import check_snapshot, check_tables, check_vector_rows
from .collector import collector_paused
from .compaction_hint import hint_compaction
from .legacy import read_format_1
from .provenance_file import ProvenanceFile
from .lazy_store import LazySimplePropertyGraphStore, is_derived
from .records import entity_attributes
from .storage import (
    KEEP_VERSIONS,
    SEGMENTS,
    VERIFY_AGE_NS,
    remember_verified,
    verified_record,
    check_segments,
    MANIFEST,
    CorruptIndexError,
    IndexConflictError,
    current_token,
    current_version,
    folder_writer,
    open_version,
    read_json,
    save_version,
    version_token,
    write_json,
)
from .tables import SegmentWriter, listed_segments, mark_saved, read_tables, write_tables

log = logging.getLogger(__name__)
STORE_FILE = stores.SIMPLE_FILE
PROVENANCE = "provenance.json"  # what inserts changed in older chunks (see journal.py); absent in older indexes
# Files computed cheaply from the JSON tables: a load that finds one missing rebuilds it (the next save
# writes it again; the simple store's JSON only if the store comes to hold more than the tables, see
# lazy_store.py). A missing table, or any file whose checksum differs, is still a corrupt index; so is a
# missing vector file (rebuilding it means embedding the corpus again: build the index again for that).
DERIVED_FILES = {"graph.npz", STORE_FILE, stores.LADYBUG_FILE}  # graph.npz: format 1 only


def persist(index, persist_dir: str | Path, keep_versions: int = KEEP_VERSIONS, compact: bool = False) -> Path:
    """``GraphRAGIndex.persist``: a new version under the folder's writer lock; re-applies ``index``'s pending
    document operations first when another writer saved a version there since (a rebase, ``pending.py``).
    ``compact``: write every table whole even where only some rows changed (see ``GraphRAGIndex.persist``)."""
    state = index.state
    # no collector passes over the whole kept index while the save makes its short-lived objects (collector.py)
    with collector_paused(), folder_writer(persist_dir):  # the lock held from the version check to the flip of CURRENT
        with state.lock.reading():
            if not _behind(state, persist_dir):
                return _persist(state, index, persist_dir, keep_versions, compact)
        with state.lock.writing():  # another writer saved meanwhile: re-apply our changes on its version
            if _behind(state, persist_dir):
                fresh = _load_newest(index, Path(persist_dir))
                pending.apply(fresh.state, state.pending, str(persist_dir), fresh._replace)  # or IndexConflictError: nothing saved
                _adopt(index, fresh)
            return _persist(state, index, persist_dir, keep_versions, compact)


def _behind(state, persist_dir: str | Path) -> bool:
    """Whether ``persist_dir`` is the folder the state came from and another writer saved a version there since."""
    origin = state.origin
    if origin is None or Path(persist_dir).resolve() != origin[0]:
        return False  # a fresh build, or a copy into another folder: it replaces what is there, as it always did
    token = current_token(persist_dir)
    return token is not None and token != origin[1]


# --- the version on disk an index is based on (see pending.py) ------------------------------------------------

def loaded_version(state) -> str | None:
    origin = state.origin
    return origin[1].split("#", 1)[0] if origin is not None else None


def disk_version(state) -> str | None:
    origin = state.origin
    if origin is None:
        return None
    token = current_token(origin[0])
    return token.split("#", 1)[0] if token else None


def is_stale(state) -> bool:
    origin = state.origin
    if origin is None:
        return False
    token = current_token(origin[0])
    return token is not None and token != origin[1]


def reload(index, discard_pending: bool = False) -> bool:
    """``GraphRAGIndex.reload``: the folder's newest version taken over in place, under the writer lock."""
    state = index.state
    if state.origin is None:
        raise ValueError("this index was neither loaded from nor saved to a folder: there is nothing to reload")
    with state.lock.writing():
        if not discard_pending and not is_stale(state):
            return False
        fresh = _load_newest(index, state.origin[0])
        if discard_pending:
            state.pending.clear()
        else:
            pending.apply(fresh.state, state.pending, str(state.origin[0]), fresh._replace)
        _adopt(index, fresh)
        return True


def _load_newest(index, folder: Path):
    """The folder's current version, loaded with ``index``'s models and extractors (for reload and rebase)."""
    store = index.state.property_graph_store
    # a server or a user's store: the same one (refilled from the tables); a simple or ladybug store: the version's
    given = store if stores.store_kind(store) in (*stores.SERVER_KINDS, "external") else None
    try:
        fresh = type(index).load(folder, embed_model=index.state.embed_model, llm=index.llm,
                                 property_graph_store=given, show_progress=index.show_progress)
    except ValueError as exc:
        if isinstance(exc, CorruptIndexError):
            raise
        raise IndexConflictError(f"cannot take in the newer version in {folder}: {exc}") from exc
    fresh.extra_extractors = index.extra_extractors
    if stores.store_kind(store) in stores.SERVER_KINDS:  # the same server: it must hold the version taken in
        if hasattr(store, "empty"):
            store.empty()
        fresh._mirror.upsert_all()
    return fresh


def _adopt(index, fresh) -> None:
    """``index`` takes over a freshly loaded version's tables (``IndexState.take_version``); lock, journal and
    pending operations stay its own, and so does a lazy simple store's binding."""
    index.state.take_version(fresh.state)
    store = index.state.property_graph_store
    if isinstance(store, LazySimplePropertyGraphStore):
        store.rebind(index)


def _base_manifest(state, root: Path) -> dict | None:
    """The manifest of the version this state extends, when a save may write only what changed since: the
    folder is the one this state was loaded from or saved to, its current version is that one (a rebase
    made sure), and it is a segmented version. None: the save writes every table whole."""
    origin = state.origin
    if origin is None or root.resolve() != origin[0] or current_token(root) != origin[1]:
        return None
    try:
        _, manifest = open_version(root, verify=False)
    except (OSError, CorruptIndexError):
        return None
    return manifest if isinstance(manifest.get("tables"), dict) and "ngrams" in manifest else None


def _persist(state, owner, persist_dir: str | Path, keep_versions: int, compact: bool = False) -> Path:
    """Save ``state`` as a new version (the folder's writer lock held); ``owner``: the index a lazy store mirrors."""
    if state.snapshot is None:
        raise ValueError("nothing to persist: the index is empty")
    store = state.property_graph_store
    derived = is_derived(store, owner)  # decided once: the files and the manifest must agree

    root = Path(persist_dir)
    base = None if compact else _base_manifest(state, root)
    if compact:  # lists trained when a table was a fraction of its size (a build in batches): trained again
        for table in (state.chunk_vectors, state.entity_vectors, state.fact_vectors):
            if table is not None:
                table.ensure_lists(refit=True)
                table.drop_mapped_pages()  # training read every row: the pages need not stay in RSS while it packs

    writers: list[SegmentWriter] = []

    def write(folder: Path) -> dict:
        writer = SegmentWriter(root)
        writers.append(writer)
        # statistics not needed since the load are the base's; without a base they are read or fitted now
        stats = state.entity_stats if state.entity_stats is not None or base else build.entity_statistics(state)
        listing = write_tables(state, writer, base, stats)
        checksums = {**(base or {}).get("segments", {}), **writer.written}
        listed = listed_segments(listing)
        carried: dict[str, str] = {}  # files as a saved version holds them: its manifest's SHA-256 stands
        provenance = state.provenance
        if isinstance(provenance, ProvenanceFile) and provenance.unread:  # as loaded: the same file
            provenance.save(folder / PROVENANCE)
            if not provenance.appended:
                carried.update(recorded_digests(provenance.path.parent, [PROVENANCE]))
        elif provenance:
            write_json(folder / PROVENANCE, list(provenance))
        stores.save_store(store, folder, derived)  # a JSON file, a database file, or nothing (a server, a derived mirror)
        in_memory = state.artefacts.to_save(state.snapshot)
        for name, obj in in_memory.items():
            obj.save(folder / ARTEFACTS / name)
        for name, old in state.artefacts.saved.items():  # loaded from disk, never used: carry over (hard links:
            if name not in in_memory and old.is_dir():   # the files of a saved version never change)
                carried.update(carry_folder(old, folder / ARTEFACTS / name))
        return {**listing, "segments": {n: checksums[n] for n in sorted(listed)}, "files": carried}

    manifest = {
        "library": "llama-index-graphrag-suite",
        "library_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config": state.config.model_dump(),
        "embed_model": embed_model_name(state.embed_model),
        "embed_dim": state.dim,
        "store": stores.legacy_name(store),  # read by older versions of the library
        "store_backend": stores.manifest_record(store, derived),
        "counts": state.counts(),
        "build": state.build_info,
    }
    saved = save_version(persist_dir, write, manifest, keep=keep_versions, lock_held=True)
    saved_manifest = read_json(saved / MANIFEST)
    listed = saved_manifest.get("segments", {})
    for writer in writers:  # what the save hashed as it wrote: the next load need not hash it again
        _remember_written(root, {n: d for n, d in writer.written.items() if listed.get(n) == d})
    state.origin = (Path(persist_dir).resolve(), version_token(saved, saved_manifest))
    mark_saved(state)
    state.pending.clear()
    artefacts = saved / ARTEFACTS
    state.artefacts.saved = {p.name: p for p in artefacts.iterdir()} if artefacts.is_dir() else {}
    return saved


def _remember_written(root: Path, written: dict[str, str]) -> None:
    """Record the segments a save just wrote (name -> the SHA-256 its writer hashed from the file) as verified
    (``storage.VERIFIED``), under the rule a load follows: only files last written ``VERIFY_AGE_NS`` ago. A large
    save runs for minutes, so most of its segments qualify and the first load after it hashes only the rest."""
    now, fresh = time.time_ns(), {}
    for name, digest in written.items():
        try:
            st = (root / SEGMENTS / name).stat()
        except OSError:
            continue
        if now - st.st_mtime_ns >= VERIFY_AGE_NS:
            fresh[name] = file_stamp(st, digest)
    if fresh:
        remember_verified(root, {**verified_record(root), **fresh})


def load(cls, persist_dir, embed_model, llm, store_arg, show_progress, version):
    """``GraphRAGIndex.load``: an index of class ``cls`` from the folder's current version, or kept ``version``."""
    pointed = current_version(persist_dir) if version is None else None
    args = (cls, persist_dir, embed_model, llm, store_arg, show_progress, version)
    try:
        with collector_paused():
            index = _load(*args)
    except (CorruptIndexError, OSError):
        if version is not None or current_version(persist_dir) == pointed:
            raise
        # another process saved meanwhile (and may have pruned the version being read): read the new one
        index = _load(*args)
    hint_compaction(index.state, persist_dir)
    return index


def _load(cls, persist_dir, embed_model, llm, store_arg, show_progress, version):
    folder, manifest = open_version(persist_dir, verify=False, version=version)
    check_segments(Path(persist_dir), manifest)  # every segment the version lists, against its checksum
    missing = _verify(folder, manifest, persist_dir)
    # Outside the try: "pass store=..." and a missing package are not a corrupt index.
    store, fill_store = _store_for_load(folder, manifest, store_arg, persist_dir)
    try:
        config = IndexConfig.from_manifest(manifest["config"])
        embed = embed_model if embed_model is not None else manifest_embed_spec(manifest["embed_model"])
        index = cls(embed_model=embed, config=config, llm=llm, property_graph_store=store, show_progress=show_progress)
        state = index.state  # filled here from the version folder
        dim = int(manifest["embed_dim"])
        state.dim = dim
        if "tables" in manifest:  # segments shared by versions (tables.py)
            loaded, snapshot = read_tables(Path(persist_dir) / SEGMENTS, manifest, dim), None
            rows = {}  # folding gives each key one row (a whole segment listing one twice is refused there)
        else:  # format 1: whole JSON tables and vector files in the version folder
            loaded, rows, snapshot = read_format_1(folder, missing, dim)
        state.chunks, state.entities, state.facts = loaded.chunks, loaded.entities, loaded.facts
        state.synonyms, state.bm25 = loaded.synonyms, loaded.bm25
        state.chunk_vectors, state.entity_vectors, state.fact_vectors = (
            loaded.vectors["chunks"], loaded.vectors["entities"], loaded.vectors["facts"])
        state.build_info = dict(manifest.get("build", {}))
        state.entity_stats = None  # recomputed from chunk texts if an insert or delete needs it
        check_tables(index, rows, str(persist_dir))
        if snapshot is not None:
            snapshot = GraphSnapshot.from_arrays(list(state.entities) + list(state.chunks), snapshot)
            check_snapshot(index, snapshot, str(persist_dir))
        state.derive(snapshot)
        _attributes_from_saved_store(index, store)
        if fill_store:  # an empty store (its file was missing, or another kind was asked for) or a server
            index._mirror.upsert_all()  # nothing for a lazy simple store: its first use fills it
        if (folder / ARTEFACTS).is_dir():
            incomplete = {m.split("/")[1] for m in missing if m.startswith(f"{ARTEFACTS}/")}
            state.artefacts.saved = {p.name: p for p in (folder / ARTEFACTS).iterdir()
                                     if p.is_dir() and p.name not in incomplete}
        if (folder / PROVENANCE).is_file():  # checked against its checksum above; read when a change needs it
            state.provenance = ProvenanceFile(folder / PROVENANCE, str(persist_dir))
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        if isinstance(exc, CorruptIndexError):
            raise
        if isinstance(exc, EmbedModelError) and embed_model is not None:  # the caller's model, not the index's
            raise
        raise CorruptIndexError(f"corrupt index at {persist_dir}: {type(exc).__name__}: {exc}") from exc
    state.origin = (Path(persist_dir).resolve(), version_token(folder, manifest))
    if missing:
        log.warning("index at %s: %s missing, rebuilt from the tables (method artefacts when first used, "
                    "the simple store too); the next save writes them again", persist_dir, ", ".join(sorted(missing)))
    if embed_model_name(state.embed_model) == manifest_embed_spec(manifest["embed_model"]):  # rows must hold their ids' vectors
        probe = check_vector_rows(index, str(persist_dir))
    else:  # another model of the same dimension may be used (at the user's risk): only the dimension is checked
        probe = state.embed_model.get_query_embedding("dimension check")
    if len(probe) != dim:
        raise ValueError(f"embed model gives {len(probe)}-dim vectors but the index at {persist_dir} holds {dim}-dim ones")
    pa.default_memory_pool().release_unused()  # the segments' buffers read and dropped go back to the OS
    return index


def _attributes_from_saved_store(index, store) -> None:
    """Entity attributes of an index saved before the tables held them: they lived only in the saved simple
    store's nodes (the PathRAG extractor's descriptions); the tables take them over."""
    graph = store._graph if isinstance(store, LazySimplePropertyGraphStore) else None
    if graph is None:
        return
    index.state.writable()  # the loaded entities are read-only columns
    for key, node in graph.nodes.items():
        ent = index.state.entities.get(key)
        if ent is not None and not ent.attributes:
            ent.attributes = entity_attributes(node.properties)
    index.state.read_only()


def _verify(folder: Path, manifest: dict, persist_dir) -> set[str]:
    """Check every file the manifest lists against its checksum; returns the derived files that are missing
    (paths relative to the version folder).

    A missing table or a checksum that differs raises CorruptIndexError: only what can be computed
    again from the tables (``DERIVED_FILES``, method artefacts) may be absent. A file recorded as verified and
    unchanged since is not hashed again, as for segments (``storage.VERIFIED``).
    """
    root = Path(persist_dir)
    known, fresh, now = verified_record(root), {}, time.time_ns()
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
        st, key = path.stat(), f"{folder.name}/{name}"
        stamp = file_stamp(st, digest)
        if known.get(key) == stamp:
            continue
        if sha256_file(path) != digest:
            raise CorruptIndexError(f"corrupt index at {persist_dir}: {name} does not match its checksum")
        if now - st.st_mtime_ns >= VERIFY_AGE_NS:
            fresh[key] = stamp
    if fresh and (root / SEGMENTS).is_dir():  # kept: segments, and the files of versions still there
        kept = {k: v for k, v in {**known, **fresh}.items() if "/" not in k or (root / k.split("/", 1)[0]).is_dir()}
        remember_verified(root, kept)
    return missing


def _store_for_load(folder: Path, manifest: dict, given, persist_dir):
    """The loaded index's graph store and whether to fill it from the tables (see ``stores.open_store``).

    ``given`` names a kind other than the saved one: a new store of that kind, filled from the tables.
    """
    if isinstance(given, str):
        spec = stores.StoreSpec.parse(given)
        if spec.kind != stores.saved_kind(manifest):
            return stores.create_store(spec), True
        if spec.kind not in stores.SERVER_KINDS:
            given = None  # the saved store of that kind
    return stores.open_store(folder, manifest, given, persist_dir)
