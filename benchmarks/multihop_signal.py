"""Per-query multi-hop signals: when should a guarded method hand its top 5 to the method's own ranking (``:paper``;
A2RAG's ``:unguarded``)? Reads ``method_rankings.py``'s per-question top 5 of both, so a signal is a switch between
two measured rankings, and scores each signal by cross-validation over the questions of each set.

    python benchmarks/multihop_signal.py --rankings after.json --work /tmp/rankings [--folds 5]

Signals, each a yes/no per question with at most one threshold (chosen on the training folds):

* ``names>=n``: the question names at least ``n`` distinct specific named entities the graph knows (the guard's
  ``query_link``, named entities only, hubs left out): two linked names is the bridge pattern;
* ``agree>=a``: the method's own top 5 holds at least ``a`` of hybrid's top 5 (the walk kept hybrid's best and added
  to it, instead of wandering off);
* ``keeps_first``: the method's own top 5 holds hybrid's first chunk;
* ``relation``: the question has a relation word the graph's facts use (a predicate of a fact of a linked entity);
* conjunctions of the above.

Printed per set and method: recall@5 of hybrid, the guard, the method's own, and each signal's switch in-sample and
cross-validated (mean and spread over folds), with how often it fires.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

OWN = {"hipporag": "hipporag:paper", "agrag": "agrag:paper", "pathrag": "pathrag:paper",
       "archrag": "archrag:paper", "a2rag": "a2rag:unguarded"}
K = 5
WIKIPEDIA = ("2wiki_retrieval101", "hotpotqa_train100", "musique_train100")  # where the switch may fire


def covered(index, keys: list[str], top: list[str]) -> int:
    """How many of the question's entity ``keys`` a chunk of ``top`` (chunk ids, first K) is linked to."""
    linked = set().union(*(index.chunks[c].entities for c in top[:K])) if top else set()
    return sum(1 for key in keys if key in linked)


def features(index, questions: list[str]) -> dict[str, np.ndarray]:
    """Per question: distinct specific named entities linked (and their keys), whether a relation word of theirs
    is in it."""
    from llama_index_graphrag_suite.index.bm25 import bm25_tokens
    from llama_index_graphrag_suite.methods.guard.signals import hub_chunks, query_link

    hub = hub_chunks(len(index.chunk_order), 0.05, 20)
    said: dict[str, set[str]] = {}  # entity key -> the words of the predicates of its facts
    for fact in index.facts.values():
        words = set(bm25_tokens(fact.predicate))
        for end in (fact.subject, fact.object):
            said.setdefault(end, set()).update(words)
    names, relation, name_keys = [], [], []
    for q in questions:
        _, keys = query_link(index, q, hub, names_only=True)
        names.append(len(set(keys)))
        name_keys.append(sorted(set(keys)))
        words = set(bm25_tokens(q))
        relation.append(any(words & said.get(key, set()) for key in set(keys)))
    return {"names": np.asarray(names), "relation": np.asarray(relation), "keys": name_keys}


def recalls(top: list[list[str]], doc_of: dict[str, str], gold: list[set[str]]) -> np.ndarray:
    return np.asarray([len(g & {doc_of[c] for c in t[:K]}) / len(g) for t, g in zip(top, gold)])


def signal_family(feat: dict[str, np.ndarray], own_top, hybrid_top, index=None,
                  guard_top=None) -> dict[str, np.ndarray]:
    """Every candidate switch (yes/no per question), by name. With ``index`` and ``guard_top``: ``names_kept``, the
    method's own top 5 is linked to at least as many of the question's named entities as the guard's (the walk
    dropped no name the fusion keeps), alone and with ``keeps_first``; ``keeps_first&no_name_lost``, the same without
    asking for a name (a question that names none loses none)."""
    agree = np.asarray([len(set(o[:K]) & set(h[:K])) for o, h in zip(own_top, hybrid_top)])
    first = np.asarray([bool(h) and h[0] in o[:K] for o, h in zip(own_top, hybrid_top)])
    out: dict[str, np.ndarray] = {}
    if index is not None and guard_top is not None:
        kept = np.asarray([covered(index, keys, o) >= covered(index, keys, g)
                           for keys, o, g in zip(feat["keys"], own_top, guard_top)])
        out["names_kept"] = kept & (feat["names"] >= 1)
        out["names_kept&keeps_first"] = out["names_kept"] & first
        out["keeps_first&no_name_lost"] = kept & first  # a question naming nothing loses no name
    for n in (1, 2, 3):
        out[f"names>={n}"] = feat["names"] >= n
    for a in (1, 2, 3, 4):
        out[f"agree>={a}"] = agree >= a
    out["keeps_first"] = first
    out["relation"] = feat["relation"]
    for n, a in itertools.product((1, 2), (2, 3)):
        out[f"names>={n}&agree>={a}"] = (feat["names"] >= n) & (agree >= a)
    out["names>=2&keeps_first"] = (feat["names"] >= 2) & first
    out["names>=1&relation"] = (feat["names"] >= 1) & feat["relation"]
    return out


def cross_validate(r_guard, r_own, switches: dict[str, np.ndarray], family: list[str], folds: int, seed: int = 0):
    """Per fold: pick the signal of ``family`` best on the other folds, score it on this one. Returns (mean recall,
    per-fold gains over the guard in points, the signals picked)."""
    n = r_guard.size
    order = np.random.default_rng(seed).permutation(n)
    parts = np.array_split(order, folds)
    got, gains, picked = np.zeros(n), [], []
    for i, test in enumerate(parts):
        train = np.concatenate([p for j, p in enumerate(parts) if j != i])
        best = max(family, key=lambda s: (np.where(switches[s][train], r_own[train], r_guard[train]).mean(), -len(s)))
        picked.append(best)
        got[test] = np.where(switches[best][test], r_own[test], r_guard[test])
        gains.append(100 * (got[test].mean() - r_guard[test].mean()))
    return 100 * got.mean(), gains, picked


def leave_one_set_out(dump: dict, sets: list[str]) -> list[str]:
    """For each of ``sets`` left out: the signal best on the others (the floor first: 10x every point a method falls
    below its own ranking - 0.5; then the mean gain over the guard), scored on the one left out. Signals that tie
    on the others are all named: the pick among them is arbitrary."""
    if len(sets) < 2:
        return []

    def switched(name: str, method: str, signal: str) -> tuple[np.ndarray, dict]:
        v = dump[name][method]
        r = {k: np.asarray(x) for k, x in v["_r"].items()}
        return np.where(np.asarray(v[signal], bool), r["own"], r["guard"]), r

    def objective(names: list[str], signal: str) -> float:
        total, count = 0.0, 0
        for name in names:
            for method in dump[name]:
                got, r = switched(name, method, signal)
                short = max(0.0, 100 * (r["own"].mean() - got.mean()) - 0.5)
                total += 100 * (got.mean() - r["guard"].mean()) - 10 * short
                count += 1
        return round(total / count, 9)

    lines = ["", "## Leave one set out (the signal picked on the others, scored on the one left out)", ""]
    family = sorted(k for k in next(iter(dump[sets[0]].values())) if not k.startswith("_"))
    for out in sets:
        rest = [n for n in sets if n != out]
        scores = {s: objective(rest, s) for s in family}
        top = max(scores.values())
        picked = sorted(s for s, v in scores.items() if v == top)
        for signal in picked:
            cells = []
            for method in dump[out]:
                got, r = switched(out, method, signal)
                cells.append(f"{method} {100 * got.mean():.1f} (own {100 * r['own'].mean():.1f}, "
                             f"guard {100 * r['guard'].mean():.1f})")
            lines.append(f"- {out} left out, `{signal}`{' (tied)' if len(picked) > 1 else ''}: " + "; ".join(cells))
    return lines


def main() -> None:
    from llama_index_graphrag_suite.eval.bench import build_or_load_index
    from llama_index_graphrag_suite.eval.datasets import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rankings", required=True, help="method_rankings.py --out (guarded and own rankings)")
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--work", required=True, help="method_rankings.py --work (the indexes)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--out", help="write the per-question switches (JSON)")
    args = ap.parse_args()
    data = json.loads(Path(args.rankings).read_text(encoding="utf-8"))
    dump = {}
    for name, ranked in data.items():
        dataset = load_dataset(Path(args.datasets) / name)
        index, _ = build_or_load_index(dataset, Path(args.work) / name, None, None, show_progress=False)
        qs = [q for q in dataset.questions if q.supporting_ids][: ranked.get("questions") or None]
        gold = [set(q.supporting_ids) for q in qs]
        doc_of = {c: index.chunks[c].doc_id for c in index.chunk_order}
        methods = ranked["methods"]
        hybrid_top = methods["hybrid"]["top"]
        feat = features(index, [q.question for q in qs])
        r_h = recalls(hybrid_top, doc_of, gold)
        print(f"\n## {name} ({len(qs)} questions; names>=2 in {100 * (feat['names'] >= 2).mean():.0f} %)")
        print("| method | hybrid | guard | own | best signal in-sample | its recall | fires % | CV recall | "
              "CV gain per fold | signals picked |")
        print("|---|---:|---:|---:|---|---:|---:|---:|---|---|")
        for method, own in OWN.items():
            if method not in methods or own not in methods:
                continue
            r_g = recalls(methods[method]["top"], doc_of, gold)
            r_o = recalls(methods[own]["top"], doc_of, gold)
            switches = signal_family(feat, methods[own]["top"], hybrid_top, index, methods[method]["top"])
            family = sorted(switches)
            best = max(family, key=lambda s: (np.where(switches[s], r_o, r_g).mean(), -len(s)))
            insample = 100 * np.where(switches[best], r_o, r_g).mean()
            cv, gains, picked = cross_validate(r_g, r_o, switches, family, args.folds)
            print(f"| {method} | {100 * r_h.mean():.1f} | {100 * r_g.mean():.1f} | {100 * r_o.mean():.1f} | {best} | "
                  f"{insample:.1f} | {100 * switches[best].mean():.0f} | {cv:.1f} | "
                  f"{' '.join(f'{g:+.1f}' for g in gains)} | {', '.join(sorted(set(picked)))} |")
            dump.setdefault(name, {})[method] = {s: v.tolist() for s, v in switches.items()}
            dump[name][method]["_r"] = {"guard": r_g.tolist(), "own": r_o.tolist(), "hybrid": r_h.tolist()}
    print("\n".join(leave_one_set_out(dump, [n for n in dump if n in WIKIPEDIA])))
    if args.out:
        Path(args.out).write_text(json.dumps(dump) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
