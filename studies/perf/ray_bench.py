"""Single process against Ray (``ray_address="local"``): time per build stage, and the two indexes compared.

For each entity extractor the corpus is indexed twice in one process, first locally (spaCy's own worker processes
for the NER parse, ONNX Runtime's threads for embedding), then with the per-chunk work sharded over a local Ray
instance (``index/distributed.py``). Stage times come from ``index.build_info["stage_seconds"]``; "other" is the
rest of the insert (n-gram statistics, tables, store mirror); "Ray start" is ``ray.init`` and worker start-up is
inside the first stage that uses the workers (chunk). The script also checks that both builds hold the same
chunks, entities, facts, synonym edges and (to 1e-5) vectors.

    python benchmarks/ray_bench.py --corpus ../shared/datasets/hotpotqa_train100/corpus.jsonl \
        --out benchmarks/results/ray_bench.md
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np

STAGES = ("chunk", "extract", "embed", "synonyms", "graph")


def build(docs, entities: str, embed: str, ray_address: str | None, num_cpus: int | None) -> tuple[object, dict]:
    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    start = time.perf_counter()
    index = GraphRAGIndex(embed_model=embed, config=IndexConfig(entities=entities))
    times = {"model load": time.perf_counter() - start}
    if ray_address:
        from llama_index_graphrag_suite.index.distributed import ray_build

        t = time.perf_counter()
        with ray_build(index, ray_address, num_cpus=num_cpus):
            times["Ray start"] = time.perf_counter() - t
            index.insert(docs)
    else:
        index.insert(docs)
    times["total"] = time.perf_counter() - start
    stages = index.build_info.get("stage_seconds", {})
    times.update({s: stages.get(s, 0.0) for s in STAGES})
    times["other"] = index.build_info["seconds"] - sum(stages.get(s, 0.0) for s in STAGES)
    return index, times


def compare(a, b) -> str:
    same = (list(a.chunks) == list(b.chunks) and a.entities == b.entities and a.facts == b.facts
            and a.synonyms == b.synonyms)
    diff = max(float(np.abs(getattr(a, t).vectors() - getattr(b, t).vectors()).max(initial=0.0))
               for t in ("chunk_vectors", "entity_vectors", "fact_vectors"))
    ids = all(getattr(a, t).ids == getattr(b, t).ids for t in ("chunk_vectors", "entity_vectors", "fact_vectors"))
    return f"tables {'identical' if same and ids else 'DIFFERENT'}, largest vector difference {diff:.1e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", required=True, help="a corpus.jsonl (or folder) load_documents reads")
    ap.add_argument("--entities", default="ner,statistical")
    ap.add_argument("--embed", default="all-MiniLM-L6-v2")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray instance (default: all)")
    ap.add_argument("--out", default=None, help="markdown table to write")
    args = ap.parse_args()

    from llama_index_graphrag_suite.documents import load_documents

    docs = load_documents(args.corpus)
    rows, notes = [], []
    for entities in args.entities.split(","):
        local, t_local = build(docs, entities, args.embed, None, None)
        sharded, t_ray = build(docs, entities, args.embed, "local", args.num_cpus)
        notes.append(f"* `{entities}`: {len(local.chunks)} chunks, {len(local.entities)} entities, "
                     f"{len(local.facts)} facts; {compare(local, sharded)}")
        for name in ("model load", "Ray start", *STAGES, "other", "total"):
            a, b = t_local.get(name), t_ray.get(name)
            ratio = f"{b / a:.2f}" if a and b and a > 0.05 else ""
            rows.append(f"| {entities} | {name} | {'' if a is None else f'{a:.2f}'} | {'' if b is None else f'{b:.2f}'} | {ratio} |")
        print("\n".join(rows[-9:]), flush=True)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = "\n".join([
        f"# Indexing on Ray against one process ({Path(args.corpus).parent.name or args.corpus}, embed {args.embed})",
        "",
        f"`python benchmarks/ray_bench.py --corpus {args.corpus}` on {platform.machine()}, {cores} cores, Python "
        f"{platform.python_version()}. One run; seconds of wall time. The machine was shared with other jobs, so "
        "the ratios are indicative only. Ray's parallelism is across machines: on a single small machine the "
        "local build is already parallel (spaCy processes, ONNX threads) and Ray adds its start-up and data "
        "transfer.",
        "",
        "| entities | stage | one process (s) | Ray local (s) | Ray / one |",
        "|---|---|---:|---:|---:|",
        *rows,
        "",
        *notes,
        "",
    ])
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
