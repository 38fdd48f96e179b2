"""AGRAG's Steiner search on a large index: unbounded (the whole-graph fallback) against the search budget.

    python studies/perf/agrag_at_scale.py INDEX_DIR QUESTIONS.jsonl [--questions 30] [--embed hash]
        [--budget 524288] [--retrieve]

Per question (query embeddings computed beforehand): AGRAG's terminals and Eq. 14 slot costs as the retriever
makes them (``agrag``, timed once), then the Steiner tree twice on fresh query cost graphs, ``before``
(``max_entries=None``: no budget, the search prices the whole graph when it grows past 1/8 of it) and
``after`` (the budget): CPU ms, the Voronoi search's radius and row entries read, the rows and entries priced,
whether the whole graph was priced, whether the Voronoi search stopped at the budget (then the tree
is a forest) and how many path searches did (``stops V/P``), the tree's cost and whether both trees
are equal. Then p50/p95 of both. ``--retrieve`` also times whole retrievals (``agrag`` with
``steiner_max_entries`` None and the budget, alternating per question) and gives recall@5 of both.
At 1,000,000 passages run it under ``flock /work/scratch/m1.lock``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.eval.metrics import recall_at
from llama_index_graphrag_suite.graph.steiner import MAX_ENTRIES, steiner_tree
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.methods.query_scores import hybrid_scores
from llama_index_graphrag_suite.registry import get_retriever


def pct(values: list[float]) -> str:
    return f"p50 {np.percentile(values, 50):7.1f}  p95 {np.percentile(values, 95):7.1f}"


def steiner_run(graph, slots, terminals, budget) -> dict:
    costs = graph.pairs.query(slots)  # fresh: no rows priced by the other run
    stats: dict = {}
    start = time.process_time()
    tree = steiner_tree(costs, terminals, max_entries=budget, stats=stats)
    stats["ms"] = 1000 * (time.process_time() - start)
    rows = np.flatnonzero(costs._priced)
    stats["rows"] = rows.size
    stats["entries"] = int((graph.pairs.indptr[rows + 1] - graph.pairs.indptr[rows]).sum())
    stats["tree"] = tree
    stats["cost"] = sum(c for _, _, c in tree)
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index_dir")
    parser.add_argument("questions")
    parser.add_argument("--questions", dest="count", type=int, default=30)
    parser.add_argument("--embed", default="hash")
    parser.add_argument("--budget", type=int, default=MAX_ENTRIES)
    parser.add_argument("--retrieve", action="store_true")
    args = parser.parse_args()
    index = GraphRAGIndex.load(args.index_dir, embed_model=args.embed)
    questions = load_questions(args.questions)[0][: args.count]
    for q in questions:
        index.embed_query(q.question)
    agrag = get_retriever(index, "agrag:paper", top_k=5)
    graph = agrag._graph()
    print(f"graph: {graph.pairs.num_nodes} nodes, {graph.pairs.indices.size} row entries; budget {args.budget}")
    runs: dict[str, list[dict]] = {"before": [], "after": []}
    slot_ms = []
    for q in questions:
        vec = index.embed_query(q.question)
        hyb = hybrid_scores(index, q.question)
        sims = index.fact_vectors.scores(vec)
        kept, _ = agrag.filter_facts(q.question, agrag._search_facts(sims, agrag.config.fact_top_k))
        snap = index.snapshot
        terminals = sorted({snap.row(k) for f, _ in kept for k in (index.facts[f].subject, index.facts[f].object)})
        start = time.process_time()
        slots = agrag._slot_costs(graph, vec, hyb, sims)
        slot_ms.append(1000 * (time.process_time() - start))
        if len(terminals) < 2:
            continue
        line = f"{q.id} terms {len(terminals):2d}"
        for name, budget in (("before", None), ("after", args.budget)):
            s = steiner_run(graph, slots, terminals, budget)
            runs[name].append(s)
            line += (f" | {name} {s['ms']:7.1f} ms r {s['radius']:.2f} voronoi {s['voronoi_entries']:8d} "
                     f"rows {s['rows']:7d} entries {s['entries']:8d} whole {int(s['whole_graph'])} "
                     f"stops {int(s['voronoi_stopped'])}/{s['path_stops']} cost {s['cost']:.3f}")
        line += f" | same {runs['before'][-1]['tree'] == runs['after'][-1]['tree']}"
        print(line, flush=True)
    print(f"slot costs ms: {pct(slot_ms)}")
    for name, stats in runs.items():
        print(f"steiner {name:6s} ms: {pct([s['ms'] for s in stats])}; entries priced "
              f"{pct([s['entries'] for s in stats])}; whole graph {sum(s['whole_graph'] for s in stats)}, "
              f"Voronoi stopped in {sum(s['voronoi_stopped'] for s in stats)}, path searches stopped in "
              f"{sum(bool(s['path_stops']) for s in stats)} of {len(stats)}")
    same = sum(a["tree"] == b["tree"] for a, b in zip(runs["before"], runs["after"]))
    print(f"identical trees: {same} of {len(runs['before'])}")
    if not args.retrieve:
        return
    retrievers = {name: get_retriever(index, "agrag", top_k=5, steiner_max_entries=budget)
                  for name, budget in (("before", None), ("after", args.budget))}
    cpu = {name: [] for name in retrievers}
    recall = {name: [] for name in retrievers}
    for r in retrievers.values():
        r.retrieve(questions[0].question)  # warm-up: per-snapshot structures
    for q in questions:
        for name, r in retrievers.items():
            start = time.process_time()
            nodes = r.retrieve(q.question)
            cpu[name].append(1000 * (time.process_time() - start))
            ranked = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes
                      if n.node.metadata.get("kind", "chunk") == "chunk"]
            recall[name].append(recall_at(ranked, q.supporting_ids, 5))
    for name in retrievers:
        print(f"agrag retrieve {name:6s} CPU ms: {pct(cpu[name])}; recall@5 {100 * np.mean(recall[name]):.1f} "
              f"({len(questions)} questions)")


if __name__ == "__main__":
    main()
