"""GraphRAGIndex: one graph index that every method reads.

Build: documents -> token chunks -> kg_extractors (TransformComponents) -> tables (chunks, entities,
facts) -> mirrored into a PropertyGraphStore -> derived artefacts (CSR snapshot, faiss over chunks,
entities and facts, BM25 over chunks). Retrievers read the artefacts, never the store triple by triple.

The class is the facade users see, with no logic of its own beyond wiring: everything it holds is one
:class:`~.state.IndexState` (``index.state``) and a :class:`~.mirror.StoreMirror`; its jobs are functions of the
state in their own modules: ``build.py`` + ``rows.py`` (insert, as named steps), ``update.py`` (delete, refresh),
``mirror.py`` (the store as a projection of the tables), ``persistence.py`` (persist, load, reload),
``journal.py`` (undo of a failed change), ``executors.py`` (where an insert's parallel work runs). Its one base
class, ``reader.py``'s :class:`~.reader.IndexReading`, is the read side methods use, shared with read-only views.
"""

from __future__ import annotations

import contextlib
import logging
import time
import weakref
from pathlib import Path
from typing import Any, Sequence

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.schema import TransformComponent

from ..config import IndexConfig
from ..documents import document_key, warn_if_tiny
from ..embeddings import resolve_embed_model
from ..extractors.entity_stats import EntityStatistics
from ..extractors.name_words import NameWordCounts
from ..extractors.statistical import StatisticalEntityExtractor
from ..graph.snapshot import GraphSnapshot
from ..registry import DEFAULT_METHOD, as_query_engine, as_retriever
from ..tracing import stage
from . import build, persistence, update
from .artefacts import keep_artefact
from .build import BuildContext
from .collector import collector_paused
from .executors import LOCAL, Executor
from .journal import Journal
from .lazy_store import LazySimplePropertyGraphStore
from .mirror import StoreMirror
from .reader import IndexReading, IndexView
from .state import IndexState
from .storage import KEEP_VERSIONS, list_versions
from .storage import rollback as rollback_to
from .stores import create_store
from .update import RefreshResult

log = logging.getLogger(__name__)
PREPARED_METHODS = ("archrag", "a2rag")  # the methods with artefacts a first query would build (prepare())
PREPARE_PROBE = "what does this corpus describe"


class GraphRAGIndex(IndexReading):
    """The shared graph index (see the module docstring). Build with :meth:`from_documents`.

    What methods read from it is declared by :class:`~.protocol.GraphIndexReader` (tables, snapshot,
    vector tables, BM25, chunk order, query embedding, artefact cache): read-only properties over
    :attr:`state`. :meth:`view` gives a read-only reader of the same tables, on another graph snapshot if wanted.

    Thread safety: ``insert`` and ``delete`` hold the index's writer lock, retrievers and ``persist``
    its reader lock (:meth:`reading`), so a query running beside an insert sees the index before or
    after it, and ``persist`` writes a consistent state.

    Several processes on one folder (``pending.py``): an index loaded from (or saved to) a folder knows that
    version (:attr:`loaded_version`) and the documents it changed since (:meth:`pending_documents`).
    :meth:`persist` re-applies those on a newer version another process saved meanwhile, or raises
    ``IndexConflictError`` and saves nothing. :meth:`is_stale` (one small file read) says whether the folder
    moved on; :meth:`reload` takes in its newest version in place (``discard_pending=True``: and drops unsaved
    changes); :meth:`disk_version` names the version on disk.
    """

    state: IndexState
    """Everything the index holds (``state.py``); its writers are insert, delete, refresh, load, reload, persist."""
    llm: Any
    """The LLM extraction uses on insert (None: none) and query engines default to."""
    extra_extractors: list[TransformComponent]
    """The user's extractors, run after the index's own on every insert."""
    show_progress: bool
    """Log build stages and show progress bars."""
    executor: Executor
    """Where an insert's parallel operations run (``executors.py``): this process, or a Ray cluster inside
    ``with distributed.ray_build(index, ...)``."""
    _mirror: StoreMirror
    """Writes the tables into the graph store (``mirror.py``); private: nothing outside ``index/`` may use it."""

    def __init__(
        self,
        embed_model: BaseEmbedding | str | None = None,
        config: IndexConfig | None = None,
        llm: Any = None,
        property_graph_store: PropertyGraphStore | None = None,
        extra_extractors: Sequence[TransformComponent] = (),
        show_progress: bool = False,
        store: str | None = None,
    ):
        """``store`` names where the graph is mirrored when no ``property_graph_store`` is given: ``"simple"``
        (default), ``"ladybug"`` (an embedded database, saved in each version folder) or a Neo4j URL
        ``neo4j://user:password@host:7687``; see ``index/stores.py``."""
        if store is not None and property_graph_store is not None:
            raise ValueError("pass store= or property_graph_store=, not both")
        config = config or IndexConfig()
        if embed_model is None:  # LlamaIndex's Settings.embed_model when the user set one (never its OpenAI default)
            from llama_index.core import Settings

            embed_model = Settings._embed_model
        graph_store = property_graph_store if property_graph_store is not None else create_store(store)
        self.state = IndexState(config=config, embed_model=resolve_embed_model(embed_model, config.embed_batch_size),
                                property_graph_store=graph_store, entity_stats=EntityStatistics(config.max_ngram))
        self._mirror = StoreMirror(self.state, self)
        # the journal writes the store back after a failed change (a weak method: no cycle through the state)
        self.state.journal = Journal(self.state, weakref.WeakMethod(self._mirror.restore))
        if isinstance(graph_store, LazySimplePropertyGraphStore):
            graph_store.bind(self)  # filled from our tables on first use (lazy_store.py)
        self.llm = llm
        self.extra_extractors = list(extra_extractors)
        self.show_progress = show_progress
        self.executor = LOCAL

    def _replace(self, to_delete: set[str], to_insert: Sequence[Document]) -> None:
        """Delete and insert as one change, recorded nowhere (a rebase re-applying pending operations)."""
        update.replace_documents(self._build_context(), to_delete, to_insert)

    def _build_context(self) -> BuildContext:
        """The state and parts an insert, delete or refresh works with (the executor, LLM and extractors as now)."""
        return BuildContext(self.state, self._mirror, self.executor, self.llm, self.extra_extractors,
                            self.show_progress, self._stage)

    @classmethod
    def from_property_graph_index(cls, pg_index, embed_model: BaseEmbedding | str | None = None,
                                  config: IndexConfig | None = None, show_progress: bool = False) -> "GraphRAGIndex":
        """Derive the index from a LlamaIndex ``PropertyGraphIndex`` built with this project's extractors.

        Reads the store once: chunk nodes, ``contains`` relations (chunk -> entity), and every other
        relation as a fact (its ``text`` property, or "subject predicate object"); a fact's support is the
        chunk it was extracted from (``triplet_source_id``). Synonym edges are recomputed from the entity
        embeddings. The store must list all its nodes from ``get()`` and its triplets (as
        ``SimplePropertyGraphStore`` does). ``embed_model`` defaults to the PropertyGraphIndex's.
        """
        store = pg_index.property_graph_store
        index = cls(embed_model=embed_model or getattr(pg_index, "_embed_model", None), config=config,
                    property_graph_store=store, show_progress=show_progress)
        build.fill_from_property_graph(index._build_context(), store)
        return index

    # --- changes: build.py (insert) and update.py (delete, refresh) -----------------------------------------------

    def insert(self, documents: Sequence[Document]) -> list[str]:
        """Add documents; returns the new chunk ids. Every artefact is updated before it returns.

        What is recomputed on insert:

        * corpus statistics (n-gram document frequencies) include the new chunks before they are
          scored, so new chunks are scored against the whole corpus; entities extracted earlier from
          old chunks are not re-scored (build a new index for that);
        * the NER extractor's corpus-wide rules (which one-word names are not names, which noun phrases are
          salient terms and how many chunks make one a hub) count the old chunks too, so an insert judges as
          a build of the whole corpus would: a known name or term the grown corpus rejects is no longer
          linked to new chunks (its older links stay: build a new index to drop them), and a known term an
          earlier insert left unlinked (then over a smaller corpus's hub ceiling) is linked to those chunks;
        * entities new to the vocabulary are linked to every old chunk that mentions them; with the
          statistical extractor those chunks' co-occurrence relations are recomputed (the NER
          extractor's dependency relations of old chunks stay as they were parsed);
        * synonym edges are searched for the new entities against all entities;
        * BM25 is rebuilt (its IDF depends on every chunk); the snapshot is rebuilt from the tables.

        If extraction or embedding fails (say the LLM server is down), the index is left exactly as
        it was and the error is raised.

        Holds the writer lock: queries in other threads wait and see the index before or after the
        insert, never half of it. What the insert changes in older chunks is recorded, so that
        deleting the same documents afterwards restores the index (``journal.py``).
        """
        journal = self.state.journal
        # the rows, the insert's record and the documents: one commit, the collector paused until it is made (the
        # commit reads every document while the insert's records are still held: a full pass would walk them all)
        with collector_paused(), self.state.lock.writing(), journal.change():
            new_chunks = build.insert_documents(self._build_context(), documents)
            for doc in documents:
                journal.document(document_key(doc)[0], None, doc)
            return new_chunks

    def delete(self, doc_id: str) -> int:
        """Remove a document: its chunks, the relations only it supported, the entities only it mentioned.

        Corpus statistics forget its chunks; entities of the remaining chunks are not re-scored. What
        the document's insert changed in older chunks (entities linked there, co-occurrence relations
        recomputed, types given) is undone too (see ``journal.py``), so an insert followed by the
        delete of the same documents restores the index. Queries in other threads wait for the delete
        to finish (they see the index before or after it). Returns the number of chunks removed.
        Raises KeyError for an unknown document.
        """
        return update.delete_document(self._build_context(), doc_id)

    def refresh(self, documents: Sequence[Document]) -> list[bool]:
        """Upsert: insert new documents, replace changed ones, skip unchanged ones (LlamaIndex's ``refresh_ref_docs``).

        Returns one flag per document, True when it was inserted or updated. A document is known by its
        id (``doc_id`` metadata, a ``SimpleDirectoryReader`` file path, else ``id_``) and changed when its
        title or text is (see ``update.py``). :meth:`sync` does the same and says what it did.
        """
        return self.sync(documents).changed

    refresh_ref_docs = refresh  # the name LlamaIndex's indexes use

    def sync(self, documents: Sequence[Document], prune: bool = False) -> RefreshResult:
        """:meth:`refresh`, returning the ids inserted / updated / unchanged / removed.

        ``prune=True`` also deletes the documents in the index that are not among ``documents`` (a
        folder re-read after files were removed). The whole refresh holds the writer lock once: a query
        in another thread sees the index before or after it, never a changed document half replaced.
        If it fails (extraction or embedding raised), the index is left as it was and the error raised.
        """
        return update.sync(self._build_context(), documents, prune)

    @contextlib.contextmanager
    def _stage(self, name: str):
        """Adds the wall time of a build stage to ``build_info["stage_seconds"]`` (where indexing time goes),
        and makes it an instrumentation span ``index.<name>`` (``tracing.py``)."""
        start = time.perf_counter()
        if self.show_progress:  # stages without a bar of their own (chunk, synonyms, graph) still say where a build is
            log.info("index: %s ...", name)
        try:
            with stage(f"index.{name}"):
                yield
        finally:
            seconds = time.perf_counter() - start
            stages = self.state.build_info.setdefault("stage_seconds", {})
            stages[name] = round(stages.get(name, 0.0) + seconds, 3)
            if self.show_progress:
                log.info("index: %s took %.1f s", name, seconds)

    def entity_statistics(self) -> EntityStatistics:
        """The corpus n-gram statistics behind entity scores (AGRAG Eq. 2), which query keywords are scored with too."""
        return build.entity_statistics(self.state)

    def name_word_counts(self) -> NameWordCounts:
        """How the corpus writes each word, for the NER graph's one-word name rules (kept up to date by inserts and
        deletes, like :meth:`entity_statistics`)."""
        return build.name_word_counts(self.state)

    # --- saving and loading: persistence.py -------------------------------------------------------------------

    def persist(self, persist_dir: str | Path, keep_versions: int = KEEP_VERSIONS, compact: bool = False) -> Path:
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

        A save into the index's own folder writes only what changed: the rows an insert added follow the saved
        ones as new segments, whose vectors a query reads one row at a time instead of list by list. ``compact=True`` writes every table whole instead
        (each vector table packed list by list, each row table one segment), as a save into a new folder does:
        after many inserts, or at the end of a build in batches. A large table's lists are trained again first when
        the table has outgrown them (twice as many rows as lists squared): a list then holds about as many rows as
        lists were trained for the table's size, so a query reads no more of them than after a build in one insert. The older kept versions keep their own files
        until they are pruned (``keep_versions=1`` frees them at once, and with them the rollback).
        """
        return persistence.persist(self, persist_dir, keep_versions, compact)

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
    ) -> "GraphRAGIndex":
        """Load an index saved by :meth:`persist`: the current version, or kept version ``version``.

        ``embed_model`` defaults to the one named in the manifest; a different model must have the
        same dimension (and should be the same model, or scores are meaningless). The graph store is
        the one the index was saved with (see ``index/stores.py``); ``store`` gives a Neo4j URL with its
        password, or names another kind (``"simple"``, ``"ladybug"``) to move the index into: that
        store is filled from the tables, and the next save keeps it. Pass ``property_graph_store``
        (used as it is) when the index was built on a store of your own.
        Raises IndexNotFoundError, CorruptIndexError or IndexFormatError with a one-line reason.
        """
        return persistence.load(cls, persist_dir, embed_model, llm, property_graph_store or store, show_progress, version)

    def reload(self, discard_pending: bool = False) -> bool:
        """Catch up with the folder: when :meth:`is_stale` (or ``discard_pending``), load its newest version and
        take over its state in place, under the writer lock (queries see the old or the new index, never half).

        Pending document operations are re-applied on it (IndexConflictError when another writer changed the
        same document), unless ``discard_pending``: then they are dropped and the index is what is on disk
        (how a failed save is rolled back). Returns whether the state was replaced.
        """
        return persistence.reload(self, discard_pending)

    @staticmethod
    def versions(persist_dir: str | Path) -> list[dict[str, Any]]:
        """The versions kept in ``persist_dir``, oldest first: ``{"version", "name", "current", "created", "counts", "error"}``."""
        return list_versions(persist_dir)

    @staticmethod
    def rollback(persist_dir: str | Path, version: int) -> Path:
        """Make kept version ``version`` the one :meth:`load` reads (checked first; under the folder's writer
        lock). Later versions stay, so rolling forward works the same way. Returns the version folder."""
        return rollback_to(persist_dir, version)

    @property
    def loaded_version(self) -> str | None:
        """The version name (``v-000007``) this in-memory index was loaded from or last saved as; None if neither."""
        return persistence.loaded_version(self.state)

    def disk_version(self) -> str | None:
        """The version name ``CURRENT`` points to now in the folder this index was loaded from or saved to
        (one small file read); None when the index has no folder or the folder no index."""
        return persistence.disk_version(self.state)

    def is_stale(self) -> bool:
        """Whether another writer saved a newer version into this index's folder since it was loaded or saved
        (cheap: one small file read; :meth:`reload` catches up)."""
        return persistence.is_stale(self.state)

    def pending_documents(self) -> list[str]:
        """Ids of the documents inserted, deleted or refreshed since the last load or save (what a save re-applies
        on a newer version, see :meth:`persist`)."""
        return self.state.pending.doc_ids()

    @classmethod
    def from_documents(cls, documents: Sequence[Document], ray_address: str | None = None,
                       **kwargs: Any) -> "GraphRAGIndex":
        """Build an index over ``documents`` (keyword arguments as for the constructor).

        ``ray_address`` (``"local"``, ``"auto"``, ``"ray://host:10001"``) shards chunking, extraction and embedding
        over a Ray cluster (extra ``ray``); the index is the one this process would build (``index/distributed.py``).
        """
        index = cls(**kwargs)
        if ray_address:
            from .distributed import ray_build

            with ray_build(index, ray_address):
                index.insert(documents)
        else:
            index.insert(documents)
        if not warn_if_tiny([index.chunks[c] for c in index.chunk_order], "the indexed corpus") and not index.entities:
            log.warning("no entities were found in %d chunk(s): graph methods will rank like dense/BM25 retrieval "
                        "(a lower entity_threshold, or entities='ner', may find some)", len(index.chunks))
        return index

    def view(self, snapshot: GraphSnapshot | None = None, entities: dict[str, Any] | None = None) -> IndexView:
        """A read-only :class:`~.protocol.GraphIndexReader` over this index's tables, with an artefact memo of its own.

        ``snapshot``: another graph over the same node rows (``snapshot.node_ids`` those of :attr:`snapshot`),
        say with some edges removed; ``entities``: a part of :attr:`entities` in their order (entity vector rows
        follow). A method given the view ranks on that graph; the index, its memo and its files are untouched.
        Assigning any attribute of the view raises AttributeError. Make a new view after an insert or delete.
        """
        if snapshot is not None and list(snapshot.node_ids) != list(self.snapshot.node_ids):
            raise ValueError("a view's snapshot must have the index's node rows (entities, then chunks)")
        return IndexView(self, snapshot, entities)

    def _keep_artefact(self, name: str, value: Any) -> None:
        keep_artefact(self.state, name, value)

    def note_build(self, **notes: Any) -> None:
        """Add notes on how this index was built to its ``build_info`` (JSON values, e.g. a bench's wall time and
        peak memory); they are saved in the manifest with the next ``persist``."""
        self.state.build_info.update(notes)

    def stats(self) -> dict[str, int]:
        """Documents, chunks, entities, relations (also per kind), contains and synonym edges."""
        return self.state.counts()

    def prepare(self, methods: Sequence[str] = PREPARED_METHODS, llm: Any = None) -> dict[str, float]:
        """Build now what the named methods would otherwise build on their first query (ArchRAG's community
        hierarchy and C-HNSW, A2RAG's document summaries): a named build step (``stage_seconds["prepare.<method>"]``)
        whose artefacts the next :meth:`persist` saves and a load reads back. Each method answers one probe
        question, so whatever it sets up lazily is set up. ``llm``: the one its queries will use (an LLM builds
        other summaries than the extractive ones). Returns seconds per method."""
        seconds = {}
        for method in methods:
            start = time.perf_counter()
            with self._stage(f"prepare.{method}"):
                retriever = self.as_retriever(method, **({"llm": llm} if llm is not None else {}))
                retriever.retrieve(PREPARE_PROBE)
            seconds[method] = round(time.perf_counter() - start, 3)
        return seconds

    def as_retriever(self, method: str = DEFAULT_METHOD, **params: Any):
        """The named method's retriever over this index (``graphrag-suite methods`` lists the names)."""
        return as_retriever(self, method, **params)

    def as_query_engine(self, method: str = DEFAULT_METHOD, llm: Any = None, streaming: bool = False, **kwargs: Any):
        """A query engine over the named method; see :func:`llama_index_graphrag_suite.registry.as_query_engine`."""
        return as_query_engine(self, method, llm=llm if llm is not None else self.llm, streaming=streaming, **kwargs)

    def as_property_graph_index(self, llm: Any = None, **kwargs: Any):
        """A LlamaIndex ``PropertyGraphIndex`` over the same store (for LlamaIndex's own retrievers)."""
        from llama_index.core import PropertyGraphIndex

        pg = PropertyGraphIndex.from_existing(
            self.property_graph_store, llm=llm or self.llm, embed_model=self.embed_model, embed_kg_nodes=False,
            kg_extractors=[StatisticalEntityExtractor()], **kwargs,
        )
        # The simple store is filled from this index's tables on first use and holds it only weakly: the
        # PropertyGraphIndex keeps it alive (``index.as_property_graph_index()`` may be all a caller keeps).
        pg._graphrag_index = self
        return pg
