"""A2RAG's settings: every number the paper leaves open, with the measurement behind its default.

The paper gives no value for τ_g, K, α, L or the retry budget and has no public code (DESIGN.md:
"A2RAG τ_g, K, α, L, I_max: not given"), so most defaults below are ours and say what they rest on.

How each default was measured (recall@5, LLM-free, all-MiniLM-L6-v2, ``benchmarks/tuning.py``) is in
``docs/methods/a2rag.md``; each setting's ``paper=`` names its source.

Variants are presets (:attr:`A2RAGConfig.PRESETS`): ``paper`` is the paper's retrieval alone (no hybrid chunk in
the restart, no anchors), ``unguarded`` our ranking as it is (the registry runs both without the hybrid guard);
``node_only`` is the paper's ablation without relation seeds (Table IV); ``no_global`` and ``global_only`` cut the
escalation (Section III-C-4).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from pydantic import field_validator

from ..base import MethodConfig, param

__all__ = ["A2RAGConfig", "ChunkRanking", "GlobalOrder", "Stage"]

_TUNING = "ours: benchmarks/tuning.py"


class Stage(str, Enum):
    """The retriever's stages, in escalation order (Section III-C-4: Local -> Bridge -> Global)."""

    LOCAL = "local"  # Eq. 7
    BRIDGE = "bridge"  # Eq. 8
    GLOBAL = "global"  # Eq. 9-12


STAGE_ORDER = tuple(Stage)


class GlobalOrder(str, Enum):
    """How the stage-3 evidence chunks are ordered among themselves."""

    PPR = "ppr"  # map-back PPR score (Eq. 12 with scores)
    HYBRID = "hybrid"  # hybrid dense + BM25 score
    SUM = "sum"  # min-max PPR + min-max hybrid


class ChunkRanking(str, Enum):
    """How the evidence ranking becomes the returned chunks."""

    EVIDENCE_FIRST = "evidence_first"  # evidence chunks, then the hybrid ranking fills up to top_k
    RRF = "rrf"  # reciprocal-rank fusion (k = 60) of the evidence and hybrid rankings


class A2RAGConfig(MethodConfig):
    """Every number the paper leaves open (DESIGN.md: "A2RAG τ_g, K, α, L, I_max: not given")."""

    # -- which parts run (the variants switch these) ----------------------------------------------
    stages: tuple[Stage, ...] = param(
        STAGE_ORDER, "Stages run, in escalation order; each at most once, the last one always answers.",
        paper="A2RAG §III-C-4 (Local -> Bridge -> Global)")
    relation_seeds: bool = param(
        True, "Align the query's relation phrases to relation labels (S_R) and filter stage-1 edges by them; "
        "False is the paper's node-only ablation.", paper="A2RAG §III-C seeds, Table IV")

    # -- gate (Eq. 1) -----------------------------------------------------------------------------
    tau_g: float = param(
        0.40, "Gate threshold on max_j clip(cos(q, s_j)): a query whose best summary similarity is below it is "
        "not retrieved for (out of scope).",
        paper="A2RAG Eq. 1 (τ_g not given); ours: studies/perf/a2rag_bench.py with MiniLM and extractive summaries "
              "(0.40 keeps 198/201 questions of 2wiki_retrieval101 + musique_train100 and refuses 59/60 out-of-scope "
              "queries; 0.35 keeps all but refuses only 54/60)", ge=0.0, le=1.0)
    summary_max_chars: int = param(300, "Extractive summary budget (title + lead sentences).",
                                   paper="ours: the lead of encyclopaedic and news text", ge=20)

    # -- seeds (Section III-C, "Seed extraction and alignment") --------------------------------------
    seed_max_words: int = param(6, "Longest query n-gram tried as a mention.", paper="ours", ge=1)
    seed_min_lexical: float = param(0.9, "rapidfuzz ratio a match needs.",
                                    paper="ours: 'high-confidence matches only' (A2RAG §III-C)", ge=0.0, le=1.0)
    seed_min_confidence: float = param(0.75, "w*lexical + (1-w)*cosine a seed needs.",
                                       paper="ours: 'high-confidence matches only' (A2RAG §III-C)", ge=0.0, le=1.0)
    seed_lexical_weight: float = param(0.8, "w in the confidence.", paper="ours", ge=0.0, le=1.0)
    max_seeds: int = param(8, "Most entity seeds kept (best confidence first).", paper="ours", ge=1)
    align_titles: bool = param(True, "Passage nodes are named by their document title.", paper="ours")
    relation_min_score: float = param(0.85, "token_set_ratio for a relation seed.", paper="ours", ge=0.0, le=1.0)

    # -- stage 1 (Eq. 7) --------------------------------------------------------------------------
    local_max_neighbours: int = param(30, "Per seed, most query-similar neighbours kept.", paper="ours", ge=1)

    # -- stage 2 (Eq. 8) --------------------------------------------------------------------------
    bridge_hops: int = param(2, "K of Eq. 8.", paper="A2RAG Eq. 8 ('K >= 2 is a small hop budget')", ge=1)
    max_bridges: int = param(10, "Most bridge nodes kept.", paper="ours ('capped to control evidence size')", ge=0)
    paths_per_pair: int = param(2, "Shortest paths kept per (bridge, seed) pair.",
                                paper="A2RAG §III-C-2 ('a small number of short paths'); ours: 2", ge=1)
    max_paths: int = param(40, "Most bridge paths in all.", paper="ours ('capped to control evidence size')", ge=1)
    hub_degree: int = param(200, "Nodes with more edges are reached but not crossed.", paper="ours", ge=1)

    # -- stage 3 (Eq. 9-12) -----------------------------------------------------------------------
    ppr_alpha: float = param(0.5, "Teleport probability α of Eq. 11.", paper="A2RAG Eq. 11 (α not given); ours: 0.5",
                             gt=0.0, le=1.0)
    ppr_top_l: int = param(20, "L of Eq. 12.", paper="A2RAG Eq. 12 (L not given); ours: 20", ge=1)
    ppr_dense_seeds: int = param(1, "Top hybrid chunks added to the restart set.",
                                 paper=f"{_TUNING} on the NER graph (top-1 95.0 / 95.5 / 74.5, top-2 92.1 / 96.0 / 72.3 "
                                       "at share 0.75 with the anchors; see the module docstring)", ge=0)
    ppr_dense_share: float = param(
        0.75, "Share of the restart mass on those chunks (by hybrid score); the rest follows Eq. 10 on S_V.",
        paper=f"{_TUNING} on the NER graph with the top-1 chunk (0.75 95.0 / 95.5 / 74.5, 0.5 93.3 / 95.5 / 73.5, "
              "0.25 92.6 / 95.5 / 73.9, 0.9 94.8 / 96.5 / 71.4)", ge=0.0, le=1.0)
    ppr_tol: float = param(1e-4, "L1 change at which the power iteration stops.",
                           paper="ours: 1e-4, 1e-6 and 1e-7 give the same recall; 1e-4 needs a third fewer iterations",
                           gt=0.0)
    global_order: GlobalOrder = param(
        GlobalOrder.PPR, "How stage-3 chunks are ordered: map-back PPR score, hybrid score, or the sum of both "
        "min-max scaled.", paper=f"{_TUNING} (ppr 79.5 / 65.3, hybrid 66.6 / 57.2, sum 66.6 / 59.8)")

    # -- LLM-free sufficiency ---------------------------------------------------------------------
    min_term_coverage: float = param(
        1.0, "Share of the query's relation words the top evidence chunks must hold to stop early (LLM-free).",
        paper=f"{_TUNING} (1.0 79.5 / 65.3, 0.5 76.7 / 63.8, 0.0 65.6 / 56.8)", ge=0.0, le=1.0)

    # -- time -----------------------------------------------------------------------------------
    time_budget: float | None = param(
        None, "Seconds one A2RAG run may take: one retrieve() call (its LLM seed extraction and sufficiency "
        "checks), or a whole run of the LangGraph loop (build_a2rag_graph, every round). When it runs out, the "
        "evidence found so far is returned, flagged time_budget_exhausted. None: the LLM's build_timeout "
        "(RobustLLM), else unbounded.", paper="ours: a bound for interactive use", gt=0.0)

    # -- ranking ----------------------------------------------------------------------------------
    chunk_ranking: ChunkRanking = param(
        ChunkRanking.EVIDENCE_FIRST, "Evidence chunks then hybrid fill, or RRF of the two rankings.",
        paper=f"{_TUNING} (evidence_first 79.5 / 65.3, rrf 72.5 / 58.7)")
    hybrid_anchors: int = param(
        2, "The top N hybrid chunks always get a place among the top_k returned (evidence_first ranking): one "
        "missing from the evidence ranking takes the place of its lowest evidence chunk; the first evidence chunk "
        "is never displaced.",
        paper=f"{_TUNING} on the NER graph (2: 95.0 / 95.5 / 74.5, 0 or 1: 94.3 / 94.5 / 73.2, 3: 92.1 / 95.5 / "
              "71.0)", ge=0)
    title_anchors: bool = param(
        True, "A document the question names by its exact title (a passage seed of lexical score 1) gets a place "
        "among the top_k, after the hybrid anchors: its chunk of best seed confidence, like a hybrid anchor.",
        paper=f"{_TUNING} (on 95.0 / 95.5 / 74.5, off 94.8 / 95.0 / 74.5; graphrag_bench_medical and covidqa_dev "
              "unchanged at stop 36, benchmarks/domain_tuning.py)")
    hop_anchors: bool = param(
        True, "For each document the question names by its exact title, and for hybrid's top chunk, the page it "
        "leads to (an entity of its chunks that is itself a document's title) that best matches the rest of the "
        "question (BM25 of the question without the titles' words and the words every candidate holds) gets a place "
        "among the top_k, after the title anchors (evidence.hop_chunks).",
        paper=f"ours, LLM-free; {_TUNING} (on 95.0 / 95.5 / 74.5, off 89.6 / 92.0 / 71.4; graphrag_bench_medical and "
              "covidqa_dev unchanged at stop 36, benchmarks/domain_tuning.py)")
    sufficiency_max_chunks: int = param(5, "Chunks shown to the LLM sufficiency check.", paper="ours", ge=1)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        # The paper's retrieval alone: no hybrid guard, and none of our additions to its ranking (the hybrid
        # chunk in the PPR restart, the hybrid, title and hop anchors); Eq. 10's seeds are the whole restart.
        "paper": {"ppr_dense_seeds": 0, "hybrid_anchors": 0, "title_anchors": False,
                  "hop_anchors": False},
        # Our ranking as it is (the registry's "a2rag" wraps it in the hybrid guard; "a2rag:unguarded" does not).
        "unguarded": {},
        # Table IV's ablation: S_V only, no relation seeds, everything else unchanged.
        "node_only": {"relation_seeds": False},
        # Stop escalating after the graph stages: no PPR fallback.
        "no_global": {"stages": (Stage.LOCAL, Stage.BRIDGE)},
        # Straight to the PPR fallback with map-back.
        "global_only": {"stages": (Stage.GLOBAL,)},
    }

    @field_validator("stages")
    @classmethod
    def _stages_escalate(cls, stages: tuple[Stage, ...]) -> tuple[Stage, ...]:
        # The escalation is monotonic and each stage runs at most once (§III-C-4).
        if not stages:
            raise ValueError("stages must name at least one of local, bridge, global")
        positions = [STAGE_ORDER.index(s) for s in stages]
        if positions != sorted(set(positions)):
            raise ValueError(f"stages must be distinct and in escalation order (local, bridge, global), "
                             f"got {[s.value for s in stages]}")
        return stages
