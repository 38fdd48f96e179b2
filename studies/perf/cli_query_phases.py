"""Where one `graphrag-suite query` process spends its CPU: imports, each step of loading the index, the method.

Companion of ``cli_query_wall.py``. Each run is a new process that runs the CLI's ``main`` with timers around
chosen functions, wrapped as their modules are first imported (no profiler, so no profiler overhead); a timer
records CPU seconds of the process (``time.process_time``: all threads) spent inside the call, including what it
calls. ``main`` runs as it does for the program (arguments from the command line). Rows nest: ``make_request`` is
mostly the imports of LlamaIndex, the method and the index package; ``_load`` holds ``check_segments`` ...
``check_vector_rows``; ``read_tables`` holds the parquet reads; a ``build[...]`` row is a structure a method
derives from the index on its first query (``index.cached``). Medians of ``--runs`` processes per method.

    PYTHONPATH=. python studies/perf/cli_query_phases.py --index /tmp/index-after --runs 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

QUESTION = "Who is the mother of the director of film Polish-Russian War?"
METHODS = "hybrid,hipporag,agrag,pathrag,archrag,a2rag"
P = "llama_index_graphrag_suite"
FUNCTIONS = {  # module: functions timed (looked up on the module at call time by their callers)
    f"{P}.cli.query": ["make_request", "load_index"],
    f"{P}.index.persistence": ["_load", "check_segments", "read_tables", "check_tables", "check_vector_rows"],
    f"{P}.embeddings": ["resolve_embed_model"],
    f"{P}.runner": ["run_request"],
    f"{P}.graph.ppr_fast": ["symmetric_form", "_kernels"],
}
METHODS_OF = {f"{P}.index.state": [("IndexState", "derive")], f"{P}.graph.ppr_fast": [("_NumbaStep", "warm_up")]}

HARNESS = r"""
import atexit, functools, importlib.abc, importlib.machinery, json, sys, time
functions, methods_of = json.loads(sys.argv[1]), json.loads(sys.argv[2])
spent = {}

def timed(name, fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[name] = spent.get(name, 0.0) + time.process_time() - start
    return call

class Wrapping(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):
        if fullname not in functions and fullname not in methods_of and not fullname.endswith("index.artefacts"):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            short = fullname.rsplit(".", 1)[-1]
            for name in functions.get(fullname, []):
                setattr(module, name, timed(f"{short}.{name}", getattr(module, name)))
            for cls, name in methods_of.get(fullname, []):
                owner = getattr(module, cls)
                setattr(owner, name, timed(f"{cls}.{name}", owner.__dict__[name]))
            if fullname.endswith("index.artefacts"):
                cached = module.ArtefactMemo.cached
                module.ArtefactMemo.cached = lambda self, snap, key, build: cached(self, snap, key, timed(f"build[{key}]", build))
        spec.loader.exec_module = exec_module
        return spec

sys.meta_path.insert(0, Wrapping())
start = time.process_time()

@atexit.register  # run by the CLI's own exit, as when it is the program
def report():
    spent["main, in all"] = time.process_time() - start
    print("PHASES " + json.dumps(spent), file=sys.stderr, flush=True)

from llama_index_graphrag_suite.cli import main
spent["import the CLI"] = time.process_time() - start
sys.argv = ["graphrag-suite", *sys.argv[3:]]
sys.exit(main())  # argv None: the program's own path (no cyclic GC, no teardown)
"""


def phases(index: str, method: str) -> dict[str, float]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", HARNESS, json.dumps(FUNCTIONS), json.dumps(METHODS_OF), "query", index,
                           QUESTION, "--method", method, "--quiet"], capture_output=True, text=True, env=env,
                          cwd=tempfile.gettempdir())
    line = next((x for x in proc.stderr.splitlines() if x.startswith("PHASES ")), None)
    if proc.returncode != 0 or line is None:
        raise SystemExit(f"query --method {method} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return json.loads(line[len("PHASES "):])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    runs = {m: [phases(args.index, m) for _ in range(args.runs)] for m in methods}
    rows: list[str] = []
    for m in methods:
        for r in runs[m]:
            rows += [k for k in r if k not in rows]
    lines = [f"CPU seconds per phase of one query process, median of {args.runs} processes per method "
             f"(load average {os.getloadavg()[0]:.1f} at the end; source tree: {Path(__file__).resolve().parents[2]}):",
             "", "| phase | " + " | ".join(methods) + " |", "| --- " * (1 + len(methods)) + "|"]
    for row in rows:
        cells = [statistics.median([r.get(row, 0.0) for r in runs[m]]) for m in methods]
        lines.append(f"| `{row}` | " + " | ".join(f"{c:.3f}" if c else "-" for c in cells) + " |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
