"""Does the hybrid guard keep every graph method at or above hybrid at a top_k other than 5?

The guard's settings are chosen at top_k 5 (``benchmarks/domain_tuning.py``). A user may ask for 2, 3 or 10 chunks;
then the fusion cuts to that many (its cap, ``protective_weight``, follows k). This measures recall@k of each graph
method with the guard at its shipped settings, for k in 2, 3, 5 and 10, beside hybrid's recall@k, and picks
``guard_small_k_power`` (below top_k 5 the graph weight is scaled by ``(top_k / 5) ** power``) from a few powers by
leave-one-dataset-out: for each set, the power chosen on the other four, measured on it. The choice: the power under
which no method falls below hybrid − 0.5 at k 2 or 3 on any of those sets (else the fewest points short), then the
best mean gain over hybrid there.

Reads the ``rankings.json`` of ``benchmarks/domain_tuning.py``, with A2RAG ranked at each k (it ranks to its top_k
before the guard):

    python benchmarks/domain_tuning.py --work /tmp/graphrag-domain-tuning --tag default \\
        --methods a2rag@2,a2rag@3,a2rag@10 rank
    python benchmarks/guard_top_k.py --work /tmp/graphrag-domain-tuning --tag default
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import recall_at as recall  # noqa: E402 (the folder on the path first)
from guard_order import SETS, guarded, load_rankings, work_args  # noqa: E402

METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")
# the methods that share one setting (as in domain_tuning.py): A2RAG has its own guard settings
GROUPS = {"a2rag": ("a2rag",), "hipporag, agrag, pathrag, archrag": ("hipporag", "agrag", "pathrag", "archrag")}
TOP_KS = (2, 3, 5, 10)
SMALL = (2, 3)  # the top_k the power changes
POWERS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)
FLOOR = 0.5


def guarded_recalls(data: dict, method: str, k: int, power: float) -> np.ndarray | None:
    """recall@k of each question, the method guarded at its shipped settings with ``guard_small_k_power`` = power;
    None when rankings.json lacks the method's ranking for k."""
    key = f"{method}@{k}" if method == "a2rag" else method
    if key not in data["methods"]:
        return None
    fused = guarded(data, key, k, guard_small_k_power=power)
    return np.asarray([recall(f.tolist(), data["doc_of"], gold, k) for (_, f, _), gold in zip(fused, data["gold"])])


def score(table: dict, sets, methods, power: float, rule: str = "mean") -> tuple[float, float]:
    """(minus the points short of hybrid − FLOOR, mean or worst gain over hybrid) at the small k over ``sets``."""
    short, gains = 0.0, []
    for ds in sets:
        for k in SMALL:
            for method, by_power in table[ds][k]["methods"].items():
                if method not in methods:
                    continue
                gain = by_power[power] - table[ds][k]["hybrid"]
                short += max(0.0, -FLOOR - gain)
                gains.append(gain)
    if not gains:
        return 0.0, 0.0
    return round(-short, 6), float(np.mean(gains) if rule == "mean" else np.min(gains))


def pick(table: dict, sets, methods, rule: str = "mean") -> float:
    return max(POWERS, key=lambda p: (score(table, sets, methods, p, rule), -p))  # ties: the smaller power


def main(argv=None) -> None:
    args = work_args(argv, __doc__)
    sets = args.sets.split(",")
    table: dict = {}
    for ds in sets:
        data = load_rankings(args, ds)
        table[ds] = {}
        for k in TOP_KS:
            hybrid = 100.0 * float(np.mean([recall(h, data["doc_of"], g, k)
                                            for h, g in zip(data["hybrid"], data["gold"])]))
            row = {"hybrid": hybrid, "methods": {}}
            for method in METHODS:
                by_power = {}
                for power in (POWERS if k in SMALL else POWERS[:1]):
                    r = guarded_recalls(data, method, k, power)
                    if r is not None:
                        by_power[power] = 100.0 * float(r.mean())
                if by_power:
                    row["methods"][method] = by_power if k in SMALL else {p: by_power[0.0] for p in POWERS}
            table[ds][k] = row
    chosen = {name: pick(table, sets, group) for name, group in GROUPS.items()}
    left_out = {name: {ds: pick(table, [s for s in sets if s != ds], group) for ds in sets}
                for name, group in GROUPS.items()}
    group_of = {m: name for name, group in GROUPS.items() for m in group}
    print("# The hybrid guard at other top_k (benchmarks/guard_top_k.py)\n")
    print(f"recall@k in %, every question with gold, each method guarded at its shipped settings. "
          f"`guard_small_k_power` scales the graph weight by (k / 5) ** power below k 5 (k 5 and 10 are the same "
          f"under every power). Powers tried: {', '.join(f'{p:g}' for p in POWERS)}. Each cell: power 0 (no "
          f"scaling) / the power chosen on all sets (in) / the power chosen without the set (out); bold where *out* "
          f"is below hybrid − {FLOOR}.\n")
    for name in GROUPS:
        folds = ", ".join(f"{ds} {p:g}" for ds, p in left_out[name].items())
        print(f"- {name}: chosen on all {len(sets)} sets **{chosen[name]:g}**; with each set left out: {folds}")
    print()
    methods = [m for m in METHODS if any(m in table[ds][k]["methods"] for ds in sets for k in TOP_KS)]
    print("| dataset | k | hybrid | " + " | ".join(methods) + " |")
    print("|---|---:|---:|" + "---:|" * len(methods))
    for ds in sets:
        for k in TOP_KS:
            row = table[ds][k]
            cells = []
            for m in methods:
                by_power = row["methods"].get(m)
                if by_power is None:
                    cells.append("–")
                    continue
                out = by_power[left_out[group_of[m]][ds]]
                mark = "**" if out < row["hybrid"] - FLOOR else ""
                cells.append(f"{by_power[0.0]:.1f} / {by_power[chosen[group_of[m]]]:.1f} / {mark}{out:.1f}{mark}")
            print(f"| {ds} | {k} | {row['hybrid']:.1f} | " + " | ".join(cells) + " |")
    print(f"\nPer power, over all sets at k {' and '.join(map(str, SMALL))}: points short of hybrid − {FLOOR} "
          f"(summed over sets, k and methods) and the mean gain over hybrid:\n")
    for name, group in GROUPS.items():
        scores = {p: score(table, sets, group, p) for p in POWERS}
        figures = "; ".join(f"power {p:g}: short {-short:.1f}, mean gain {gain:+.2f}"
                            for p, (short, gain) in scores.items())
        print(f"- {name}: {figures}")

if __name__ == "__main__":
    main()
