"""What the at-scale approximations cost in recall: vector lists and the local PageRank push, each switched off.

    python studies/perf/scale_approximations.py INDEX_DIR CORPUS_DIR [--methods dense,archrag,a2rag,agrag]

On a kept synthetic index (``benchmarks/scale.py --keep``) whose vector tables have 100,000+ rows (queries read
them through their lists, ``index/vectors.py``) and whose graph has 1,000,000+ entries (a PageRank on few nodes is
the local push, ``graph/ppr_push.py``), times and scores the methods four ways on the same loaded index: both on,
lists only, push only, neither (the exact scans and the global solver). Prints recall@5 and p50 ms per method.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from scale import query_methods  # noqa: E402

from llama_index_graphrag_suite.eval.datasets import load_dataset  # noqa: E402
from llama_index_graphrag_suite.graph import ppr  # noqa: E402
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex  # noqa: E402

TABLES = ("chunk_vectors", "entity_vectors", "fact_vectors")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index")
    ap.add_argument("corpus")
    ap.add_argument("--methods", default="dense,archrag,a2rag,agrag")
    args = ap.parse_args()
    questions = load_dataset(args.corpus)
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    tables = {name: getattr(index, name) for name in TABLES}
    lists = {name: table.lists for name, table in tables.items()}
    push_from = ppr.PUSH_MIN_NNZ
    for name, push, listed in (("push+lists", True, True), ("lists only", False, True), ("push only", True, False),
                               ("neither", False, False)):
        ppr.PUSH_MIN_NNZ = push_from if push else 10**15
        for table_name, table in tables.items():
            table.lists = lists[table_name] if listed else None
        got = query_methods(index, questions, args.methods.split(","))
        print(name, {m: (round(100 * v["recall@5"], 2), v["p50_ms"]) for m, v in got.items()}, flush=True)


if __name__ == "__main__":
    main()
