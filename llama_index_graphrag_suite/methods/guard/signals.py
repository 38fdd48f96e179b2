"""What the guard reads of a question and a corpus: how much of the question the graph knows, which chunks hold the
entities it names, and how much a corpus is written in names (``docs/guard.md``). Read-only lookups in the index's
entity and chunk tables."""

from __future__ import annotations

import numpy as np

from ...extractors.gazetteer import canonical_key
from ...extractors.terms import NAME_RICH, TERM_TYPE, capitalised_per_100_words
from ...index.bm25 import bm25_tokens
from ...text import accent_aliases, fold_accents, words

__all__ = ["HUB_MIN", "HUB_SHARE", "corpus_name_density", "written_in_names", "entity_coverage", "entity_specificity", "hub_chunks", "name_trust",
           "names_held", "query_link"]

MAX_QUERY_NGRAM = 6  # longest entity name looked up in a question, in words
NAME_DENSITY_SAMPLE = 2000  # chunks read when the build did not record the density (an index built before it did)
# An entity linked to more than max(HUB_MIN, HUB_SHARE · chunks) chunks is a hub (a long document's title, a novel's
# hero): it does not count as linking the question. Not settings: on the five shared sets a share of 0.02, 0.1 or 1.0
# (no hub at all) moves recall@5 of any guarded method by at most one question (0.02: three), and the cut-off's
# reason, long documents, is in the sets kept aside (studies/results/guard_margin.md).
HUB_SHARE = 0.05
HUB_MIN = 20


def hub_chunks(n_chunks: int, share: float = HUB_SHARE, floor: int = HUB_MIN) -> int:
    """Most chunks a specific entity may be linked to: ``max(floor, share · n_chunks)``."""
    return max(floor, int(share * n_chunks))


def query_link(index, question: str, max_chunks: int, names_only: bool = False) -> tuple[float, list[str]]:
    """``(share of the question's content words inside specific entity mentions, those entity keys)``.

    Entity keys are looked up as word n-grams of the question, longest first (a word belongs to at most one
    mention), with or without accents ("Tekeze River" finds ``tekezé river``); an entity counts when it is linked to
    1..``max_chunks`` chunks.
    """
    tokens = list(words(question))
    content = [i for i, w in enumerate(tokens) if bm25_tokens(w)]  # stop words and punctuation do not count
    if not content:
        return 0.0, []
    entities = index.entities
    aliases = index.cached("guard.accent_aliases", lambda: accent_aliases(entities))  # "Tekeze" for "Tekezé"
    covered: set[int] = set()
    found: list[str] = []
    n = len(tokens)
    for size in range(min(MAX_QUERY_NGRAM, n), 0, -1):
        for start in range(0, n - size + 1):
            span = range(start, start + size)
            if any(i in covered for i in span):
                continue
            key = canonical_key(" ".join(tokens[start:start + size]))
            if key and key not in entities:  # the question's accents, or the entity's, left out
                folded = fold_accents(key)
                key = folded if folded in entities else aliases.get(folded, key)
            rec = entities.get(key) if key else None
            if rec is None or not (0 < len(rec.chunks) <= max_chunks) or (names_only and rec.type == TERM_TYPE):
                continue
            if size == 1 and not bm25_tokens(tokens[start]):
                continue  # a lone stop word that happens to be an entity key
            covered.update(span)
            found.append(key)
    share = sum(1 for i in content if i in covered) / len(content)
    return share, found


def names_held(index, keys: list[str], positions: np.ndarray) -> int:
    """How many of the entity ``keys`` (each once) a chunk at one of ``positions`` (in ``index.chunk_order``) is
    linked to: the names of the question a ranking's top keeps."""
    chunks, order = index.chunks, index.chunk_order
    linked: set[str] = set()
    for c in np.asarray(positions, np.int64).tolist():
        linked.update(chunks[order[c]].entities)
    return sum(1 for key in set(keys) if key in linked)


def name_trust(density: float | None, full: float) -> float:
    """The share of the graph weight a corpus of this name density gets: ``min(1, density / full)``; 1 when the
    density is unknown or ``full`` is 0 (off)."""
    if density is None or full <= 0:
        return 1.0
    return min(1.0, max(0.0, density) / full)


def corpus_name_density(index) -> float:
    """Capitalised words per 100 of the corpus: what the build recorded, else read off the first chunks."""
    recorded = index.build_info.get("capitalised_per_100_words")
    if recorded is not None:
        return float(recorded)
    chunks, order = index.chunks, index.chunk_order
    return index.cached("guard.name_density", lambda: capitalised_per_100_words(
        chunks[c].text for c in order[:NAME_DENSITY_SAMPLE]))


def written_in_names(index) -> bool:
    """Whether the corpus is written in names (people, places, works), by the reading that decides whether the index
    adds terms (``extractors.terms.NAME_RICH`` capitalised words per 100)."""
    return corpus_name_density(index) >= NAME_RICH


def entity_specificity(index, keys: list[str]) -> np.ndarray:
    """Each entity's inverse chunk frequency, ``log(chunks / chunks linked to it)``: 0 for an entity linked to every
    chunk, the most for one linked to a single chunk (BM25's reading of a word, applied to an entity)."""
    n = max(1, len(index.chunk_order))
    entities = index.entities
    return np.asarray([np.log(n / max(1, min(n, len(entities[k].chunks)))) if k in entities else 0.0 for k in keys])


def entity_coverage(index, keys: list[str], positions: np.ndarray) -> np.ndarray:
    """For each chunk position in ``positions``: the share of the entity ``keys`` (as the question names them, a
    name written twice counting twice) linked to that chunk, each entity weighted by :func:`entity_specificity`
    (a novel's hero, linked to a third of its chunks, says little about which chunk answers a question naming him).
    Read off the chunks' own entity lists, so an entity linked to thousands of chunks costs nothing more."""
    weights = entity_specificity(index, keys) if keys else np.zeros(0)
    total = float(weights.sum())
    if total <= 0.0 or positions.size == 0:  # no entity named, or only ones linked everywhere
        return np.zeros(positions.size)
    chunks, order = index.chunks, index.chunk_order
    hits = []
    for c in positions.tolist():
        linked = set(chunks[order[c]].entities)
        hits.append(sum(w for k, w in zip(keys, weights.tolist()) if k in linked))
    return np.asarray(hits, dtype=np.float64) / total
