"""GraphRAGIndex: one graph index that every method reads.

Build: documents -> token chunks -> kg_extractors (TransformComponents) -> tables (chunks, entities,
facts) -> mirrored into a PropertyGraphStore -> derived artefacts (CSR snapshot, faiss over chunks,
entities and facts, BM25 over chunks). Retrievers read the artefacts, never the store triple by triple.

The class is the facade users see. Everything it holds is one :class:`~.state.IndexState` (``index.state``);
the jobs are in their own modules: ``build.py`` (insert), ``mutation.py`` (delete, refresh, store mirror),
``persistence.py`` (persist, load, reload), ``journal.py`` (undo of a failed change), ``reader.py`` (the read
side methods use, and read-only views), ``artefacts.py`` (per-snapshot memo, saved artefacts).
"""

from __future__ import annotations

import logging
import time
import weakref
from typing import Any, Sequence

from llama_index.core import Document
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.schema import TransformComponent

from ..config import IndexConfig
from ..documents import warn_if_tiny
from ..embeddings import resolve_embed_model
from ..extractors.entity_stats import EntityStatistics
from ..extractors.statistical import StatisticalEntityExtractor
from ..graph.snapshot import GraphSnapshot
from ..registry import DEFAULT_METHOD, as_query_engine, as_retriever
from .artefacts import keep_artefact
from .build import IndexBuild
from .journal import Journal
from .lazy_store import LazySimplePropertyGraphStore
from .mutation import IndexMutation
from .persistence import IndexPersistence
from .executors import LOCAL, Executor
from .reader import IndexReading, IndexView
from .state import IndexState
from .stores import create_store

log = logging.getLogger(__name__)
PREPARED_METHODS = ("archrag", "a2rag")  # the methods with artefacts a first query would build (prepare())
PREPARE_PROBE = "what does this corpus describe"


class GraphRAGIndex(IndexBuild, IndexMutation, IndexPersistence, IndexReading):
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
    """Where an insert's parallel operations run (``pipeline.py``): this process, or a Ray cluster inside
    ``with distributed.ray_build(index, ...)``."""

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
        # the journal writes the store back after a failed change (a weak method: no cycle through the state)
        self.state.journal = Journal(self.state, weakref.WeakMethod(self._mirror_restore))
        if isinstance(graph_store, LazySimplePropertyGraphStore):
            graph_store.bind(self)  # filled from our tables on first use (lazy_store.py)
        self.llm = llm
        self.extra_extractors = list(extra_extractors)
        self.show_progress = show_progress
        self.executor = LOCAL

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
