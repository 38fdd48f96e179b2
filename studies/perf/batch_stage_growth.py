"""Which build steps cost more per batch as a batched build's index grows: the CPU seconds of each step, batch by batch.

A build CPU that grows faster than the corpus (``benchmarks/scale.py``'s growth exponent) is either a step whose
per-passage work depends on the size of the index it inserts into, or the batches' own save and load. This runs
``build_in_batches`` on the first ``--passages`` of a corpus in batches of ``--batch-size`` and, after each batch,
prints the CPU seconds (user + system, all threads) each step took in that batch, and the rest of the batch (the
save and the load back). Equal batches of a homogeneous corpus (``benchmarks/synth.py``'s kinds are interleaved)
should cost the same; a column that rises is the superlinear step.

    PYTHONPATH=. python studies/perf/batch_stage_growth.py --corpus KEEP/synth-1000000/corpus.jsonl \\
        --passages 300000 --batch-size 50000 --out studies/perf/results/batch_stage_growth.md
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import resource
import sys
import tempfile
import time
from pathlib import Path


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return own.ru_utime + own.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", required=True, help="a corpus.jsonl (benchmarks/synth.py)")
    ap.add_argument("--passages", type=int, default=300_000)
    ap.add_argument("--batch-size", type=int, default=50_000)
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--entities", default="statistical")
    ap.add_argument("--out", help="write the markdown table here")
    args = ap.parse_args()

    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.documents import iter_jsonl_documents
    from llama_index_graphrag_suite.index.batched import build_in_batches
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    spent: dict[str, float] = {}
    wall_timer = GraphRAGIndex._stage

    @contextlib.contextmanager
    def stage(self, name: str):
        start = cpu_seconds()
        try:
            with wall_timer(self, name):
                yield
        finally:
            spent[name] = spent.get(name, 0.0) + cpu_seconds() - start

    GraphRAGIndex._stage = stage
    rows: list[dict] = []
    mark = {"cpu": cpu_seconds(), "steps": {}}

    def on_batch(number: int, held: int, seconds: float) -> None:
        now = cpu_seconds()
        steps = {k: v - mark["steps"].get(k, 0.0) for k, v in spent.items()}
        total = now - mark["cpu"]
        rows.append({"batch": number, "passages": held, "wall": seconds, "cpu": total, "steps": steps,
                     "rest": total - sum(steps.values())})
        mark["cpu"], mark["steps"] = now, dict(spent)
        print(f"batch {number}: {held:,} passages, {seconds:.1f} s wall, {total:.1f} s CPU: "
              + ", ".join(f"{k} {v:.1f}" for k, v in steps.items()) + f", save+load {rows[-1]['rest']:.1f}",
              flush=True)

    documents = itertools.islice(iter_jsonl_documents(args.corpus), args.passages)
    with tempfile.TemporaryDirectory() as folder:
        build_in_batches(documents, Path(folder) / "index", args.batch_size, on_batch=on_batch, compact=False,
                         embed_model=args.embed, config=IndexConfig(entities=args.entities))

    names = list(rows[-1]["steps"])
    head = ["batch", "passages"] + names + ["save + load", "batch CPU s", "batch wall s"]
    lines = [f"# CPU seconds per build step, batch by batch ({args.passages:,} passages in batches of "
             f"{args.batch_size:,}, embed {args.embed}, entities {args.entities})", "",
             f"`{' '.join(['python'] + sys.argv)}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
             f"load average at the end {os.getloadavg()[0]:.1f}.", "",
             "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        cells = [str(r["batch"]), f"{r['passages']:,}"] + [f"{r['steps'].get(n, 0.0):.1f}" for n in names]
        cells += [f"{r['rest']:.1f}", f"{r['cpu']:.1f}", f"{r['wall']:.1f}"]
        lines.append("| " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
