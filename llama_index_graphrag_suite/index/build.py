"""Building the shared index: documents -> chunks -> extractors -> tables -> embeddings -> synonym edges.

A mixin of :class:`~.graph_index.GraphRAGIndex`; it writes ``self.state`` (the tables and vector tables it fills
are declared in ``state.py``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from typing import Sequence

import numpy as np
from llama_index.core import Document
from pyarrow import ArrowException
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.schema import TextNode
from typing_extensions import Self  # the GraphRAGIndex these mixins are part of

from ..config import IndexConfig
from ..documents import document_key
from ..extractors.entity_stats import EntityStatistics
from ..extractors.name_words import NameWordCounts
from ..extractors.statistical import CONTAINS, SYNONYM
from ..extractors.entity_resolution import keep_alias_pairs
from ..graph.synonyms import synonym_pairs
from ..tracing import stage, traced
from .bm25 import bm25_tokens
from .chunking import DOC_HASH
from .extraction import Extraction
from .pipeline import STEPS, BuildRun
from .records import ChunkRecord, EntityRecord, FactRecord, entity_attributes, fact_id, text_key
from .storage import MANIFEST, SEGMENTS, read_json, version_token
from .tables import read_statistics
from .vectors import VectorTable

log = logging.getLogger(__name__)


def saved_statistics(state) -> EntityStatistics | None:
    """The n-gram statistics of the version ``state`` was loaded from, when they are still on disk and describe
    its chunks (``tables.read_statistics``); None otherwise (they are then computed from the chunk texts)."""
    if state.origin is None:
        return None
    root, token = state.origin
    try:
        manifest = read_json(root / token.split("#", 1)[0] / MANIFEST)
        if version_token(root / token.split("#", 1)[0], manifest) != token:
            return None
        stats = read_statistics(root / SEGMENTS, manifest, state.config.max_ngram)
    except (OSError, ValueError, KeyError, TypeError, ArrowException) as exc:
        log.warning("the saved n-gram statistics of %s could not be read (%s); computing them from the chunks", root, exc)
        return None
    return stats if stats is not None and stats.n_chunks == len(state.chunks) else None


class IndexBuild:
    """Insert documents (and derive from a PropertyGraphIndex); a failed insert leaves the index as it was."""

    @classmethod
    def from_property_graph_index(cls, pg_index, embed_model: BaseEmbedding | str | None = None,
                                  config: IndexConfig | None = None, show_progress: bool = False) -> Self:
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
        nodes = store.get()
        chunk_nodes = [n for n in nodes if n.label == "text_chunk"]
        if not chunk_nodes:
            raise ValueError("the PropertyGraphIndex holds no text chunks")
        graph = getattr(store, "graph", None)
        triplets = graph.get_triplets() if graph is not None else store.get_triplets(ids=[n.id for n in nodes])
        surfaces = {n.id: n.properties.get("surface", n.id) for n in nodes if n.label != "text_chunk"}
        entity_nodes = [n for n in nodes if isinstance(n, EntityNode)]
        for n in chunk_nodes:
            doc_id = str(n.properties.get("ref_doc_id") or n.properties.get("doc_id") or n.id)
            index.state.chunks[n.id] = ChunkRecord(n.id, doc_id, n.text, str(n.properties.get("title", "")))
        new_entities: set[str] = set()
        new_facts: set[str] = set()
        for subj, rel, obj in triplets:
            if rel.label == CONTAINS and subj.id in index.state.chunks:
                index._support_entity(obj.id, surfaces.get(obj.id, obj.id), subj.id, new_entities)
                index.state.chunks[subj.id].entities.append(obj.id)
        for subj, rel, obj in triplets:
            if rel.label in (CONTAINS, SYNONYM) or subj.id in index.state.chunks or obj.id in index.state.chunks:
                continue
            source = rel.properties.get("triplet_source_id") or rel.properties.get("chunk_id")
            if source not in index.state.chunks:
                continue  # a relation with no chunk behind it cannot be retrieved
            for key in (subj.id, obj.id):
                if key not in index.state.chunks[source].entities:
                    index._support_entity(key, surfaces.get(key, key), source, new_entities)
                    index.state.chunks[source].entities.append(key)
            index._support_fact(rel, source, new_facts)
        index._take_attributes(entity_nodes)
        chunk_text_nodes = [index._chunk_text_node(c) for c in index.state.chunks]
        index._embed_new(chunk_text_nodes, new_entities, new_facts)
        index._add_synonyms(new_entities)
        index.state.derive()
        return index

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
        with self.state.lock.writing():
            new_chunks = self._insert_documents(documents)
            for doc in documents:
                self.state.record(document_key(doc)[0], None, doc)
            return new_chunks

    @traced("index.insert")
    def _insert_documents(self, documents: Sequence[Document]) -> list[str]:
        """:meth:`insert` without recording pending operations (refresh and rebase record their own)."""
        state = self.state
        with state.lock.writing(), state.journal.change() as scope:  # a failure below rolls the index back
            new_chunks = self._insert_in(documents)
            record = state.journal.insert_record(scope, new_chunks)
            if record is not None:  # what the insert changed in older chunks, for a later delete
                state.provenance.append(record)
            return new_chunks

    def _insert_in(self, documents: Sequence[Document]) -> list[str]:
        """The named steps of ``pipeline.py``, each a timed stage, run by ``self.executor``."""
        start = time.perf_counter()
        run = BuildRun(documents)
        for name, step in STEPS:
            with self._stage(name):
                step(self, run, self.executor)
            if not run.chunk_nodes:  # nothing to index (empty documents)
                return []
        self.state.build_info["seconds"] += time.perf_counter() - start
        return run.new_chunks

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
        state = self.state
        if state.entity_stats is None:  # after load(): the saved ones, else computed from the chunk texts, once
            state.entity_stats = saved_statistics(state)
            if state.entity_stats is None:
                state.entity_stats = EntityStatistics(state.config.max_ngram)
                state.entity_stats.fit(c.text for c in state.chunks.values())
        return state.entity_stats

    def name_word_counts(self) -> NameWordCounts:
        """How the corpus writes each word, for the NER graph's one-word name rules (kept up to date by inserts and
        deletes, like :meth:`entity_statistics`)."""
        state = self.state
        if state.name_words is None:  # after load(): count the stored chunk texts, once
            state.name_words = NameWordCounts(c.text for c in state.chunks.values())
        return state.name_words

    def _add_chunk(self, node: TextNode, new_entities: set[str], new_facts: set[str]) -> None:
        kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
        kg_rels = node.metadata.pop(KG_RELATIONS_KEY, [])
        rec = ChunkRecord(node.node_id, node.metadata["doc_id"], node.text, node.metadata.get("title", ""),
                          int(node.node_id.rsplit("#", 1)[1]), doc_hash=node.metadata.pop(DOC_HASH, ""))
        surfaces = {n.name: n.properties.get("surface", n.name) for n in kg_nodes if isinstance(n, EntityNode)}
        types = {n.name: n.properties.get("type", "") for n in kg_nodes if isinstance(n, EntityNode)}
        contained = [r.target_id for r in kg_rels if r.label == CONTAINS]
        for key in dict.fromkeys(contained):
            self._support_entity(key, surfaces.get(key, key), rec.id, new_entities, types.get(key, ""))
        self._take_attributes(kg_nodes)
        rec.entities = list(dict.fromkeys(contained))
        self.state.journal.touch("chunks", rec.id)
        self.state.chunks[rec.id] = rec
        for r in kg_rels:
            if r.label in (CONTAINS, SYNONYM):
                continue  # contains is in the record; synonyms are computed index-wide
            for key in (r.source_id, r.target_id):
                if key not in self.state.entities:  # e.g. an LLM triple naming a phrase not in the vocabulary
                    self._support_entity(key, surfaces.get(key, key), rec.id, new_entities)
                    rec.entities.append(key)
            self._support_fact(r, rec.id, new_facts)

    def _support_entity(self, key: str, surface: str, chunk_id: str, new_entities: set[str], type_: str = "") -> None:
        self.state.journal.touch("entities", key)
        ent = self.state.entities.get(key)
        if ent is None:
            ent = self.state.entities[key] = EntityRecord(key, surface, type=type_)
            new_entities.add(key)
        elif type_ and not ent.type:
            ent.type = type_
        ent.chunks.add(chunk_id)

    def _take_attributes(self, kg_nodes: list) -> None:
        """Entity attributes the extractors gave (records.entity_attributes) into the entity records: a later
        non-empty value replaces an earlier one (the PathRAG extractor hands the description merged so far)."""
        for n in kg_nodes:
            if isinstance(n, EntityNode) and n.name in self.state.entities:
                attrs = entity_attributes(n.properties)
                ent = self.state.entities[n.name]
                if attrs and any(ent.attributes.get(k) != v for k, v in attrs.items()):
                    self.state.journal.touch("entities", n.name)
                    ent.attributes = {**ent.attributes, **attrs}

    def _support_fact(self, r: Relation, chunk_id: str, new_facts: set[str]) -> None:
        fid = fact_id(r.source_id, r.label, r.target_id)
        self.state.journal.touch("facts", fid)
        fact = self.state.facts.get(fid)
        if fact is None:
            text = str(r.properties.get("text") or f"{r.source_id} {r.label} {r.target_id}")
            fact = self.state.facts[fid] = FactRecord(fid, r.source_id, r.label, r.target_id, text, str(r.properties.get("kind", "other")))
            new_facts.add(fid)
        fact.chunks.add(chunk_id)

    def _link_new_entities_to_old_chunks(self, new_entities: set[str], new_chunks: set[str], extraction: Extraction,
                                         new_facts: set[str]) -> list[str]:
        """Old chunks that mention an entity first extracted now (or a known term an earlier insert left unlinked,
        see pipeline.link) get `contains` edges; with the statistical extractor their co-occurrence relations are
        recomputed too (the NER extractor's relations need a parse of the old chunk, which an insert does not
        redo)."""
        state = self.state
        if not new_entities or len(state.chunks) == len(new_chunks):
            return []
        find = extraction.known_finder(frozenset(new_entities))
        touched = []
        for cid in self._chunks_that_may_mention(new_entities, new_chunks):
            rec = state.chunks[cid]
            found = find(rec.text, rec.entities) - set(rec.entities)
            if not found:
                continue
            touched.append(cid)
            state.journal.touch("chunks", cid)
            for key in found:
                state.journal.touch("entities", key)
                state.entities[key].chunks.add(cid)
                rec.entities.append(key)
            if extraction.cooccurrence is not None:
                for r in extraction.cooccurrence.relations(rec.text, frozenset(rec.entities), cid):
                    self._support_fact(r, cid, new_facts)
        return touched

    def _chunks_that_may_mention(self, keys: set[str], new_chunks: set[str]) -> list[str]:
        """The older chunks, in table order, that write every word of one of ``keys``: every chunk a finder can
        match a name in (names are matched as whole normalised words, the words BM25 counts), found through BM25's
        term columns instead of reading every chunk. All older chunks when a key has no such word."""
        state = self.state
        bm25 = state.bm25
        words = [bm25_tokens(k) for k in keys]
        if bm25 is None or bm25.ids != state.chunk_order or not all(words):
            return [c for c in state.chunks if c not in new_chunks]
        rows = bm25.rows_with_all(words)
        return [c for c in (bm25.ids[r] for r in rows.tolist()) if c not in new_chunks and c in state.chunks]

    def _embed(self, texts: list[str], what: str) -> np.ndarray:
        state = self.state
        if not texts:
            return np.zeros((0, state.dim or 1), np.float32)
        if self.show_progress:
            log.info("embedding %d %s", len(texts), what)
        # Batches of similar length waste little on padding: about 1.5x faster on CPU (measured on hotpotqa facts).
        order = np.array(sorted(range(len(texts)), key=lambda i: len(texts[i])), dtype=np.int64)
        vecs = self.executor.embed(state.embed_model, [texts[i] for i in order], show_progress=self.show_progress)
        arr = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
        arr[order] = vecs
        if state.dim is None:
            state.dim = arr.shape[1]
            state.chunk_vectors, state.entity_vectors, state.fact_vectors = (VectorTable(state.dim) for _ in range(3))
        return arr

    def _embed_new(self, chunk_nodes: list[TextNode], new_entities: set[str], new_facts: set[str]) -> None:
        state = self.state
        chunk_vecs = self._embed([n.get_content(metadata_mode="embed") for n in chunk_nodes], "chunks")
        ent_ids = sorted(new_entities)
        ent_vecs = self._embed([state.entities[k].surface for k in ent_ids], "entities")
        # Many relations come from one sentence: each distinct fact text is embedded and stored once.
        texts = {text_key(state.facts[f].text): state.facts[f].text for f in sorted(new_facts)}
        keys = [k for k in texts if k not in state.fact_vectors]
        fact_vecs = self._embed([texts[k] for k in keys], "fact texts")
        for table, ids, vecs in ((state.chunk_vectors, [n.node_id for n in chunk_nodes], chunk_vecs),
                                 (state.entity_vectors, ent_ids, ent_vecs), (state.fact_vectors, keys, fact_vecs)):
            table.add(ids, vecs)
            state.journal.on_undo(lambda table=table, ids=ids: table.remove(ids))

    def _unused_texts(self) -> set[str]:
        """Fact-text vectors no remaining fact uses."""
        if self.state.fact_vectors is None:
            return set()
        used = {text_key(f.text) for f in self.state.facts.values()}
        return {k for k in self.state.fact_vectors.ids if k not in used}

    def _add_synonyms(self, new_entities: set[str]) -> None:
        state = self.state
        if not new_entities or state.entity_vectors is None or len(state.entity_vectors) < 2:
            return
        ids = state.entity_vectors.ids
        eligible = np.array([sum(ch.isalnum() for ch in k) >= state.config.synonym_min_chars for k in ids])
        rows = np.array([state.entity_vectors.row(k) for k in new_entities], np.int64)
        src, dst, sim = synonym_pairs(
            state.entity_vectors.vectors(), state.config.synonym_threshold, state.config.synonym_max_per_entity, rows, eligible
        )
        # Not between names their words tell apart: two people sharing a surname, "sars cov" / "sars cov 2".
        src, dst, sim = keep_alias_pairs(ids, lambda k: getattr(state.entities.get(k), "type", ""), src, dst, sim)
        for i, j, s in zip(src.tolist(), dst.tolist(), sim.tolist()):
            state.journal.touch("synonyms", (ids[i], ids[j]))
            state.synonyms[(ids[i], ids[j])] = float(s)
