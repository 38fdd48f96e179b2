"""ArchRAG's offline hierarchy on large indexes: CPU seconds per step, added memory, old code tree against new.

For each code tree (``--old`` / ``--new``: folders holding the package, imported through PYTHONPATH) and each
index (``--index``, loaded read-only with the hash embedding), a fresh process builds the hierarchy in memory with
``ArchRAGHierarchy.build`` (nothing is saved into the index folder) and reports:

* process CPU seconds (``time.process_time``) of the whole build and of its steps, found by wrapping the step
  functions (inclusive: ``knn_augment`` contains ``_nearest``, ``CHNSW.build`` contains ``faiss_layers``; a name
  a tree does not have is skipped);
* the RSS and anonymous RSS (``/proc/self/status``) just before the build and their peaks during it, sampled
  every 20 ms (file-backed pages of the memory-mapped index count in RSS but not in RssAnon), and the anonymous
  peak while each step ran (the innermost timed step; "other" = between steps);
* communities per layer and a digest of the memberships, so two trees' hierarchies can be compared;
* with ``--questions`` (a questions.jsonl of the same corpus), ArchRAG's recall@5 with the built hierarchy
  (as ``benchmarks/scale.py``'s ``query_methods`` computes it) and the ranked passages, so the driver can count
  the questions whose top 5 changed.

The driver prints a table, the growth exponent of the hierarchy CPU over the index sizes (least squares in
log-log against entities) and, when both trees ran, whether the memberships are identical (else the adjusted
Rand index per layer, from memberships dumped into ``--dump``).

    nice -n 19 python studies/perf/archrag_hierarchy_scale.py --old /work/main --new /work/wtH \\
        --index /work/scratch/keep3/index-10000 /work/scratch/keep3/index-30000 /work/scratch/keep3/index-100000 \\
        --questions /work/scratch/keep3/synth-100000/questions.jsonl --dump /work/scratch/hH/dump

(``--questions`` applies to the last index only.) ``--carry N --results A.json B.json`` runs nothing: from the rows
of earlier ``--json`` files (two sizes or more) it fits each step's CPU seconds and the anonymous memory added while it
ran against the entities (least squares in log-log) and carries them to N entities.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

_REPLY = "@@result "

# (module, attribute, label): step functions timed when a tree has them (inclusive CPU seconds).
STEPS = [
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "_fact_columns", "fact_columns"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "_entity_sentences", "entity_sentences"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "_attribute_vectors", "attribute_vectors"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "fact_ends", "fact_columns"),  # the same steps, later
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "entity_texts", "entity_sentences"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "attribute_vectors", "attribute_vectors"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "summarise_layer", "summaries"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "centroids", "centroids"),
    ("llama_index_graphrag_suite.graph.communities", "knn_augment", "knn_augment"),
    ("llama_index_graphrag_suite.graph.knn_augment", "_nearest", "  knn_search"),
    ("llama_index_graphrag_suite.graph.communities", "leiden_membership", "leiden"),
    ("llama_index_graphrag_suite.graph.communities", "_leiden", "  leiden_calls"),
    ("llama_index_graphrag_suite.graph.communities", "next_layer_edges", "next_layer_edges"),
    ("llama_index_graphrag_suite.graph.chnsw", "faiss_layers", "  chnsw_faiss_layers"),
    ("llama_index_graphrag_suite.methods.archrag.hierarchy", "hnsw_layer", "hnsw_builds"),  # shared with the KNN
    ("llama_index_graphrag_suite.graph.chnsw_build", "hnsw_layer", "hnsw_builds"),  # inside faiss_layers
]


def _status() -> tuple[int, int]:
    """(VmRSS, RssAnon) of this process in bytes."""
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                values[key] = int(rest.split()[0]) * 1024
    return values.get("VmRSS", 0), values.get("RssAnon", 0)


_CURRENT: list[str] = ["other"]  # the innermost timed step running now (for the memory peaks per step)


class _Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.peak, self.peak_anon, self.stop = 0, 0, threading.Event()
        self.anon_by_step: dict[str, int] = {}

    def run(self):
        while not self.stop.is_set():
            rss, anon = _status()
            self.peak, self.peak_anon = max(self.peak, rss), max(self.peak_anon, anon)
            step = _CURRENT[-1].strip()
            self.anon_by_step[step] = max(self.anon_by_step.get(step, 0), anon)
            time.sleep(0.02)


def _wrap(seconds: dict, label: str, fn):
    def timed(*args, **kwargs):
        start = time.process_time()
        _CURRENT.append(label)
        try:
            return fn(*args, **kwargs)
        finally:
            _CURRENT.pop()
            seconds[label] = seconds.get(label, 0.0) + time.process_time() - start
    return timed


def child(index_path: str, questions: str | None, dump: str | None) -> dict:
    import numpy as np

    from llama_index_graphrag_suite.graph.chnsw import CHNSW
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.methods.archrag import ArchRAGRetriever
    from llama_index_graphrag_suite.methods.archrag.hierarchy import ArchRAGHierarchy

    seconds: dict[str, float] = {}
    for module, name, label in STEPS:
        mod = importlib.import_module(module)
        if hasattr(mod, name):
            setattr(mod, name, _wrap(seconds, label, getattr(mod, name)))
    build = CHNSW.__dict__["build"].__func__
    CHNSW.build = classmethod(_wrap(seconds, "chnsw_build", build))

    index = GraphRAGIndex.load(index_path, embed_model="hash")
    rss0, anon0 = _status()
    sampler = _Sampler()
    sampler.start()
    cpu, wall = time.process_time(), time.perf_counter()
    h = ArchRAGHierarchy.build(index)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    sampler.stop.set()
    sampler.join()
    digest = hashlib.sha256()
    for m in h.memberships:
        digest.update(np.ascontiguousarray(m, np.int64).tobytes())
    if dump:
        Path(dump).mkdir(parents=True, exist_ok=True)
        np.savez(Path(dump) / "memberships.npz", *[np.asarray(m) for m in h.memberships])
    out = {
        "index": index_path, "entities": len(h.entity_ids), "cpu_s": round(cpu, 2), "wall_s": round(wall, 2),
        "steps_cpu_s": {k: round(v, 2) for k, v in seconds.items()}, "cost_seconds": h.cost["seconds"],
        "communities_per_layer": h.communities_per_layer(), "knn_edges": h.cost["knn_edges_per_layer"],
        "memberships_sha": digest.hexdigest()[:16],
        "rss_before_mb": round(rss0 / 2**20), "rss_peak_added_mb": round((sampler.peak - rss0) / 2**20),
        "anon_before_mb": round(anon0 / 2**20), "anon_peak_added_mb": round((sampler.peak_anon - anon0) / 2**20),
        "anon_peak_added_mb_by_step": {k: round((v - anon0) / 2**20) for k, v in sampler.anon_by_step.items()},
    }
    if questions:
        from llama_index_graphrag_suite.eval.datasets import load_questions
        from llama_index_graphrag_suite.eval.metrics import recall_at

        retriever = ArchRAGRetriever(index, top_k=5, hierarchy=h)
        recalls, ranked_all = [], []
        for q in load_questions(Path(questions))[0]:
            nodes = retriever.retrieve(q.question)
            ranked = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes]
            recalls.append(recall_at(ranked, q.supporting_ids, 5))
            ranked_all.append(ranked)
        out["recall@5"] = round(sum(recalls) / len(recalls), 4)
        out["ranked"] = ranked_all
    return out


def _run(tree: str, index: str, questions: str | None, dump: str | None) -> dict:
    env = dict(os.environ, PYTHONPATH=tree, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "--child", "--index", index]
    cmd += ["--questions", questions] if questions else []
    cmd += ["--dump", dump] if dump else []
    proc = subprocess.run(cmd, cwd=tree, env=env, stdout=subprocess.PIPE, text=True)
    for line in proc.stdout.splitlines():
        if line.startswith(_REPLY):
            return json.loads(line[len(_REPLY):])
    raise RuntimeError(f"child failed (exit {proc.returncode}) on {index} with {tree}")


def _slope(rows: list[dict]) -> float | None:
    points = [(math.log(r["entities"]), math.log(r["cpu_s"])) for r in rows if r["cpu_s"] > 0]
    if len({x for x, _ in points}) < 2:
        return None
    mx, my = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def _carry(rows: list[dict], entities: int) -> list[str]:
    """Per step: CPU exponent over entities and CPU seconds carried to ``entities``; the same for the peak anonymous
    memory added while the step ran, and for the whole build (CPU, added RSS and anonymous peaks)."""
    def fit(values: list[float]) -> tuple[float | None, float | None]:
        pts = [(math.log(r["entities"]), math.log(v)) for r, v in zip(rows, values) if v and v > 0]
        slope = _slope([{"entities": math.exp(x), "cpu_s": math.exp(y)} for x, y in pts]) if len(pts) == len(rows) else None
        return (slope, math.exp(pts[-1][1] + slope * (math.log(entities) - pts[-1][0]))) if slope is not None else (None, None)

    lines = [f"carried to {entities:,} entities from {[r['entities'] for r in rows]}:"]
    cpus = [{k.strip(): v for k, v in r["steps_cpu_s"].items()} for r in rows]
    steps = sorted({k for c in cpus for k in c} | {k for r in rows for k in r["anon_peak_added_mb_by_step"]})
    for step in steps:
        cpu = [c.get(step, 0.0) for c in cpus]
        anon = [r["anon_peak_added_mb_by_step"].get(step, 0) for r in rows]
        (b, c), (b2, m) = fit(cpu), fit(anon)
        lines.append(f"  {step:22s} CPU s {cpu} exp {b if b is None else round(b, 2)} -> "
                     f"{c if c is None else round(c)}; anon peak added MB {anon} exp {b2 if b2 is None else round(b2, 2)}"
                     f" -> {m if m is None else round(m)}")
    for key in ("cpu_s", "rss_peak_added_mb", "anon_peak_added_mb"):
        b, v = fit([r[key] for r in rows])
        lines.append(f"  total {key:18s} {[r[key] for r in rows]} exp {b if b is None else round(b, 2)} -> "
                     f"{v if v is None else round(v)}")
    return lines


def _compare(dump: Path, index: str) -> str:
    import numpy as np
    from sklearn.metrics import adjusted_rand_score

    old, new = (np.load(dump / tree / Path(index).name / "memberships.npz") for tree in ("old", "new"))
    parts = []
    for layer, (a, b) in enumerate(zip(old.values(), new.values()), start=1):
        if a.shape == b.shape:
            parts.append(f"L{layer} " + ("identical" if (a == b).all() else f"ARI {adjusted_rand_score(a, b):.4f}"))
        else:
            parts.append(f"L{layer} sizes {a.shape[0]} vs {b.shape[0]}")
        if a.shape != b.shape:
            break
    return ", ".join(parts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--old", help="code tree of the old version")
    ap.add_argument("--new", help="code tree of the new version")
    ap.add_argument("--index", nargs="+")
    ap.add_argument("--carry", type=int, help="carry the rows of --results to this many entities (runs nothing)")
    ap.add_argument("--results", nargs="+", help="--json files of earlier runs (their 'new' rows, else 'old')")
    ap.add_argument("--questions", help="questions.jsonl of the last index's corpus: recall@5 with the hierarchy")
    ap.add_argument("--dump", help="folder for the memberships (compared between trees)")
    ap.add_argument("--json", help="write all results here")
    args = ap.parse_args()
    if args.carry:
        rows = [r for path in args.results for r in (lambda d: d.get("new") or d["old"])(json.loads(Path(path).read_text()))]
        print("\n".join(_carry(sorted(rows, key=lambda r: r["entities"]), args.carry)))
        return 0
    if not args.index:
        ap.error("give --index (or --carry with --results)")
    if args.child:
        print(_REPLY + json.dumps(child(args.index[0], args.questions, args.dump)), flush=True)
        return 0
    trees = [(name, path) for name, path in (("old", args.old), ("new", args.new)) if path]
    if not trees:
        ap.error("give --old and/or --new")
    results: dict[str, list[dict]] = {}
    for name, tree in trees:
        for i, index in enumerate(args.index):
            questions = args.questions if i == len(args.index) - 1 else None
            dump = str(Path(args.dump) / name / Path(index).name) if args.dump else None
            row = _run(tree, index, questions, dump)
            results.setdefault(name, []).append(row)
            summary = {k: v for k, v in row.items() if k != "ranked"}
            print(f"[{name}] {json.dumps(summary)}", flush=True)
    for name, rows in results.items():
        slope = _slope(rows)
        print(f"{name}: hierarchy CPU exponent over entities {[r['entities'] for r in rows]}: "
              f"{'n/a' if slope is None else f'{slope:.2f}'}; CPU s {[r['cpu_s'] for r in rows]}; "
              f"added RSS MB {[r['rss_peak_added_mb'] for r in rows]}; added anon MB {[r['anon_peak_added_mb'] for r in rows]}")
    if len(results) == 2:
        for old, new in zip(results["old"], results["new"]):
            line = f"{Path(old['index']).name}: CPU {old['cpu_s']} -> {new['cpu_s']} s"
            line += f", added RSS {old['rss_peak_added_mb']} -> {new['rss_peak_added_mb']} MB"
            line += f", communities {old['communities_per_layer']} -> {new['communities_per_layer']}"
            line += ", memberships " + ("identical" if old["memberships_sha"] == new["memberships_sha"] else "differ")
            if args.dump and old["memberships_sha"] != new["memberships_sha"]:
                line += f" ({_compare(Path(args.dump), old['index'])})"
            if "recall@5" in old and "recall@5" in new:
                changed = sum(a != b for a, b in zip(old["ranked"], new["ranked"]))
                line += f", recall@5 {old['recall@5']} -> {new['recall@5']} ({changed} questions' top 5 changed)"
            print(line)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
