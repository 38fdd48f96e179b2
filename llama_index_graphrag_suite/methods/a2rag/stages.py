"""A2RAG's three retrieval stages (Section III-C) and what they work on.

* :class:`A2RAGGraph`: the per-snapshot structures (transition matrix, degrees, map-back π, seed index),
  built once and cached on the index;
* :class:`RetrievalState`: the state ⟨q, S_V, S_R, E⟩ carried across stages, evidence only growing;
* the stages, each ``stage(index, graph, config, state)`` adding its evidence to the state:

1. Local (Eq. 7): the 1-hop neighbourhood of every seed on the snapshot (entities and passages),
   keeping at most ``local_max_neighbours`` per seed (the most query-similar) and, when S_R is not
   empty, only relation edges whose label is in S_R.
2. Bridge (Eq. 8): nodes within ``bridge_hops`` (K = 2) of at least two seeds, at most ``max_bridges``,
   with up to ``paths_per_pair`` shortest paths to each seed, ``max_paths`` in all (``graph/bridges.py``).
   Hubs (degree > ``hub_degree``) can be reached but not crossed.
3. Global (Eq. 9-12): PPR on the binary snapshot adjacency (Eq. 9), teleport ``ppr_alpha`` (Eq. 11).
   Restart distribution: Eq. 10 (1/deg, normalised) over S_V, mixed with the top ``ppr_dense_seeds``
   hybrid chunks weighted by hybrid score, ``ppr_dense_share`` of the mass on the chunks (our
   addition, measured in ``config.py``; a query whose entities are missing from the graph still has
   somewhere to start). The top
   ``ppr_top_l`` nodes are mapped back to chunks with π (Eq. 12), each node's PPR mass shared evenly by
   its provenance chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...graph.bridges import find_bridges
from ...graph.ppr import Transition, degree_normalised_personalization, personalized_pagerank, pushed_pagerank
from ...graph.snapshot import RELATION
from ...llm.usage import LLMUsage
from ...tracing import traced
from ..query_scores import top_ranked
from ..scoring import top_k
from .config import A2RAGConfig, Stage
from ..shared_graph import binary_transition, chunk_rows as shared_chunk_rows, entity_rows as shared_entity_rows
from .seeds import Seed, SeedIndex
from .summaries import build_mapback

__all__ = ["A2RAGGraph", "NodeSimilarity", "RetrievalState", "STAGE_RUNNERS", "build_graph"]


@dataclass
class A2RAGGraph:
    """Per-snapshot structures (cached on the index)."""

    transition: Transition  # Eq. 9 on the binary adjacency
    degree: np.ndarray  # binary degree (Eq. 9-10)
    mapback: Any  # π, CSR rows x chunk positions
    chunk_rows: np.ndarray  # snapshot rows of index.chunk_order
    chunk_pos: np.ndarray  # snapshot row -> chunk position, -1 for entities
    entity_vectors: Any  # the index's unit entity-name vectors (its VectorTable: rows read as a query needs them)
    entity_pos: np.ndarray  # snapshot row -> row of entity_vectors, -1 for chunks
    expand: np.ndarray  # bool per node: degree <= hub_degree
    seeds: SeedIndex


def build_graph(index, config: A2RAGConfig) -> A2RAGGraph:
    """The structures every query on this snapshot shares (depends on ``hub_degree`` and ``align_titles`` only)."""
    snap = index.snapshot
    transition, degree = binary_transition(index)  # Eq. 9: shared with HippoRAG's and AGRAG's weighted matrix
    chunk_rows = shared_chunk_rows(index).astype(np.int64)
    chunk_pos = np.full(snap.num_nodes, -1, np.int64)
    chunk_pos[chunk_rows] = np.arange(chunk_rows.size)
    entity_rows = shared_entity_rows(index)
    if (entity_rows < 0).any():  # as a lookup of each would
        raise KeyError(list(index.entities)[int(np.flatnonzero(entity_rows < 0)[0])])
    # Each entity's row in the vector table itself (memory-mapped, in the order the vectors were added), read row by
    # row: no copy of the table in entities order (161 MB per process at 100,000 passages), nor of its blocks joined
    # (a table an insert added a block to: 1.1 GB at 1,000,000 passages).
    entity_pos = np.full(snap.num_nodes, -1, np.int64)
    entity_pos[entity_rows] = index.entity_vector_rows if entity_rows.size else []
    return A2RAGGraph(transition, degree, build_mapback(index, entity_rows), chunk_rows, chunk_pos,
                      index.entity_vectors,
                      entity_pos, degree <= config.hub_degree,
                      SeedIndex.build(index, config.align_titles, entity_rows=entity_rows))


class NodeSimilarity:
    """Cosine of the query with any node, computed on demand: chunks from the dense scores, entities
    from their name vectors (only the few hundred entities a query touches, not all of them)."""

    def __init__(self, g: A2RAGGraph, query_vec: np.ndarray, dense: np.ndarray):
        self.g, self.q = g, np.asarray(query_vec, np.float32)
        self.values = np.full(g.chunk_pos.size, np.nan, np.float32)
        self.values[g.chunk_rows] = dense

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        v = self.values[rows]
        missing = np.isnan(v)
        if missing.any():
            r = np.unique(rows[missing])
            self.values[r] = self.g.entity_vectors.at(self.g.entity_pos[r]) @ self.q
            v = self.values[rows]
        return v


@dataclass
class RetrievalState:
    """⟨q, S_V, S_R, E⟩ carried across stages."""

    query: str
    seeds: list[Seed]
    relations: list[dict]
    relation_words: list[str]
    node_sim: NodeSimilarity
    hybrid: np.ndarray
    nodes: dict[int, None] = field(default_factory=dict)
    edges: dict[int, None] = field(default_factory=dict)
    paths: list[list[int]] = field(default_factory=list)
    ppr_chunks: dict[int, float] = field(default_factory=dict)  # chunk position -> map-back score
    stages: list[dict] = field(default_factory=list)
    support_memo: tuple = (None, None)  # (evidence size it was computed at, evidence_chunks result)
    usage: LLMUsage = field(default_factory=LLMUsage)  # this query's LLM calls and tokens
    unparseable: int = 0


# ---------------------------------------------------------------------------------------- stages

@traced("a2rag.local")
def stage_local(index, g: A2RAGGraph, config: A2RAGConfig, st: RetrievalState) -> None:
    """Eq. 7, relation-filtered when S_R is not empty."""
    snap = index.snapshot
    labels = {r["label"] for r in st.relations}
    for seed in st.seeds:
        st.nodes[seed.row] = None
        nbrs, eids = snap.neighbours_of(seed.row)
        if labels:
            kinds = snap.edge_kind[eids]
            ok = np.array([k != RELATION or index.facts[index.fact_ids[snap.edge_fact[e]]].predicate in labels
                           for k, e in zip(kinds.tolist(), eids.tolist())], bool)
            nbrs, eids = nbrs[ok], eids[ok]
        if nbrs.size > config.local_max_neighbours:
            keep = top_k(st.node_sim[nbrs], config.local_max_neighbours)
            nbrs, eids = nbrs[keep], eids[keep]
        for v, e in zip(nbrs.tolist(), eids.tolist()):
            st.nodes[v] = None
            st.edges[e] = None


@traced("a2rag.bridge")
def stage_bridge(index, g: A2RAGGraph, config: A2RAGConfig, st: RetrievalState) -> None:
    """Eq. 8: bridges within K hops of >= 2 seeds, a few shortest paths each."""
    snap = index.snapshot
    nb = snap.neighbours
    mention_of = {m: i for i, m in enumerate(dict.fromkeys(s.mention for s in st.seeds))}
    found = find_bridges(nb.indptr, nb.indices, np.array([s.row for s in st.seeds], np.int64), config.bridge_hops, 2,
                         config.max_bridges, config.paths_per_pair, config.max_paths, g.expand, st.node_sim,
                         groups=np.array([mention_of[s.mention] for s in st.seeds]))
    for path in found.paths:
        st.paths.append(path)
        for u, v in zip(path, path[1:]):
            st.nodes[u] = st.nodes[v] = None
            st.edges[_edge_between(snap, u, v)] = None
    st.stages[-1]["bridges"] = [snap.node_ids[b] for b in found.rows]
    st.stages[-1]["truncated"] = found.truncated


def _edge_between(snap, u: int, v: int) -> int:
    nbrs, eids = snap.neighbours_of(u)
    return int(eids[np.flatnonzero(nbrs == v)[0]])


@traced("a2rag.global")
def stage_global(index, g: A2RAGGraph, config: A2RAGConfig, st: RetrievalState) -> None:
    """Eq. 9-12: degree-normalised PPR from the seeds (+ top hybrid chunks), top-L mapped back by π."""
    rows = list(dict.fromkeys(s.row for s in st.seeds))
    best = top_ranked(st.hybrid, config.ppr_dense_seeds) if config.ppr_dense_seeds else np.empty(0, np.int64)
    best = best[st.hybrid[best] > 0]
    dense_rows = g.chunk_rows[best].tolist()
    if not rows and not dense_rows:
        st.stages[-1]["note"] = "nothing to restart from"
        return
    # Restart distribution: Eq. 10 on the entity seeds, mixed with the top hybrid chunks weighted by
    # their hybrid score (our addition; Eq. 10's 1/deg would penalise exactly the passages that say
    # most). A query with no seed restarts from the chunks alone, one with no hybrid signal from S_V.
    share = config.ppr_dense_share if rows and dense_rows else (1.0 if dense_rows else 0.0)
    if rows:  # (0 + x is x: the same vector as adding it to zeros, one pass over every node fewer)
        p0 = (1.0 - share) * degree_normalised_personalization(g.degree, np.array(rows))
    else:
        p0 = np.zeros(g.degree.size)
    if dense_rows:
        p0[dense_rows] += share * st.hybrid[best] / st.hybrid[best].sum()
    seeds = np.union1d(np.asarray(rows, np.int64), np.asarray(dense_rows, np.int64))
    top, top_scores = global_top(g.transition, p0, seeds[p0[seeds] > 0], config)  # Eq. 11
    # Eq. 12 with scores: each top-L node's PPR mass is shared evenly by its provenance chunks.
    sub = g.mapback[top]
    mass = top_scores / np.maximum(np.diff(sub.indptr), 1)
    chunk_scores = np.asarray(sub.T @ mass).ravel()
    for pos in np.flatnonzero(chunk_scores).tolist():
        st.ppr_chunks[pos] = float(chunk_scores[pos])
    for u in top.tolist():
        st.nodes[u] = None
    st.stages[-1]["restart"] = {"seeds": len(rows), "hybrid_chunks": len(dense_rows)}
    st.stages[-1]["top_nodes"] = [[index.snapshot.node_ids[u], round(float(x), 6)]
                                  for u, x in zip(top.tolist(), top_scores.tolist())]


def global_top(transition: Transition, p0: np.ndarray, seeds: np.ndarray, config: A2RAGConfig
               ) -> tuple[np.ndarray, np.ndarray]:
    """Eq. 11's top-L nodes (:func:`top_reached` of the PPR scores from ``p0``) and their scores. ``seeds``: the
    nonzero nodes of ``p0``, ascending. On a large graph the local push answers with the nodes it reached
    (``pushed_pagerank``: the same bits as the dense path's scores there), so no pass over every node's score
    picks the top; elsewhere, and when fewer than L nodes were reached, the scores of every node."""
    damping, k = 1.0 - config.ppr_alpha, config.ppr_top_l
    pushed = pushed_pagerank(transition, seeds, p0[seeds], damping=damping) if seeds.size else None
    if pushed is None:
        r = personalized_pagerank(transition, p0, damping=damping, tol=config.ppr_tol)
        top = top_reached(r, k)
        return top, r[top]
    nodes, scores = pushed
    reached = scores != 0  # as top_reached's nonzero entries
    nodes, scores = nodes[reached], scores[reached]
    if np.count_nonzero(scores > 0) >= k:
        at = top_k(scores, k)
        return nodes[at], scores[at]
    r = np.zeros(p0.size)
    r[nodes] = scores
    top = top_k(r, k)
    return top, r[top]


def top_reached(r: np.ndarray, k: int) -> np.ndarray:
    """``top_k(r, k)`` of PPR scores: ranked among the nonzero entries when ``k`` of them are positive (a local push
    reaches a few thousand of a million nodes). The same nodes in the same order: every other entry ranks below
    those ``k``, and ``top_k`` breaks ties by index, which the ascending nonzero positions keep."""
    reached = np.flatnonzero(r)
    values = r[reached]
    if np.count_nonzero(values > 0) >= k:
        return reached[top_k(values, k)]
    return top_k(r, k)


# Stage -> the function that runs it; the config's ``stages`` says which run, in this order.
STAGE_RUNNERS = {Stage.LOCAL: stage_local, Stage.BRIDGE: stage_bridge, Stage.GLOBAL: stage_global}
