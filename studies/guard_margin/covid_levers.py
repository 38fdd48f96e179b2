"""The levers tried for A2RAG's margin on COVID (``studies/results/guard_margin.md``), on ``dump.py``'s records
(``DUMPS/<set>.json``/``.npz``) and ``variants.py``'s own rankings (``DUMPS/covidqa_dev.a2var.json``):

* ``grid``: A2RAG's guard over 1,296 settings on COVID, in-sample (the best is the most any guard setting gives);
* ``cv``: A2RAG's guard over 72 settings, 5 question folds within clinical and COVID (seeds 0, 1) and
  leave-one-set-out over the five sets;
* ``bases``: the base alone with other fusions of its three scores (weights, z-scores, RRF, min-max of the top).

    python studies/guard_margin/covid_levers.py DUMPS grid|cv|bases
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv import lodo, question_cv  # noqa: E402
from replay import SetData, base_recall, base_scores, minmax, recall5, replay, top_k  # noqa: E402

SETS = ("2wiki_retrieval101", "hotpotqa_train100", "musique_train100", "graphrag_bench_medical", "covidqa_dev")


def grid(root: Path) -> None:
    d = SetData(root / "covidqa_dev")
    variants = json.loads((root / "covidqa_dev.a2var.json").read_text()) if (root / "covidqa_dev.a2var.json").exists() else {}
    for name in ["shipped"] + [v for v in ("k20", "sum") if v in variants]:
        if name != "shipped":
            for i, ranks in enumerate(variants[name]):
                d.rows[i]["v_own"] = ranks
        method = "a2rag" if name == "shipped" else "v"
        found = []
        for no, lg, ag, cg, k0, nd in itertools.product((True, False), (0, 1, 2, 3, 4, 6), (0, 0.5, 1), (0, 0.2, 0.5),
                                                          (1, 2, 4), (0, 8, 12, 24)):
            r = replay(d, method, "a2rag", names_only=no, link_gain=float(lg), agree_gain=float(ag), cover_gain=cg,
                       k0=k0, name_density=float(nd))
            found.append((round(100 * r.mean(), 2), no, lg, ag, cg, k0, nd))
        found.sort(reverse=True)
        print(name, found[:5])


def cross_validated(root: Path) -> None:
    data = {s: SetData(root / s) for s in SETS}
    settings = list(itertools.product((True, False), (0, 2, 4), (0, 1), (0, .2, .5), (12, 24)))
    shipped = (True, 4, 1, .2, 24)
    per = {s: {c: replay(d, "a2rag", names_only=c[0], link_gain=float(c[1]), agree_gain=float(c[2]), cover_gain=c[3],
                         name_density=float(c[4])) for c in settings} for s, d in data.items()}
    for s in ("graphrag_bench_medical", "covidqa_dev"):
        for seed in (0, 1):
            folds = question_cv(per[s], shipped, len(data[s]), 5, seed)
            gains = [f["held_gain"] for f in folds]
            print(s, "seed", seed, [f["pick"] for f in folds], "held-out gain", [round(g, 2) for g in gains],
                  "mean", round(float(np.mean(gains)), 2))
    for f in lodo(per, shipped):
        print("left out", f["left_out"], "pick", f["pick"], "held-out gain", round(f["held_gain"], 2))


def bases(root: Path) -> None:
    def z(x):
        x = np.asarray(x, np.float64)
        return (x - x.mean()) / x.std() if x.std() > 0 else x * 0

    def rrf(x, k0=60):
        r = np.empty(x.size)
        r[np.lexsort((np.arange(x.size), -x))] = np.arange(x.size)
        return 1.0 / (k0 + r + 1)

    def top_minmax(x, depth):
        x = np.asarray(x, np.float64)
        t, hi = np.sort(x)[-depth], x.max()
        return np.clip((x - t) / (hi - t), 0, None) if hi > t else x * 0

    three = lambda f: (lambda d, i: f(d.dense[i]) + f(d.bm25[i]) + f(d.sentence[i]))  # noqa: E731
    forms = {"z": three(z), "rrf60": three(rrf), "rrf10": three(lambda x: rrf(x, 10)),
             "minmax top100": three(lambda x: top_minmax(x, 100)), "minmax top20": three(lambda x: top_minmax(x, 20))}
    for s in SETS:
        d = SetData(root / s)
        base = base_recall(d)
        out = [f"three-way {100 * base.mean():.1f}"]
        for name, fn in forms.items():
            r = np.array([recall5(d, i, top_k(fn(d, i), 5)) for i in range(len(d))])
            out.append(f"{name} {100 * r.mean():.1f} (+{(r > base).sum()} -{(r < base).sum()})")
        weighted = [(100 * base_recall(d, w).mean(), w) for w in itertools.product((0.5, 1, 1.5), (0.5, 1, 1.5, 2),
                                                                                   (0, 0.5, 1, 1.5, 2))]
        out.append(f"best of 60 weights {max(weighted)[0]:.1f} at {max(weighted)[1]}")
        print(s, "; ".join(out))


if __name__ == "__main__":
    {"grid": grid, "cv": cross_validated, "bases": bases}[sys.argv[2]](Path(sys.argv[1]))
