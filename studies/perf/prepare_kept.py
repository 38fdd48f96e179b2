"""Build a method's artefacts on a kept index as the named build step, and save them with it.

``benchmarks/scale.py --keep`` keeps its indexes without ArchRAG's hierarchy when ArchRAG is left out of
``--methods`` (a 1M build in batches does). This loads such an index (hash embedding, as the scale run builds it),
runs ``GraphRAGIndex.prepare(METHODS)`` (what ``graphrag-suite index --prepare`` does at the end of a build) and
saves the index, so a later ``scale.py --requery --methods archrag`` loads the hierarchy instead of building it on a
first query. Prints one JSON line: seconds and CPU seconds of the load, of each prepared method and of the save, the
process's peak RSS (``ru_maxrss``) and its RSS and anonymous RSS after the step.

    python studies/perf/prepare_kept.py KEEP/index-1000000 --methods archrag
"""

from __future__ import annotations

import argparse
import json
import resource
import time

from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex


def _status_mb(field: str) -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        line = next(ln for ln in fh if ln.startswith(field + ":"))
    return round(int(line.split()[1]) / 1024, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", help="a kept index folder (built with the hash embedding)")
    ap.add_argument("--methods", default="archrag", help="comma-separated methods to prepare (default archrag)")
    args = ap.parse_args()
    row: dict = {"index": args.index}
    start, cpu = time.perf_counter(), time.process_time()
    index = GraphRAGIndex.load(args.index, embed_model="hash")
    row["load_s"], row["load_cpu_s"] = round(time.perf_counter() - start, 2), round(time.process_time() - cpu, 2)
    for method in [m for m in args.methods.split(",") if m]:
        start, cpu = time.perf_counter(), time.process_time()
        index.prepare([method])
        row[f"prepare.{method}_s"] = round(time.perf_counter() - start, 2)
        row[f"prepare.{method}_cpu_s"] = round(time.process_time() - cpu, 2)
        row["rss_mb_after_prepare"], row["anon_mb_after_prepare"] = _status_mb("VmRSS"), _status_mb("RssAnon")
    start, cpu = time.perf_counter(), time.process_time()
    index.persist(args.index)
    row["save_s"], row["save_cpu_s"] = round(time.perf_counter() - start, 2), round(time.process_time() - cpu, 2)
    row["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
