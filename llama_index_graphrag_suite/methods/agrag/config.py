"""AGRAG's settings: every knob of the retriever, with the paper section or code its default comes from.

Defaults follow the paper (Wang et al., Sections III-C/D) where it gives a number; DESIGN.md's defaults
table and ``../shared/notes/reference-implementations.md`` §1.4-1.6 say where the authors' code differs:

* PPR: the paper's d = 0.5, tolerance 1e-7 and passage scores x 0.05 (the authors' AGRAG code path does not
  apply the passage factor; here it is configurable).
* Edge costs: the paper's (1 - cos) / 2 (the code uses 1 - cos; the ratios the MCMI rule compares are the same).
* MCMI: the paper's stop rule (Eq. 15-17, the ratio recomputed after every addition) with the code's cap of
  20 additions (the code's own rule is a fixed threshold on score x cost).
* Without an LLM, the Eq. 9 triple filter is replaced by a score margin (ours; the LLM-free path).

Variants (``PRESETS``) are the paper's ablations (§IV-D, "Ablation Study"): ``hybrid_only`` ("AGRAG
w. HR Only": hybrid retrieval alone, ``graph_retrieval=False``), ``no_mcmi`` ("w.o. MCMI": the Steiner tree
without the expansion, ``mcmi=False``) and ``no_filter`` ("w.o. Cle.": no triple filter,
``triple_filter=False``).
"""

from __future__ import annotations

from enum import Enum
from typing import Any, ClassVar

from ...graph.steiner import MAX_ENTRIES
from ..base import MethodConfig, param

__all__ = ["AGRAGConfig", "MCMIRatio", "PUSH_EPS"]

#: AGRAG's local-push residual bound (graph/ppr.py's PUSH_EPS is 1e-7): AGRAG reads the scores of the few nodes
#: next to its Steiner tree and of the chunks on its subgraph, which keep their order at this bound (its recall
#: cost at 1M passages: studies/perf/results/agrag_1m_query.md)
PUSH_EPS = 1e-6


class MCMIRatio(str, Enum):
    """How the subgraph's cost-score ratio r(G) is aggregated over its edges (``graph/mcmi.py``)."""

    SUM = "sum"  # Eq. 15 as printed: every added edge raises r(G), so expansion tends to run to the cap
    MEAN = "mean"  # the "average ratio" of Figure 3's caption: each addition lowers r(G), expansion stops itself


class AGRAGConfig(MethodConfig):
    """Every knob of AGRAG: fact mapping, triple filter, node influence, edge costs, MCMI, hybrid retrieval."""

    # -- fact mapping (Eq. 7-8) and the triple filter (Eq. 9)
    fact_top_k: int = param(5, "facts mapped to the query (k_a): the ones whose embedding is closest to it",
                            paper="AGRAG Eq. 8: k_a = 5 (authors' code: linking_top_k = 5)", ge=1)
    triple_filter: bool = param(True, "filter the mapped facts for the query (Eq. 9); False keeps them all "
                                "(the 'no_filter' ablation)", paper="AGRAG Eq. 9; §IV-D ablation 'w.o. Cle.'")
    filter_margin: float = param(0.1, "LLM-free filter: keep the facts whose cosine is within this margin of the "
                                 "best candidate (the best is always kept)",
                                 paper="ours: LLM-free stand-in for the Eq. 9 LLM filter", ge=0.0)
    # -- node influence (Eq. 10-13)
    damping: float = param(0.5, "PPR damping: probability of following an edge at each step",
                           paper="AGRAG §III-C: d = 0.5, after HippoRAG 2 (authors' code: damping = 0.5)",
                           ge=0.0, le=1.0)
    passage_factor: float = param(0.05, "multiplies the PPR score of passage nodes, so influence does not "
                                  "concentrate on them", paper="AGRAG §III-C: balance factor 0.05 (after HippoRAG 2; "
                                  "the authors' AGRAG code path does not apply it)", ge=0.0)
    push_eps: float = param(PUSH_EPS, "on a graph of 1M+ entries, where the local push answers the PageRank "
                            "(graph/ppr.py), its per-degree residual bound: each score is at most push_eps x degree "
                            "/ (1 - d) below exact", paper="ours: on the shared sets (< 1M entries) the global "
                            "solver runs to the tolerance 1e-7 and this never applies", gt=0.0)
    # -- edge costs (Eq. 14)
    pseudo_cost: float = param(10.0, "cost of the pseudo edges joining every passage to one pseudo node (keeps the "
                               "graph connected; paths through it are penalised)",
                               paper="AGRAG §III-C: pseudo_relation cost 10, after HippoRAG 2 (authors' code: 10.0)",
                               ge=0.0)
    # -- reasoning subgraph (Eq. 15-17)
    graph_retrieval: bool = param(True, "build the reasoning subgraph; False returns hybrid chunks only (top_k of "
                                  "them; the 'hybrid_only' ablation)",
                                  paper="AGRAG Step 2 (§III-C); §IV-D ablation 'w. HR Only'")
    mcmi: bool = param(True, "expand the Steiner tree into the MCMI subgraph; False keeps the tree (the "
                       "'no_mcmi' ablation)", paper="AGRAG Eq. 16-17, Algorithm 3; §IV-D ablation 'w.o. MCMI'")
    mcmi_max_iter: int = param(20, "most nodes the MCMI expansion adds", ge=0,
                               paper="authors' code: threshold = 20 iterations")
    mcmi_ratio: MCMIRatio = param(MCMIRatio.SUM, "cost-score ratio of the subgraph: 'sum' (Eq. 15) or 'mean' "
                                  "(Figure 3's average ratio)", paper="AGRAG Eq. 15 as printed")
    steiner_max_entries: int | None = param(
        MAX_ENTRIES, "row entries one Steiner search may read on a graph larger than 8 x this (None: no limit); a "
        "search that stops there gives a Steiner forest of the terminals it joined (graph/steiner.py)",
        paper="ours: on the shared sets (<= 0.25M entries) it never applies; at 300k passages it bounds the "
        "search (studies/perf/agrag_at_scale.py)", ge=1)
    steiner_first_join: bool = param(
        True, "on a graph of 1M+ entries (the compiled search), stop the Voronoi search once the terminals are "
        "joined instead of once the joining edges are provably the cheapest (a Steiner tree, not always Mehlhorn's)",
        paper="ours: never on the shared sets (< 0.25M entries); its cost at 1M: "
        "studies/perf/results/agrag_1m_approximations.md")
    # -- hybrid retrieval (Eq. 20-21)
    hybrid_top_k: int = param(5, "chunks from hybrid retrieval (k_r), fused with the subgraph's chunks", ge=0,
                              paper="AGRAG Eq. 20: k_r = 5 (§IV: top-k = 5 for every model)")

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "paper": {},  # the method as the paper ranks (the registry's plain name wraps it in the hybrid guard)
        "hybrid_only": {"graph_retrieval": False},  # "AGRAG w. HR Only"
        "no_mcmi": {"mcmi": False},  # "AGRAG w.o. MCMI": the Steiner tree is the reasoning graph
        "no_filter": {"triple_filter": False},  # "AGRAG w.o. Cle.": every mapped fact is kept
    }
