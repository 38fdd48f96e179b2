"""Baselines every graph method is measured against: dense, BM25, hybrid (AGRAG Eq. 21) and HippoRAG 2.

HippoRAG 2-style retrieval without an LLM is the graph baseline AGRAG, PathRAG, ArchRAG and A2RAG compare with.
Query -> the ``linking_top_k`` facts most similar to it -> weights on those facts' entities -> plus a
small dense-similarity weight on every passage -> Personalized PageRank over entities and passages
(damping 0.5) -> passages ranked by their PPR score.

Where this departs from HippoRAG 2's code (``graph_search_with_fact_entities``): its LLM fact filter
(recognition memory) is left out, so no LLM is needed; and an entity in several mapped facts gets
the mean of its shares (the fix of HippoRAG issue #128; older code kept the last one). As in that
code, fact scores are min-max scaled over all facts and only the ``linking_top_k`` entities with
the largest weights seed the walk.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING, Any, ClassVar
from dataclasses import dataclass

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..index.vectors import normalize_rows
from .base import GraphIndexRetriever, MethodConfig, chunk_node, evidence_node, param
from .query_scores import bm25_scores, dense_scores, fusable_dense
from .scoring import hybrid, minmax, top_k
from .shared_graph import chunk_position_of_row, chunk_rows, weighted_transition

if TYPE_CHECKING:  # imported where HippoRAG runs: dense, BM25 and hybrid need no PageRank (scipy's csgraph)
    from ..graph.ppr import Transition

__all__ = ["BM25Retriever", "DenseRetriever", "HippoRAGConfig", "HippoRAGRetriever", "HybridRetriever",
           "facts_from_cosines"]

#: On a graph large enough for the local PageRank push (``Transition.pushes``: a million stored entries, far
#: above any shared benchmark's), only this many passages, the densest, get a passage weight: HippoRAG 2 weighs
#: every passage, which makes the walk global (a pass over the whole graph per step, about 0.25 s at 300,000
#: passages), and on a listed chunk table most of those weights are centroid estimates anyway. Its cost in
#: recall is measured in studies/perf/hipporag_reset.py.
PASSAGE_RESET_TOP = 1000
#: The local push's per-degree residual bound for HippoRAG (``graph.ppr.PUSH_EPS`` is 1e-7): ten times larger, it
#: reads a ninth of the entries (the 1,005-node reset reached a third of the 100,000-passage index's graph at 1e-7),
#: and on that index's first 100 synthetic questions it kept recall@5 (41.83%) and 95 of the 100 top-5 sets (80 in
#: the same order), at 33 ms CPU per question instead of 109 (studies/perf/hipporag_pathrag_scale.py).
PUSH_TOLERANCE = 1e-6


def _facts_of_text_row(index) -> tuple[np.ndarray, np.ndarray]:
    """Per snapshot (cached): fact positions (in ``fact_ids``) grouped by fact-text row, in table order, and
    each row's bounds in that grouping (the facts sharing a text, as ``index.facts_by_text`` lists them)."""
    def build() -> tuple[np.ndarray, np.ndarray]:
        rows = np.asarray(index.fact_text_rows, np.int64)
        order = np.argsort(rows, kind="stable")
        return order, np.searchsorted(rows[order], np.arange(len(index.fact_vectors) + 1))

    return index.cached("facts_of_text_row", build)


def facts_from_cosines(index, fact_sims: np.ndarray, k: int) -> list[tuple[str, float]]:
    """``index.search_facts(query, k)`` (the same facts, order and scores) from ``fact_sims``, the query's
    cosines with every fact text (``index.fact_vectors.scores(query)``): a method that needs those cosines
    anyway (min-max scaling, edge costs) reads the fact table once per query, not twice."""
    if k <= 0 or not index.facts:
        return []
    n = min(k, fact_sims.size)  # VectorTable.search(query, min(k, rows)): the top rows, best first, ties by row
    if n <= 0:
        return []
    part = np.argpartition(-fact_sims, n - 1)[:n] if n < fact_sims.size else np.arange(fact_sims.size)
    rows = part[np.lexsort((part, -fact_sims[part]))]
    return _facts_of_rows(index, rows, fact_sims[rows], k)


def _facts_of_rows(index, rows: np.ndarray, sims: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The first ``k`` facts stated by the fact-text ``rows`` (best first), each with its row's cosine."""
    fact_ids = index.fact_ids
    order, bounds = _facts_of_text_row(index)
    out: list[tuple[str, float]] = []
    for row, sim in zip(rows.tolist(), sims.tolist()):
        for position in order[bounds[row]:bounds[row + 1]].tolist():
            out.append((fact_ids[position], float(sim)))
            if len(out) == k:
                return out
    return out


def mapped_facts(index, query_vec: np.ndarray, k: int) -> tuple[list[tuple[str, float]], float, float]:
    """``(facts, lo, hi)``: :func:`facts_from_cosines` of every fact cosine and those cosines' bounds.

    On a listed fact table (:meth:`VectorTable.scores`: exact cosines on the query's nearest lists, each other row
    its list centroid's, capped at the lowest exact one) the same facts and bounds come from the probed rows and
    the centroids alone, without the array over every fact (2 million at 1,000,000 passages): no estimate can
    outrank a probed row whose cosine is above the cap, the top is an exact row, and the bottom is the lowest exact
    cosine or an unprobed list's centroid. When the k-th best exact cosine ties with the cap, the whole array."""
    table = index.fact_vectors
    if index.facts and table.listed and k > 0:
        found = _listed_matches(index, table, query_vec, k)
        if found is not None:
            return found
    every = table.scores(query_vec) if index.facts else np.zeros(0, np.float32)
    mapped = facts_from_cosines(index, every, k)
    return mapped, (float(every.min()) if every.size else 0.0), (float(every.max()) if every.size else 0.0)


@dataclass
class ProbedTop:
    """A listed table's exact cosines with a query on its probed lists (``rows``, ``sims``), when the ``n`` best of
    them beat ``cap``, the lowest (every unprobed row's estimate is capped there): then they are the table's ``n``
    best rows. ``near``: every list centroid's product with the query; ``kth``: the n-th best exact cosine."""

    near: np.ndarray
    probed: np.ndarray
    rows: np.ndarray
    sims: np.ndarray
    n: int
    cap: float
    kth: float

    def leaders(self) -> np.ndarray:
        """Positions in ``rows`` of every exact cosine at or above ``kth``, best first, ties by row: the ``n`` best,
        or more when cosines tie across the n-th."""
        tied = np.flatnonzero(self.sims >= self.kth)
        return tied[np.lexsort((self.rows[tied], -self.sims[tied]))]


def probed_top(table, query_vec: np.ndarray, k: int) -> ProbedTop | None:
    """:class:`ProbedTop` of a listed ``table`` for the ``k`` best rows, or None when an estimate could tie into
    them (the caller then reads the array of every row, ``VectorTable.scores``)."""
    lists = table.lists
    q = np.asarray(normalize_rows(query_vec)[0], np.float32).ravel()  # as VectorTable.scores -> VectorLists.scores
    near, probed = lists.probe(q)
    rows, sims = lists.probed_scores(q, probed, table.at)
    n = min(k, len(table))
    if not 0 < n < rows.size:
        return None
    cap = sims.min()
    kth = np.partition(sims, rows.size - n)[rows.size - n]
    if kth <= cap:
        return None
    return ProbedTop(near, probed, rows, sims, n, cap, kth)


def _listed_matches(index, table, query_vec: np.ndarray, k: int):
    top = probed_top(table, query_vec, k)
    if top is None:
        return None
    lists, near, probed, rows, sims = table.lists, top.near, top.probed, top.rows, top.sims
    n, cap = top.n, top.cap
    sizes = index.cached("hipporag.fact_list_sizes", dict)  # rows per list, per lists object (a change makes new)
    if sizes.get("lists") is not lists:
        sizes.update(lists=lists, rows=np.bincount(lists.lists, minlength=near.size))
    unprobed = np.ones(near.size, bool)
    unprobed[probed] = False
    unprobed &= sizes["rows"] > 0
    lo = min(float(cap), float(near[unprobed].min())) if unprobed.any() else float(cap)
    best = top.leaders()[:n]
    return _facts_of_rows(index, rows[best], sims[best], k), lo, float(sims.max())


class _ScoredChunksRetriever(GraphIndexRetriever):
    """Shared ranking for retrievers that score every chunk; subclasses say how."""

    @abstractmethod
    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        """One score per chunk, in ``index.chunk_order``."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        scores = self.chunk_scores(query_bundle)
        order = self.index.chunk_order
        return [chunk_node(self.index, order[i], scores[i], self.method) for i in top_k(scores, self.top_k)]


class DenseRetriever(_ScoredChunksRetriever):
    """Chunks by cosine similarity of their embedding with the query's.

    Score: the cosine, clipped to [0, 1] (``raw_score`` keeps the unclipped cosine).
    """

    method = "dense"
    score_scale = "cosine"
    score_meaning = "cosine similarity of the chunk and query embeddings, clipped to [0, 1]"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        return self.index.chunk_dense_scores(self.query_vector(query_bundle))


class BM25Retriever(_ScoredChunksRetriever):
    """Chunks by BM25 (k1=1.5, b=0.75) over lower-cased, stop-word-free tokens.

    Score: BM25 divided by the top chunk's BM25 (top = 1.0; ``raw_score`` keeps the BM25 value).
    """

    method = "bm25"
    score_meaning = "BM25 relative to the top chunk's BM25 for this query (top = 1.0)"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        return self.index.bm25.scores(query_bundle.query_str)


class HybridRetriever(_ScoredChunksRetriever):
    """Chunks by the average of min-max-scaled dense and BM25 scores (AGRAG Eq. 21, as its authors compute it).

    Score: that average, already in [0, 1] (min-max over all chunks for this query), kept as is.
    """

    method = "hybrid"
    score_scale = "unit"
    score_meaning = "average of the chunk's min-max-scaled dense and BM25 scores over all chunks (AGRAG Eq. 21)"

    def chunk_scores(self, query_bundle: QueryBundle) -> np.ndarray:
        question = query_bundle.query_str
        dense = fusable_dense(self.index, question, self.query_vector(query_bundle))
        return hybrid(dense, bm25_scores(self.index, question))


class HippoRAGConfig(MethodConfig):
    """HippoRAG 2's retrieval settings (LLM-free: no recognition-memory filter)."""

    linking_top_k: int = param(5, "Facts mapped to the query, and entities kept as walk seeds.",
                               "HippoRAG 2 code (linking_top_k=5)", ge=1)
    damping: float = param(0.5, "Probability of following an edge in PPR (1 - restart).",
                           "HippoRAG 2 code (damping 0.5)", ge=0.0, lt=1.0)
    passage_node_weight: float = param(0.05, "Weight of every passage's min-max dense score in the restart vector.",
                                       "HippoRAG 2 code (passage_node_weight 0.05)", ge=0.0)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "paper": {},  # HippoRAG 2's own ranking (the registry's plain name wraps it in the hybrid guard)
    }


@dataclass(frozen=True)
class _Graph:
    """What PPR needs from one snapshot (cached on the index, rebuilt when insert/delete replace it)."""

    transition: Transition
    chunk_rows: np.ndarray  # snapshot rows of index.chunk_order


class HippoRAGRetriever(GraphIndexRetriever):
    """Passages ranked by Personalized PageRank seeded from query-matched facts (HippoRAG 2).

    1. Fact mapping: the ``linking_top_k`` facts nearest the query; their cosines are min-max scaled
       over the cosines of all facts.
    2. Entity weights: each subject/object of a mapped fact gets the mean, over the mapped facts it
       is in, of fact score / number of chunks containing the entity, so a rare entity counts more;
       the ``linking_top_k`` heaviest entities are kept as seeds.
    3. Passage weights: min-max dense score x ``passage_node_weight`` (0.05) for every chunk, so the
       dense signal breaks ties without swamping the graph (on a graph large enough for the local push,
       for the :data:`PASSAGE_RESET_TOP` densest chunks only).
    4. PPR with ``damping`` (probability of following an edge; 0.5) on the weighted snapshot
       adjacency, reset = entity weights + passage weights; chunks ranked by their PPR score (on a graph
       large enough for the local push: pushed to :data:`PUSH_TOLERANCE`, ranked among the chunks it reached).

    With no fact to map (an index without relations), chunks are ranked by dense similarity.
    Returns the top_k chunk nodes (``include_evidence=True``: then one evidence node listing the mapped
    facts and seed weights). Score: the chunk's PPR mass divided by the top chunk's (top = 1.0).
    """

    method = "hipporag"
    score_meaning = "PPR mass relative to the top chunk's (top = 1.0); dense cosine relative to the top when no fact matched"

    config_class = HippoRAGConfig

    def _graph(self) -> _Graph:
        def build() -> _Graph:  # the transition matrix is AGRAG's too: one copy per snapshot
            return _Graph(weighted_transition(self.index), chunk_rows(self.index))

        return self.index.cached("hipporag.graph", build)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        index = self.index
        query_vec = self.query_vector(query_bundle)
        dense = dense_scores(index, query_bundle.query_str)
        # one cosine per distinct fact text, read once: the mapped facts and the min-max scaling's bounds
        mapped, lo, hi = mapped_facts(index, query_vec, self.config.linking_top_k)
        if not mapped:
            return self._dense_fallback(dense)

        sims = np.array([sim for _, sim in mapped])
        fact_scores = (sims - lo) / (hi - lo) if hi - lo > 1e-12 else np.ones_like(sims)
        shares: dict[str, list[float]] = {}
        for (fid, _), score in zip(mapped, fact_scores):
            fact = index.facts[fid]
            for key in (fact.subject, fact.object):
                shares.setdefault(key, []).append(score / max(1, len(index.entities[key].chunks)))
        weights = {key: float(np.mean(values)) for key, values in shares.items()}
        seeds = dict(sorted(weights.items(), key=lambda kv: (-kv[1], kv[0]))[: self.config.linking_top_k])

        graph = self._graph()
        seed_rows = index.snapshot.rows(seeds)
        weighed = top_k(dense, PASSAGE_RESET_TOP) if graph.transition.pushes else None
        passage_weights = minmax(dense, weighed) * self.config.passage_node_weight
        passage_rows = graph.chunk_rows if weighed is None else graph.chunk_rows[weighed]
        best = self._pushed_top(graph, np.r_[seed_rows, passage_rows], np.r_[list(seeds.values()), passage_weights])
        if best is not None:
            top, chunk_scores = best
        else:
            from ..graph.ppr import personalized_pagerank

            reset = np.zeros(index.snapshot.num_nodes)
            reset[seed_rows] = list(seeds.values())
            reset[passage_rows] += passage_weights
            ppr = personalized_pagerank(graph.transition, reset, damping=self.config.damping)
            chunk_scores = ppr[graph.chunk_rows]
            top = top_k(chunk_scores, self.top_k)

        order = index.chunk_order
        nodes = [chunk_node(index, order[i], chunk_scores[i], self.method) for i in top]
        facts = [
            {"id": fid, "subject": index.facts[fid].subject, "predicate": index.facts[fid].predicate,
             "object": index.facts[fid].object, "score": float(score)}
            for (fid, _), score in zip(mapped, fact_scores)
        ]
        text = "Facts matched to the query:\n" + "\n".join(
            f"{f['subject']} | {f['predicate']} | {f['object']} ({f['score']:.3f})" for f in facts)
        return nodes + [evidence_node(self.method, text, self._evidence(facts, seeds, "ppr"))]

    def _pushed_top(self, graph: _Graph, rows: np.ndarray, weights: np.ndarray):
        """``(positions, scores)``: the top chunks by PageRank when the local push answers (``pushed_pagerank``),
        ranked among the chunks it reached with no array over every node or chunk; scores by chunk position
        (a dict). None when the push does not run, or reached fewer than ``top_k`` chunks (the zeros rank then)."""
        from ..graph.ppr import pushed_pagerank

        if not graph.transition.pushes:
            return None
        found = pushed_pagerank(graph.transition, rows, weights, damping=self.config.damping, eps=PUSH_TOLERANCE)
        if found is None:
            return None
        nodes, scores = found
        positions = chunk_position_of_row(self.index)[nodes]
        chunk = positions >= 0
        positions, scores = positions[chunk].astype(np.int64), scores[chunk]
        if positions.size < self.top_k:
            return None
        top = np.lexsort((positions, -scores))[: self.top_k]  # as top_k ranks every chunk: ties by position
        return positions[top].tolist(), dict(zip(positions[top].tolist(), scores[top].tolist()))

    def _dense_fallback(self, dense: np.ndarray) -> list[NodeWithScore]:
        """No fact matched (HippoRAG 2 does the same when its fact filter keeps none): dense ranking."""
        order = self.index.chunk_order
        nodes = [chunk_node(self.index, order[i], dense[i], self.method) for i in top_k(dense, self.top_k)]
        text = "No fact matched the query; passages are ranked by dense similarity."
        return nodes + [evidence_node(self.method, text, self._evidence([], {}, "dense"))]

    def _evidence(self, facts: list[dict], seeds: dict[str, float], ranking: str) -> dict:
        return {"facts": facts, "seed_entities": seeds, "damping": self.config.damping,
                "passage_node_weight": self.config.passage_node_weight, "ranking": ranking}
