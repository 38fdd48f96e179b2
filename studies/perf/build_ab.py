"""Index build time of two checkouts side by side: is this commit's build slower than a baseline's?

A build's wall time depends on the machine as much as on the code (the same 2wiki build took 165 s, then 456 s, on
machines of one kind), so a figure from another day cannot tell whether the code got slower. This script builds
one dataset's index in memory (the default ``IndexConfig``, the bundled all-MiniLM-L6-v2, as the bench does) from
each checkout in turn, A B A B ..., each in a fresh process with that checkout first on ``PYTHONPATH`` and the same
interpreter and packages, and prints every run, the medians and the median of the per-pair ratios A/B: pairing keeps
the ratio meaningful when the machine's speed drifts.

    git worktree add /tmp/base <commit>            # the baseline
    python benchmarks/build_ab.py --a . --b /tmp/base --dataset ../shared/datasets/2wiki_retrieval101 --pairs 3

``--child`` is the build itself (one JSON line: wall seconds, seconds per build stage, entities, relations, chunks),
what each run starts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path


def child(dataset: str) -> None:
    """Build the index of ``dataset`` with the code on ``sys.path`` (the bench's own build and timing,
    ``eval.bench.build_or_load_index``) and print one JSON line about it."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.eval.bench import build_or_load_index
    from llama_index_graphrag_suite.eval.datasets import load_dataset

    index, info = build_or_load_index(load_dataset(dataset), None, resolve_embed_model("all-MiniLM-L6-v2"), None,
                                      show_progress=False)
    print(json.dumps({"seconds": round(info["seconds"], 1), "stages": info.get("stage_seconds", {}),
                      "entities": len(index.entities), "relations": info.get("relations"),
                      "chunks": len(index.chunk_order)}), flush=True)


def run_child(checkout: Path, dataset: str) -> dict:
    """One build in a fresh process, ``checkout`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve()), "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--dataset", dataset],
                          env=env, capture_output=True, text=True, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"the build in {checkout} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return json.loads(lines[-1])


def commit_of(checkout: Path) -> str:
    out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return out.stdout.strip() or "?"


def table(runs: dict[str, list[dict]], commits: dict[str, str], dataset: str) -> list[str]:
    """Every run, the medians, and the median of the pairwise ratios A/B."""
    stages = sorted({s for side in runs.values() for r in side for s in r["stages"]},
                    key=lambda s: -max(r["stages"].get(s, 0) for side in runs.values() for r in side))
    shown = stages[:3]  # the three stages that take longest; the total covers the rest
    lines = [f"## Building `{Path(dataset).name}`: A = {commits['A']}, B = {commits['B']}", "",
             "In memory, default `IndexConfig`, all-MiniLM-L6-v2; runs in turn A B A B ..., each a fresh process. "
             "Seconds.", "",
             "| run | side | commit | total | " + " | ".join(shown) + " | entities | chunks |",
             "|---|---|---|---:|" + "---:|" * len(shown) + "---:|---:|"]
    for i in range(len(runs["A"])):
        for side in ("A", "B"):
            r = runs[side][i]
            cells = " | ".join(f"{r['stages'].get(s, 0):.1f}" for s in shown)
            lines.append(f"| {i + 1} | {side} | {commits[side]} | {r['seconds']:.1f} | {cells} | {r['entities']:,} | "
                         f"{r['chunks']:,} |")
    ratios = [a["seconds"] / b["seconds"] for a, b in zip(runs["A"], runs["B"])]
    med = {side: statistics.median(r["seconds"] for r in runs[side]) for side in ("A", "B")}
    lines += ["", f"Median total: A {med['A']:.1f} s, B {med['B']:.1f} s. "
                  f"Ratio A/B, pair by pair: {', '.join(f'{x:.3f}' for x in ratios)}; "
                  f"median **{statistics.median(ratios):.3f}**.", ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", required=True, help="a dataset folder (corpus.jsonl, questions.jsonl)")
    ap.add_argument("--a", default=".", help="the checkout measured (default: this one)")
    ap.add_argument("--b", help="the baseline checkout")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args.dataset)
    if not args.b:
        ap.error("--b (the baseline checkout) is required")
    sides = {"A": Path(args.a), "B": Path(args.b)}
    runs: dict[str, list[dict]] = {"A": [], "B": []}
    for i in range(args.pairs):
        for side, checkout in sides.items():
            runs[side].append(run_child(checkout, args.dataset))
            print(f"pair {i + 1}, {side}: {runs[side][-1]['seconds']:.1f} s", file=sys.stderr, flush=True)
    print("\n".join(table(runs, {s: commit_of(p) for s, p in sides.items()}, args.dataset)))


if __name__ == "__main__":
    main()
