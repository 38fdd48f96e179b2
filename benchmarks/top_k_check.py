"""Every graph method against hybrid at small top_k, through ``retrieve()``, on any dataset with an index.

``guard_top_k.py`` chooses ``guard_small_k_power`` on the five tuning sets by simulation; this checks the shipped
retrievers end to end on a set no tuning read (the books): recall@k of hybrid's top k and of each graph method asked
for k chunks, with the power as shipped and with it off (0), for each k.

    python benchmarks/top_k_check.py --dataset benchmarks/datasets/sherlock_holmes_check --index-dir DIR --ks 2,3
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import recall_at  # noqa: E402 (the folder on the path first)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, help="folder with corpus.jsonl and questions.jsonl")
    parser.add_argument("--index-dir", required=True, help="an index of that corpus (graphrag-suite bench --index-dir)")
    parser.add_argument("--ks", default="2,3")
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args(argv)

    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods.guard import hybrid_ranking
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(args.index_dir, embed_model=resolve_embed_model("all-MiniLM-L6-v2"),
                               show_progress=False)
    questions = [q for q in load_dataset(args.dataset).questions if q.supporting_ids]
    name = os.path.basename(os.path.normpath(args.dataset))
    methods = args.methods.split(",")
    print(f"# Small top_k through retrieve() on {name} ({len(questions)} questions; benchmarks/top_k_check.py)\n")
    print("recall@k in %. Each method: as shipped / with `guard_small_k_power=0` (where the two differ in setting; "
          "A2RAG ships 0).\n")
    print("| k | hybrid | " + " | ".join(methods) + " |")
    print("|---:|---:|" + "---:|" * len(methods))
    doc_of = [index.chunks[c].doc_id for c in index.chunk_order]
    position = index.chunk_position
    for k in map(int, args.ks.split(",")):
        hybrid = sum(recall_at(hybrid_ranking(index, q.question, k).tolist(), doc_of, q.supporting_ids, k)
                     for q in questions) / len(questions)
        cells = []
        for method in methods:
            figures = []
            shipped = get_retriever(index, method, top_k=k)
            variants = [shipped]
            if shipped.config.guard_small_k_power != 0:
                variants.append(get_retriever(index, method, top_k=k, guard_small_k_power=0.0))
            for retriever in variants:
                total = sum(recall_at([position[n.node.metadata["chunk_id"]] for n in retriever.retrieve(q.question)],
                                      doc_of, q.supporting_ids, k) for q in questions)
                figures.append(100.0 * total / len(questions))
            cells.append(" / ".join(f"{f:.1f}" for f in figures))
        print(f"| {k} | {100.0 * hybrid:.1f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
