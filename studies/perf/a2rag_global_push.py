"""A2RAG's global stage on a large loaded index: its top-L nodes from the local push's reached nodes
(``stages.global_top`` through ``pushed_pagerank``) against the dense scores of every node (the path before), per
question in one process, alternating which goes first; prints how many questions get the same top 5 (ids and
scores) and the CPU ms medians (query embeddings made beforehand).

    python studies/perf/a2rag_global_push.py KEEP/index-1000000 KEEP/synth-1000000 41 [a2rag]
"""
import sys, time
import numpy as np
from llama_index.core.schema import QueryBundle
from llama_index_graphrag_suite.eval.datasets import load_questions
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever
from llama_index_graphrag_suite.methods.a2rag import stages

index = GraphRAGIndex.load(sys.argv[1], embed_model="hash")
qs = load_questions(f"{sys.argv[2]}/questions.jsonl")[0][: int(sys.argv[3])]
r = get_retriever(index, sys.argv[4] if len(sys.argv) > 4 else "a2rag")
bundles = [QueryBundle(q.question, embedding=index.embed_model.get_query_embedding(q.question)) for q in qs]
real = stages.pushed_pagerank
r.retrieve(bundles[0])
t = {"new": [], "old": []}
same = 0
for b in bundles[1:]:
    out = {}
    for side in ("new", "old") if len(t["new"]) % 2 == 0 else ("old", "new"):
        stages.pushed_pagerank = real if side == "new" else (lambda *a, **k: None)
        c = time.process_time(); res = r.retrieve(b); t[side].append(time.process_time() - c)
        out[side] = [(n.node.node_id, n.score) for n in res[:5]]
    same += out["new"] == out["old"]
print(f"questions {len(bundles)-1}: same top 5 (ids, scores) {same}; CPU ms median new {1000*np.median(t['new']):.1f} old {1000*np.median(t['old']):.1f}")
