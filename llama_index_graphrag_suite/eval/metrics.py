"""Retrieval metrics over passage (document) ids in rank order (HippoRAG's definitions)."""

from __future__ import annotations

from typing import Sequence


def recall_at(ranked_doc_ids: Sequence[str], gold: Sequence[str], k: int) -> float:
    """|gold ∩ top-k| / |gold|, with the top k taken from the ranked list as it is."""
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("a question needs at least one gold passage")
    return len(gold_set & set(ranked_doc_ids[:k])) / len(gold_set)


def all_gold_at(ranked_doc_ids: Sequence[str], gold: Sequence[str], k: int) -> float:
    """1.0 when every gold passage is in the top k, else 0.0."""
    return float(set(gold) <= set(ranked_doc_ids[:k]))


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]) of a non-empty list."""
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q))
