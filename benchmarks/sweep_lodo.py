"""Would a method's own two-parameter default survive leave-one-dataset-out? Read from tuning.py's sweep tables.

``benchmarks/tuning.py`` sweeps a method's settings on each set it is given (the guard on, as shipped). For a sweep
over a grid of two parameters (PathRAG's ``sparse_weight`` x ``path_weight``, ArchRAG's ``sparse_weight`` x
``item_weight``), this reads each set's table and picks a setting the way ``benchmarks/domain_tuning.py`` picks the
guard's (the same objective, floor and rules, :data:`domain_tuning.PICK_RULES`): on all the sets (in-sample) and,
for each set, on the others (left-out). A default whose left-out figures stay near its in-sample ones carries from
corpus to corpus; a gain that only the set itself predicts does not.

    python benchmarks/sweep_lodo.py --tables benchmarks/results/tuning.txt --method pathrag \\
        --params sparse_weight,path_weight --default "sparse_weight 0.25, path_weight 0.2"
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from domain_tuning import PICK_RULES, grid_neighbours, pick_setting  # noqa: E402

SECTION = re.compile(r"^## Tuning sweeps on `([^`]+)`", re.M)


def read_tables(paths: list[Path], method: str) -> dict[str, dict[str, float]]:
    """``{set: {row label: recall@5}}`` of ``method``'s rows, and each set's hybrid under the label ``hybrid``."""
    tables: dict[str, dict[str, float]] = {}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        starts = [(m.start(), m.group(1)) for m in SECTION.finditer(text)]
        for (start, name), (end, _) in zip(starts, starts[1:] + [(len(text), "")]):
            rows = tables.setdefault(name, {})
            for line in text[start:end].splitlines():
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 5 and cells[0] in (method, "hybrid") and cells[3][:1].isdigit():
                    rows["hybrid" if cells[0] == "hybrid" else cells[1]] = float(cells[3])
    return tables


def grid_of(labels, params: list[str], default_label: str, default: str) -> dict[tuple[float, ...], str]:
    """The grid setting each row label names: ``"p 0.25, q 0.1"``, or the default row (``default`` spells its
    values the same way)."""
    pattern = re.compile(", ".join(rf"{p} ([\d.]+)" for p in params) + "$")
    out = {}
    for label in labels:
        m = pattern.match(default if label == default_label else label)
        if m:
            out[tuple(float(v) for v in m.groups())] = label
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", required=True, help="tuning.py outputs (markdown)")
    ap.add_argument("--method", required=True)
    ap.add_argument("--params", required=True, help="the two swept parameters, as the row labels name them")
    ap.add_argument("--default", required=True, help="the default row's values, spelt like a row label")
    args = ap.parse_args()
    tables = read_tables([Path(p) for p in args.tables], args.method)
    sets = [s for s, rows in tables.items() if "hybrid" in rows]
    default_label = next((label for label in tables[sets[0]] if label.startswith("default")), "")
    common = set.intersection(*(set(tables[s]) for s in sets))
    grid = grid_of(sorted(common), args.params.split(","), default_label, args.default)
    keys = sorted(grid)  # itertools.product order of each parameter's sorted values
    shape = [len({k[d] for k in keys}) for d in range(len(keys[0]))]
    if len(keys) != int(np.prod(shape)):
        raise SystemExit(f"{args.method}: the sweep is not a full grid of {args.params} ({len(keys)} settings)")
    near = grid_neighbours(shape)
    gains = {(s, args.method): np.array([tables[s][grid[k]] - tables[s]["hybrid"] for k in keys]) for s in sets}
    recall = {s: np.array([tables[s][grid[k]] for k in keys]) for s in sets}

    def name(i: int) -> str:
        return ", ".join(f"{p} {v:g}" for p, v in zip(args.params.split(","), keys[i]))

    print(f"## {args.method}: {args.params} by leave-one-dataset-out ({len(keys)} settings, {len(sets)} sets)\n")
    print("recall@5 minus hybrid's, per set (guard on, from tuning.py):\n")
    print("| setting | " + " | ".join(sets) + " |")
    print("|---|" + "---:|" * len(sets))
    for i, k in enumerate(keys):
        mark = " (default)" if grid[k] == default_label else ""
        print(f"| {name(i)}{mark} | " + " | ".join(f"{gains[s, args.method][i]:+.1f}" for s in sets) + " |")
    for rule, description in PICK_RULES.items():
        best = pick_setting(rule, gains, sets, [args.method], near)
        print(f"\n**{rule}** ({description}): in-sample pick {name(best)}\n")
        print("| left out | its pick | left-out recall@5 | in-sample recall@5 | gap | hybrid |")
        print("|---|---|---:|---:|---:|---:|")
        for s in sets:
            pick = pick_setting(rule, gains, [x for x in sets if x != s], [args.method], near)
            gap = recall[s][best] - recall[s][pick]
            print(f"| {s} | {name(pick)} | {recall[s][pick]:.1f} | {recall[s][best]:.1f} | {gap:+.1f} | "
                  f"{tables[s]['hybrid']:.1f} |")


if __name__ == "__main__":
    main()
