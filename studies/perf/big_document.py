"""Indexing one very large document: time per stage and peak memory at growing sizes (is it linear?).

The document is made of real text: the sentences of every corpus in the datasets folder, shuffled with a fixed
seed and joined into paragraphs until the size is reached (beyond the 5.6 MB the corpora hold, sentences repeat
in new orders, so chunks stay distinct while some fact sentences recur, which makes the fact stage a little
cheaper than on wholly new text). Each size is built in a fresh process, so peak memory is per size.

    python benchmarks/big_document.py --datasets ../shared/datasets --sizes 1,5,20 --embed hash
    python benchmarks/big_document.py --datasets ../shared/datasets --sizes 1,5 --embed all-MiniLM-L6-v2
    python benchmarks/big_document.py --datasets ../shared/datasets --sizes 2,20 --entities ner --ner-relations cooccurrence

Times are wall and CPU seconds (this process and spaCy's worker processes): on a shared machine compare CPU.
Another checkout's code can be timed with the same script: PYTHONPATH=/path/to/checkout python big_document.py ...
(run it from outside the repository, so that the current directory does not shadow PYTHONPATH).
"""

from __future__ import annotations

import argparse
import json
import os
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


def _cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (spaCy's workers). On a shared machine the
    wall time depends on everyone else's load; the CPU time much less."""
    import resource

    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def _count_stage_cpu(cpu_stages: dict) -> None:
    """Wraps the index's stage timer so that each build stage also records the CPU seconds it used."""
    import contextlib

    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    wall = GraphRAGIndex._stage

    @contextlib.contextmanager
    def stage(self, name: str):
        before = _cpu_seconds()
        with wall(self, name):
            yield
        cpu_stages[name] = cpu_stages.get(name, 0.0) + _cpu_seconds() - before

    GraphRAGIndex._stage = stage


def _build_one(path: str, embed: str, entities: str, ner_relations: str = "parse") -> None:
    """Child process: index one document file and print a JSON line of timings."""
    import resource

    from llama_index.core import Document

    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    text = Path(path).read_text(encoding="utf-8")
    cpu_stages: dict[str, float] = {}
    _count_stage_cpu(cpu_stages)
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    index = GraphRAGIndex.from_documents([Document(text=text, metadata={"title": "Big document"}, id_="big")],
                                         embed_model=embed, config=IndexConfig(entities=entities, ner_relations=ner_relations),
                                         show_progress=True)
    seconds = time.perf_counter() - start
    print(json.dumps({"mb": round(len(text.encode()) / 1e6, 2), "seconds": round(seconds, 1),
                      "cpu": round(_cpu_seconds() - cpu_start, 1),
                      "stages": index.build_info.get("stage_seconds", {}),
                      "cpu_stages": {k: round(v, 1) for k, v in cpu_stages.items()}, **index.stats(),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "worker_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default="../shared/datasets")
    ap.add_argument("--sizes", default="1,5,20", help="megabytes, comma-separated")
    ap.add_argument("--embed", default="hash", help="hash (LLM- and model-free) or all-MiniLM-L6-v2")
    ap.add_argument("--entities", default="ner", choices=("ner", "statistical", "both"))
    ap.add_argument("--ner-relations", default="parse", choices=("parse", "cooccurrence"),
                    help="IndexConfig.ner_relations: relations from the dependency parse, or co-occurrence (no parser)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        _build_one(args.child, args.embed, args.entities, args.ner_relations)
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"embed={args.embed} entities={args.entities} ner_relations={args.ner_relations}, {cores} cores, load average at start "
          f"{os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC")
    print("| MB | seconds | s/MB | CPU s | chunks | entities | relations | stages: wall/CPU s | peak RSS MB (largest worker) |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for mb in (float(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"doc-{mb}.txt"
            path.write_text(make_document(Path(args.datasets), mb), encoding="utf-8")
            out = subprocess.run([sys.executable, __file__, "--child", str(path), "--embed", args.embed,
                                  "--entities", args.entities, "--ner-relations", args.ner_relations], capture_output=True, text=True, check=False)
            lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
            if out.returncode or not lines:
                print(f"| {mb} | failed: {out.stderr.strip().splitlines()[-1:]} |")
                continue
            r = json.loads(lines[-1])
            # "other": the rest of insert (corpus statistics, tables, the property-graph mirror)
            wall = {**r["stages"], "other": r["seconds"] - sum(r["stages"].values())}
            cpu = {**r["cpu_stages"], "other": r["cpu"] - sum(r["cpu_stages"].values())}
            stages = ", ".join(f"{k} {v:.1f}/{cpu.get(k, 0):.1f}" for k, v in wall.items())
            print(f"| {r['mb']} | {r['seconds']} | {r['seconds'] / r['mb']:.1f} | {r['cpu']} | {r.get('chunks')} | {r.get('entities')} | "
                  f"{r.get('relations')} | {stages} | {r['peak_rss_mb']} ({r.get('worker_rss_mb', 0)}) |", flush=True)


if __name__ == "__main__":
    main()
