"""Cross-validation of guard settings on ``replay.py``'s per-question recall: 5 folds over the questions of each set
and leave-one-set-out over the five, the pick by the mean recall of the methods named, the shipped setting winning
ties. Prints what each fold picks, its held-out gain over the shipped setting, and the spread over the folds."""

from __future__ import annotations

import numpy as np


def folds(n: int, k: int = 5, seed: int = 0) -> list[np.ndarray]:
    """``k`` folds of ``range(n)``, shuffled once with a fixed seed (so every run cuts the same folds)."""
    order = np.random.default_rng(seed).permutation(n)
    return [np.sort(order[i::k]) for i in range(k)]


def pick(scores: dict, shipped, rows) -> object:
    """The candidate of the best mean over ``rows`` (question indices), the shipped one on a tie (to 1e-12)."""
    best, best_score = shipped, float(np.mean(scores[shipped][rows]))
    for cand, s in scores.items():
        v = float(np.mean(s[rows]))
        if v > best_score + 1e-12:
            best, best_score = cand, v
    return best


def question_cv(scores: dict, shipped, n: int, k: int = 5, seed: int = 0) -> list[dict]:
    """``scores``: candidate -> per-question score array (mean over methods) of one set."""
    out = []
    for held in folds(n, k, seed):
        train = np.setdiff1d(np.arange(n), held)
        chosen = pick(scores, shipped, train)
        out.append({"pick": chosen, "held_gain": 100 * float(np.mean(scores[chosen][held] - scores[shipped][held])),
                    "held_questions": int(held.size),
                    "held_net_questions": float(np.sum(scores[chosen][held] - scores[shipped][held]))})
    return out


def lodo(per_set: dict, shipped) -> list[dict]:
    """``per_set``: set -> candidate -> per-question array. Pick on the other sets (each weighed equally)."""
    out = []
    names = list(per_set)
    cands = list(per_set[names[0]])
    for left in names:
        others = [s for s in names if s != left]
        mean = {c: np.asarray([np.mean(per_set[s][c]) for s in others]).mean() for c in cands}
        best = shipped
        for c in cands:
            if mean[c] > mean[best] + 1e-12:
                best = c
        gain = 100 * float(np.mean(per_set[left][best]) - np.mean(per_set[left][shipped]))
        out.append({"left_out": left, "pick": best, "held_gain": gain,
                    "held_net_questions": float(np.sum(per_set[left][best] - per_set[left][shipped]))})
    return out
