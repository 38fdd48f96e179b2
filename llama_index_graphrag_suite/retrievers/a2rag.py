"""A2RAG's agentic retriever (Section III-C) and summarised-KB gate (Section III-B-1) over the shared index.

Per query: entity seeds S_V and relation seeds S_R (``a2rag_seeds``), then a monotonic escalation
Local -> Bridge -> Global, each stage run at most once, its evidence added to one carried state, and a
sufficiency check after each stage deciding whether to go on:

1. Local (Eq. 7): the 1-hop neighbourhood of every seed on the snapshot (entities and passages),
   keeping at most ``local_max_neighbours`` per seed (the most query-similar) and, when S_R is not
   empty, only relation edges whose label is in S_R.
2. Bridge (Eq. 8): nodes within ``bridge_hops`` (K = 2) of at least two seeds, at most ``max_bridges``,
   with up to ``paths_per_pair`` shortest paths to each seed, ``max_paths`` in all (``graph/bridges.py``).
   Hubs (degree > ``hub_degree``) can be reached but not crossed.
3. Global (Eq. 9-12): PPR on the binary snapshot adjacency (Eq. 9), teleport ``ppr_alpha`` (Eq. 11).
   Restart distribution: Eq. 10 (1/deg, normalised) over S_V, mixed with the top ``ppr_dense_seeds``
   hybrid chunks weighted by hybrid score, ``ppr_dense_share`` of the mass on the chunks (our
   addition, measured below; a query whose entities are missing from the graph still has somewhere
   to start). The top ``ppr_top_l`` nodes are mapped back to chunks with π (Eq. 12), each node's PPR
   mass shared evenly by its provenance chunks.

Evidence chunks: stages 1-2 give graph evidence (edges, paths); its provenance chunks are the chunks
that state its relation edges and the passage nodes it touches. Stage 3 gives π(top-L).

Sufficiency: with an LLM, :data:`SUFFICIENCY_PROMPT` (yes/no; anything unreadable counts as "not
sufficient" and is counted in the trace). LLM-free, the documented heuristic :meth:`heuristic_sufficient`.

Chunk ranking (what ``retrieve`` returns, best first): see :meth:`A2RAGRetriever.rank_chunks`; top_k
chunks are always returned (the hybrid ranking fills what the stages did not give).

Defaults, measured LLM-free with all-MiniLM-L6-v2. ``benchmarks/tuning.py`` (part of ``make bench``; the
"Tuning sweeps" section of BENCHMARKS.md) prints every figure below. All are recall@5 through
``eval.bench.run_method``, on 2wiki_retrieval101 / musique_train100 (hybrid baseline 65.6 / 57.6). The
defaults were chosen on these same two dev sets; hotpotqa_train100 was the check.

* **Restart:** Eq. 10 seeds + the top-2 hybrid chunks, at share 0.5: 79.5 / 65.3.
  * Top-3 chunks (the default until this sweep was written down): 76.2 / 64.6. On hotpotqa_train100, top-2
    gives 87.0 in ``make bench``; top-3 gave 86.5 in the previous run.
  * Top-5 chunks: 67.1 / 60.5. More restart points dilute the seeds.
  * Eq. 10 seeds alone (share 0): 78.0 / 58.7. Without passages to start from, MuSiQue's entity seeds
    often miss.
  * Share 0.25: 79.0 / 65.4. Share 0.75: 78.7 / 66.0.
* **Stage-3 order:** by map-back PPR score. Ordering the same candidates another way loses recall:
  * by hybrid score: 66.6 / 57.2;
  * by the min-max sum of PPR and hybrid: 66.6 / 59.8;
  * RRF with the hybrid ranking: 72.5 / 58.7.
* **LLM-free sufficiency:**
  * ``min_term_coverage`` 1.0 (the default): 79.5 / 65.3. Retrieval stops at local / bridge / global in
    2 / 12 / 87% of 2wiki queries (``benchmarks/a2rag_bench.py``).
  * ``min_term_coverage`` 0.5: 76.7 / 63.8.
  * 0.0, where the seeds only need to be covered and connected: 65.6 / 56.8.
  * Without an LLM, stopping early costs recall: the evidence from stages 1-2 rarely reaches the second-hop
    passage that PPR finds. That is why the default is the conservative 1.0.
* ``ppr_tol`` (L1 change at which the power iteration stops): 1e-4, 1e-6 and 1e-7 give the same recall;
  1e-4 needs about a third fewer iterations.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import BaseModel, Field

from ..graph.bridges import find_bridges
from ..graph.ppr import (
    Transition, binary_adjacency, degree_normalised_personalization, personalized_pagerank, transition_matrix,
)
from ..graph.snapshot import CHUNK, CONTAINS, RELATION, SYNONYM
from ..prompts.a2rag import SEED_EXTRACTION_PROMPT, SUFFICIENCY_PROMPT
from .a2rag_offline import DocumentSummaries, build_mapback, build_summaries
from .a2rag_seeds import (
    Seed, SeedIndex, SeedSettings, align_mentions, align_relations, llm_mentions, parse_llm_seeds, query_mentions, stem,
)
from .base import GraphIndexRetriever, chunk_node, evidence_node
from .scoring import hybrid, minmax, top_k

log = logging.getLogger(__name__)
STAGES = ("local", "bridge", "global")
VARIANTS = ("node_only", "no_global", "global_only")


class A2RAGConfig(BaseModel):
    """Every number the paper leaves open (DESIGN.md: "A2RAG τ_g, K, α, L, I_max: not given")."""

    model_config = {"extra": "forbid"}

    # gate (Eq. 1)
    tau_g: float = Field(0.40, ge=0.0, le=1.0, description=(
        "Gate threshold on max_j clip(cos(q, s_j)). Measured with MiniLM and extractive summaries "
        "(benchmarks/a2rag_bench.py): 0.40 keeps 198/201 questions of 2wiki_retrieval101 + musique_train100 and "
        "refuses 59/60 out-of-scope queries; 0.35 keeps all but refuses only 54/60."))
    summary_max_chars: int = Field(300, ge=20, description="Extractive summary budget (title + lead sentences).")
    # seeds
    seed_max_words: int = Field(6, ge=1, description="Longest query n-gram tried as a mention.")
    seed_min_lexical: float = Field(0.9, ge=0.0, le=1.0, description="rapidfuzz ratio a match needs.")
    seed_min_confidence: float = Field(0.75, ge=0.0, le=1.0, description="w*lexical + (1-w)*cosine a seed needs.")
    seed_lexical_weight: float = Field(0.8, ge=0.0, le=1.0, description="w in the confidence.")
    max_seeds: int = Field(8, ge=1)
    align_titles: bool = Field(True, description="Passage nodes are named by their document title.")
    relation_min_score: float = Field(0.85, ge=0.0, le=1.0, description="token_set_ratio for a relation seed.")
    # stage 1
    local_max_neighbours: int = Field(30, ge=1, description="Per seed, most query-similar neighbours kept.")
    # stage 2
    bridge_hops: int = Field(2, ge=1, description="K of Eq. 8.")
    max_bridges: int = Field(10, ge=0)
    paths_per_pair: int = Field(2, ge=1)
    max_paths: int = Field(40, ge=1)
    hub_degree: int = Field(200, ge=1, description="Nodes with more edges are reached but not crossed.")
    # stage 3
    ppr_alpha: float = Field(0.5, gt=0.0, le=1.0, description="Teleport probability α of Eq. 11.")
    ppr_top_l: int = Field(20, ge=1, description="L of Eq. 12.")
    ppr_dense_seeds: int = Field(2, ge=0, description="Top hybrid chunks added to the restart set.")
    ppr_dense_share: float = Field(0.5, ge=0.0, le=1.0, description=(
        "Share of the restart mass on those chunks (by hybrid score); the rest follows Eq. 10 on S_V."))
    ppr_tol: float = Field(1e-4, gt=0.0, description="L1 change at which the power iteration stops.")
    global_order: Literal["ppr", "hybrid", "sum"] = Field(
        "ppr", description="How stage-3 chunks are ordered: map-back PPR score, hybrid score, or the sum of both min-max scaled.")
    # LLM-free sufficiency
    min_term_coverage: float = Field(1.0, ge=0.0, le=1.0, description=(
        "Share of the query's relation words the top evidence chunks must hold to stop early (LLM-free)."))
    # ranking
    chunk_ranking: Literal["evidence_first", "rrf"] = Field(
        "evidence_first", description="Evidence chunks then hybrid fill, or RRF of the two rankings.")
    sufficiency_max_chunks: int = Field(5, ge=1, description="Chunks shown to the LLM sufficiency check.")


@dataclass
class _Graph:
    """Per-snapshot structures (cached on the index)."""

    transition: Transition  # Eq. 9 on the binary adjacency
    degree: np.ndarray  # binary degree (Eq. 9-10)
    mapback: Any  # π, CSR rows x chunk positions
    chunk_rows: np.ndarray  # snapshot rows of index.chunk_order
    chunk_pos: np.ndarray  # snapshot row -> chunk position, -1 for entities
    entity_matrix: np.ndarray  # unit entity-name vectors, row i for snapshot row entity_rows[i]
    entity_pos: np.ndarray  # snapshot row -> row of entity_matrix, -1 for chunks
    expand: np.ndarray  # bool per node: degree <= hub_degree
    seeds: SeedIndex


class _NodeSimilarity:
    """Cosine of the query with any node, computed on demand: chunks from the dense scores, entities
    from their name vectors (only the few hundred entities a query touches, not all of them)."""

    def __init__(self, g: "_Graph", query_vec: np.ndarray, dense: np.ndarray):
        self.g, self.q = g, np.asarray(query_vec, np.float32)
        self.values = np.full(g.chunk_pos.size, np.nan, np.float32)
        self.values[g.chunk_rows] = dense

    def __getitem__(self, rows) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        v = self.values[rows]
        missing = np.isnan(v)
        if missing.any():
            r = np.unique(rows[missing])
            self.values[r] = self.g.entity_matrix[self.g.entity_pos[r]] @ self.q
            v = self.values[rows]
        return v


@dataclass
class _State:
    """⟨q, S_V, S_R, E⟩ carried across stages."""

    query: str
    seeds: list[Seed]
    relations: list[dict]
    relation_words: list[str]
    node_sim: _NodeSimilarity
    hybrid: np.ndarray
    nodes: dict[int, None] = field(default_factory=dict)
    edges: dict[int, None] = field(default_factory=dict)
    paths: list[list[int]] = field(default_factory=list)
    ppr_chunks: dict[int, float] = field(default_factory=dict)  # chunk position -> map-back score
    stages: list[dict] = field(default_factory=list)
    support_memo: tuple = (None, None)  # (evidence size it was computed at, evidence_chunks result)
    llm_calls: int = 0
    unparseable: int = 0


class A2RAGRetriever(GraphIndexRetriever):
    """A2RAG agentic retriever; see the module docstring. ``retrieve_with_trace`` also returns the trace."""

    method = "a2rag"

    def __init__(self, index, top_k: int = 5, llm=None, variant: str | None = None,
                 config: A2RAGConfig | None = None, summaries_dir: str | None = None,
                 llm_summaries: bool = False, callback_manager=None, verbose: bool = False, **overrides: Any):
        if variant is not None and variant not in VARIANTS:
            raise ValueError(f"unknown A2RAG variant {variant!r}; choose from {', '.join(VARIANTS)}")
        base = config or A2RAGConfig()
        # Keyword overrides (what the bench and CLI pass) are validated like the config itself.
        self.config = A2RAGConfig(**{**base.model_dump(), **overrides}) if overrides else base
        self.llm, self.variant = llm, variant
        self.summaries_dir, self.llm_summaries = summaries_dir, llm_summaries
        super().__init__(index, top_k=top_k, callback_manager=callback_manager, verbose=verbose)

    # ------------------------------------------------------------------ offline artefacts

    def _graph(self) -> _Graph:
        cfg = self.config

        def build() -> _Graph:
            index, snap = self.index, self.index.snapshot
            adj = binary_adjacency(snap.adjacency("ones"))
            degree = np.asarray(adj.sum(axis=1)).ravel()
            chunk_rows = snap.rows(index.chunk_order)
            chunk_pos = np.full(snap.num_nodes, -1, np.int64)
            chunk_pos[chunk_rows] = np.arange(chunk_rows.size)
            entity_rows = snap.rows(list(index.entities))
            entity_pos = np.full(snap.num_nodes, -1, np.int64)
            entity_pos[entity_rows] = np.arange(entity_rows.size)
            matrix = index.entity_vectors.vectors()[index.entity_vector_rows] if entity_rows.size else np.zeros((0, 1))
            return _Graph(transition_matrix(adj), degree, build_mapback(index), chunk_rows, chunk_pos,
                          np.ascontiguousarray(matrix, np.float32), entity_pos, degree <= cfg.hub_degree,
                          SeedIndex.build(index, cfg.align_titles))

        return self.index.cached(f"a2rag.graph.{cfg.hub_degree}.{cfg.align_titles}", build)

    def summaries(self) -> DocumentSummaries:
        """Document summaries for the gate: loaded from ``summaries_dir`` when they match the index, else built."""
        llm = self.llm if self.llm_summaries else None

        def build() -> DocumentSummaries:
            if self.summaries_dir is not None:
                try:
                    saved = DocumentSummaries.load(self.summaries_dir)
                    if saved.matches(self.index) and (llm is None or saved.kind != "extractive"):
                        return saved
                except FileNotFoundError:
                    pass
            built = build_summaries(self.index, llm, self.config.summary_max_chars)
            if self.summaries_dir is not None:
                built.save(self.summaries_dir)
            return built

        def load(folder) -> DocumentSummaries:
            saved = DocumentSummaries.load(folder)
            if not saved.matches(self.index):
                raise ValueError("the saved A2RAG summaries describe other documents")
            return saved

        # an index artefact: index.persist() saves the summaries beside the index, so an LLM pass runs once
        name = f"a2rag-summaries-{'llm' if llm else 'extractive'}-{self.config.summary_max_chars}"
        return self.index.artefact(name, build, load=load)

    # ------------------------------------------------------------------ gate (Eq. 1)

    def gate_score(self, query: str) -> float:
        """``max_j clip(cos(q, s_j), 0, 1)`` over the document summaries."""
        return self.summaries().gate_score(self.index.embed_query(query))

    def gate(self, query: str) -> bool:
        """Eq. 1: retrieve only when the best summary similarity reaches ``tau_g``."""
        return self.gate_score(query) >= self.config.tau_g

    # ------------------------------------------------------------------ seeds

    def extract_seeds(self, query: str, node_sim: "_NodeSimilarity", trace: dict) -> tuple[list[Seed], list[dict], list[str]]:
        """``(S_V, S_R, relation phrases)``; see ``a2rag_seeds``."""
        cfg, g = self.config, self._graph()
        settings = SeedSettings(cfg.seed_max_words, cfg.seed_min_lexical, cfg.seed_min_confidence,
                                cfg.seed_lexical_weight, cfg.max_seeds, cfg.relation_min_score)
        mentions, relation_words = query_mentions(query, cfg.seed_max_words)
        trace["seed_extraction"] = "statistical"
        if self.llm is not None:
            parsed = None
            try:
                trace["llm_calls"] = trace.get("llm_calls", 0) + 1
                parsed = parse_llm_seeds(str(self.llm.predict(SEED_EXTRACTION_PROMPT, question=query)))
            except Exception as exc:  # a failing LLM must not stop retrieval
                log.warning("A2RAG seed extraction failed (%s); using the statistical extractor", exc)
            if parsed is None:
                trace["seed_extraction"] = "statistical (LLM answer unreadable)"
            else:
                mentions, relation_words = llm_mentions(parsed[0]), parsed[1]
                trace["seed_extraction"] = "llm"
        snap = self.index.snapshot
        seeds = align_mentions(g.seeds, mentions, lambda rows: node_sim[rows], settings, snap.node_ids,
                               lambda r: snap.node_kind[r] == CHUNK)
        relations = [] if self.variant == "node_only" else align_relations(g.seeds, relation_words, cfg.relation_min_score)
        return seeds, relations, relation_words

    # ------------------------------------------------------------------ stages

    def _stage_local(self, st: _State) -> None:
        """Eq. 7, relation-filtered when S_R is not empty."""
        snap, index = self.index.snapshot, self.index
        labels = {r["label"] for r in st.relations}
        for seed in st.seeds:
            st.nodes[seed.row] = None
            nbrs, eids = snap.neighbours_of(seed.row)
            if labels:
                kinds = snap.edge_kind[eids]
                ok = np.array([k != RELATION or index.facts[index.fact_ids[snap.edge_fact[e]]].predicate in labels
                               for k, e in zip(kinds.tolist(), eids.tolist())], bool)
                nbrs, eids = nbrs[ok], eids[ok]
            if nbrs.size > self.config.local_max_neighbours:
                keep = top_k(st.node_sim[nbrs], self.config.local_max_neighbours)
                nbrs, eids = nbrs[keep], eids[keep]
            for v, e in zip(nbrs.tolist(), eids.tolist()):
                st.nodes[v] = None
                st.edges[e] = None

    def _stage_bridge(self, st: _State) -> None:
        """Eq. 8: bridges within K hops of >= 2 seeds, a few shortest paths each."""
        cfg, g, snap = self.config, self._graph(), self.index.snapshot
        nb = snap.neighbours
        mention_of = {m: i for i, m in enumerate(dict.fromkeys(s.mention for s in st.seeds))}
        found = find_bridges(nb.indptr, nb.indices, np.array([s.row for s in st.seeds], np.int64), cfg.bridge_hops, 2,
                             cfg.max_bridges, cfg.paths_per_pair, cfg.max_paths, g.expand, st.node_sim,
                             groups=np.array([mention_of[s.mention] for s in st.seeds]))
        for path in found.paths:
            st.paths.append(path)
            for u, v in zip(path, path[1:]):
                st.nodes[u] = st.nodes[v] = None
                st.edges[self._edge_between(u, v, st)] = None
        st.stages[-1]["bridges"] = [snap.node_ids[b] for b in found.rows]
        st.stages[-1]["truncated"] = found.truncated

    def _edge_between(self, u: int, v: int, st: _State) -> int:
        nbrs, eids = self.index.snapshot.neighbours_of(u)
        return int(eids[np.flatnonzero(nbrs == v)[0]])

    def _stage_global(self, st: _State) -> None:
        """Eq. 9-12: degree-normalised PPR from the seeds (+ top hybrid chunks), top-L mapped back by π."""
        cfg, g = self.config, self._graph()
        rows = list(dict.fromkeys(s.row for s in st.seeds))
        best = top_k(st.hybrid, cfg.ppr_dense_seeds) if cfg.ppr_dense_seeds else np.empty(0, np.int64)
        best = best[st.hybrid[best] > 0]
        dense_rows = g.chunk_rows[best].tolist()
        if not rows and not dense_rows:
            st.stages[-1]["note"] = "nothing to restart from"
            return
        # Restart distribution: Eq. 10 on the entity seeds, mixed with the top hybrid chunks weighted by
        # their hybrid score (our addition; Eq. 10's 1/deg would penalise exactly the passages that say
        # most). A query with no seed restarts from the chunks alone, one with no hybrid signal from S_V.
        share = cfg.ppr_dense_share if rows and dense_rows else (1.0 if dense_rows else 0.0)
        p0 = np.zeros(g.degree.size)
        if rows:
            p0 += (1.0 - share) * degree_normalised_personalization(g.degree, np.array(rows))
        if dense_rows:
            p0[dense_rows] += share * st.hybrid[best] / st.hybrid[best].sum()
        r = personalized_pagerank(g.transition, p0, damping=1.0 - cfg.ppr_alpha, tol=cfg.ppr_tol)  # Eq. 11
        top = top_k(r, cfg.ppr_top_l)
        # Eq. 12 with scores: each top-L node's PPR mass is shared evenly by its provenance chunks.
        sub = g.mapback[top]
        share = r[top] / np.maximum(np.diff(sub.indptr), 1)
        chunk_scores = np.asarray(sub.T @ share).ravel()
        for pos in np.flatnonzero(chunk_scores).tolist():
            st.ppr_chunks[pos] = float(chunk_scores[pos])
        for u in top.tolist():
            st.nodes[u] = None
        st.stages[-1]["restart"] = {"seeds": len(rows), "hybrid_chunks": len(dense_rows)}
        st.stages[-1]["top_nodes"] = [[self.index.snapshot.node_ids[u], round(float(r[u]), 6)] for u in top.tolist()]

    # ------------------------------------------------------------------ evidence chunks and sufficiency

    def evidence_chunks(self, st: _State) -> dict[int, int]:
        """Provenance of the graph evidence: chunk position -> number of seeds whose evidence it supports."""
        size = (len(st.nodes), len(st.edges), len(st.ppr_chunks))  # evidence only grows: size identifies it
        if st.support_memo[0] == size:
            return st.support_memo[1]
        g, snap, index = self._graph(), self.index.snapshot, self.index
        support: dict[int, set] = {}
        seed_rows = {s.row for s in st.seeds}
        for e in st.edges:
            u, v = int(snap.edge_src[e]), int(snap.edge_dst[e])
            kind = snap.edge_kind[e]
            chunks: list[int] = []
            if kind == RELATION:
                chunks = [int(g.chunk_pos[snap.row(c)]) for c in index.facts[index.fact_ids[snap.edge_fact[e]]].chunks]
            elif kind == CONTAINS:
                chunks = [int(g.chunk_pos[u if g.chunk_pos[u] >= 0 else v])]
            for c in chunks:
                support.setdefault(c, set()).update(x for x in (u, v) if x in seed_rows)
        for u in st.nodes:  # passage nodes reached (a passage seed, a bridge passage)
            if g.chunk_pos[u] >= 0:
                support.setdefault(int(g.chunk_pos[u]), set()).update({u} & seed_rows)
        for pos in st.ppr_chunks:
            support.setdefault(pos, set())
        result = {c: len(s) for c, s in support.items()}
        st.support_memo = (size, result)
        return result

    def rank_chunks(self, st: _State) -> list[tuple[int, float, str]]:
        """Chunks best first: ``(chunk position, score, source)``.

        ``evidence_first`` (default): the evidence chunks first, by PPR map-back score when stage 3 ran,
        else by (seeds supported, hybrid score); then the remaining chunks by hybrid score, so top_k are
        always returned. ``rrf``: reciprocal-rank fusion (k = 60) of that evidence ranking and the hybrid one.
        """
        support = self.evidence_chunks(st)
        if st.ppr_chunks:
            cand = np.fromiter(support, np.int64, len(support))
            ppr = np.array([st.ppr_chunks.get(c, 0.0) for c in cand.tolist()])
            key = {"ppr": ppr, "hybrid": st.hybrid[cand], "sum": minmax(ppr) + minmax(st.hybrid[cand])}[self.config.global_order]
            graph_rank = cand[np.lexsort((cand, -st.hybrid[cand], -key))].tolist()
        else:
            graph_rank = sorted(support, key=lambda c: (-support[c], -st.hybrid[c], c))
        hybrid_rank = top_k(st.hybrid, self.top_k + len(graph_rank)).tolist()
        if self.config.chunk_ranking == "rrf":
            fused: dict[int, float] = {}
            for ranked in (graph_rank, hybrid_rank[: max(self.top_k, 5)]):
                for rank, c in enumerate(ranked):
                    fused[c] = fused.get(c, 0.0) + 1.0 / (61 + rank)
            best = sorted(fused, key=lambda c: (-fused[c], c))[: self.top_k]
            return [(c, fused[c], "graph" if c in support else "hybrid") for c in best]
        out = [(c, float(st.ppr_chunks.get(c, support[c])), "graph") for c in graph_rank[: self.top_k]]
        taken = {c for c, _, _ in out}
        for c in hybrid_rank:
            if len(out) >= self.top_k:
                break
            if c not in taken:
                out.append((c, float(st.hybrid[c]), "hybrid_fill"))
                taken.add(c)
        return out

    def heuristic_sufficient(self, st: _State, stage: str) -> tuple[bool, str]:
        """LLM-free sufficiency after ``stage`` (documented heuristic; an LLM replaces it when given):

        1. at least one seed aligned (else there is nothing graph-shaped to stand on);
        2. every seed is covered: some evidence chunk supports it;
        3. the evidence connects the seeds: all seeds (the nodes of one mention counting as one) lie in
           one connected component of the evidence edges and paths; trivially true for one seed;
        4. the query's relation words (its lower-case content words, crudely stemmed, e.g. "mother",
           "born", "director") occur in the top ``top_k`` evidence chunks, at least a
           ``min_term_coverage`` share of them: a relation the evidence does not mention ("mother" in
           "When did X's mother die?") sends the query on to the next stage.
        Stage 3 is the last: its evidence is returned whatever the check would say.
        """
        if not st.seeds:
            return False, "no seed aligned to the graph"
        support = self.evidence_chunks(st)
        missing = [s.node for s in st.seeds if not (s.row in st.nodes and self._seed_has_chunk(s.row, support))]
        if missing:
            return False, f"seeds without evidence: {missing}"
        if len(st.seeds) > 1 and not self._connected(st):
            return False, "evidence does not connect the seeds"
        seed_words = {stem(w) for s in st.seeds for w in re.findall(r"\w+", s.mention.lower())}
        words = [w for w in dict.fromkeys(stem(w) for w in st.relation_words) if w not in seed_words]
        if self.config.min_term_coverage > 0 and words:
            best = sorted(support, key=lambda c: (-support[c], -st.hybrid[c], c))[: self.top_k]
            text = " ".join(self.index.chunks[self.index.chunk_order[c]].text for c in best)
            have = {stem(w) for w in re.findall(r"\w+", text.lower())}
            absent = [w for w in words if w not in have]
            if 1 - len(absent) / len(words) < self.config.min_term_coverage:
                return False, f"relation words not in the evidence: {absent}"
        return True, "every seed covered and connected; relation words present"

    def _seed_has_chunk(self, row: int, support: dict[int, int]) -> bool:
        g = self._graph()
        if g.chunk_pos[row] >= 0:
            return int(g.chunk_pos[row]) in support
        return bool(set(g.mapback[row].indices.tolist()) & support.keys())

    def _connected(self, st: _State) -> bool:
        snap = self.index.snapshot
        parent: dict[int, int] = {}

        def find(x: int) -> int:
            while parent.setdefault(x, x) != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for e in st.edges:
            parent[find(int(snap.edge_src[e]))] = find(int(snap.edge_dst[e]))
        first_of: dict[str, int] = {}
        for s in st.seeds:  # the nodes one mention aligned to count as one seed
            parent[find(s.row)] = find(first_of.setdefault(s.mention, s.row))
        roots = {find(s.row) for s in st.seeds}
        return len(roots) == 1

    def llm_sufficient(self, st: _State) -> tuple[bool, str]:
        """The yes/no prompt on the evidence; unreadable or failed answers count as "not sufficient"."""
        st.llm_calls += 1
        try:
            answer = str(self.llm.predict(SUFFICIENCY_PROMPT, question=st.query, evidence=self.serialise(st)))
        except Exception as exc:
            st.unparseable += 1
            return False, f"LLM call failed ({type(exc).__name__}); treated as not sufficient"
        verdict = parse_yes_no(answer)
        if verdict is None:
            st.unparseable += 1
            return False, f"unreadable LLM answer {answer[:60]!r}; treated as not sufficient"
        return verdict, f"LLM said {'yes' if verdict else 'no'}"

    # ------------------------------------------------------------------ retrieval

    def retrieve_with_trace(self, query: str | QueryBundle) -> tuple[list[NodeWithScore], dict]:
        """``(chunk nodes + one evidence node, trace)``.

        The trace is the evidence node's metadata plus ``timings_ms`` (total and per stage), which the
        evidence node leaves out so that its id (a content hash) is the same on every run.
        """
        bundle = query if isinstance(query, QueryBundle) else QueryBundle(query)
        return self._run(bundle)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._run(query_bundle)[0]

    def _run(self, query_bundle: QueryBundle) -> tuple[list[NodeWithScore], dict]:
        start = time.perf_counter()
        timings: dict[str, float] = {}
        index, g = self.index, self._graph()
        question = query_bundle.query_str
        q = self.query_vector(query_bundle)
        dense = index.chunk_dense_scores(q)
        hyb = hybrid(dense, index.bm25.scores(question))
        node_sim = _NodeSimilarity(g, q, dense)
        trace: dict[str, Any] = {"variant": self.variant or "full", "llm_calls": 0}
        seeds, relations, relation_words = self.extract_seeds(question, node_sim, trace)
        st = _State(question, seeds, relations, relation_words, node_sim, hyb, llm_calls=trace["llm_calls"])
        plan = {"global_only": ("global",), "no_global": ("local", "bridge")}.get(self.variant or "", STAGES)
        runners = {"local": self._stage_local, "bridge": self._stage_bridge, "global": self._stage_global}
        reached = plan[-1]
        for i, stage in enumerate(plan):
            t0 = time.perf_counter()
            st.stages.append({"stage": stage})
            runners[stage](st)
            last = i == len(plan) - 1
            if last:
                ok, why = True, "last stage"
            elif self.llm is not None:
                ok, why = self.llm_sufficient(st)
            else:
                ok, why = self.heuristic_sufficient(st, stage)
            st.stages[-1].update(sufficient=ok, reason=why, nodes=len(st.nodes), edges=len(st.edges))
            timings[stage] = round((time.perf_counter() - t0) * 1000, 3)
            if ok:
                reached = stage
                break
        ranked = self.rank_chunks(st)
        order = index.chunk_order
        nodes = [chunk_node(index, order[c], score, self.method, a2rag_source=src, a2rag_stage=reached)
                 for c, score, src in ranked]
        trace.update(self._trace(st, reached, ranked))
        evidence = evidence_node(self.method, self.serialise(st, ranked=ranked), trace)
        timings["total"] = round((time.perf_counter() - start) * 1000, 3)
        return nodes + [evidence], {**evidence.node.metadata["evidence"], "timings_ms": timings}

    # ------------------------------------------------------------------ evidence

    def _edge_json(self, e: int) -> dict:
        snap, index = self.index.snapshot, self.index
        u, v, kind = snap.node_ids[snap.edge_src[e]], snap.node_ids[snap.edge_dst[e]], int(snap.edge_kind[e])
        if kind == RELATION:
            f = index.facts[index.fact_ids[snap.edge_fact[e]]]
            return {"kind": "relation", "subject": f.subject, "predicate": f.predicate, "object": f.object, "fact_id": f.id,
                    "chunks": sorted(f.chunks)[:5]}  # provenance pointers (a HITL triple proposal cites them)
        return {"kind": "contains" if kind == CONTAINS else "synonym" if kind == SYNONYM else str(kind), "u": u, "v": v}

    def _edge_line(self, e: int) -> str:
        d, chunks = self._edge_json(e), self.index.chunks
        if d["kind"] == "relation":
            return f"{d['subject']} | {d['predicate']} | {d['object']}"
        if d["kind"] == "contains":
            c, ent = (d["u"], d["v"]) if d["u"] in chunks else (d["v"], d["u"])
            return f"passage '{chunks[c].title or c}' | mentions | {ent}"
        return f"{d['u']} | similar name to | {d['v']}"

    def serialise(self, st: _State, max_lines: int = 40, ranked=None) -> str:
        """Readable evidence: seeds, graph facts, paths, then the top chunks' titles and text (for the LLM check)."""
        names = self.index.snapshot.node_ids
        lines = ["Seeds: " + (", ".join(f"{s.mention} -> {s.node}" for s in st.seeds) or "(none)")]
        if st.relations:
            lines.append("Relation seeds: " + ", ".join(r["label"] for r in st.relations))
        facts = [self._edge_line(e) for e in list(st.edges)[:max_lines]]
        if facts:
            lines += ["Graph facts:"] + facts
        if st.paths:
            lines += ["Bridge paths:"] + [" -> ".join(names[u] for u in p) for p in st.paths[:10]]
        ranked = (ranked if ranked is not None else self.rank_chunks(st))[: self.config.sufficiency_max_chunks]
        chunks = self.index.chunks
        for c, _, _ in ranked:
            rec = chunks[self.index.chunk_order[c]]
            lines.append(f"Passage '{rec.title}': {rec.text[:500]}")
        return "\n".join(lines)

    def _trace(self, st: _State, reached: str, ranked) -> dict:
        names = self.index.snapshot.node_ids
        return {
            "stage_reached": reached,
            "seeds": [s.to_json() for s in st.seeds],
            "relation_seeds": st.relations[:20],  # the filter uses all of them; the trace shows the best 20
            "relation_seed_count": len(st.relations),
            "stages_tried": st.stages,
            "graph_evidence": {
                "nodes": [names[u] for u in list(st.nodes)[:200]],
                "edges": [self._edge_json(e) for e in list(st.edges)[:200]],
                "paths": [[names[u] for u in p] for p in st.paths],
            },
            "chunks": [{"chunk_id": self.index.chunk_order[c], "score": round(s, 6), "source": src} for c, s, src in ranked],
            "chunk_ranking": self.config.chunk_ranking,
            "llm_calls": st.llm_calls,
            "unparseable_sufficiency": st.unparseable,
        }


def parse_yes_no(answer: str) -> bool | None:
    """The verdict of a yes/no answer, or None when it cannot be read.

    Yes (no) when the answer's words include "yes"/"sufficient" ("no"/"insufficient") and none of the
    other side: "Yes.", "**No**, the passages do not say", "The evidence is sufficient". "Yes and no",
    "maybe" and "" are unreadable.
    """
    words = set(re.findall(r"\b(yes|no|sufficient|insufficient)\b", answer.lower()))
    positive, negative = bool(words & {"yes", "sufficient"}), bool(words & {"no", "insufficient"})
    if positive != negative:
        return positive
    return None
