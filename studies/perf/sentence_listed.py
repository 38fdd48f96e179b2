"""What reading only the leaders' sentences costs: recall@5 of the three-way base (dense, BM25, best fact sentence)
with every fact sentence scored exactly, against the same index with its fact table forced into vector lists, where
``query_scores.sentence_scores`` reads the sentences of dense's and BM25's leaders alone (as on any index past
100,000 fact texts). A saved MiniLM index of a shared set, read-only:

    HF_HUB_OFFLINE=1 python studies/perf/sentence_listed.py IDX/2wiki_retrieval101 ../shared/datasets/2wiki_retrieval101
"""

from __future__ import annotations

import sys

import numpy as np


def main(index_dir: str, dataset: str, methods: list[str]) -> None:
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.graph.vector_lists import train_lists
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods import query_scores as qs
    from llama_index_graphrag_suite.methods.scoring import top_k
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(index_dir, show_progress=False)
    questions = [q for q in load_dataset(dataset).questions if q.supporting_ids]
    doc_of = [index.chunks[c].doc_id for c in index.chunk_order]
    table = index.fact_vectors

    def recall(ids: list[str], gold: list[str]) -> float:
        return len(set(gold) & set(ids[:5])) / len(set(gold))

    def run() -> dict[str, list[float]]:
        out: dict[str, list[float]] = {"base": [], **{m: [] for m in methods}}
        for q in questions:
            with qs.shared_query_scores(), qs.sentence_base(True):
                base = qs.hybrid_scores(index, q.question)
            out["base"].append(recall([doc_of[i] for i in top_k(base, 5).tolist()], q.supporting_ids))
            for m in methods:
                nodes = get_retriever(index, m, top_k=5, guard_best_sentence=True).retrieve(q.question)
                got = [n.node.metadata["doc_id"] for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]
                out[m].append(recall(got, q.supporting_ids))
        return out

    exact = run()
    lists = train_lists(table.vectors())
    lists.moves = table.moves
    table.lists = lists
    assert table.listed
    index.clear_query_cache()
    listed = run()
    print(f"{dataset.rstrip('/').split('/')[-1]}: {len(questions)} questions, {len(table)} fact sentences, "
          f"{len(lists.centroids)} lists")
    for name in exact:
        a, b = np.array(exact[name]), np.array(listed[name])
        print(f"  {name}: exact {100 * a.mean():.1f}, leaders only {100 * b.mean():.1f} "
              f"(won {(b > a).sum()}, lost {(b < a).sum()})")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], [m for m in (sys.argv[3] if len(sys.argv) > 3 else "").split(",") if m])
