"""Wall and CPU time of one `graphrag-suite query` process per method, before and after, side by side in one run.

Each query runs as a new process exactly as a user starts it (``python -m llama_index_graphrag_suite.cli query
INDEX QUESTION --method M --quiet``, the source tree on ``PYTHONPATH``, from a neutral folder), after one untimed
warm-up per tree and method, then in turns (before, after, before, ...) so that a machine whose speed drifts treats
both alike. Each process is timed from outside: wall by the clock, CPU (user + system) and peak memory by the
kernel's accounting of that one child (``os.wait4``). The table gives medians and ranges, and whether every run
printed the same ranking (chunk ids, scores, evidence; the printed milliseconds are left out of the comparison).

    git worktree add --detach /tmp/base b47c396
    cp -a INDEX /tmp/index-after; cp -a INDEX /tmp/index-before     # ArchRAG may add its artefacts to an index
    python studies/perf/cli_query_wall.py --index /tmp/index-after --before /tmp/base \\
        --before-index /tmp/index-before --runs 5 --out studies/perf/results/cli_query_wall.md

``--spin N`` adds a second table: the bundled MiniLM on ONNX Runtime embedding the first N passages of
``--corpus`` (and their first two words, as entity names), with the intra-op threads spinning (ONNX Runtime's
default) or sleeping between operators, in turns, one process each ("same output": the same vectors, by digest).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUESTION = "Who is the mother of the director of film Polish-Russian War?"  # 2wiki_retrieval101's first question
METHODS = "hybrid,hipporag,agrag,pathrag,archrag,a2rag"
MS = re.compile(r"  \(\d+(\.\d+)? ms\)$")  # the retrieval time on the header line: differs from run to run


def run_once(cmd: list[str], src: str | None) -> tuple[float, float, float, str]:
    """Wall s, CPU s (user + system), peak MiB and stdout of one process running ``cmd`` with ``src`` first on
    ``PYTHONPATH``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if src:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, cwd=tempfile.gettempdir())
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        text, problem = out.read(), err.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}): {problem.strip()[-500:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, text


def query_cmd(index: str, method: str) -> list[str]:
    return [sys.executable, "-m", "llama_index_graphrag_suite.cli", "query", index, QUESTION, "--method", method,
            "--quiet"]


def ranking(stdout: str) -> list[str]:
    return [MS.sub("", line) for line in stdout.splitlines()]


def summary(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def paired(label: str, before_cmd: list[str] | None, after_cmd: list[str], before_src, after_src, runs: int):
    """``runs`` timings of each command in turns after one warm-up each; returns (before, after) lists of runs."""
    before, after = [], []
    if before_cmd:
        run_once(before_cmd, before_src)
    run_once(after_cmd, after_src)
    for _ in range(runs):
        if before_cmd:
            before.append(run_once(before_cmd, before_src))
        after.append(run_once(after_cmd, after_src))
    print(label, "before", [round(r[1], 2) for r in before], "after", [round(r[1], 2) for r in after],
          file=sys.stderr, flush=True)
    return before, after


def table(rows, with_before: bool) -> list[str]:
    cols = (("wall s", 0, 2), ("CPU s", 1, 2), ("peak MiB", 2, 0))
    if not with_before:
        lines = ["| command | " + " | ".join(c for c, _, _ in cols) + " |", "| --- " * (1 + len(cols)) + "|"]
        return lines + [f"| `{label}` | " + " | ".join(summary([r[i] for r in after], d) for _, i, d in cols) + " |"
                        for label, _, after, _ in rows]
    lines = ["| command | " + " | ".join(f"{c} before | {c} after | before / after" for c, _, _ in cols[:2])
             + " | peak MiB before | peak MiB after | same output |", "| --- " * 10 + "|"]
    for label, before, after, same in rows:
        cells = []
        for _, i, d in cols[:2]:
            b, a = [r[i] for r in before], [r[i] for r in after]
            cells += [summary(b, d), summary(a, d), f"{statistics.median(b) / statistics.median(a):.2f}x"]
        cells += [summary([r[2] for r in before], 0), summary([r[2] for r in after], 0), "yes" if same else "NO"]
        lines.append(f"| `{label}` | " + " | ".join(cells) + " |")
    return lines


SPIN_CODE = """
import hashlib, json, sys
import numpy as np
from llama_index_graphrag_suite.embeddings import bundled_minilm_path
from llama_index_graphrag_suite.embeddings_onnx import OnnxSentenceEmbedding
texts = [json.loads(line)["text"] for line in open(sys.argv[1], encoding="utf-8")][: int(sys.argv[2])]
model = OnnxSentenceEmbedding(bundled_minilm_path(), spin=sys.argv[3] == "1")
vectors = model.get_text_embedding_batch(texts) + model.get_text_embedding_batch([" ".join(t.split()[:2]) for t in texts])
print(hashlib.sha256(np.asarray(vectors, np.float32).tobytes()).hexdigest())  # the same vectors both ways?
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="the index the code measured reads (a copy: see above)")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--after", default=str(Path(__file__).resolve().parents[2]), help="source tree measured")
    parser.add_argument("--before", default=None, help="source tree to compare with (e.g. a worktree of main)")
    parser.add_argument("--before-index", default=None, help="the index the before code reads (default --index)")
    parser.add_argument("--spin", type=int, default=0, help="also time N passages embedded with and without spinning")
    parser.add_argument("--corpus", default="../shared/datasets/2wiki_retrieval101/corpus.jsonl")
    parser.add_argument("--out", default=None, help="markdown file to write (default: print)")
    args = parser.parse_args()
    load_before = os.getloadavg()
    started = time.strftime("%H:%M", time.gmtime())
    rows = []
    for method in [m for m in args.methods.split(",") if m]:
        before_cmd = query_cmd(args.before_index or args.index, method) if args.before else None
        before, after = paired(f"query --method {method}", before_cmd, query_cmd(args.index, method),
                               args.before, args.after, args.runs)
        same = not before or all(ranking(r[3]) == ranking(after[0][3]) for r in before + after)
        rows.append((f"query --method {method}", before, after, same))
    spin_rows = []
    if args.spin:
        cmd = lambda flag: [sys.executable, "-c", SPIN_CODE, str(Path(args.corpus).resolve()), str(args.spin), flag]  # noqa: E731
        spinning, sleeping = paired(f"embed {args.spin} passages", cmd("1"), cmd("0"), args.after, args.after, args.runs)
        same = all(r[3] == spinning[0][3] for r in spinning + sleeping)
        spin_rows.append((f"embed {args.spin} passages + names", spinning, sleeping, same))
    load_after = os.getloadavg()
    lines = [f"Question: \"{QUESTION}\". Seconds and MiB per process, median (min-max) of {args.runs} runs after one "
             f"warm-up per command, in turns. Run {started}-{time.strftime('%H:%M', time.gmtime())} UTC on "
             f"{os.cpu_count()} CPUs, load average (1, 5, 15 min) {', '.join(f'{x:.1f}' for x in load_before)} before "
             f"and {', '.join(f'{x:.1f}' for x in load_after)} after: a shared machine, other jobs ran meanwhile, so "
             "wall times are longer than on an idle machine; CPU time is the steadier figure.", ""]
    lines += table(rows, bool(args.before))
    if spin_rows:
        lines += ["", f"The bundled MiniLM on ONNX Runtime, one process per run: the first {args.spin} passages of "
                      f"`{args.corpus}` and their first two words (\"before\" = threads spinning, ONNX Runtime's "
                      "default; \"after\" = sleeping between operators):", ""]
        lines += table(spin_rows, True)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
