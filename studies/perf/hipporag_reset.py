"""What HippoRAG's large-graph reset costs: passage weights on the densest chunks only, against every passage.

    python studies/perf/hipporag_reset.py INDEX_DIR CORPUS_DIR [--embed hash] [--tops 1000]
    python studies/perf/hipporag_reset.py INDEX_DIR DATASET_DIR --embed minilm --tops 100,300,1000 --force

On a graph of ``PUSH_MIN_NNZ``+ entries HippoRAG gives a passage weight to the ``PASSAGE_RESET_TOP`` chunks with
the highest dense score only (``methods/baselines.py``), so its PageRank is the local push instead of a global
solve. This times and scores HippoRAG (plain and guarded) on one loaded index with every passage weighted and
with each ``--tops`` value. ``--force`` applies the truncation on a graph of any size (the global solver still
answers, so the truncation alone is measured): the shared sets' graphs are far below the size where it is on.
Prints recall@5, p50 ms, and the share of questions whose top 5 is the same as with every passage weighted.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from llama_index_graphrag_suite.eval.datasets import load_dataset  # noqa: E402
from llama_index_graphrag_suite.eval.metrics import percentile, recall_at  # noqa: E402
from llama_index_graphrag_suite.graph import ppr  # noqa: E402
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex  # noqa: E402
from llama_index_graphrag_suite.methods import baselines  # noqa: E402
from llama_index_graphrag_suite.registry import get_retriever  # noqa: E402

EVERY = 10**12


def run(index, questions, method: str) -> tuple[list[list[str]], list[float], list[float]]:
    import time

    retriever = get_retriever(index, method, top_k=5)
    retriever.retrieve(questions[0].question)  # lazy set-up, untimed
    ranked, times, recalls = [], [], []
    for q in questions:
        index.embed_query(q.question)  # cached: the timed call does not embed
        start = time.perf_counter()
        nodes = retriever.retrieve(q.question)
        times.append((time.perf_counter() - start) * 1000)
        ids = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes
               if n.node.metadata.get("kind") != "evidence"][:5]
        ranked.append(ids)
        recalls.append(recall_at(ids, q.supporting_ids, 5))
    return ranked, times, recalls


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("corpus")
    ap.add_argument("--embed", default="hash", help="hash, or minilm (the bundled model) for the shared sets")
    ap.add_argument("--tops", default="1000", help="passage counts to weigh, comma-separated")
    ap.add_argument("--methods", default="hipporag:paper,hipporag")
    ap.add_argument("--force", action="store_true", help="truncate on any graph (the global solver answers)")
    args = ap.parse_args()
    questions = load_dataset(args.corpus).questions
    index = GraphRAGIndex.load(args.index, embed_model=None if args.embed == "minilm" else args.embed)
    if args.force:
        ppr.Transition.pushes = property(lambda self: True)
        ppr.PUSH_MAX_RESET_SHARE = 0.0
    print(f"{len(questions)} questions, {index.stats()['chunks']:,} chunks; force={args.force}")
    for method in args.methods.split(","):
        baselines.PASSAGE_RESET_TOP = EVERY
        exact, times, recalls = run(index, questions, method)
        print(f"{method:16s} every passage: recall@5 {100 * sum(recalls) / len(recalls):.2f}, "
              f"p50 {percentile(times, 50):.1f} ms, p95 {percentile(times, 95):.1f} ms", flush=True)
        for top in (int(t) for t in args.tops.split(",")):
            baselines.PASSAGE_RESET_TOP = top
            ranked, times, recalls = run(index, questions, method)
            same = sum(a == b for a, b in zip(ranked, exact)) / len(exact)
            print(f"{method:16s} top {top:>6,}: recall@5 {100 * sum(recalls) / len(recalls):.2f}, "
                  f"p50 {percentile(times, 50):.1f} ms, p95 {percentile(times, 95):.1f} ms, "
                  f"same top 5 {100 * same:.0f} %", flush=True)


if __name__ == "__main__":
    main()
