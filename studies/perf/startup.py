"""Start-up cost of the CLI: `graphrag-suite --help` and one `query` per process, end to end.

Each command runs as a new process (what a user waits for: interpreter, imports, loading the index, the
query, printing), ``--runs`` times after one untimed warm-up; the table gives the median and the range of
the wall times. With ``--before SRC`` the same commands also run from another source tree (e.g. an
older commit from ``git archive``) on ``PYTHONPATH``, in turns (before, after, before, ...) so that a
machine whose speed drifts treats both alike; the ratio is before / after of the medians.

    git archive e452173 | tar -x -C /tmp/before
    python benchmarks/startup.py --index /tmp/hotpot --before /tmp/before --before-index /tmp/hotpot-before \\
        --out benchmarks/results/startup.md

``--before-index`` is a copy of the index without the ``artefacts/`` that newer code adds to it (older
code would load a hierarchy the newer one saved, and look faster than it was).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "If Gallu is a demon Lilu is what?"  # hotpotqa_train100's first question
LAUNCH = "import sys; from llama_index_graphrag_suite.cli import main; sys.exit(main())"


def commands(index: str, methods: list[str]) -> list[tuple[str, list[str]]]:
    out = [("graphrag-suite --help", ["--help"])]
    for method in methods:
        out.append((f"query --method {method}", ["query", index, QUESTION, "--method", method, "--quiet"]))
    return out


def run_once(args: list[str], src: str | None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one process running the CLI with ``args`` from source tree ``src``
    (None: as installed). CPU time is what a busy machine disturbs least."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if src:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # from a neutral folder: `python -c` puts the working directory first on sys.path, before PYTHONPATH
    proc = subprocess.run([sys.executable, "-c", LAUNCH, *args], env=env, capture_output=True, text=True,
                          cwd=tempfile.gettempdir())
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def summary(times: list[float]) -> str:
    return f"{statistics.median(times):.2f} ({min(times):.2f}-{max(times):.2f})"


def median(runs: list[tuple[float, float]], which: int) -> float:
    return statistics.median(r[which] for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="the hotpotqa_train100 index (graphrag-suite index ... --out)")
    parser.add_argument("--methods", default="hybrid,a2rag,archrag")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--after", default=None, help="a source tree of the code measured (default: the installed package)")
    parser.add_argument("--before", default=None, help="a source tree of the code to compare with")
    parser.add_argument("--before-index", default=None, help="the index the older code reads (default --index)")
    parser.add_argument("--out", default=None, help="markdown file to write (default: print)")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    after_cmds = commands(args.index, methods)
    before_cmds = commands(args.before_index or args.index, methods)
    load_before = os.getloadavg()[0]
    rows = []
    for (label, after_args), (_, before_args) in zip(after_cmds, before_cmds):
        run_once(after_args, args.after)  # warm-up: file cache, the first process to build anything
        if args.before:
            run_once(before_args, args.before)
        after, before = [], []
        for _ in range(args.runs):
            if args.before:
                before.append(run_once(before_args, args.before))
            after.append(run_once(after_args, args.after))
        rows.append((label, before, after))
        print(label, "before", before, "after", after, file=sys.stderr, flush=True)
    load_after = os.getloadavg()[0]
    lines = [f"Seconds per process (wall, and CPU = user + system), median (min-max) of {args.runs} runs after one "
             f"warm-up; question: \"{QUESTION}\"; load average {load_before:.1f} before the runs and "
             f"{load_after:.1f} after them on {os.cpu_count()} CPUs: a shared machine, other work ran meanwhile, "
             "so wall times are longer than on an idle machine and CPU times are the steadier figure.", ""]
    cols = ("wall", "CPU")
    if args.before:
        lines += ["| command | " + " | ".join(f"{c} before | {c} after | before / after" for c in cols) + " |",
                  "| --- " * (1 + 3 * len(cols)) + "|"]
        for label, before, after in rows:
            cells = []
            for i in range(len(cols)):
                cells += [summary([r[i] for r in before]), summary([r[i] for r in after]),
                          f"{median(before, i) / median(after, i):.1f}x"]
            lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    else:
        lines += ["| command | wall | CPU |", "| --- | --- | --- |"]
        lines += [f"| `{label}` | {summary([r[0] for r in after])} | {summary([r[1] for r in after])} |"
                  for label, _, after in rows]
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
