"""The hybrid guard's settings, once for every method it wraps, and its named presets.

What each setting does is in ``docs/guard.md``; how the defaults were chosen is in ``docs/guard.md`` and
BENCHMARKS.md. Field names keep the ``guard_`` prefix so that ``--set guard_cover_gain=0.3`` names the guard's
setting beside a method's own.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ..base import MethodConfig, param

__all__ = ["GUARD_PRESETS", "GuardConfig", "TUNED_TOP_K", "guard_config"]

TUNED_TOP_K = 5  # the top_k at which the settings were chosen (docs/guard.md)
_LODO = "ours (leave-one-dataset-out on the five shared sets; docs/guard.md)"


class GuardConfig(MethodConfig):
    """How far a graph method's ranking may re-rank hybrid retrieval, per query (``docs/guard.md``)."""

    guard_depth: int = param(20, "Chunks of each ranking (the method's and hybrid's) the fusion reads.", "ours", ge=1)
    guard_rank_to_top_k: bool = param(
        False, "The method ranks only top_k chunks (not guard_depth) before the fusion: for a method whose own top "
        "already holds hybrid's best chunks (A2RAG's anchors).", _LODO)
    guard_max_weight: float | None = param(
        None, "Largest weight the graph ranking gets; None: (k0 + top_k) / (2 k0 + top_k + 1), where hybrid's first "
        "chunk ties the graph's top_k-th (0.7 at k0 2 and top_k 5).", "ours", ge=0.0, le=1.0)
    guard_link_gain: float = param(3.0, "Weight of the query's share of words in specific entities.", _LODO)
    guard_agree_gain: float = param(1.0, "Weight of the top-k overlap of graph and hybrid.", _LODO)
    guard_rrf_k: int = param(2, "k0 of the reciprocal-rank fusion (small: the top ranks decide).", _LODO, ge=1)
    guard_names_only: bool = param(False, "Only named entities (not TERM entities) count as linking the query.",
                                   _LODO)
    guard_name_density: float = param(24.0, "Capitalised words per 100 (the corpus's name density, measured at "
                                      "build time) at which the graph gets its full weight; below, the weight "
                                      "shrinks in proportion (0: off).", _LODO, ge=0.0)
    guard_cover_gain: float = param(0.5, "How far a hybrid chunk rises for being linked to the question's entities "
                                    "(the share of them it holds; 0: hybrid's order as is).", _LODO, ge=0.0)
    guard_small_k_power: float = param(
        2.0, f"Below top_k {TUNED_TOP_K} the graph weight is scaled by (top_k / {TUNED_TOP_K}) ** this: with fewer "
        "places, each chunk the walk adds displaces one of hybrid's surest (0: no scaling).", _LODO, ge=0.0)
    guard_walk_keeps_first: bool = param(
        True, "Where the method's own top 5 already holds hybrid's first chunk (what the fusion protects) and as many of "
        "the question's entities as the fused top 5, its own top_k stands (weight 1), at top_k 5 and above, in a "
        "corpus written in names (the index's reading that decides on terms).",
        "ours: the guarded methods at or above their own rankings - 0.5 on the Wikipedia sets (docs/guard.md)")
    guard_best_sentence: bool | None = param(
        None, "Hybrid retrieval (the ranking the guard fuses with, and the hybrid scores AGRAG and A2RAG read inside "
        "it) takes a third score, each chunk's best sentence: its fact sentences' best cosine to the question, "
        "fused with dense and BM25 at equal weights (query_scores.three_way). None: on unless the index embeds "
        "with the hash embedding (query_scores.sentences_carry_meaning).", "ours (docs/guard.md)")
    guard_own_order_from: float | None = param(
        None, "From this graph weight on, the fused top_k is listed in the method's own order (None: the fusion's); "
        "it changes which chunk comes first, never which chunks are returned.", "ours (docs/guard.md)",
        ge=0.0, le=1.0)

    PRESETS: ClassVar[dict[str, dict[str, Any]]] = {
        "default": {},
        # A2RAG's seeds are names and its own top opens with hybrid's best chunks (its anchors): only named entities
        # open the way to its walk, with a larger link gain and a smaller coverage gain; it ranks to top_k only, and
        # where the graph holds half the fusion its own order is listed (docs/guard.md).
        "a2rag": {"guard_rank_to_top_k": True, "guard_link_gain": 4.0, "guard_names_only": True,
                  "guard_cover_gain": 0.2, "guard_small_k_power": 0.0, "guard_own_order_from": 0.5},
    }


GUARD_PRESETS = GuardConfig.PRESETS


def guard_config(preset: str = "default", **overrides: Any) -> GuardConfig:
    """The named preset with ``overrides`` (``guard_*`` settings), validated."""
    return GuardConfig.resolve(variant=preset, **overrides)
