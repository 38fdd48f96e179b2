"""recall@5 and median latency of guarded methods with the guard's best-sentence base off and on, on a saved index
of ``benchmarks/synth.py``'s corpus (hash embedding): the check that kept ``guard_best_sentence`` off.

    python studies/perf/sentence_base_synth.py KEEP/index-10000 KEEP/synth-10000/questions.jsonl agrag,a2rag 100
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def main(index_dir: str, questions: str, methods: str, count: int) -> None:
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(index_dir, embed_model="hash")
    rows = [json.loads(line) for line in open(questions, encoding="utf-8")][:count]
    for method in methods.split(","):
        for on in (False, True):
            retriever = get_retriever(index, method, top_k=5, guard_best_sentence=on)
            retriever.retrieve(rows[0]["question"])  # the first query builds the method's structures
            recall, ms = [], []
            for row in rows:
                start = time.perf_counter()
                nodes = retriever.retrieve(row["question"])
                ms.append(1000 * (time.perf_counter() - start))
                got = {n.node.metadata.get("doc_id") for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"}
                gold = set(row["supporting_ids"])
                recall.append(len(gold & got) / len(gold))
            print(f"{method} best sentence {'on' if on else 'off'}: recall@5 {100 * statistics.mean(recall):.1f}, "
                  f"p50 {statistics.median(ms):.0f} ms ({len(rows)} questions)", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
