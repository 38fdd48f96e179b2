"""What inserting one document into a big saved index costs: the median ``insert()`` wall time of single documents.

An insert runs every build step over the new document, and reads the older chunks where its rules need the whole
corpus (linking new entities to older chunks; the NER graph's one-word name and term rules count them too). The
documents inserted come from another dataset (new to the index); each insert is timed alone, in one process,
after the index is loaded (the load is not timed). The index folder is not changed (nothing is saved).

    python benchmarks/insert_one.py --index-dir IDX --corpus ../shared/datasets/hotpotqa_train100/corpus.jsonl --n 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index-dir", required=True)
    ap.add_argument("--corpus", required=True, help="a corpus.jsonl whose documents are inserted one by one")
    ap.add_argument("--n", type=int, default=7)
    args = ap.parse_args()
    from llama_index.core import Document

    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.index import GraphRAGIndex

    index = GraphRAGIndex.load(args.index_dir, embed_model=resolve_embed_model("all-MiniLM-L6-v2"), show_progress=False)
    with open(args.corpus, encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(args.n + 1), f)]
    docs = [Document(text=r["text"], doc_id=f"inserted-{r['id']}", metadata={"title": r.get("title", "")})
            for r in rows]
    index.insert(docs[:1])  # warm-up: spaCy and the embedder loaded, lazy tables built
    seconds = []
    for doc in docs[1:]:
        start = time.perf_counter()
        index.insert([doc])
        seconds.append(time.perf_counter() - start)
    print(f"{len(index.chunks):,} chunks; insert of one document: median {statistics.median(seconds):.2f} s "
          f"(min {min(seconds):.2f}, max {max(seconds):.2f}, {len(seconds)} documents)")


if __name__ == "__main__":
    main()
