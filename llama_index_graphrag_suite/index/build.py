"""The insert, as named steps run by an executor, with each step's body here.

An insert runs :data:`STEPS` in order over one :class:`BuildRun` (what the steps hand each other), each under a
timed stage of the same name (``build_info["stage_seconds"]``, tracing spans ``index.<name>``)::

    chunk       documents -> chunk nodes                                      executor.chunk
    statistics  corpus n-gram document frequencies (AGRAG Eq. 2)              executor.fit_statistics
    extract     the extractors over the new chunks                            executor.run_transformations
    tables      extractor output -> chunk, entity and fact rows               rows.add_chunk
    link        entities new to the index -> older chunks that mention them  rows.link_new_entities_to_old_chunks
    embed       chunks, new entity names, new fact texts                      executor.embed
    synonyms    synonym edges of the new entities (Eq. 5)                     rows.add_synonyms
    graph       the store mirror, then snapshot and BM25 from the tables      mirror.StoreMirror.upsert

The steps hold the build's logic, once; an executor only says *where* the four parallel operations run
(``executors.py``: here, or sharded over a Ray cluster with the same result). Each step changes the state
through its journal, so a step that fails rolls the whole insert back (``journal.py``). The steps read the
index's state and parts through one :class:`BuildContext`, never the index object.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Sequence

import numpy as np
from llama_index.core import Document
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.schema import TextNode, TransformComponent
from pyarrow import ArrowException

from ..extractors.entity_stats import EntityStatistics
from ..extractors.name_words import NameWordCounts
from ..extractors.statistical import CONTAINS, SYNONYM
from ..tracing import traced
from . import rows
from .collector import collector_paused
from .executors import Executor
from .extraction import Extraction, extraction_for
from .mirror import StoreMirror, chunk_text_node
from .records import ChunkRecord, text_key
from .row_overlay import table_column
from .storage import MANIFEST, SEGMENTS, read_json, version_token
from .tables import read_statistics
from .vectors import VectorTable

log = logging.getLogger(__name__)

__all__ = ["BuildContext", "BuildRun", "STEPS", "entity_statistics", "insert_documents", "name_word_counts"]


@dataclass
class BuildContext:
    """What an insert reads beside its documents: the index's state and parts, taken when the insert starts."""

    state: Any  # the IndexState
    mirror: StoreMirror
    executor: Executor
    llm: Any = None
    extra_extractors: Sequence[TransformComponent] = ()
    show_progress: bool = False
    stage: Callable[[str], ContextManager] = lambda name: contextlib.nullcontext()  # the index's timed stage


@dataclass
class BuildRun:
    """What the steps of one insert hand each other."""

    documents: Sequence[Document]
    chunk_nodes: list[TextNode] = field(default_factory=list)
    extraction: Extraction | None = None
    new_chunks: list[str] = field(default_factory=list)
    new_entities: set[str] = field(default_factory=set)
    new_facts: set[str] = field(default_factory=set)
    touched_old: list[str] = field(default_factory=list)  # older chunks the link step changed


@traced("index.insert")
def insert_documents(ctx: BuildContext, documents: Sequence[Document]) -> list[str]:
    """Insert ``documents`` as one change (the writer lock held; a failure rolls the index back); returns the new
    chunk ids. Pending document operations are the caller's to record (insert, refresh and rebase differ)."""
    state = ctx.state
    with state.lock.writing(), state.journal.change() as scope, collector_paused():
        new_chunks = run_steps(ctx, documents)
        record = state.journal.insert_record(scope, new_chunks)
        if record is not None:  # what the insert changed in older chunks, for a later delete
            state.journal.keep_record(record)
        return new_chunks


def run_steps(ctx: BuildContext, documents: Sequence[Document]) -> list[str]:
    """:data:`STEPS`, each a timed stage, run by ``ctx.executor``."""
    start = time.perf_counter()
    run = BuildRun(documents)
    for name, step in STEPS:
        with ctx.stage(name):
            step(ctx, run)
        if not run.chunk_nodes:  # nothing to index (empty documents)
            return []
    ctx.state.build_info["seconds"] += time.perf_counter() - start
    return run.new_chunks


# --- the steps ------------------------------------------------------------------------------------------------

def chunk(ctx: BuildContext, run: BuildRun) -> None:
    run.chunk_nodes = ctx.executor.chunk(ctx.state, run.documents)
    run.new_chunks = [n.node_id for n in run.chunk_nodes]


def statistics(ctx: BuildContext, run: BuildRun) -> None:
    state = ctx.state
    stats, texts = entity_statistics(state), [n.text for n in run.chunk_nodes]
    ctx.executor.fit_statistics(stats, texts)
    state.journal.on_undo(lambda: stats.forget(texts))
    if state.config.entities in ("ner", "both"):  # the NER graph's one-word name rules read these counts
        words = name_word_counts(state)
        words.add(texts)
        state.journal.on_undo(lambda: words.add(texts, -1))


def extract(ctx: BuildContext, run: BuildRun) -> None:
    """The index's extractors (from its config, seeded with the known entities), the LLM's and the user's."""
    state = ctx.state
    config = state.config
    density, words = count_name_density(state, [n.text for n in run.chunk_nodes], +1)
    if config.terms == "auto":
        from ..extractors.terms import NAME_RICH, TERMS_DECIDED_AFTER_WORDS

        # decided from the corpus so far; final, and saved with the config, once the corpus holds enough words
        config = config.model_copy(update={"terms": density < NAME_RICH})
        if words >= TERMS_DECIDED_AFTER_WORDS:
            state.config = config
    known = dict(zip(state.entities, zip(table_column(state.entities, "surface"), table_column(state.entities, "type"))))
    run.extraction = extraction_for(config, entity_statistics(state), known, ctx.show_progress, state.chunks,
                                    state.name_words)
    extractors: list[TransformComponent] = list(run.extraction.extractors)
    llm_extractor = None
    if ctx.llm is not None:
        from ..extractors.llm_relations import LLMRelationExtractor

        llm_extractor = LLMRelationExtractor(llm=ctx.llm, show_progress=ctx.show_progress)
        extractors.append(llm_extractor)
    extractors += ctx.extra_extractors
    usage = getattr(ctx.llm, "usage", None)  # a RobustLLM counts requests, cache hits and tokens
    with usage.track() if usage is not None else contextlib.nullcontext() as used:
        ctx.executor.run_transformations(run.chunk_nodes, extractors, show_progress=ctx.show_progress)
    if llm_extractor is not None:
        calls = llm_extractor.stats.get("llm_calls", 0)
        state.build_info["llm_calls"] += calls
        if calls and not llm_extractor.stats.get("kept", 0):  # the index is whole, but without what the LLM adds
            log.warning("the LLM answered %d call(s) but no relation could be read from any answer (empty or "
                        "malformed answers?); the index holds only the relations found without it", calls)
        if used is not None:  # requests (retries included), cache hits, tokens, failures, seconds
            total = state.build_info.setdefault("llm_usage", {})
            for key, value in used.snapshot().items():
                total[key] = total.get(key, 0) + value


def tables(ctx: BuildContext, run: BuildRun) -> None:
    for node in run.chunk_nodes:
        rows.add_chunk(ctx.state, node, run.new_entities, run.new_facts)


def link(ctx: BuildContext, run: BuildRun) -> None:
    state = ctx.state
    entities, new = state.entities, set(run.new_chunks)
    # known terms an earlier insert left unlinked (then over a smaller corpus's hub ceiling): older chunks write
    # them more often than they link them, so they are linked like new ones
    stale = {k for k, n in run.extraction.terms_written_before().items()
             if k in entities and n > len(entities[k].chunks - new)}
    run.touched_old = rows.link_new_entities_to_old_chunks(state, run.new_entities | stale, new, run.extraction,
                                                           run.new_facts)


def embed(ctx: BuildContext, run: BuildRun) -> None:
    embed_new(ctx, run.chunk_nodes, run.new_entities, run.new_facts)


def synonyms(ctx: BuildContext, run: BuildRun) -> None:
    rows.add_synonyms(ctx.state, run.new_entities)
    if ctx.state.entity_vectors is not None:
        # the search read most of the entity names' mapped pages (1.1 GB at a million passages), which would stay
        # in the process's RSS through the graph step and the save; the next read maps them again
        ctx.state.entity_vectors.drop_mapped_pages()


def graph(ctx: BuildContext, run: BuildRun) -> None:
    ctx.mirror.upsert(run.new_chunks + run.touched_old, run.new_entities, run.new_facts)
    ctx.state.derive()


STEPS: tuple[tuple[str, Callable[[BuildContext, BuildRun], None]], ...] = (
    ("chunk", chunk), ("statistics", statistics), ("extract", extract), ("tables", tables), ("link", link),
    ("embed", embed), ("synonyms", synonyms), ("graph", graph),
)


# --- what the steps share with delete and load --------------------------------------------------------------------

def count_name_density(state, texts: list[str], sign: int) -> tuple[float, int]:
    """Add (``sign`` +1: an insert) or take back (-1: a delete) the capitalised words of ``texts`` in the index's
    running count; returns the corpus's capitalised words per 100 and its words. The count is kept in
    ``build_info`` (``capitalised_per_100_words``: the guard's name trust reads it), so it follows the corpus as
    documents come and go; an index saved before the count existed reads its chunks once."""
    from ..extractors.terms import capitalised_word_counts

    info = state.build_info
    if "capitalised_words" not in info:
        # called before an insert adds its chunks and before a delete removes its own
        info["capitalised_words"] = list(capitalised_word_counts(c.text for c in state.chunks.values()))
    cap, words = capitalised_word_counts(texts)
    cap, words = info["capitalised_words"][0] + sign * cap, info["capitalised_words"][1] + sign * words
    info["capitalised_words"] = [cap, words]
    density = 100.0 * cap / words if words else 0.0
    info["capitalised_per_100_words"] = round(density, 2)
    return density, words


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


def entity_statistics(state) -> EntityStatistics:
    """The corpus n-gram statistics behind entity scores (AGRAG Eq. 2), which query keywords are scored with too."""
    if state.entity_stats is None:  # after load(): the saved ones, else computed from the chunk texts, once
        state.entity_stats = saved_statistics(state)
        if state.entity_stats is None:
            state.entity_stats = EntityStatistics(state.config.max_ngram)
            state.entity_stats.fit(c.text for c in state.chunks.values())
    return state.entity_stats


def name_word_counts(state) -> NameWordCounts:
    """How the corpus writes each word, for the NER graph's one-word name rules (kept up to date by inserts and
    deletes, like :func:`entity_statistics`)."""
    if state.name_words is None:  # after load(): count the stored chunk texts, once
        state.name_words = NameWordCounts(c.text for c in state.chunks.values())
    return state.name_words


def embed_texts(ctx: BuildContext, texts: list[str], what: str) -> np.ndarray:
    state = ctx.state
    if not texts:
        return np.zeros((0, state.dim or 1), np.float32)
    if ctx.show_progress:
        log.info("embedding %d %s", len(texts), what)
    # Batches of similar length waste little on padding: about 1.5x faster on CPU (measured on hotpotqa facts).
    order = np.array(sorted(range(len(texts)), key=lambda i: len(texts[i])), dtype=np.int64)
    vecs = ctx.executor.embed(state.embed_model, [texts[i] for i in order], show_progress=ctx.show_progress)
    arr = np.empty((len(texts), vecs.shape[1]), dtype=np.float32)
    arr[order] = vecs
    if state.dim is None:
        state.dim = arr.shape[1]
        state.chunk_vectors, state.entity_vectors, state.fact_vectors = (VectorTable(state.dim) for _ in range(3))
    return arr


def embed_new(ctx: BuildContext, chunk_nodes: list[TextNode], new_entities: set[str], new_facts: set[str]) -> None:
    state = ctx.state
    chunk_vecs = embed_texts(ctx, [n.get_content(metadata_mode="embed") for n in chunk_nodes], "chunks")
    ent_ids = sorted(new_entities)
    ent_vecs = embed_texts(ctx, [state.entities[k].surface for k in ent_ids], "entities")
    # Many relations come from one sentence: each distinct fact text is embedded and stored once.
    texts = {text_key(state.facts[f].text): state.facts[f].text for f in sorted(new_facts)}
    keys = [k for k in texts if k not in state.fact_vectors]
    fact_vecs = embed_texts(ctx, [texts[k] for k in keys], "fact texts")
    for table, ids, vecs in ((state.chunk_vectors, [n.node_id for n in chunk_nodes], chunk_vecs),
                             (state.entity_vectors, ent_ids, ent_vecs), (state.fact_vectors, keys, fact_vecs)):
        kept = table.lists if table.listed else None
        table.add(ids, vecs)
        state.journal.on_undo(lambda table=table, ids=ids, kept=kept: _take_back(table, ids, kept))
        # a large table's lists: trained once, then kept by adds and removes, saved; the entity names' trained again
        # as a batched build outgrows them, since each insert's synonym search reads them (rows.add_synonyms)
        table.ensure_lists(refit=table is state.entity_vectors)


def _take_back(table: VectorTable, ids: list[str], lists) -> None:
    """Undo an insert's rows of ``table``, and its lists as they were before it (``lists``: None when it kept
    none), whether the insert extended them or trained new ones."""
    table.remove(ids)
    if lists is not None and len(lists) == len(table):
        table.lists = lists.moved(table.moves)


def fill_from_property_graph(ctx: BuildContext, store) -> None:
    """The tables of an empty index from a LlamaIndex ``PropertyGraphIndex``'s store (see
    ``GraphRAGIndex.from_property_graph_index``): chunk nodes, ``contains`` relations, every other relation as a fact
    supported by the chunk it came from; then embeddings, synonym edges and the derived state."""
    state = ctx.state
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
        state.chunks[n.id] = ChunkRecord(n.id, doc_id, n.text, str(n.properties.get("title", "")))
    new_entities: set[str] = set()
    new_facts: set[str] = set()
    for subj, rel, obj in triplets:
        if rel.label == CONTAINS and subj.id in state.chunks:
            rows.support_entity(state, obj.id, surfaces.get(obj.id, obj.id), subj.id, new_entities)
            state.chunks[subj.id].entities.append(obj.id)
    for subj, rel, obj in triplets:
        if rel.label in (CONTAINS, SYNONYM) or subj.id in state.chunks or obj.id in state.chunks:
            continue
        source = rel.properties.get("triplet_source_id") or rel.properties.get("chunk_id")
        if source not in state.chunks:
            continue  # a relation with no chunk behind it cannot be retrieved
        for key in (subj.id, obj.id):
            if key not in state.chunks[source].entities:
                rows.support_entity(state, key, surfaces.get(key, key), source, new_entities)
                state.chunks[source].entities.append(key)
        rows.support_fact(state, rel, source, new_facts)
    rows.take_attributes(state, entity_nodes)
    chunk_text_nodes = [chunk_text_node(state, c) for c in state.chunks]
    embed_new(ctx, chunk_text_nodes, new_entities, new_facts)
    rows.add_synonyms(state, new_entities)
    state.derive()
