"""Entity extraction time of the NER extractor on a corpus slice, with the index's default extraction settings or
with the settings that had no terms and no junk rules. Extraction only: chunking, embedding and the rest of
the build are the same for both, so this is what those rules add to a build.

    python benchmarks/extract_cost.py --corpus ../shared/datasets/2wiki_retrieval101/corpus.jsonl --n 1500 [--before]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BEFORE = {"terms": False, "lowercase_names": True, "title_link_max_chunks": 1_000_000}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=1500)
    ap.add_argument("--before", action="store_true", help="the settings without terms and junk rules")
    args = ap.parse_args()
    from llama_index.core.schema import TextNode

    from llama_index_graphrag_suite.extractors.ner import NEREntityExtractor

    with open(args.corpus, encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(args.n), f)]
    nodes = [TextNode(text=f"{r['title']}\n\n{r['text']}", metadata={"doc_id": r["id"], "title": r["title"]})
             for r in rows]
    extractor = NEREntityExtractor(**(BEFORE if args.before else {}))
    start = time.perf_counter()
    out = extractor(nodes)
    entities = {e.name for n in out for e in n.metadata["nodes"]}
    print(json.dumps({"settings": "before" if args.before else "default", "chunks": len(nodes),
                      "entities": len(entities), "seconds": round(time.perf_counter() - start, 2)}))


if __name__ == "__main__":
    main()
