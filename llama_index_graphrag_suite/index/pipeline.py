"""The build as named steps, run by an executor: this process (:class:`LocalExecutor`) or a Ray cluster.

An insert runs :data:`STEPS` in order over one :class:`BuildRun` (what the steps hand each other), each under a
timed stage of the same name (``build_info["stage_seconds"]``, tracing spans ``index.<name>``)::

    chunk       documents -> chunk nodes                                      executor.chunk
    statistics  corpus n-gram document frequencies (AGRAG Eq. 2)              executor.fit_statistics
    extract     the extractors over the new chunks                            executor.run_transformations
    tables      extractor output -> chunk, entity and fact rows
    link        entities new to the index -> older chunks that mention them
    embed       chunks, new entity names, new fact texts                      executor.embed
    synonyms    synonym edges of the new entities (Eq. 5)
    graph       the store mirror, then snapshot and BM25 from the tables

The steps hold the build's logic, once; an executor only says *where* the four parallel operations run. The
local one runs them here; :class:`~.distributed.RayRunner` shards them over a Ray cluster and merges the shards
so that the result is the one the local executor gives (``tests/test_ray_indexing.py``). Each step changes the
tables through the index's journal, so a step that fails rolls the whole insert back (``journal.py``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from llama_index.core import Document
from llama_index.core.schema import TextNode, TransformComponent

from .executors import Executor
from .extraction import Extraction, extraction_for

log = logging.getLogger(__name__)

__all__ = ["BuildRun", "STEPS"]


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


def chunk(index, run: BuildRun, executor: Executor) -> None:
    run.chunk_nodes = executor.chunk(index.state, run.documents)
    run.new_chunks = [n.node_id for n in run.chunk_nodes]


def statistics(index, run: BuildRun, executor: Executor) -> None:
    stats, texts = index.entity_statistics(), [n.text for n in run.chunk_nodes]
    executor.fit_statistics(stats, texts)
    index.state.journal.on_undo(lambda: stats.forget(texts))
    if index.state.config.entities in ("ner", "both"):  # the NER graph's one-word name rules read these counts
        words = index.name_word_counts()
        words.add(texts)
        index.state.journal.on_undo(lambda: words.add(texts, -1))


def extract(index, run: BuildRun, executor: Executor) -> None:
    """The index's extractors (from its config, seeded with the known entities), the LLM's and the user's."""
    config = index.state.config
    density, words = count_name_density(index, [n.text for n in run.chunk_nodes], +1)
    if config.terms == "auto":
        from ..extractors.terms import NAME_RICH, TERMS_DECIDED_AFTER_WORDS

        # decided from the corpus so far; final, and saved with the config, once the corpus holds enough words
        config = config.model_copy(update={"terms": density < NAME_RICH})
        if words >= TERMS_DECIDED_AFTER_WORDS:
            index.state.config = config
    run.extraction = extraction_for(config, index.entity_statistics(),
                                    {k: (e.surface, e.type) for k, e in index.state.entities.items()}, index.show_progress,
                                    list(index.state.chunks.values()), index.state.name_words)
    extractors: list[TransformComponent] = list(run.extraction.extractors)
    llm_extractor = None
    if index.llm is not None:
        from ..extractors.llm_relations import LLMRelationExtractor

        llm_extractor = LLMRelationExtractor(llm=index.llm, show_progress=index.show_progress)
        extractors.append(llm_extractor)
    extractors += index.extra_extractors
    usage = getattr(index.llm, "usage", None)  # a RobustLLM counts requests, cache hits and tokens
    with usage.track() if usage is not None else contextlib.nullcontext() as used:
        executor.run_transformations(run.chunk_nodes, extractors, show_progress=index.show_progress)
    if llm_extractor is not None:
        calls = llm_extractor.stats.get("llm_calls", 0)
        index.state.build_info["llm_calls"] += calls
        if calls and not llm_extractor.stats.get("kept", 0):  # the index is whole, but without what the LLM adds
            log.warning("the LLM answered %d call(s) but no relation could be read from any answer (empty or "
                        "malformed answers?); the index holds only the relations found without it", calls)
        if used is not None:  # requests (retries included), cache hits, tokens, failures, seconds
            total = index.state.build_info.setdefault("llm_usage", {})
            for key, value in used.snapshot().items():
                total[key] = total.get(key, 0) + value


def count_name_density(index, texts: list[str], sign: int) -> tuple[float, int]:
    """Add (``sign`` +1: an insert) or take back (-1: a delete) the capitalised words of ``texts`` in the index's
    running count; returns the corpus's capitalised words per 100 and its words. The count is kept in
    ``build_info`` (``capitalised_per_100_words``: the guard's name trust reads it), so it follows the corpus as
    documents come and go; an index saved before the count existed reads its chunks once."""
    from ..extractors.terms import capitalised_word_counts

    info = index.state.build_info
    if "capitalised_words" not in info:
        # called before an insert adds its chunks and before a delete removes its own
        info["capitalised_words"] = list(capitalised_word_counts(c.text for c in index.state.chunks.values()))
    cap, words = capitalised_word_counts(texts)
    cap, words = info["capitalised_words"][0] + sign * cap, info["capitalised_words"][1] + sign * words
    info["capitalised_words"] = [cap, words]
    density = 100.0 * cap / words if words else 0.0
    info["capitalised_per_100_words"] = round(density, 2)
    return density, words


def tables(index, run: BuildRun, executor: Executor) -> None:
    for node in run.chunk_nodes:
        index._add_chunk(node, run.new_entities, run.new_facts)


def link(index, run: BuildRun, executor: Executor) -> None:
    entities, new = index.state.entities, set(run.new_chunks)
    # known terms an earlier insert left unlinked (then over a smaller corpus's hub ceiling): older chunks write
    # them more often than they link them, so they are linked like new ones
    stale = {k for k, n in run.extraction.terms_written_before().items()
             if k in entities and n > len(entities[k].chunks - new)}
    run.touched_old = index._link_new_entities_to_old_chunks(run.new_entities | stale, new, run.extraction,
                                                             run.new_facts)


def embed(index, run: BuildRun, executor: Executor) -> None:
    index._embed_new(run.chunk_nodes, run.new_entities, run.new_facts)


def synonyms(index, run: BuildRun, executor: Executor) -> None:
    index._add_synonyms(run.new_entities)


def graph(index, run: BuildRun, executor: Executor) -> None:
    index._mirror_upsert(run.new_chunks + run.touched_old, run.new_entities, run.new_facts)
    index.state.derive()


STEPS: tuple[tuple[str, Callable[[Any, BuildRun, Executor], None]], ...] = (
    ("chunk", chunk), ("statistics", statistics), ("extract", extract), ("tables", tables), ("link", link),
    ("embed", embed), ("synonyms", synonyms), ("graph", graph),
)
