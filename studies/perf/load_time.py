"""Seconds to load a saved index (``GraphRAGIndex.load``) and the process's peak RSS after it, fresh processes.

Each run is a new Python process that imports the package (not timed), loads the index read-only with the hash
embedding (``embed_model="hash"``, what the synthetic scale indexes are built with; ``--version N``: kept version N
instead of the current one) and prints the wall seconds
of the ``load`` call, its process CPU seconds (every thread's: steadier than wall time on a busy machine),
``resource.getrusage`` peak RSS, and the RSS right after the load (``VmRSS``, and ``RssAnon``: the part that is
not pages of mapped files). With ``--old`` and ``--new`` (folders holding the package, put first on
``PYTHONPATH``) the runs alternate old, new, old, ... so both see the same machine load; the table gives the
median and range per tree. ``--old-index``: the index the old tree loads, when it cannot read the new one's format
(the same index saved by each tree).

    python studies/perf/load_time.py /work/scratch/keep3/index-100000 --old /work/main --new /work/wtL --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = """
import json, resource, sys, time
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
t, cpu = time.perf_counter(), time.process_time()
index = GraphRAGIndex.load(sys.argv[1], embed_model="hash", version=int(sys.argv[2]) if sys.argv[2] else None)
seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
print(json.dumps({"seconds": seconds, "cpu": cpu, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "now_mb": int(status["VmRSS"].split()[0]) / 1024, "anon_mb": int(status["RssAnon"].split()[0]) / 1024,
                  "chunks": len(index.chunks), "facts": len(index.facts)}))
"""


def run_once(tree: str, index: str, version: int | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, index, str(version or "")], cwd=tree, env=env, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"load from {tree} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("index", help="the index folder (only read)")
    ap.add_argument("--old", help="a code tree to compare with (a folder holding llama_index_graphrag_suite)")
    ap.add_argument("--new", default=str(Path(__file__).resolve().parents[2]), help="the code tree measured (this one)")
    ap.add_argument("--old-index", help="the index the old tree loads (default: the same one)")
    ap.add_argument("--runs", type=int, default=3, help="fresh processes per tree")
    ap.add_argument("--version", type=int, help="load this kept version (v-00000N) instead of the current one")
    args = ap.parse_args()
    trees = {"old": args.old, "new": args.new} if args.old else {"new": args.new}
    indexes = {"old": args.old_index or args.index, "new": args.index}
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for i in range(args.runs):
        for name, tree in trees.items():
            r = run_once(tree, indexes[name], args.version)
            runs[name].append(r)
            print(f"run {i + 1} {name}: load {r['seconds']:.2f} s (CPU {r['cpu']:.2f} s), peak RSS {r['rss_mb']:.0f} MB, "
                  f"RSS after {r['now_mb']:.0f} MB (anonymous {r['anon_mb']:.0f} MB)", flush=True)
    print(f"\n{runs['new'][0]['chunks']} chunks, {runs['new'][0]['facts']} facts; {args.runs} runs each")
    print("| tree | index | load s (median) | range | CPU s (median) | peak RSS MB | RSS after MB | anonymous MB |")
    print("|---|---|---|---|---|---|---|---|")
    for name, tree in trees.items():
        s = [r["seconds"] for r in runs[name]]
        med = {k: statistics.median(r[k] for r in runs[name]) for k in ("cpu", "rss_mb", "now_mb", "anon_mb")}
        print(f"| {name} ({tree}) | {indexes[name]} | {statistics.median(s):.2f} | {min(s):.2f}-{max(s):.2f} | "
              f"{med['cpu']:.2f} | {med['rss_mb']:.0f} | {med['now_mb']:.0f} | {med['anon_mb']:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
