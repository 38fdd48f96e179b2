"""Every method's top 5 on every question of the five shared sets, kept per question, so that a refactor of the methods
can be shown to change no ranking (``--compare``) and a new default can be read question by question.

    python benchmarks/method_rankings.py --work /tmp/rankings --out before.json
    python benchmarks/method_rankings.py --work /tmp/rankings --out after.json --compare before.json

One index per set (MiniLM, the default extractor) is built in ``--work/<set>`` on the first run and loaded after.
The methods run through the registry (``resolve_method``) and ``retrieve()`` at top_k 5, as the bench runs them.
``--compare`` prints, per set and method, recall@5 before and after and how many questions' top 5 changed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS  # noqa: E402

K = 5
PAPER = "hipporag:paper,agrag:paper,pathrag:paper,archrag:paper,a2rag:paper,a2rag:unguarded"
ABLATIONS = ("agrag:no_mcmi,agrag:no_filter,agrag:hybrid_only,pathrag:paths_only,archrag:no_knn,archrag:best_item,"
             "a2rag:no_global,a2rag:global_only")
METHODS = f"all,{PAPER},{ABLATIONS}"


def rank_set(dataset_dir: Path, index_dir: Path, methods: list[str], limit: int = 0) -> dict:
    from llama_index_graphrag_suite.eval.bench import build_or_load_index, resolve_methods
    from llama_index_graphrag_suite.eval.datasets import load_dataset

    dataset = load_dataset(dataset_dir)
    index, info = build_or_load_index(dataset, index_dir, None, None, show_progress=False)
    out: dict = {"reused": info["reused"], "questions": 0, "methods": {}}
    questions = [q for q in dataset.questions if q.supporting_ids][: limit or None]
    out["questions"] = len(questions)
    for label, spec in specs(methods, resolve_methods):
        start = time.perf_counter()
        retriever = spec.retriever(index, top_k=K)
        tops, recalls = [], []
        for q in questions:
            nodes = retriever.retrieve(q.question)
            docs = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes]
            tops.append([n.node.node_id for n in nodes])
            recalls.append(len(set(q.supporting_ids) & set(docs[:K])) / len(set(q.supporting_ids)))
        out["methods"][label] = {"recall@5": round(100 * sum(recalls) / len(recalls), 2), "top": tops}
        print(f"  {label:20s} {out['methods'][label]['recall@5']:6.2f}  "
              f"({time.perf_counter() - start:.0f}s)", flush=True)
    return out


def specs(methods: list[str], resolve_methods) -> list[tuple[str, object]]:
    """``(label, MethodSpec)`` per method; ``name[:variant]+key=value+...`` runs it with those settings (JSON values)."""
    from llama_index_graphrag_suite.registry import resolve_method

    out = []
    for label in methods:
        base, *pairs = label.split("+")
        if not pairs:
            out += [(s.label, s) for s in resolve_methods([base])]
            continue
        settings = {k: json.loads(v) for k, _, v in (p.partition("=") for p in pairs)}
        out.append((label, resolve_method(base, settings)))
    return out


def compare(old: dict, new: dict) -> list[str]:
    lines = ["| set | method | recall@5 before | after | questions whose top 5 changed |", "|---|---|---|---|---|"]
    for name in new:
        for label, m in new[name]["methods"].items():
            before = old.get(name, {}).get("methods", {}).get(label)
            if before is None:
                lines.append(f"| {name} | {label} | – | {m['recall@5']:.2f} | (new) |")
                continue
            changed = sum(a != b for a, b in zip(before["top"], m["top"]))
            lines.append(f"| {name} | {label} | {before['recall@5']:.2f} | {m['recall@5']:.2f} | {changed} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", default="../shared/datasets")
    parser.add_argument("--work", required=True, help="the indexes, one folder per set (built once)")
    parser.add_argument("--sets", default=",".join(SHARED_SETS))
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--out", required=True)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions with gold of each set")
    parser.add_argument("--compare", help="an earlier --out: print what changed")
    args = parser.parse_args()
    methods = [m for m in args.methods.split(",") if m]
    result = {}
    for name in args.sets.split(","):
        print(name, flush=True)
        result[name] = rank_set(Path(args.datasets) / name, Path(args.work) / name, methods, args.limit)
        Path(args.out).write_text(json.dumps(result) + "\n", encoding="utf-8")
    if args.compare:
        print("\n".join(compare(json.loads(Path(args.compare).read_text(encoding="utf-8")), result)))


if __name__ == "__main__":
    main()
