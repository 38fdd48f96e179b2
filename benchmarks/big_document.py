"""Indexing one very large document: time per stage and peak memory at growing sizes (is it linear?).

The document is made of real text: the sentences of every corpus in the datasets folder, shuffled with a fixed
seed and joined into paragraphs until the size is reached (beyond the 5.6 MB the corpora hold, sentences repeat
in new orders, so chunks stay distinct while some fact sentences recur, which makes the fact stage a little
cheaper than on wholly new text). Each size is built in a fresh process, so peak memory is per size.

    python benchmarks/big_document.py --datasets ../shared/datasets --sizes 1,5,20 --embed hash
    python benchmarks/big_document.py --datasets ../shared/datasets --sizes 1,5 --embed all-MiniLM-L6-v2
"""

from __future__ import annotations

import argparse
import json
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def make_document(datasets: Path, megabytes: float, seed: int = 7) -> str:
    sentences = []
    for corpus in sorted(datasets.glob("*/corpus.jsonl")):
        for line in corpus.open(encoding="utf-8"):
            if line.strip():
                sentences.extend(s for s in re.split(r"(?<=[.!?])\s+", json.loads(line)["text"]) if len(s) > 20)
    rng = random.Random(seed)
    target = int(megabytes * 1_000_000)
    parts, size = [], 0
    while size < target:
        rng.shuffle(sentences)
        for start in range(0, len(sentences), 6):
            paragraph = " ".join(sentences[start:start + 6])
            parts.append(paragraph)
            size += len(paragraph.encode("utf-8")) + 2
            if size >= target:
                break
    return "\n\n".join(parts)


def _build_one(path: str, embed: str, entities: str) -> None:
    """Child process: index one document file and print a JSON line of timings."""
    import resource

    from llama_index.core import Document

    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    text = Path(path).read_text(encoding="utf-8")
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents([Document(text=text, metadata={"title": "Big document"}, id_="big")],
                                         embed_model=embed, config=IndexConfig(entities=entities), show_progress=True)
    seconds = time.perf_counter() - start
    print(json.dumps({"mb": round(len(text.encode()) / 1e6, 2), "seconds": round(seconds, 1),
                      "stages": index.build_info.get("stage_seconds", {}), **index.stats(),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--sizes", default="1,5,20", help="megabytes, comma-separated")
    ap.add_argument("--embed", default="hash", help="hash (LLM- and model-free) or all-MiniLM-L6-v2")
    ap.add_argument("--entities", default="ner", choices=("ner", "statistical", "both"))
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _build_one(args.child, args.embed, args.entities)
        return
    print(f"embed={args.embed} entities={args.entities}")
    print("| MB | seconds | s/MB | chunks | entities | relations | stages (s) | peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (float(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"doc-{mb}.txt"
            path.write_text(make_document(Path(args.datasets), mb), encoding="utf-8")
            out = subprocess.run([sys.executable, __file__, "--child", str(path), "--embed", args.embed,
                                  "--entities", args.entities], capture_output=True, text=True, check=False)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            if out.returncode or not lines:
                print(f"| {mb} | failed: {out.stderr.strip().splitlines()[-1:]} |")
                continue
            r = json.loads(lines[-1])
            stages = ", ".join(f"{k} {v:.0f}" for k, v in r["stages"].items())
            print(f"| {r['mb']} | {r['seconds']} | {r['seconds'] / r['mb']:.1f} | {r.get('chunks')} | {r.get('entities')} | "
                  f"{r.get('relations')} | {stages} | {r['peak_rss_mb']} |", flush=True)


if __name__ == "__main__":
    main()
