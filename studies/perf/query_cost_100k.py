"""Per-query CPU of AGRAG, HippoRAG and PathRAG on a large index, two code trees side by side, same results.

Two worker processes, one per code tree (``--old`` and ``--new``: folders holding the package), each load the
index once (read-only) and answer one question at a time; the driver alternates old and new question by
question, so both see the same machine load. Per method: one untimed first question (per-snapshot
structures are built then), then ``--questions-count`` questions, each timed by the worker's process CPU
(``time.process_time``) and wall clock around ``retriever.retrieve``. Every answer (chunk ids, scores,
metadata, the evidence node's text and payload) is compared between the trees as JSON: the script fails
if one differs.

    python studies/perf/query_cost_100k.py --old /work/wtA_base --new /work/wtA \\
        --index /work/scratch/keep3/index-100000 --questions /work/scratch/keep3/synth-100000/questions.jsonl

Worker mode (``--worker``, run by the driver) reads JSON commands on stdin and answers on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

_REPLY = "@@reply "


def _answer(nodes) -> list[dict]:
    """A retrieval as plain JSON: every node's id, score, text and metadata (evidence included)."""
    return [{"id": n.node.node_id, "score": n.score, "text": n.node.get_content(), "metadata": n.node.metadata}
            for n in nodes]


def worker(index_path: str) -> None:
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(index_path, embed_model="hash")
    retrievers: dict[str, object] = {}
    print(_REPLY + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        method = cmd["method"]
        if method not in retrievers:
            retrievers[method] = get_retriever(index, method, top_k=5)
        cpu, wall = time.process_time(), time.perf_counter()
        nodes = retrievers[method].retrieve(cmd["question"])
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        print(_REPLY + json.dumps({"cpu": cpu, "wall": wall, "answer": _answer(nodes)}, sort_keys=True, default=str),
              flush=True)


class _Worker:
    def __init__(self, tree: str, index_path: str):
        env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
        self.proc = subprocess.Popen([sys.executable, __file__, "--worker", "--index", index_path], cwd=tree, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def read(self) -> dict:
        for line in self.proc.stdout:
            if line.startswith(_REPLY):
                return json.loads(line[len(_REPLY):])
        raise RuntimeError(f"worker ended (exit {self.proc.wait()})")

    def ask(self, method: str, question: str) -> dict:
        self.proc.stdin.write(json.dumps({"method": method, "question": question}) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--index", required=True)
    ap.add_argument("--questions")
    ap.add_argument("--old")
    ap.add_argument("--new")
    ap.add_argument("--methods", default="agrag,hipporag,pathrag")
    ap.add_argument("--questions-count", type=int, default=24)
    args = ap.parse_args()
    if args.worker:
        worker(args.index)
        return 0
    questions = [json.loads(line)["question"] for line in Path(args.questions).read_text().splitlines() if line.strip()]
    questions = questions[: args.questions_count + 1]
    trees = {"old": _Worker(args.old, args.index), "new": _Worker(args.new, args.index)}
    for w in trees.values():
        w.read()  # loaded
    differ = 0
    rows = []
    for method in args.methods.split(","):
        cpu: dict[str, list[float]] = {"old": [], "new": []}
        first: dict[str, float] = {}
        same = 0
        for i, question in enumerate(questions):
            names = ("old", "new") if i % 2 == 0 else ("new", "old")  # alternate who goes first
            got = {name: trees[name].ask(method, question) for name in names}
            if json.dumps(got["old"]["answer"], sort_keys=True) == json.dumps(got["new"]["answer"], sort_keys=True):
                same += 1
            else:
                differ += 1
                print(f"DIFFERENT {method} question {i}: {question!r}", flush=True)
            for name in names:
                if i == 0:
                    first[name] = got[name]["cpu"]
                else:
                    cpu[name].append(got[name]["cpu"])
        old_p50, new_p50 = (statistics.median(cpu[n]) * 1000 for n in ("old", "new"))
        rows.append((method, len(questions), same, first["old"] * 1000, first["new"] * 1000, old_p50, new_p50,
                     max(cpu["old"]) * 1000, max(cpu["new"]) * 1000))
        print(f"{method}: {same}/{len(questions)} identical; CPU ms per query p50 old {old_p50:.1f} new {new_p50:.1f}",
              flush=True)
    for w in trees.values():
        w.close()
    print("\n| method | questions (incl. first) | identical | first query CPU ms old / new | p50 CPU ms old | "
          "p50 CPU ms new | max CPU ms old / new |")
    print("|---|---|---|---|---|---|---|")
    for m, n, s, f_old, f_new, p_old, p_new, x_old, x_new in rows:
        print(f"| {m} | {n} | {s} | {f_old:.0f} / {f_new:.0f} | {p_old:.1f} | {p_new:.1f} | {x_old:.0f} / {x_new:.0f} |")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
