"""Build, save and load cost of the ``simple`` store mirror, for one version of the code against another.

    python benchmarks/synth.py --n 20000 --out /tmp/lazy/synth-20000
    git worktree add /tmp/lazy/before <commit before the lazy mirror>
    python benchmarks/lazy_store_bench.py run --code /tmp/lazy/before --label before \\
        --dataset /tmp/lazy/synth-20000 --results /tmp/lazy/lazy_store.json
    python benchmarks/lazy_store_bench.py run --code . --label after \\
        --dataset /tmp/lazy/synth-20000 --results /tmp/lazy/lazy_store.json
    python benchmarks/lazy_store_bench.py report --results /tmp/lazy/lazy_store.json \\
        --out benchmarks/results/lazy_store.md

``run`` imports the library from ``--code`` (``PYTHONPATH``) in two fresh processes, so each peak RSS
(``resource.getrusage``, the process's maximum) belongs to one phase:

* build: ``GraphRAGIndex.from_documents(docs, embed_model="hash", config=IndexConfig(entities="statistical"))``
  (documents from ``eval.datasets.load_dataset(folder).documents``, as ``benchmarks/scale.py`` loads them),
  then ``persist``: seconds, peak RSS, size on disk and of ``property_graph_store.json``;
* load: ``GraphRAGIndex.load``: seconds and peak RSS; then ``QUERIES`` questions per method (p50 ms), and
  last the first read of the store by someone else (``get_triplets`` of one entity), which is where a lazy
  mirror is filled: its seconds and the peak RSS after it.

LLM-free on purpose (hashing embedder, statistical entities): the numbers are the mirror's cost.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
METHODS = ("hybrid", "hipporag", "pathrag")
QUERIES = 20
STORE_FILE = "property_graph_store.json"


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def _size_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 1e6


def _store_state(store) -> str:
    """"lazy" while a lazy mirror is not filled, else "filled" (an eager store always is)."""
    live = getattr(store, "materialised", None)
    return "filled" if live is None or live else "lazy"


def child_build(dataset: str, index_dir: str) -> dict:
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import mirror as mirror_module

    docs = load_dataset(dataset).documents
    mirror = {"seconds": 0.0}
    upsert = mirror_module.StoreMirror.upsert

    def timed(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return upsert(self, *args, **kwargs)
        finally:
            mirror["seconds"] += time.perf_counter() - start

    mirror_module.StoreMirror.upsert = timed
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(docs, embed_model="hash", config=IndexConfig(entities="statistical"))
    row = {"library": str(Path(mirror_module.__file__).parents[2]), "passages": len(docs), **index.stats(),
           "build_seconds": round(time.perf_counter() - start, 2), "mirror_seconds": round(mirror["seconds"], 2),
           "build_peak_rss_mb": round(_peak_rss_mb()), "store_after_build": _store_state(index.property_graph_store)}
    shutil.rmtree(index_dir, ignore_errors=True)
    start = time.perf_counter()
    folder = index.persist(index_dir)
    row["persist_seconds"] = round(time.perf_counter() - start, 2)
    row["disk_mb"] = round(_size_mb(Path(index_dir)), 1)
    store_file = folder / STORE_FILE
    row["store_json_mb"] = round(store_file.stat().st_size / 1e6, 1) if store_file.is_file() else 0.0
    row["build_persist_peak_rss_mb"] = round(_peak_rss_mb())
    return row


def child_load(dataset: str, index_dir: str) -> dict:
    from llama_index_graphrag_suite import GraphRAGIndex
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.registry import get_retriever

    questions = [q.question for q in load_dataset(dataset).questions[:QUERIES]]
    start = time.perf_counter()
    index = GraphRAGIndex.load(index_dir, embed_model="hash")
    row = {"load_seconds": round(time.perf_counter() - start, 2), "load_peak_rss_mb": round(_peak_rss_mb()),
           "store_after_load": _store_state(index.property_graph_store), "p50_ms": {}}
    for method in METHODS:
        retriever = get_retriever(index, method, top_k=5)
        retriever.retrieve(questions[0])  # per-index set-up (graphs, memo) is paid here, untimed
        times = []
        for q in questions:
            index.embed_query(q)  # cached: the timed call does not embed
            start = time.perf_counter()
            retriever.retrieve(q)
            times.append((time.perf_counter() - start) * 1000)
        row["p50_ms"][method] = round(statistics.median(times), 2)
    row["store_after_queries"] = _store_state(index.property_graph_store)
    row["queries_peak_rss_mb"] = round(_peak_rss_mb())
    entity = next(iter(index.entities))
    start = time.perf_counter()
    found = index.property_graph_store.get_triplets(entity_names=[entity])
    row["first_store_read_seconds"] = round(time.perf_counter() - start, 2)
    row["first_store_read_triplets"] = len(found)
    row["store_read_peak_rss_mb"] = round(_peak_rss_mb())
    return row


def _child(phase: str, code: str, dataset: str, index_dir: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(Path(code).resolve()), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, str(HERE), phase, "--dataset", dataset, "--index-dir", index_dir],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(args) -> None:
    index_dir = args.index_dir or f"/tmp/lazy/index-{args.label}"
    row = {"label": args.label, "code": str(Path(args.code).resolve())}
    for phase in ("build", "load"):
        row.update(_child(phase, args.code, args.dataset, index_dir))
        print(json.dumps(row), flush=True)
    results = Path(args.results)
    rows = json.loads(results.read_text()) if results.is_file() else []
    rows = [r for r in rows if r["label"] != args.label] + [row]
    results.write_text(json.dumps(rows, indent=1) + "\n")
    shutil.rmtree(index_dir, ignore_errors=True)


CELLS = [("passages", "passages"), ("chunks", "chunks"), ("entities", "entities"), ("relations", "relations"),
         ("build_seconds", "build s"), ("mirror_seconds", "of which store mirror s"),
         ("build_peak_rss_mb", "build peak RSS MB"), ("store_after_build", "store after build"),
         ("persist_seconds", "persist s"), ("disk_mb", "version on disk MB"),
         ("store_json_mb", "property_graph_store.json MB"), ("load_seconds", "load s"),
         ("load_peak_rss_mb", "load peak RSS MB"), ("store_after_load", "store after load"),
         ("store_after_queries", f"store after {QUERIES} queries x {len(METHODS)} methods"),
         ("queries_peak_rss_mb", "peak RSS after queries MB"),
         ("first_store_read_seconds", "first outside store read s (get_triplets)"),
         ("store_read_peak_rss_mb", "peak RSS after that read MB")]


def report(args) -> None:
    rows = json.loads(Path(args.results).read_text())
    lines = ["| | " + " | ".join(r["label"] for r in rows) + " |", "|---|" + "---|" * len(rows)]
    for key, name in CELLS:
        lines.append(f"| {name} | " + " | ".join(str(r.get(key, "")) for r in rows) + " |")
    for method in METHODS:
        lines.append(f"| {method} p50 ms | " + " | ".join(str(r["p50_ms"].get(method, "")) for r in rows) + " |")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("phase", choices=["run", "report", "build", "load"])
    parser.add_argument("--code", default=str(HERE.parents[1]), help="the checkout whose library is measured")
    parser.add_argument("--label", default="after")
    parser.add_argument("--dataset", default="/tmp/lazy/synth-20000")
    parser.add_argument("--index-dir", help="where the index is saved between the phases (removed after)")
    parser.add_argument("--results", default="/tmp/lazy/lazy_store.json")
    parser.add_argument("--out", help="report: write the markdown table here too")
    args = parser.parse_args()
    if args.phase == "run":
        run(args)
    elif args.phase == "report":
        report(args)
    else:
        row = (child_build if args.phase == "build" else child_load)(args.dataset, args.index_dir)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
