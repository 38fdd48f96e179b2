"""The hybrid guard: how far a graph method may re-rank hybrid retrieval, decided per query.

Every graph method (agrag, pathrag, archrag, a2rag, hipporag) ranks chunks its own way. On corpora where
the entity graph is thin or noisy (clinical guidelines, research articles) that ranking can fall well below
plain hybrid retrieval (issue 25). The guard fuses the method's ranking with hybrid's, with a weight that
depends on what the graph offers *this* query:

* ``link``: how much of the query the graph knows: the share of the query's content words that lie inside
  mentions of *specific* entities (entities linked to at most ``hub_chunks`` chunks; a hub such as a long
  document's title, linked to all of its chunks, tells the walk nothing); with ``guard_names_only``, named
  entities only (a question that names people, places or works is what the graph's walks are good at; one
  made of a domain's terms is what BM25 already matches);
* ``agree``: how much the graph's top-k already agrees with hybrid's (shared chunks / k). A graph ranking
  that keeps hybrid's best chunks and adds a few is the multi-hop pattern the graph is for; one that
  replaces all of them is a walk that went astray.

``w = cap · clip(link_gain · link + agree_gain · agree + bias, 0, 1)`` when ``link > 0``, else 0 (a
question that names nothing the graph knows is answered by hybrid alone). The fused order is a
weighted reciprocal-rank fusion, ``(1 - w) / (k0 + rank_hybrid) + w / (k0 + rank_graph)``, over the union
of both top-``depth`` lists. ``w = 0`` gives hybrid's order exactly; ``w = 1`` the method's own. Below 1,
hybrid's first chunk always keeps a place in the top k: a walk may add to what hybrid is surest of, not replace it.

The cap is not tuned: it is :func:`protective_weight`, ``(k0 + k) / (2 k0 + k + 1)`` (0.7 at ``k0 = 2`` and top_k
5), the weight at which hybrid's first chunk and the graph's k-th, each absent from the other list, score the
same. Above it the graph's own top k decides, and how much that pays differs from corpus to corpus: with the cap
tuned (0.7, 0.85 or 1.0), the four sets other than 2wiki_retrieval101 picked 1.0 and HippoRAG lost 4.5 points of
recall@5 on 2wiki against the pick on all five (76.5 in-sample, 72.0 left out); with the cap derived, no method's
left-out figure is more than 0.5 below its in-sample one (benchmarks/domain_tuning.py). ``guard_max_weight`` sets
a cap by hand.

How far the walk is trusted also depends on the corpus: ``w`` is scaled by
``min(1, name density / guard_name_density)``, the name density being the capitalised words per 100 that the
index measured at build time (``build_info``, the same reading that decides whether it adds terms). Where a
corpus is written in names (Wikipedia: 24-28) the walk gets its full weight; where it is written in common nouns
(clinical guidelines 3.1, research articles 8.1) its "names" are mostly acronyms and codes (``CML``, ``T20``,
``HCoV-OC43``) whose walk helps less than the phrase match of the coverage below (measured: the named-entity
questions of graphrag_bench_medical and covidqa_dev, where A2RAG's fused ranking was 1.4 and 1.5 points below the
linked hybrid one before this factor).

The hybrid side is itself read through the graph's entity links (:func:`linked_hybrid`, A2RAG's Local stage
as a re-ranking): among hybrid's top-``depth`` chunks, one linked to more of the entities the question names
(names and terms) rises: ``2 / (2 + rank_hybrid) + cover_gain · coverage``, coverage being the share of the
question's entities the chunk is linked to, each entity weighted by its inverse chunk frequency (a novel's hero,
in a third of its chunks, weighs little; the inn the question also names, in three chunks, weighs much). BM25
scores the question's words one by one; the links say the chunk holds the phrase ("acute respiratory distress
syndrome") or the name. No hub cut-off here, only that weighting: the re-ranking stays inside hybrid's top chunks
(a hub cut-off was tried and did not transfer between the two domain sets: benchmarks/domain_tuning.py). A
question that links no entity, or only entities linked to every chunk, keeps hybrid's order.
The defaults were chosen on five datasets (three Wikipedia multi-hop sets, clinical guidelines, COVID research
papers) and checked by leave-one-dataset-out (``benchmarks/domain_tuning.py``, BENCHMARKS.md "Any corpus"):
entities (names and terms) linked to at most 5 % of the chunks, ``w = cap · clip(3 · link + agree, 0, 1)``,
``k0 = 2``, coverage gain 0.5, full weight from 24 capitalised words per 100; A2RAG has its own (named entities
only, link gain 4 and coverage gain 0.2, in its config).
The tuning keeps only settings under which no method falls below ``hybrid − 0.5`` on any set, and among them
takes the one whose mean gain over hybrid, averaged with that of its neighbours on the grid, is best: a flat
optimum, less likely than the single best setting to be best by chance on five noisy sets (it gave the better
left-out figures). Each method's ``paper`` variant turns the guard off.

The settings are chosen at top_k 5. Asked for fewer chunks, the fusion has fewer places, and each chunk the walk
adds displaces one hybrid is surer of: below 5 the weight is scaled by ``(top_k / 5) ** guard_small_k_power`` (2,
chosen by leave-one-dataset-out over powers 0 to 4 at top_k 2 and 3: without it HippoRAG fell 3.5 and 4.5 points
below hybrid at top_k 2 and 3 on hotpotqa_train100; with it no method is more than 0.5 below hybrid at any top_k of
2, 3, 5 or 10 on the five sets; A2RAG, whose own top opens with hybrid's first chunk, keeps 0:
``benchmarks/guard_top_k.py``).

The fusion decides which chunks are returned; by default they are listed in the fusion's order too. Where the
method's own ranking already opens with hybrid's surest chunk (A2RAG places hybrid's top chunks among its own,
``hybrid_anchors``), ``guard_own_order_from`` lists them in the method's order once the graph holds that much of the
fusion: recall@5 is the same, and what a reader sees first is the method's pick (A2RAG at 0.5: recall@2 +7.9 /
+1.5 / +4.0 on the three Wikipedia sets, the same on the two domain sets; HippoRAG's own top chunk is less sure than
hybrid's, and in its order it would lose 4.0 / 4.5 points there: ``benchmarks/guard_order.py``).

The arithmetic is pure numpy (:func:`guard_weight`, :func:`fuse_rankings`); :func:`query_link` reads the
index's entity table only.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from llama_index.core.schema import NodeWithScore, QueryBundle

from ..extractors.gazetteer import canonical_key
from ..extractors.terms import TERM_TYPE, capitalised_per_100_words
from ..index.bm25 import bm25_tokens
from ..text import accent_aliases, fold_accents, words
from .base import GraphIndexRetriever, MethodConfig, chunk_node, param
from .query_scores import bm25_scores, dense_scores
from .scoring import hybrid, top_k

__all__ = ["GuardedConfig", "GuardedRetriever", "corpus_name_density", "entity_coverage", "entity_specificity",
           "fuse_rankings", "guard_weight", "in_own_order", "linked_hybrid", "name_trust", "protective_weight",
           "query_link", "small_k_share", "weight_cap"]

MAX_QUERY_NGRAM = 6  # longest entity name looked up in a question, in words


TUNED_TOP_K = 5  # the top_k at which benchmarks/domain_tuning.py chooses the guard's settings


class GuardedConfig(MethodConfig):
    """Settings of the hybrid guard, shared by every graph method's config (see the module doc)."""

    hybrid_guard: bool = param(True, "Fuse the method's ranking with hybrid's, weighted per query by what the graph "
                               "knows of it (methods/graph_guard.py); False is the paper's own ranking.",
                               "ours (issue 25, leave-one-dataset-out)")
    guard_depth: int = param(20, "Chunks of each ranking (the method's and hybrid's) the fusion reads.", "ours", ge=1)
    guard_max_weight: float | None = param(
        None, "Largest weight the graph ranking gets; None: protective_weight, (k0 + top_k) / (2 k0 + top_k + 1), "
        "where hybrid's first chunk ties the graph's top_k-th (0.7 at k0 2 and top_k 5).",
        "ours (issue 25)", ge=0.0, le=1.0)
    guard_link_gain: float = param(3.0, "Weight of the query's share of words in specific entities.", "ours (LODO)")
    guard_agree_gain: float = param(1.0, "Weight of the top-k overlap of graph and hybrid.", "ours (LODO)")
    guard_bias: float = param(0.0, "Constant term of the graph weight before clipping.", "ours (LODO)")
    guard_rrf_k: int = param(2, "k0 of the reciprocal-rank fusion (small: the top ranks decide).", "ours (LODO)", ge=1)
    guard_hub_share: float = param(0.05, "Entities linked to more than this share of chunks (and more than "
                                   "guard_hub_min chunks) are hubs: they do not count as linking the query.",
                                   "ours", gt=0.0, le=1.0)
    guard_hub_min: int = param(20, "Chunk count below which an entity is never a hub.", "ours", ge=1)
    guard_names_only: bool = param(False, "Only named entities (not TERM entities) count as linking the query.",
                                   "ours (LODO)")
    guard_name_density: float = param(24.0, "Capitalised words per 100 (the corpus's name density, measured at "
                                      "build time) at which the graph gets its full weight; below, the weight "
                                      "shrinks in proportion (0: off).", "ours (LODO)", ge=0.0)
    guard_cover_gain: float = param(0.5, "How far a hybrid chunk rises for being linked to the question's entities "
                                    "(the share of them it holds; 0: hybrid's order as is).", "ours (LODO)", ge=0.0)
    guard_small_k_power: float = param(
        2.0, f"Below top_k {TUNED_TOP_K} (the top_k the other settings were chosen at), the graph weight is scaled by "
        f"(top_k / {TUNED_TOP_K}) ** this: with fewer places, each chunk the walk adds displaces one of hybrid's "
        "surest (0: no scaling).", "ours (issue 25, leave-one-dataset-out; benchmarks/guard_top_k.py)", ge=0.0)
    guard_own_order_from: float | None = param(
        None, "From this graph weight on, the fused top_k (the chunks the fusion chose) is listed in the method's own "
        "order; None: in the fusion's order. For a method whose own ranking already opens with hybrid's surest chunk "
        "(A2RAG's anchors); it changes which chunk comes first, never which chunks are returned.",
        "ours (issue 25; benchmarks/guard_order.py)", ge=0.0, le=1.0)

    PAPER_VARIANT: ClassVar[dict[str, Any]] = {"hybrid_guard": False}


def hub_chunks(n_chunks: int, share: float, floor: int) -> int:
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


WEIGHT_STEP = 0.05  # the weight is rounded to this step (benchmarks/domain_tuning.py simulates on the same grid)


def name_trust(density: float | None, full: float) -> float:
    """The share of the graph weight a corpus of this name density gets: ``min(1, density / full)``; 1 when the
    density is unknown or ``full`` is 0 (off)."""
    if density is None or full <= 0:
        return 1.0
    return min(1.0, max(0.0, density) / full)


NAME_DENSITY_SAMPLE = 2000  # chunks read when the build did not record the density (an index built before it did)


def corpus_name_density(index) -> float:
    """Capitalised words per 100 of the corpus: what the build recorded, else read off the first chunks."""
    recorded = index.build_info.get("capitalised_per_100_words")
    if recorded is not None:
        return float(recorded)
    chunks, order = index.chunks, index.chunk_order
    return index.cached("guard.name_density", lambda: capitalised_per_100_words(
        chunks[c].text for c in order[:NAME_DENSITY_SAMPLE]))


def protective_weight(k0: int, k: int) -> float:
    """The graph weight at which hybrid's first chunk ties the graph's k-th, each absent from the other ranking:
    ``(1 - w) / (k0 + 1) = w / (k0 + k)``, so ``w = (k0 + k) / (2 k0 + k + 1)``.

    Up to it the fusion weighs the graph's top against hybrid's; above it the graph's own top k decides (see the
    module doc for what tuning this cap instead cost)."""
    return (k0 + k) / (2 * k0 + k + 1)


def weight_cap(cfg: GuardedConfig, k: int) -> float:
    """The most weight the graph ranking gets: ``guard_max_weight``, or :func:`protective_weight` when unset."""
    return protective_weight(cfg.guard_rrf_k, k) if cfg.guard_max_weight is None else cfg.guard_max_weight


def guard_weight(link: float, agree: float, cfg: GuardedConfig, trust: float = 1.0, k: int = 5) -> float:
    """The graph ranking's weight in [0, :func:`weight_cap`] from the two signals (see the module doc); 0 when no
    word of the query is in a specific entity: then the graph knows nothing of the question. ``k``: the top_k the
    fusion cuts to.

    Rounded to ``WEIGHT_STEP``, and never above the cap's step: the tuning evaluates every setting on that grid of
    weights, so what it measured is what the retriever does (unrounded weights had moved recall@5 by up to 0.2
    against the simulation)."""
    if link <= 0.0:
        return 0.0
    cap = weight_cap(cfg, k)
    raw = cfg.guard_link_gain * link + cfg.guard_agree_gain * agree + cfg.guard_bias
    weight = cap * float(min(1.0, max(0.0, raw))) * trust * small_k_share(k, cfg.guard_small_k_power)
    return weight_on_grid(weight, cap)


def weight_on_grid(weight: float, cap: float) -> float:
    """``weight`` rounded to ``WEIGHT_STEP``, at most the largest step not above ``cap``."""
    return min(round(weight / WEIGHT_STEP), int(cap / WEIGHT_STEP + 1e-9)) * WEIGHT_STEP


def small_k_share(k: int, power: float) -> float:
    """The share of the graph weight kept at top_k ``k``: ``min(1, k / TUNED_TOP_K) ** power``."""
    return min(1.0, max(0, k) / TUNED_TOP_K) ** power if power > 0 else 1.0


SCORE_DIGITS = 12  # fused scores equal to this many decimals are a tie


def fuse_rankings(graph_rank: np.ndarray, hybrid_rank: np.ndarray, weight: float, k0: int,
                  k: int) -> tuple[np.ndarray, list[float]]:
    """Weighted reciprocal-rank fusion of two rankings (arrays of chunk positions, best first): the top ``k``
    positions and their fused scores.

    ``weight`` is the graph ranking's share. With weight 0 the result is ``hybrid_rank[:k]``; with 1 it is
    ``graph_rank[:k]`` (filled from hybrid when the graph ranked fewer). Below 1, hybrid's first chunk is always
    in the result: when the fusion leaves it out, it takes the last place (with its own, lower, score). Ties go to
    the hybrid order; scores are compared to ``SCORE_DIGITS`` decimals, so that two equal sums are a tie whatever
    the floating-point rounding.
    """
    score: dict[int, float] = {}
    for rank, c in enumerate(hybrid_rank.tolist()):
        score[c] = score.get(c, 0.0) + (1.0 - weight) / (k0 + rank + 1)
    for rank, c in enumerate(graph_rank.tolist()):
        score[c] = score.get(c, 0.0) + weight / (k0 + rank + 1)
    hybrid_pos = {c: i for i, c in enumerate(hybrid_rank.tolist())}
    tail = len(hybrid_pos)
    graph_pos = {c: i for i, c in enumerate(graph_rank.tolist())}
    order = sorted(score, key=lambda c: (-round(score[c], SCORE_DIGITS),
                                         hybrid_pos.get(c, tail + graph_pos.get(c, 0))))[:k]
    if weight < 1.0 and hybrid_rank.size and k > 0 and int(hybrid_rank[0]) not in order:
        order[-1] = int(hybrid_rank[0])  # the chunk hybrid is surest of is never walked away from
    return np.asarray(order, dtype=np.int64), [score[c] for c in order]


def in_own_order(fused: np.ndarray, graph_rank: np.ndarray) -> np.ndarray:
    """The indices that list ``fused`` (the fusion's chosen chunks) in ``graph_rank``'s order; the chunks the method
    did not rank (hybrid's, which the fusion added) follow in the fusion's order."""
    own = {c: i for i, c in enumerate(graph_rank.tolist())}
    tail = len(own)
    return np.asarray(sorted(range(fused.size), key=lambda i: (own.get(int(fused[i]), tail), i)), dtype=np.int64)


def entity_specificity(index, keys: list[str]) -> np.ndarray:
    """Each entity's inverse chunk frequency, ``log(chunks / chunks linked to it)``: 0 for an entity linked to every
    chunk, the most for one linked to a single chunk (BM25's reading of a word, applied to an entity)."""
    n = max(1, len(index.chunk_order))
    entities = index.entities
    return np.asarray([np.log(n / max(1, min(n, len(entities[k].chunks)))) if k in entities else 0.0 for k in keys])


def entity_coverage(index, keys: list[str], positions: np.ndarray) -> np.ndarray:
    """For each chunk position in ``positions``: the share of the entity ``keys`` (as the question names them, a
    name written twice counting twice) linked to that chunk, each entity weighted by its specificity
    (:func:`entity_specificity`). A novel's hero, linked to a third of its chunks, says little about which chunk
    answers a question naming him; the inn or the letter the question also names says much (measured: recall@5 of
    every graph method +1.1 to +3.3 on two sets of books, within 0.4 of unweighted on the five tuning sets;
    benchmarks/domain_tuning.py). Read off the chunks' own entity lists, so an entity linked to thousands of chunks
    costs nothing more."""
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


def linked_hybrid(hybrid_rank: np.ndarray, coverage: np.ndarray, gain: float) -> np.ndarray:
    """``hybrid_rank`` re-ordered by ``2 / (2 + rank) + gain · coverage`` (ties keep hybrid's order)."""
    if gain <= 0 or not coverage.any():
        return hybrid_rank
    rank = np.arange(hybrid_rank.size)
    score = 2.0 / (2.0 + rank) + gain * coverage
    return hybrid_rank[np.lexsort((rank, -score))]


def hybrid_ranking(index, question: str, depth: int) -> np.ndarray:
    """The top-``depth`` chunk positions by AGRAG's hybrid score (Eq. 21)."""
    return top_k(hybrid(dense_scores(index, question), bm25_scores(index, question)), depth)


class GuardedRetriever(GraphIndexRetriever):
    """A graph method's retriever with the hybrid guard: the method ranks to ``guard_depth``, then its ranking is
    fused with hybrid's at the query's weight (see the module doc) and cut to top_k. ``last_guard`` holds the
    weight and the signals of the last query (also in the evidence node's metadata, ``hybrid_guard``)."""

    last_guard: dict[str, Any] | None = None

    def _guarded(self) -> bool:
        return bool(getattr(self.config, "hybrid_guard", False))

    def _guard_depth(self) -> int | None:
        return max(self._top_k, self.config.guard_depth) if self._guarded() else None

    def _apply_guard(self, query, nodes: list[NodeWithScore]) -> list[NodeWithScore]:
        """The method's ranking (to the guard's depth) fused with hybrid's, cut to top_k."""
        if not self._guarded():
            return nodes
        question = query.query_str if isinstance(query, QueryBundle) else str(query)
        cfg, index, k = self.config, self.index, self._top_k
        chunks = [n for n in nodes if n.node.metadata.get("kind") != "evidence"]
        evidence = [n for n in nodes if n.node.metadata.get("kind") == "evidence"]
        position = index.chunk_position
        graph_rank = np.fromiter((position[n.node.node_id] for n in chunks if n.node.node_id in position), np.int64)
        plain = hybrid_ranking(index, question, cfg.guard_depth)
        specific = hub_chunks(len(position), cfg.guard_hub_share, cfg.guard_hub_min)
        link, linked = query_link(index, question, specific, cfg.guard_names_only)
        agree = len(set(graph_rank[:k].tolist()) & set(plain[:k].tolist())) / max(1, min(k, len(plain)))
        trust = name_trust(corpus_name_density(index), cfg.guard_name_density)
        weight = guard_weight(link, agree, cfg, trust, k)
        covered: list[str] = []
        if cfg.guard_cover_gain > 0:  # every entity the question names, hubs included (see the module doc)
            _, covered = query_link(index, question, len(position))
        hybrid_rank = linked_hybrid(plain, entity_coverage(index, covered, plain), cfg.guard_cover_gain)
        fused, fused_scores = fuse_rankings(graph_rank, hybrid_rank, weight, cfg.guard_rrf_k, k)
        own_order = cfg.guard_own_order_from is not None and weight > 0 and weight >= cfg.guard_own_order_from - 1e-9
        if own_order:  # the same chunks, listed as the method ranks them (see GuardedConfig.guard_own_order_from)
            listed = in_own_order(fused, graph_rank)
            fused, fused_scores = fused[listed], [fused_scores[i] for i in listed.tolist()]
        self.last_guard = {"graph_weight": round(weight, 4), "query_link": round(link, 4),
                           "linked_entities": linked[:10], "agreement": round(agree, 4), "name_trust": round(trust, 4),
                           "coverage_entities": covered[:10], "own_order": own_order}
        by_id = {n.node.node_id: n for n in chunks}
        order = index.chunk_order
        out = []
        for rank, c in enumerate(fused.tolist()):
            cid = order[c]
            node = by_id.get(cid)
            if node is None:  # a hybrid chunk the method did not rank
                node = chunk_node(index, cid, 0.0, self.method)
            node.node.metadata["method_score"] = float(node.score or 0.0)
            node.node.metadata["graph_weight"] = self.last_guard["graph_weight"]
            node.node.metadata.pop("raw_score", None)
            node.score = fused_scores[rank]  # the fusion's score; _split scales it to [0, 1]
            out.append(node)
        for ev in evidence:
            ev.node.metadata.setdefault("evidence", {})["hybrid_guard"] = self.last_guard
        return out + evidence

