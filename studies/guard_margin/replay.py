"""Replay the hybrid guard's fusion on ``dump.py``'s per-question records: recall@5 per question for any guard
setting (and any base fusion that the method's own ranking does not read), in numpy, without re-running a method.

``replay(data, method, **settings)`` mirrors ``HybridGuard.fuse`` (``methods/guard/``); ``check`` verifies it gives
the shipped top 5 of every question before any figure of it is used.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

WEIGHT_STEP = 0.05

PRESETS = {
    "default": dict(names_only=False, link_gain=3.0, agree_gain=1.0, bias=0.0, k0=2, cover_gain=0.5,
                    name_density=24.0, depth=20, cap=None, walk=True),
    "a2rag": dict(names_only=True, link_gain=4.0, agree_gain=1.0, bias=0.0, k0=2, cover_gain=0.2,
                  name_density=24.0, depth=20, cap=None, walk=True),
}
NAME_RICH = 12.0  # extractors.terms.NAME_RICH


class SetData:
    """One set's dump: rows (JSON) and the questions x chunks score matrices."""

    def __init__(self, prefix: str | Path):
        prefix = Path(prefix)
        meta = json.loads(prefix.with_suffix(".json").read_text())
        self.rows = meta["rows"]
        self.doc_of = np.asarray(meta["doc_of"])
        self.density = meta["density"]
        self.written_in_names = self.density >= NAME_RICH
        scores = np.load(prefix.with_suffix(".npz"), allow_pickle=False)
        self.dense, self.bm25, self.sentence = scores["dense"], scores["bm25"], scores["sentence"]
        self.name = prefix.name

    def __len__(self) -> int:
        return len(self.rows)


def minmax(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    lo, hi = x.min(), x.max()
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """The k largest, ties by the lower index (``scoring.top_k``)."""
    return np.lexsort((np.arange(scores.size), -scores))[:k]


def base_scores(d: SetData, i: int, weights=(1.0, 1.0, 1.0)) -> np.ndarray:
    """``three_way`` (equal weights) or any weighted mean of the three min-max-scaled scores."""
    wd, wb, ws = weights
    s = wd * minmax(d.dense[i]) + wb * minmax(d.bm25[i]) + ws * minmax(d.sentence[i])
    return s / (wd + wb + ws)


def recall5(d: SetData, i: int, positions) -> float:
    gold = set(d.rows[i]["gold"])
    return len(gold & set(d.doc_of[np.asarray(positions[:5], dtype=np.int64)].tolist())) / len(gold)


def names_held(row: dict, keys: list[str], positions) -> int:
    held: set[int] = set()
    for c in positions:
        held.update(row["held"].get(str(int(c)), ()))
    wanted = {row["keys"].index(k) for k in set(keys) if k in row["keys"]}
    return len(wanted & held)


def coverage(row: dict, plain: np.ndarray) -> np.ndarray:
    weights = np.asarray(row["covered_weight"], dtype=np.float64)
    total = float(weights.sum())
    if total <= 0 or plain.size == 0:
        return np.zeros(plain.size)
    idx = [row["keys"].index(k) for k in row["covered"]]
    out = []
    for c in plain.tolist():
        held = set(row["held"].get(str(c), ()))
        out.append(sum(w for j, w in zip(idx, weights.tolist()) if j in held))
    return np.asarray(out) / total


def fuse(graph: np.ndarray, hybrid: np.ndarray, w: float, k0: int, k: int) -> np.ndarray:
    """The guard's own weighted reciprocal-rank fusion (``methods/guard/fusion.py``): the fused top ``k``."""
    from llama_index_graphrag_suite.methods.guard.fusion import fuse_rankings

    return np.asarray(fuse_rankings(graph, hybrid, w, k0, k)[0], dtype=np.int64)


def guard_weight(link: float, agree: float, trust: float, s: dict, k: int = 5) -> float:
    if link <= 0:
        return 0.0
    k0 = s["k0"]
    cap = (k0 + k) / (2 * k0 + k + 1) if s["cap"] is None else s["cap"]
    raw = s["link_gain"] * link + s["agree_gain"] * agree + s["bias"]
    w = cap * min(1.0, max(0.0, raw)) * trust
    return min(round(w / WEIGHT_STEP), int(cap / WEIGHT_STEP + 1e-9)) * WEIGHT_STEP


def replay_one(d: SetData, i: int, method: str, s: dict, base=None, k: int = 5) -> tuple[np.ndarray, float]:
    """The fused top k of question ``i`` and its graph weight."""
    row = d.rows[i]
    graph = np.asarray(row[f"{method}_own"], dtype=np.int64)
    b = base_scores(d, i) if base is None else base
    plain = top_k(b, s["depth"])
    tag = ("names" if s["names_only"] else "all") + ("" if s.get("hub") is None else f"@{s['hub']}")
    link, linked = row[f"link_{tag}"], row[f"linked_{tag}"]
    agree = len(set(graph[:k].tolist()) & set(plain[:k].tolist())) / max(1, min(k, len(plain)))
    if s["name_density"] == "names":  # full weight in a corpus written in names, none elsewhere
        trust = 1.0 if d.written_in_names else 0.0
    else:
        trust = 1.0 if s["name_density"] <= 0 else min(1.0, d.density / s["name_density"])
    w = guard_weight(link, agree, trust, s, k)
    hyb = plain
    if s["cover_gain"] > 0:
        cov = coverage(row, plain)
        if cov.any():
            r = np.arange(plain.size)
            hyb = plain[np.lexsort((r, -(2.0 / (2.0 + r) + s["cover_gain"] * cov)))]
    fused = fuse(graph, hyb, w, s["k0"], k)
    keeps_first = bool(plain.size) and int(plain[0]) in set(graph[:5].tolist())
    if (s["walk"] and keeps_first and k >= 5 and w < 1.0 and d.written_in_names
            and names_held(row, linked, graph[:5]) >= names_held(row, linked, fused[:5])):
        w = 1.0
        fused = fuse(graph, hyb, w, s["k0"], k)
    return fused, w


def replay(d: SetData, method: str, preset: str | None = None, base_weights=None, **over) -> np.ndarray:
    """recall@5 per question (array) of ``method`` guarded with ``preset`` (its own by default) + ``over``."""
    s = dict(PRESETS[preset or ("a2rag" if method == "a2rag" else "default")], **over)
    out = np.zeros(len(d))
    for i in range(len(d)):
        base = None if base_weights is None else base_scores(d, i, base_weights)
        fused, _ = replay_one(d, i, method, s, base)
        out[i] = recall5(d, i, fused)
    return out


def base_recall(d: SetData, weights=(1.0, 1.0, 1.0)) -> np.ndarray:
    return np.asarray([recall5(d, i, top_k(base_scores(d, i, weights), 5)) for i in range(len(d))])


def check(d: SetData, method: str) -> int:
    """Questions whose replayed top 5 (as a set) differs from the shipped one: must be 0."""
    s = PRESETS["a2rag" if method == "a2rag" else "default"]
    bad = 0
    for i in range(len(d)):
        fused, _ = replay_one(d, i, method, s)
        if set(fused.tolist()) != set(d.rows[i][f"{method}_fused"]):
            bad += 1
    return bad
