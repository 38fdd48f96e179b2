"""Two copies of one index loaded in one process, each question timed on both in turns (order alternating).

    python studies/perf/two_indexes_ab.py INDEX_A INDEX_B METHODS [SYNTH_DIR]

For a storage change that leaves the rankings alone (say, a table stored in another layout): A and B hold the same
rows, so each method's top 5 must agree on every question; p50/p95 per side, the ratio of the medians and the
median of the per-question ratios. Both indexes stay loaded, so leave room for two in memory and page cache.
"""
import statistics, sys, time
from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever
a_dir, b_dir, methods = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
ds = load_dataset(sys.argv[4] if len(sys.argv) > 4 else "/work/scratch/s62/keep/synth-1000000")
qs = [q.question for q in ds.questions]
sides = {}
for name, d in (("A", a_dir), ("B", b_dir)):
    idx = GraphRAGIndex.load(d, embed_model="hash")
    for q in qs: idx.embed_query(q)
    sides[name] = (idx, {m: get_retriever(idx, m, top_k=5) for m in methods})
for m in methods:
    for name in "AB":
        sides[name][1][m].retrieve(qs[0])
    t = {"A": [], "B": []}; same = 0
    for i, q in enumerate(qs):
        order = "AB" if i % 2 == 0 else "BA"
        got = {}
        for name in order:
            r = sides[name][1][m]
            s = time.perf_counter(); nodes = r.retrieve(q); t[name].append((time.perf_counter() - s) * 1000)
            got[name] = [n.node.node_id for n in nodes]
        same += got["A"] == got["B"]
    ma, mb = statistics.median(t["A"]), statistics.median(t["B"])
    p95 = lambda x: sorted(x)[int(0.95 * (len(x) - 1))]
    ratios = statistics.median([b / a for a, b in zip(t["A"], t["B"])])
    print(f"{m:9s} A p50 {ma:7.1f} p95 {p95(t['A']):7.1f} | B p50 {mb:7.1f} p95 {p95(t['B']):7.1f} | B/A medians {mb/ma:.3f} per-question {ratios:.3f} | same top5 {same}/{len(qs)}", flush=True)
