"""Does a guard setting move recall@5 by a question anywhere? Each setting's other values replayed (``replay.py``)
for every guarded method on every set dumped by ``dump.py --methods hipporag,agrag,pathrag,archrag,a2rag``, and
cross-validated (5 folds over each set's questions, and leave-one-set-out): what each fold picks.

    python studies/guard_margin/knobs.py DUMPS [SET ...]
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv import lodo, question_cv  # noqa: E402
from replay import SetData, replay  # noqa: E402

METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")
SETS = ("2wiki_retrieval101", "hotpotqa_train100", "musique_train100", "graphrag_bench_medical", "covidqa_dev")
# each setting's shipped value first, then the others tried (a preset's own value is the shipped one: a2rag's differ)
KNOBS = {
    "bias": [0.0, -0.2, -0.1, 0.1, 0.2],
    "hub": [None, 0.02, 0.1, 1.0],
    "name_density": ["shipped", 12.0, 16.0, 32.0, 40.0, 48.0, 64.0, 96.0, "names"],
    "agree_gain": ["shipped", 0.0, 0.5, 2.0],
    "k0": [2, 1, 4],
    "depth": [20, 10, 30],
}


def main() -> None:
    root = Path(sys.argv[1])
    sets = sys.argv[2:] or SETS
    data = {s: SetData(root / s) for s in sets if (root / f"{s}.json").exists()}
    only = [k for k in (os.environ.get("KNOBS") or "").split(",") if k]
    for knob, values in KNOBS.items():
        if only and knob not in only:
            continue
        print(f"## {knob} (shipped {values[0]})")
        per = {s: {} for s in data}  # set -> value -> per-question mean over the methods
        for s, d in data.items():
            line = []
            for v in values:
                rs = []
                for m in METHODS:
                    over = {} if v == "shipped" else {knob: v}
                    rs.append(replay(d, m, **over))
                per[s][v] = np.mean(rs, axis=0)
                if v != values[0]:
                    moved = [int(np.sum(r != r0)) for r, r0 in zip(rs, per_m[s])]
                    net = [round(float(np.sum(r - r0)), 1) for r, r0 in zip(rs, per_m[s])]
                    line.append(f"{v}: questions changed {moved}, net {net}")
                else:
                    per_m = globals().setdefault("_shipped", {})
                    per_m[s] = rs
                    line.append("shipped " + " / ".join(f"{100 * r.mean():.1f}" for r in rs))
            print(f"- {s}: " + "; ".join(line))
        for s, d in data.items():
            picks = question_cv(per[s], values[0], len(d))
            print(f"  qcv {s}: picks {[p['pick'] for p in picks]}, held-out net questions (mean of methods) "
                  f"{[round(p['held_net_questions'], 2) for p in picks]}")
        if len(data) > 2:
            for p in lodo(per, values[0]):
                print(f"  lodo {p['left_out']}: pick {p['pick']}, held-out net {p['held_net_questions']:.2f}")


if __name__ == "__main__":
    main()
