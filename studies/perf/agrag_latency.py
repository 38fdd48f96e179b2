"""AGRAG per-step retrieval latency on a large index, and a check that two code versions return the same.

    # the code before and after the change, each from a worktree (the package there shadows the installed
    # one; a shared checkout may hold other people's unfinished edits, e.g. to graph/ppr.py):
    git worktree add /tmp/agrag/before <commit before the change>
    git worktree add /tmp/agrag/after <commit of the change>
    PYTHONPATH=/tmp/agrag/before .venv/bin/python benchmarks/agrag_latency.py --save /tmp/agrag/before.json
    PYTHONPATH=/tmp/agrag/after .venv/bin/python benchmarks/agrag_latency.py --compare /tmp/agrag/before.json \\
        --save /tmp/agrag/after.json --out benchmarks/results/agrag_latency.md
    # run one at a time: each loads the index (~1-2 min, ~7 GB)
    # the same without OpenBLAS worker threads (after each matrix-vector product they spin for a while and,
    # on a busy machine, take the second core from the single-threaded steps that follow), added to the file:
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/agrag/before .venv/bin/python benchmarks/agrag_latency.py \\
        --save /tmp/agrag/before1.json
    OPENBLAS_NUM_THREADS=1 PYTHONPATH=/tmp/agrag/after .venv/bin/python benchmarks/agrag_latency.py \\
        --compare /tmp/agrag/before1.json --save /tmp/agrag/after1.json --out benchmarks/results/agrag_latency.md --append
    # a table from two saved runs, without running: --compare BEFORE.json --saved AFTER.json --out FILE

Defaults: the 100k-passage index ``/tmp/probe/idx100k_ner`` (``embed_model="hash"``), the first 20 questions
of ``/tmp/probe/synth-100000``, ``get_retriever(index, "agrag", top_k=5)``. Each question is embedded first
(untimed: the index remembers the vector), one warm-up query builds the per-snapshot structures, then every
question is retrieved ``--repeat`` times; a step's time per question is its median over the repeats, and the
table gives the median (p50) and the largest over the questions, in ms of wall time and of CPU time.

Steps: the retriever's tracing stages (``agrag.hybrid``, ``agrag.fact_mapping``, ``agrag.triple_filter``,
``agrag.ppr``, ``agrag.steiner``, ``agrag.mcmi``), and inside ``agrag.steiner`` the Eq. 14 pricing (before:
``_edge_costs`` for every edge + ``PairCostIndex.matrix``; after: ``_slot_costs`` + ``PairCostIndex.query``,
edges priced as searched) and ``steiner_tree``. "other" is the rest of ``retrieve`` (evidence, fusion).

Outputs compared per question: the returned chunk ids (in order) and, from the evidence node, the Steiner
edges, the MCMI nodes, edges, added nodes, ratio and stop reason, and the graph chunks.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import llama_index_graphrag_suite
import llama_index_graphrag_suite.methods.agrag.retriever as agrag_module
from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.graph import costs as costs_module
from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
from llama_index_graphrag_suite.registry import get_retriever

STAGES = ["agrag.hybrid", "agrag.fact_mapping", "agrag.triple_filter", "agrag.ppr", "agrag.steiner", "agrag.mcmi"]
ROWS = [  # (label, key)
    ("hybrid retrieval (dense + BM25)", "agrag.hybrid"),
    ("fact mapping (Eq. 7-8)", "agrag.fact_mapping"),
    ("PPR (Eq. 10-13; not in this change)", "agrag.ppr"),
    ("Eq. 14 slot/edge costs", "edge_costs"),
    ("cost matrix / per-query cost graph", "cost_matrix"),
    ("steiner_tree", "steiner_tree"),
    ("agrag.steiner stage (the three above)", "agrag.steiner"),
    ("MCMI expansion (Eq. 15-17)", "agrag.mcmi"),
    ("other (filter, evidence, fusion)", "other"),
    ("retrieve total", "total"),
    ("retrieve total without PPR", "non_ppr"),
]
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
COMPARED = ["steiner_edges", "mcmi_nodes", "mcmi_edges", "mcmi_added", "mcmi_ratio", "mcmi_stopped", "graph_chunks"]


class Timer:
    """Wall and CPU (this process, all threads) seconds per name, summed within the current query."""

    def __init__(self):
        self.current: dict[str, float] = {}

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.current[name] = self.current.get(name, 0.0) + wall
        self.current[name + ".cpu"] = self.current.get(name + ".cpu", 0.0) + cpu

    @contextmanager
    def timing(self, name: str):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - wall, time.process_time() - cpu)

    def wrap(self, owner, attr: str, name: str) -> None:
        if not hasattr(owner, attr):
            return
        func = getattr(owner, attr)

        def timed(*args, **kwargs):
            with self.timing(name):
                return func(*args, **kwargs)

        setattr(owner, attr, timed)


def instrument(timer: Timer) -> None:
    """Time the stages and the Eq. 14 / Steiner functions of whichever AGRAG version is imported."""
    original_stage = agrag_module.stage

    @contextmanager
    def timed_stage(name):
        with timer.timing(name), original_stage(name):
            yield

    agrag_module.stage = timed_stage
    timer.wrap(agrag_module, "steiner_tree", "steiner_tree")
    timer.wrap(agrag_module.AGRAGRetriever, "_slot_costs", "edge_costs")  # after
    if not hasattr(agrag_module.AGRAGRetriever, "_slot_costs"):
        timer.wrap(agrag_module.AGRAGRetriever, "_edge_costs", "edge_costs")  # before
    if hasattr(costs_module.PairCostIndex, "query"):
        timer.wrap(costs_module.PairCostIndex, "query", "cost_matrix")
    else:
        timer.wrap(costs_module.PairCostIndex, "matrix", "cost_matrix")


def outputs(chunks, evidence) -> dict:
    ev = evidence.node.metadata["evidence"] if evidence is not None else {}
    return {"chunks": [n.node.node_id for n in chunks], **{k: ev.get(k) for k in COMPARED}}


def git_describe(path: Path) -> str:
    """``<short commit>``, plus the package files changed since it (a worktree with edits on top)."""
    def git(*argv: str) -> str:
        return subprocess.run(["git", "-C", str(path), *argv], capture_output=True, text=True, check=True).stdout
    try:
        commit = git("rev-parse", "--short", "HEAD").strip()
        changed = [line[3:] for line in git("status", "--short", "--", "llama_index_graphrag_suite").splitlines()]
    except (OSError, subprocess.CalledProcessError):
        return "?"
    return commit + (f" with uncommitted changes to {', '.join(changed)}" if changed else "")


def run(args) -> dict:
    timer = Timer()
    instrument(timer)
    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index_dir, embed_model=args.embed_model)
    load_s = time.perf_counter() - start
    questions = [q.question for q in load_dataset(args.dataset).questions][: args.limit]
    for q in questions:
        index.embed_query(q)  # embedding excluded from the timings
    retriever = get_retriever(index, "agrag", top_k=args.top_k)
    start = time.perf_counter()
    retriever.retrieve_with_evidence(questions[0])  # builds the per-snapshot structures
    build_s = time.perf_counter() - start
    per_question, results = [], []
    load_before = os.getloadavg()
    for q in questions:
        samples = []
        for rep in range(args.repeat):
            timer.current = {}
            with timer.timing("total"):
                chunks, evidence = retriever.retrieve_with_evidence(q)
            step = {k: 1000 * v for k, v in timer.current.items()}
            for cpu in ("", ".cpu"):
                step["non_ppr" + cpu] = step["total" + cpu] - step.get("agrag.ppr" + cpu, 0.0)
                step["other" + cpu] = step["total" + cpu] - sum(step.get(s + cpu, 0.0) for s in STAGES)
            samples.append(step)
            if rep == 0:
                results.append({"question": q, **outputs(chunks, evidence)})
        keys = sorted({k for s in samples for k in s})
        per_question.append({k: statistics.median(s.get(k, 0.0) for s in samples) for k in keys})
    package = Path(llama_index_graphrag_suite.__file__).resolve().parent.parent
    return {"package": str(package), "commit": git_describe(package), "load_s": load_s, "first_query_s": build_s,
            "blas_threads": {k: os.environ[k] for k in BLAS_ENV if k in os.environ},
            "questions": len(questions), "repeat": args.repeat, "loadavg": [load_before, os.getloadavg()],
            "nodes": index.snapshot.num_nodes, "edges": index.snapshot.num_edges,
            "per_question": per_question, "results": results}


def summary(per_question: list[dict], key: str) -> tuple[float, float]:
    values = [q.get(key, 0.0) for q in per_question]
    return statistics.median(values), max(values)


def compare(before: dict, after: dict) -> tuple[int, list[str]]:
    same, notes = 0, []
    for b, a in zip(before["results"], after["results"]):
        diffs = [k for k in ["chunks", *COMPARED] if b.get(k) != a.get(k)]
        if diffs:
            notes.append(f"- differs ({', '.join(diffs)}): {a['question']}")
        else:
            same += 1
    return same, notes


def table(before: dict, after: dict, args) -> list[str]:
    same, notes = compare(before, after)
    n = after["questions"]
    blas = ", ".join(f"{k}={v}" for k, v in after.get("blas_threads", {}).items())
    lines = [
        "# AGRAG retrieval latency per step, 100k-passage index" + (f" ({blas})" if blas else ""),
        "",
        f"Commands: `{before.get('command', '?')}`, then `{after.get('command', args.command)}` (see "
        f"`benchmarks/agrag_latency.py`). Index `{args.index_dir}` "
        f"({after['nodes']:,} nodes, {after['edges']:,} edges), the first {n} questions of `{args.dataset}`, "
        f"`get_retriever(index, \"agrag\", top_k={args.top_k})`, query embedding excluded; per question the median "
        f"of {after['repeat']} runs, then the median (p50) and the largest over the {n} questions, in ms: wall time, "
        "and CPU time of the process (all threads: the BLAS matrix-vector products of the hybrid, fact mapping and "
        "Eq. 14 rows may use both cores, so their CPU can exceed their wall time).",
        f"Before: `{before['package']}` at {before['commit']}; after: `{after['package']}` at {after['commit']}.",
        f"The machine (2 cores) was shared with other jobs: load average {before['loadavg'][0][0]:.1f} -> "
        f"{before['loadavg'][1][0]:.1f} during the before run, {after['loadavg'][0][0]:.1f} -> "
        f"{after['loadavg'][1][0]:.1f} during the after run; absolute numbers are noisy, compare the columns.",
        "",
        "| step | wall p50 before | wall p50 after | CPU p50 before | CPU p50 after | wall max before | wall max after |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, key in ROWS:
        b50, bmax = summary(before["per_question"], key)
        a50, amax = summary(after["per_question"], key)
        bc, _ = summary(before["per_question"], key + ".cpu")
        ac, _ = summary(after["per_question"], key + ".cpu")
        lines.append(f"| {label} | {b50:.1f} | {a50:.1f} | {bc:.1f} | {ac:.1f} | {bmax:.1f} | {amax:.1f} |")
    lines += [
        "",
        f"First query (builds the per-snapshot structures): before {before['first_query_s']:.1f} s, "
        f"after {after['first_query_s']:.1f} s. Index load: {before['load_s']:.0f} s / {after['load_s']:.0f} s.",
        "",
        f"Outputs identical (returned chunk ids in order, Steiner edges, MCMI nodes/edges/added/ratio/stop, graph "
        f"chunks): **{same} of {n}** questions.",
        *notes,
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index-dir", default="/tmp/probe/idx100k_ner")
    parser.add_argument("--embed-model", default="hash")
    parser.add_argument("--dataset", default="/tmp/probe/synth-100000")
    parser.add_argument("--limit", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--save", help="write this run (timings and outputs) as JSON")
    parser.add_argument("--compare", help="a --save file of the code to compare with (the 'before')")
    parser.add_argument("--out", help="with --compare: write the markdown table here")
    parser.add_argument("--append", action="store_true", help="add the table to --out instead of replacing it")
    parser.add_argument("--saved", help="with --compare: the 'after' is this --save file (no run, no index load)")
    args = parser.parse_args()
    args.command = "python benchmarks/agrag_latency.py " + " ".join(
        f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in vars(args).items()
        if v is not None and k not in ("command",) and v != parser.get_default(k))
    env = " ".join(f"{k}={os.environ[k]}" for k in (*BLAS_ENV, "PYTHONPATH") if k in os.environ)
    args.command = f"{env} {args.command}" if env else args.command
    result = json.loads(Path(args.saved).read_text(encoding="utf-8")) if args.saved else {**run(args), "command": args.command}
    if args.save and not args.saved:
        Path(args.save).write_text(json.dumps(result), encoding="utf-8")
    for label, key in ROWS:
        p50, worst = summary(result["per_question"], key)
        cpu, _ = summary(result["per_question"], key + ".cpu")
        print(f"{label:45s} p50 {p50:8.1f} ms   max {worst:8.1f} ms   CPU p50 {cpu:8.1f} ms")
    if args.compare:
        before = json.loads(Path(args.compare).read_text(encoding="utf-8"))
        lines = table(before, result, args)
        print("\n".join(lines))
        if args.out:
            text = "\n".join(lines) + "\n"
            if args.append and Path(args.out).exists():
                text = Path(args.out).read_text(encoding="utf-8") + "\n" + text
            Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
