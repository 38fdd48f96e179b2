"""AGRAG's Steiner search per question: steiner.py's numpy/scipy searches against steiner_search.py's compiled one.

    python studies/perf/agrag_steiner_compiled.py INDEX_DIR QUESTIONS.jsonl COUNT

The same Eq. 14 slots for both, fresh query costs for each, the order alternating per question; CPU ms of each by
the Voronoi search's row entries, whether the trees cost the same, and sums by width. At 300,000+ passages run it
under ``flock /work/scratch/m61.lock``. Results: ``studies/perf/results/agrag_slow_questions.md``.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.graph import steiner
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.methods.query_scores import hybrid_scores
from llama_index_graphrag_suite.registry import get_retriever


def main() -> None:
    index = GraphRAGIndex.load(sys.argv[1], embed_model="hash")
    questions = load_questions(sys.argv[2])[0][: int(sys.argv[3])]
    agrag = get_retriever(index, "agrag:paper", top_k=5)
    graph, snap, rows = agrag._graph(), index.snapshot, []
    compiled_min = steiner.COMPILED_MIN_ENTRIES
    for i, q in enumerate(questions):
        vec, hyb = index.embed_query(q.question), hybrid_scores(index, q.question)
        sims = index.fact_vectors.scores(vec)
        kept, _ = agrag.filter_facts(q.question, agrag._search_facts(sims, 5))
        terms = sorted({snap.row(k) for f, _ in kept for k in (index.facts[f].subject, index.facts[f].object)})
        if len(terms) < 2:
            continue
        slots, res = agrag._slot_costs(graph, vec, hyb, sims), {}
        for name in (("old", "new") if i % 2 == 0 else ("new", "old")):
            steiner.COMPILED_MIN_ENTRIES = 1 << 62 if name == "old" else compiled_min
            stats, costs = {}, graph.pairs.query(slots)
            start = time.process_time()
            tree = steiner.steiner_tree(costs, terms, stats=stats)
            res[name] = (1000 * (time.process_time() - start), stats["voronoi_entries"], sum(c for *_, c in tree))
        rows.append((res["new"][1], res["old"][0], res["new"][0], abs(res["old"][2] - res["new"][2]) < 1e-9))
    rows.sort()
    for r in rows:
        print(f"entries {r[0]:7d} old {r[1]:7.1f} new {r[2]:7.1f} samecost {r[3]}")
    a = np.array([r[:3] for r in rows])
    for lim in (1 << 14, 1 << 15, 1 << 16, 1 << 17, 1 << 18, 1 << 30):
        sel = a[:, 0] <= lim
        print(f"<= {lim}: n {sel.sum()} old sum {a[sel, 1].sum():.0f} new sum {a[sel, 2].sum():.0f}")
    print(f"equal tree costs: {sum(r[3] for r in rows)} of {len(rows)}")


if __name__ == "__main__":
    main()
