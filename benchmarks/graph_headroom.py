"""How much room a graph method has to lift hybrid's recall@5, read from the chunks it would bring in.

A guarded method returns hybrid's top 5 re-ordered, with some of hybrid's last chunks replaced by chunks its own
ranking puts higher. Such a swap gains only when the chunk brought in is gold more often than the chunk it
replaces. Per set and method, on the rankings of ``benchmarks/domain_tuning.py`` (its ``rank`` step):

* ``hybrid #4``, ``#5``: how often hybrid's 4th and 5th chunks are gold (a chunk is gold when its passage is);
* ``1st outside``: how often the method's best-ranked chunk outside hybrid's top 5 is gold, in all and by where
  hybrid ranks it (6-10, 11-20, beyond 20; the count of questions in brackets);
* ``swap 5th``: recall@5 when that chunk always replaces hybrid's 5th; ``oracle``: the better of hybrid and that
  swap, per question (what a perfect per-query signal could reach with one swap).

Where ``1st outside`` is not above ``hybrid #5`` in some hybrid-rank bucket, no signal that only decides *whether*
to swap can gain much: it would have to find the few questions where the swap is right.

    python benchmarks/graph_headroom.py --work /tmp/graphrag-domain-tuning --tag default
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from _common import recall_at  # noqa: E402 (the folder on the path first)
from guard_order import K, each_method, work_args  # noqa: E402

BUCKETS = ("6-10", "11-20", ">20")  # hybrid's rank of the chunk brought in (1-based; it is never in the top 5)


def bucket(rank: int | None) -> str:
    """The bucket of a 0-based hybrid rank; None (not in hybrid's saved top 20) is beyond 20."""
    return ">20" if rank is None or rank >= 20 else "11-20" if rank >= 10 else "6-10"


def first_outside(own: list[int], hybrid: list[int], doc_of: list[str], k: int = K) -> tuple[int | None, int | None]:
    """The method's best-ranked chunk whose passage is not among hybrid's top ``k`` passages, and hybrid's rank of
    it (0-based; None when hybrid's saved list, its top 20, does not hold it). ``(None, None)`` when there is none."""
    top = {doc_of[c] for c in hybrid[:k]}
    for c in own:
        if doc_of[c] not in top:
            return c, hybrid.index(c) if c in hybrid else None
    return None, None


def headroom(data: dict, method: str, k: int = K) -> dict:
    """The figures of one row (fractions, not percents) and the bucket counts."""
    doc_of = data["doc_of"]
    at_rank = {r: [] for r in (k - 2, k - 1)}
    outside, hyb, swap, best = [], [], [], []  # gold hits of the chunk brought in; recall@5 per question
    buckets: dict[str, list[float]] = {name: [] for name in BUCKETS}
    for own, h, gold in zip(data["methods"][method], data["hybrid"], data["gold"]):
        g = set(gold)
        for r in at_rank:
            at_rank[r].append(float(doc_of[h[r]] in g) if r < len(h) else 0.0)
        base = recall_at(h, doc_of, gold, k)
        chunk, rank = first_outside(own, h, doc_of, k)
        hyb.append(base)
        if chunk is None:  # the method ranks nothing outside hybrid's top 5: no swap
            swap.append(base)
            best.append(base)
            continue
        hit = float(doc_of[chunk] in g)
        outside.append(hit)
        buckets[bucket(rank)].append(hit)
        swapped = recall_at(list(h[: k - 1]) + [chunk], doc_of, gold, k)
        swap.append(swapped)
        best.append(max(base, swapped))
    mean = lambda xs: float(np.mean(xs)) if xs else float("nan")  # noqa: E731
    return {"hybrid_at": {r + 1: mean(v) for r, v in at_rank.items()}, "outside": mean(outside),
            "buckets": {n: (mean(v), len(v)) for n, v in buckets.items()},
            "recall": {"hybrid": mean(hyb), "swap": mean(swap), "oracle": mean(best)}}


def pct(x: float) -> str:
    return "-" if x != x else f"{100 * x:.1f}"


def main(argv=None) -> None:
    args = work_args(argv, __doc__)
    print("# Room for a graph method above hybrid (benchmarks/graph_headroom.py)\n")
    print("% of questions whose chunk is gold; recall@5 in %; each method's own ranking (guard off).\n")
    print("| dataset | method | hybrid #4 | hybrid #5 | 1st outside | its hybrid rank 6-10 | 11-20 | >20 "
          "| recall@5 hybrid | swap 5th | oracle |")
    print("|---|---|" + "---:|" * 9)
    for ds, data, method in each_method(args):
        row = headroom(data, method)
        cells = [pct(row["hybrid_at"][K - 1]), pct(row["hybrid_at"][K]), pct(row["outside"])]
        cells += [f"{pct(p)} ({n})" for p, n in row["buckets"].values()]
        cells += [pct(row["recall"][x]) for x in ("hybrid", "swap", "oracle")]
        print(f"| {ds} | {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
