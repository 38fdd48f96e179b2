"""In which order the guard lists the chunks its fusion chose (``GuardedConfig.guard_own_order_from``).

The fusion decides which top-5 chunks a graph method returns (recall@5); their order decides what a reader, or an
LLM with a short context, sees first (recall@1, recall@2). Per set and method, at each method's shipped guard
settings (the retriever's own arithmetic: ``guard_weight``, ``linked_hybrid``, ``fuse_rankings``):

* ``fusion``: the fused order (the default of every method but A2RAG);
* ``own from w``: the same chunks in the method's own order when the graph weight is at least w (the chunks the
  method did not rank follow in the fused order); w = 0.5 (the graph holds half the fusion) and any w > 0;
* the method's own ranking and hybrid's, beside them.

Reads the ``rankings.json`` of ``benchmarks/domain_tuning.py`` (its ``rank`` step), so run that first:

    python benchmarks/guard_order.py --work /tmp/graphrag-domain-tuning --tag default
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))  # domain_tuning, _common
from _common import SHARED_SETS, probe_args, recall_at as recall  # noqa: E402 (the folder on the path first)

SETS = SHARED_SETS
METHODS = ("a2rag@5", "hipporag", "agrag", "pathrag", "archrag")
K = 5
CUTS = (1, 2, 5)


def guarded(data: dict, key: str, k: int, **overrides) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Per question of ``rankings.json``: (the method's own ranking ``key``, the guard's fused top ``k``, the graph
    weight), the guard at the method's shipped settings with ``overrides``: the retriever's own arithmetic
    (``guard_weight``, ``linked_hybrid``, ``fuse_rankings``) on the saved rankings and signals."""
    from llama_index_graphrag_suite.methods.guard import fuse_rankings, guard_weight, linked_hybrid
    from llama_index_graphrag_suite.methods.guard.signals import HUB_MIN, HUB_SHARE, name_trust
    from llama_index_graphrag_suite.registry import resolve_method

    cfg = resolve_method(key.partition("@")[0], overrides).guard  # the guard as the registry runs the method
    if HUB_MIN != 20:
        raise SystemExit("rankings.json holds link shares for a hub floor of 20 chunks only")
    links = data["link_names" if cfg.guard_names_only else "link"][str(HUB_SHARE)]
    trust = name_trust(data["name_density"], cfg.guard_name_density)
    out = []
    for i in range(len(data["gold"])):
        g, h = np.asarray(data["methods"][key][i], np.int64), np.asarray(data["hybrid"][i], np.int64)
        agree = len(set(g[:k].tolist()) & set(h[:k].tolist())) / max(1, min(k, h.size))
        w = guard_weight(links[i], agree, cfg, trust, k)
        hk = linked_hybrid(h, np.asarray(data["cover"][i]), cfg.guard_cover_gain)
        out.append((g, fuse_rankings(g, hk, w, cfg.guard_rrf_k, k)[0], w))
    return out


def orders(data: dict, method: str) -> dict[str, list[list[int]]]:
    """Per ordering, per question: the chunk positions listed."""
    from llama_index_graphrag_suite.methods.guard.fusion import in_own_order

    out: dict[str, list[list[int]]] = {"fusion": [], "own from 0.5": [], "own from > 0": [], "own ranking": [],
                                       "hybrid": []}
    for (g, fused, w), h in zip(guarded(data, method, K), data["hybrid"]):
        own = fused[in_own_order(fused, g)].tolist()
        out["fusion"].append(fused.tolist())
        out["own from 0.5"].append(own if w >= 0.5 - 1e-9 else fused.tolist())
        out["own from > 0"].append(own if w > 0 else fused.tolist())
        out["own ranking"].append(g.tolist())
        out["hybrid"].append(h)
    return out


def work_args(argv, doc: str) -> argparse.Namespace:
    """The command line of the scripts that read domain_tuning.py's rankings."""
    return probe_args(doc, ",".join(SETS)).parse_args(argv)


def load_rankings(args: argparse.Namespace, ds: str) -> dict:
    return json.loads((Path(args.work) / args.tag / ds / "rankings.json").read_text())


def each_method(args: argparse.Namespace):
    """(set, its rankings.json, method) for every set of ``--sets`` and every method of :data:`METHODS` it ranked."""
    for ds in args.sets.split(","):
        data = load_rankings(args, ds)
        for method in METHODS:
            if method in data["methods"]:
                yield ds, data, method


def main(argv=None) -> None:
    args = work_args(argv, __doc__)
    print("# The order of the guard's top 5 (benchmarks/guard_order.py)\n")
    print("recall@1 / recall@2 / recall@5 in %, every question with gold, each method at its shipped guard settings; "
          "recall@5 is the same for every order of the fused chunks.\n")
    header = None
    for ds, data, method in each_method(args):
        listed = orders(data, method)
        if header is None:
            header = list(listed)
            print("| dataset | method | " + " | ".join(header) + " |")
            print("|---|---|" + "---:|" * len(header))
        cells = []
        for name in header:
            figures = [100.0 * float(np.mean([recall(r, data["doc_of"], g, k)
                                              for r, g in zip(listed[name], data["gold"])])) for k in CUTS]
            cells.append(" / ".join(f"{f:.1f}" for f in figures))
        print(f"| {ds} | {method} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
