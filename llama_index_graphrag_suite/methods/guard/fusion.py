"""The guard's arithmetic: the graph ranking's weight from the signals, and the weighted reciprocal-rank fusion of
the method's ranking with hybrid's (``docs/guard.md``). Pure numpy, except :func:`hybrid_ranking`, which asks the
index for the question's dense and BM25 scores."""

from __future__ import annotations

import numpy as np

from ..query_scores import hybrid_scores, top_ranked
from .config import TUNED_TOP_K, GuardConfig

__all__ = ["WEIGHT_STEP", "fuse_rankings", "guard_weight", "hybrid_ranking", "in_own_order", "linked_hybrid",
           "protective_weight", "small_k_share", "weight_cap", "weight_on_grid"]

WEIGHT_STEP = 0.05  # the weight is rounded to this step (benchmarks/domain_tuning.py simulates on the same grid)
SCORE_DIGITS = 12  # fused scores equal to this many decimals are a tie


def protective_weight(k0: int, k: int) -> float:
    """The graph weight at which hybrid's first chunk ties the graph's k-th, each absent from the other ranking:
    ``(1 - w) / (k0 + 1) = w / (k0 + k)``, so ``w = (k0 + k) / (2 k0 + k + 1)``. Up to it the fusion weighs the
    graph's top against hybrid's; above it the graph's own top k decides."""
    return (k0 + k) / (2 * k0 + k + 1)


def weight_cap(cfg: GuardConfig, k: int) -> float:
    """The most weight the graph ranking gets: ``guard_max_weight``, or :func:`protective_weight` when unset."""
    return protective_weight(cfg.guard_rrf_k, k) if cfg.guard_max_weight is None else cfg.guard_max_weight


def small_k_share(k: int, power: float) -> float:
    """The share of the graph weight kept at top_k ``k``: ``min(1, k / TUNED_TOP_K) ** power``."""
    return min(1.0, max(0, k) / TUNED_TOP_K) ** power if power > 0 else 1.0


def weight_on_grid(weight: float, cap: float) -> float:
    """``weight`` rounded to ``WEIGHT_STEP``, at most the largest step not above ``cap``."""
    return min(round(weight / WEIGHT_STEP), int(cap / WEIGHT_STEP + 1e-9)) * WEIGHT_STEP


def guard_weight(link: float, agree: float, cfg: GuardConfig, trust: float = 1.0, k: int = 5) -> float:
    """The graph ranking's weight in [0, :func:`weight_cap`]: ``cap · clip(link_gain · link + agree_gain · agree,
    0, 1) · trust · small_k_share``, 0 when no word of the query is in a specific entity (the graph knows
    nothing of it). ``k``: the top_k the fusion cuts to. Rounded to ``WEIGHT_STEP`` so that what the tuning
    simulates is what the retriever does."""
    if link <= 0.0:
        return 0.0
    cap = weight_cap(cfg, k)
    raw = cfg.guard_link_gain * link + cfg.guard_agree_gain * agree
    weight = cap * float(min(1.0, max(0.0, raw))) * trust * small_k_share(k, cfg.guard_small_k_power)
    return weight_on_grid(weight, cap)


def fuse_rankings(graph_rank: np.ndarray, hybrid_rank: np.ndarray, weight: float, k0: int,
                  k: int) -> tuple[np.ndarray, list[float]]:
    """Weighted reciprocal-rank fusion of two rankings (arrays of chunk positions, best first): the top ``k``
    positions and their fused scores, ``(1 - w) / (k0 + rank_hybrid) + w / (k0 + rank_graph)``.

    With weight 0 the result is ``hybrid_rank[:k]``; with 1 it is ``graph_rank[:k]`` (filled from hybrid when the
    graph ranked fewer). Below 1, hybrid's first chunk is always in the result: when the fusion leaves it out, it
    takes the last place (with its own, lower, score). Ties go to the hybrid order; scores are compared to
    ``SCORE_DIGITS`` decimals, so that two equal sums are a tie whatever the floating-point rounding.
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


def linked_hybrid(hybrid_rank: np.ndarray, coverage: np.ndarray, gain: float) -> np.ndarray:
    """``hybrid_rank`` re-ordered by ``2 / (2 + rank) + gain · coverage`` (ties keep hybrid's order)."""
    if gain <= 0 or not coverage.any():
        return hybrid_rank
    rank = np.arange(hybrid_rank.size)
    score = 2.0 / (2.0 + rank) + gain * coverage
    return hybrid_rank[np.lexsort((rank, -score))]


def hybrid_ranking(index, question: str, depth: int) -> np.ndarray:
    """The top-``depth`` chunk positions by AGRAG's hybrid score (Eq. 21)."""
    return top_ranked(hybrid_scores(index, question), depth)
