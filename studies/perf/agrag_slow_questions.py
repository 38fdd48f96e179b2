"""Where AGRAG's per-query time goes on a large index, question by question, and for the slowest ones.

    python studies/perf/agrag_slow_questions.py INDEX_DIR QUESTIONS.jsonl [--questions 100] [--method agrag]
        [--embed hash] [--slowest 10] [--save OUT.json] [--compare BEFORE.json]

One process. Query embeddings are computed first (excluded), one warm-up query builds the per-snapshot structures,
then every question is retrieved once, timed (CPU and wall ms), and once more under cProfile: per question the
cumulative CPU ms of the steps below (a step's time includes what it calls) and the Steiner search's statistics
(radius, row entries read, whether the budget stopped it). Prints p50/p95 of the unprofiled times, recall@5 on
the questions' supporting ids, the steps' p50/p95, and for the ``--slowest`` questions their steps and their most
expensive functions (own time). ``--save`` writes each question's top 5 (ids, scores) and times; ``--compare``
counts the questions whose top 5 ids (and scores) equal a saved run's. At 300,000+ passages run it under
``flock /work/scratch/m61.lock``.

``--ab``: instead, per question, the retrieval ``before`` (steiner.py's numpy/scipy searches and every entity row's
listed cosine) and ``after`` (the compiled search first, the synonym-edge entities' rows only), alternating which
runs first, in one process: CPU and wall p50/p95 of both, recall@5 of both, and how many top 5s are equal.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.eval.metrics import recall_at
from llama_index_graphrag_suite.graph import steiner as steiner_module
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.methods.agrag import retriever as agrag_module
from llama_index_graphrag_suite.registry import get_retriever

# (label, file suffix, function name): cumulative CPU time of these per question
STEPS = [
    ("retrieve", "base/base_retriever.py", "retrieve"),
    ("hybrid", "methods/query_scores.py", "hybrid_scores"),
    ("table.scores", "index/vectors.py", "scores"),
    ("table.at", "index/vectors.py", "at"),
    ("slot_costs", "agrag/retriever.py", "_slot_costs"),
    ("  entity_cos", "agrag/retriever.py", "_entity_cosines"),
    ("ppr", "graph/ppr.py", "personalized_pagerank"),
    ("ppr push", "graph/ppr.py", "pushed_pagerank"),
    ("  push rounds", "graph/ppr_push.py", "_rounds"),
    ("fact_mapping", "agrag/retriever.py", "_search_facts"),
    ("steiner", "graph/steiner.py", "steiner_tree"),
    ("  ball.grow", "graph/steiner.py", "grow"),
    ("  terminal_mst", "graph/steiner.py", "_terminal_mst"),
    ("  subgraph", "graph/steiner.py", "__init__"),
    ("  paths", "graph/steiner.py", "_bounded_paths"),
    ("  gather", "graph/costs.py", "gather"),
    ("  shared_csr", "graph/costs.py", "shared_csr"),
    ("  voronoi", "graph/steiner_search.py", "_voronoi"),
    ("mcmi", "graph/mcmi.py", "mcmi_expand"),
    ("guard.fuse", "guard/retriever.py", "fuse"),
]


def pct(values) -> str:
    return f"p50 {np.percentile(values, 50):7.1f}  p95 {np.percentile(values, 95):7.1f}  max {np.max(values):7.1f}"


def step_times(stats: pstats.Stats) -> dict[str, float]:
    out = {label: 0.0 for label, _, _ in STEPS}
    for (path, _, name), (_, _, _, cum, _) in stats.stats.items():
        for label, suffix, fname in STEPS:
            if name == fname and path.endswith(suffix):
                out[label] += 1000 * cum  # recursion is not expected in these
    return out


def top_functions(stats: pstats.Stats, n: int) -> list[str]:
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:n]
    return [f"{1000 * tt:7.1f} ms own {calls:6d} calls  {path.split('site-packages/')[-1].split('wt61A/')[-1]}:"
            f"{line}({name})" for (path, line, name), (_, calls, tt, _, _) in rows]


def chunk_ids(nodes) -> list[tuple[str, float]]:
    return [(str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id), float(n.score or 0.0))
            for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index_dir")
    ap.add_argument("questions")
    ap.add_argument("--questions", dest="count", type=int, default=100)
    ap.add_argument("--method", default="agrag")
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--slowest", type=int, default=10)
    ap.add_argument("--functions", type=int, default=12)
    ap.add_argument("--save")
    ap.add_argument("--compare")
    ap.add_argument("--ab", action="store_true")
    args = ap.parse_args()

    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index_dir, embed_model=args.embed)
    print(f"load {time.perf_counter() - start:.1f} s", flush=True)
    questions = load_questions(args.questions)[0][: args.count]
    for q in questions:
        index.embed_query(q.question)
    retriever = get_retriever(index, args.method, top_k=5)
    cpu = time.process_time()
    retriever.retrieve(questions[0].question)
    print(f"warm-up (first query) {time.process_time() - cpu:.2f} CPU s", flush=True)

    if args.ab:
        return ab(retriever, questions)
    searches: list[dict] = []
    real_steiner = steiner_module.steiner_tree

    def steiner_with_stats(*a, **kw):
        kw["stats"] = stats = {}
        start = time.process_time()
        out = real_steiner(*a, **kw)
        stats["ms"] = 1000 * (time.process_time() - start)
        stats["terminals"] = len(a[1])
        searches.append(stats)
        return out

    agrag_module.steiner_tree = steiner_with_stats
    runs = []
    for q in questions:
        searches.clear()
        cpu, wall = time.process_time(), time.perf_counter()
        nodes = retriever.retrieve(q.question)
        cpu, wall = 1000 * (time.process_time() - cpu), 1000 * (time.perf_counter() - wall)
        top = chunk_ids(nodes)
        profile = cProfile.Profile(time.process_time)
        profile.enable()
        retriever.retrieve(q.question)
        profile.disable()
        stats = pstats.Stats(profile)
        runs.append({"id": q.id, "cpu": cpu, "wall": wall, "top": top, "steps": step_times(stats),
                     "funcs": top_functions(stats, args.functions), "steiner": dict(searches[0]) if searches else {},
                     "recall": recall_at([c for c, _ in top], q.supporting_ids, 5)})
    cpus, walls = [r["cpu"] for r in runs], [r["wall"] for r in runs]
    print(f"{args.method}: {len(runs)} questions; CPU ms {pct(cpus)}; wall ms {pct(walls)}; "
          f"recall@5 {100 * np.mean([r['recall'] for r in runs]):.1f}")
    print("steps under cProfile (cumulative CPU ms per question):")
    for label, _, _ in STEPS:
        print(f"  {label:14s} {pct([r['steps'][label] for r in runs])}")
    st = [r["steiner"] for r in runs if r["steiner"]]
    if st:
        print(f"steiner searches {len(st)}: radius {pct([s['radius'] for s in st])}; voronoi entries "
              f"{pct([s['voronoi_entries'] for s in st])}; stopped {sum(s['voronoi_stopped'] for s in st)}, "
              f"whole graph {sum(s['whole_graph'] for s in st)}")
    for r in sorted(runs, key=lambda r: -r["cpu"])[: args.slowest]:
        s = r["steiner"]
        print(f"\n== {r['id']}: CPU {r['cpu']:.1f} ms, wall {r['wall']:.1f} ms; steiner: "
              + (f"{s['terminals']} terminals, {s['ms']:.1f} ms, radius {s['radius']:.3f}, voronoi entries "
                 f"{s['voronoi_entries']}, stopped {s['voronoi_stopped']}, path stops {s['path_stops']}, "
                 f"whole {s['whole_graph']}" if s else "none"))
        print("   " + ", ".join(f"{k.strip()} {v:.0f}" for k, v in r["steps"].items() if v >= 1))
        for line in r["funcs"]:
            print("   " + line)
    if args.save:
        with open(args.save, "w") as f:
            json.dump([{k: r[k] for k in ("id", "cpu", "wall", "top", "steps", "steiner", "recall")} for r in runs], f)
    if args.compare:
        with open(args.compare) as f:
            before = {r["id"]: r for r in json.load(f)}
        pairs = [(before[r["id"]]["top"], r["top"]) for r in runs if r["id"] in before]
        same_ids = sum([c for c, _ in a] == [c for c, _ in b] for a, b in pairs)
        same = sum([(c, round(s, 9)) for c, s in a] == [(c, round(s, 9)) for c, s in b] for a, b in pairs)
        print(f"same top-5 ids as {args.compare}: {same_ids} of {len(pairs)} (ids and scores: {same})")


def ab(retriever, questions) -> None:
    graph, compiled_min = getattr(retriever, "inner", retriever)._graph(), steiner_module.COMPILED_MIN_ENTRIES
    ends = graph.synonyms

    def setting(name: str) -> None:
        graph.synonyms = ends if name == "after" else None
        steiner_module.COMPILED_MIN_ENTRIES = compiled_min if name == "after" else 1 << 62

    runs = {"before": [], "after": []}
    for i, q in enumerate(questions):
        for name in (("before", "after") if i % 2 == 0 else ("after", "before")):
            setting(name)
            cpu, wall = time.process_time(), time.perf_counter()
            top = chunk_ids(retriever.retrieve(q.question))
            runs[name].append({"cpu": 1000 * (time.process_time() - cpu), "wall": 1000 * (time.perf_counter() - wall),
                               "top": top, "recall": recall_at([c for c, _ in top], q.supporting_ids, 5)})
    setting("after")
    for name, rs in runs.items():
        print(f"{name:6s} CPU ms {pct([r['cpu'] for r in rs])}; wall ms {pct([r['wall'] for r in rs])}; "
              f"recall@5 {100 * np.mean([r['recall'] for r in rs]):.1f}")
    pairs = list(zip(runs["before"], runs["after"]))
    print(f"same top-5 ids: {sum([c for c, _ in a['top']] == [c for c, _ in b['top']] for a, b in pairs)} of "
          f"{len(pairs)}; ids and scores: {sum(a['top'] == b['top'] for a, b in pairs)}")
    slow = sorted(range(len(pairs)), key=lambda i: -pairs[i][0]["cpu"])[:10]
    print("slowest before -> after CPU ms: " + ", ".join(
        f"{questions[i].id} {pairs[i][0]['cpu']:.0f}->{pairs[i][1]['cpu']:.0f}" for i in slow))


if __name__ == "__main__":
    main()
