"""How indexing and retrieval grow with the corpus, on the synthetic encyclopedia (benchmarks/synth.py).

    python benchmarks/scale.py --sizes 1000,3000                                   # bundled MiniLM, spaCy NER
    python benchmarks/scale.py --sizes 1000,3000,10000 --embed hash --entities statistical   # fast, model-free

For each size N: write the synthetic corpus (seed 0) and its 2-/3-hop questions, then in a fresh process (so peak
memory is per size) index it LLM-free the way a user would (``GraphRAGIndex.from_documents``, then
``index.prepare(["archrag"])`` as ``graphrag-suite index`` does), save it, load it back, run every method on the
questions, then insert 1,000 new passages, save again and load again. Recorded: index time per stage (the index's
``build_info["stage_seconds"]``), peak RSS, size on disk, save and load time, each method's first-query time
(lazy set-up such as ArchRAG's hierarchy), retrieval p50/p95 with the query embedding excluded (each question is
embedded untimed first; ``index.embed_query`` then answers the retriever from its cache), and recall@5.

Each stage's CPU time (this process's threads plus its finished worker processes) is recorded next to its wall
time: on a shared machine wall time also measures the neighbours, CPU time only the work. The growth exponent
is the least-squares log-log slope over all sizes, per stage, of CPU time. CPU time still follows the machine's
speed, which drifts here by 1.3-2x within an hour: a fixed piece of work (``_yardstick``) timed before each build
and after each batch gives the report a second exponent, with each batch's CPU scaled to one speed. The
1M-passage row is a paper extrapolation of each stage at its own exponent (and, for contrast, linearly). Results
accumulate in benchmarks/results/scale.json (one run per embed/entities setting) and are rendered to
scale.md and scale.png.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
TOP_K = 5
EXTRAPOLATE_TO = 1_000_000


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def _disk_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def _cpu_seconds() -> float:
    """CPU time of this process's threads and of its finished child processes (spaCy's NER workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


_YARD_TEXT = " ".join(f"Person{i % 997} was born in Place{i % 131}, the {i % 53}th town of Region{i % 17}."
                      for i in range(50000))


def _yardstick() -> float:
    """The machine's speed now: CPU seconds of a fixed piece of build-like work (words of a fixed text, its word
    pairs counted in a dict), the best of three. This machine's speed drifts by 1.3-2x within an hour, and a curve
    from 10,000 to 1,000,000 passages takes most of one; measured before the build and after each batch, it lets
    the report scale each batch's CPU to one speed (``drift_corrected``). The first of four runs is not counted: a
    process's first one ran 10 % slower here."""
    best = math.inf
    for attempt in range(4):
        start = _cpu_seconds()
        words = re.findall(r"\w+", _YARD_TEXT)
        counts: dict[str, int] = {}
        for a, b in zip(words, words[1:]):
            key = f"{a.lower()} {b.lower()}"
            counts[key] = counts.get(key, 0) + 1
        if attempt:
            best = min(best, _cpu_seconds() - start)
    return round(best, 4)


class _Yardsticks:
    """The yardstick before a build and after each of its batches, and the CPU of the work between (the
    yardstick's own CPU and wall time left out)."""

    def __init__(self) -> None:
        self.marks: list[float] = []
        self.spent = self.spent_wall = 0.0  # the yardsticks' own CPU and wall seconds, taken out of the build's
        self.last = _cpu_seconds()
        self.take()

    def take(self) -> tuple[float, float]:
        """(the CPU since the last mark, yardstick seconds now)."""
        now, wall = _cpu_seconds(), time.perf_counter()
        between = now - self.last
        self.marks.append(_yardstick())
        self.last = _cpu_seconds()
        self.spent += self.last - now
        self.spent_wall += time.perf_counter() - wall
        return round(between, 2), self.marks[-1]


def _count_stage_cpu(index_class, into: dict[str, float]) -> None:
    """Wrap the index's stage timer so each build stage's CPU seconds are added to ``into`` as well."""
    wall_timer = index_class._stage

    @contextlib.contextmanager
    def stage(self, name: str):
        start = _cpu_seconds()
        try:
            with wall_timer(self, name):
                yield
        finally:
            into[name] = round(into.get(name, 0.0) + _cpu_seconds() - start, 3)

    index_class._stage = stage


def run_child(dataset: str, embed: str, entities: str, methods: list[str], keep: str | None = None,
              batch_size: int = 0, prepare_again: bool = True) -> dict:
    """In the child process: build, save, load, query; returns one row. ``keep``: save the index there
    (kept for ``--requery``) instead of in a temporary folder. ``batch_size``: build in batches of that many
    passages, streamed from the corpus file, each inserted and saved (``index/batched.py``)."""
    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.documents import iter_jsonl_documents
    from llama_index_graphrag_suite.eval.datasets import BenchDataset, load_dataset, load_questions
    from llama_index_graphrag_suite.index.batched import build_in_batches
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    folder = Path(dataset)
    ds = (BenchDataset(folder.name, [], load_questions(folder / "questions.jsonl")[0]) if batch_size
          else load_dataset(dataset))
    cpu_stages: dict[str, float] = {}
    _count_stage_cpu(GraphRAGIndex, cpu_stages)
    cpu_start, start = _cpu_seconds(), time.perf_counter()
    yard = _Yardsticks()
    settings = {"embed_model": None if embed == "minilm" else embed, "config": IndexConfig(entities=entities)}
    batches: list[dict] = []

    def on_batch(k: int, held: int, seconds: float) -> None:
        cpu, yardstick = yard.take()
        batches.append({"batch": k, "passages": held, "seconds": round(seconds, 1), "cpu_seconds": cpu,
                        "yardstick_s": yardstick, "peak_rss_mb": round(_peak_rss_mb())})

    with contextlib.ExitStack() as stack:
        build_dir = (keep or stack.enter_context(tempfile.TemporaryDirectory())) if batch_size else None
        if batch_size:
            index = build_in_batches(iter_jsonl_documents(folder / "corpus.jsonl"), build_dir, batch_size,
                                     on_batch=on_batch, **settings)
        else:
            index = GraphRAGIndex.from_documents(ds.documents, **settings)
        return _finish_child(index, ds, methods, keep, batch_size, batches, cpu_stages, cpu_start, start,
                             prepare_again, yard)


def _finish_child(index, ds, methods, keep, batch_size, batches, cpu_stages, cpu_start, start, prepare_again,
                  yard: _Yardsticks) -> dict:
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    if "archrag" in methods:  # its hierarchy is a build step (stage prepare.archrag), not its first query's work
        index.prepare(["archrag"])
    rest_cpu, _ = yard.take()  # after the last batch: the compaction (and ArchRAG's preparation)
    build_seconds = time.perf_counter() - start - yard.spent_wall
    build_cpu = _cpu_seconds() - cpu_start - yard.spent
    build_rss = _peak_rss_mb()
    row = {"n": index.stats()["documents"], "questions": len(ds.questions), "index_seconds": round(build_seconds, 2),
           "index_cpu_seconds": round(build_cpu, 2), "stage_seconds": dict(index.build_info.get("stage_seconds", {})),
           "stage_cpu_seconds": dict(cpu_stages), **index.stats(),
           "peak_rss_build_mb": round(build_rss), "yardstick_s": yard.marks, "after_batches_cpu_seconds": rest_cpu}
    if batch_size:
        row["batch_size"], row["batches"] = batch_size, batches
    with contextlib.ExitStack() as stack:
        folder = keep or stack.enter_context(tempfile.TemporaryDirectory())
        start = time.perf_counter()
        index.persist(folder)
        row["save_seconds"] = round(time.perf_counter() - start, 2)
        row["disk_mb"] = round(_disk_mb(Path(folder)), 1)
        start = time.perf_counter()
        index = GraphRAGIndex.load(folder, embed_model=index.embed_model)  # the model is already in memory
        row["load_seconds"] = round(time.perf_counter() - start, 2)
        row["methods"] = query_methods(index, ds, methods)
        row.update(insert_and_save(index, Path(folder), row["n"],
                                   prepare=[m for m in methods if m == "archrag" and prepare_again]))
    row["peak_rss_mb"] = round(_peak_rss_mb())
    return row


def insert_and_save(index, folder: Path, n: int, prepare: list[str] = ()) -> dict:
    """Insert 1,000 new passages (a tenth of the corpus below 10,000) into the loaded index, prepare ``prepare``
    again (ArchRAG's hierarchy is not updated by an insert: it is built again, as `graphrag-suite index --update`
    does) and save: the insert's, the preparation's and the save's seconds, and what the save added on disk (new
    segments and version folder) beside the folder's size before."""
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex
    from llama_index_graphrag_suite.index.tables import SEGMENTS

    sys.path.insert(0, str(HERE))
    import synth

    k = min(1000, max(n // 10, 10))
    docs = [make_document(f"inserted-{i}", p["text"], p["title"])
            for i, p in enumerate(synth.Synth(max(k, 10), seed=1).passages()) if i < k]
    before = {p for p in folder.rglob("*") if p.is_file()}
    disk_before = _disk_mb(folder)
    start = time.perf_counter()
    index.insert(docs)
    out = {"insert_docs": k, "insert_seconds": round(time.perf_counter() - start, 2)}
    if prepare:
        start = time.perf_counter()
        index.prepare(list(prepare))
        out["insert_prepare_seconds"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()
    index.persist(folder)
    out["insert_save_seconds"] = round(time.perf_counter() - start, 2)
    added = [p for p in folder.rglob("*") if p.is_file() and p not in before]
    out["insert_written_mb"] = round(sum(p.stat().st_size for p in added) / 1e6, 2)
    out["insert_segments_written"] = sum(1 for p in added if p.parent.name == SEGMENTS)
    out["disk_before_insert_mb"] = round(disk_before, 1)
    start = time.perf_counter()
    GraphRAGIndex.load(folder, embed_model=index.embed_model)
    out["reload_seconds"] = round(time.perf_counter() - start, 2)
    return out


def query_methods(index, ds, methods: list[str]) -> dict:
    """Each method's first-query time, p50/p95 over the questions (query embedding excluded) and recall@5."""
    from llama_index_graphrag_suite.eval.metrics import percentile, recall_at
    from llama_index_graphrag_suite.registry import get_retriever

    out = {}
    for method in methods:
        retriever = get_retriever(index, method, top_k=TOP_K)
        first = ds.questions[0].question
        index.embed_query(first)
        start = time.perf_counter()
        retriever.retrieve(first)  # untimed below: lazy per-index set-up is paid here
        first_s = time.perf_counter() - start
        times, recalls = [], []
        for q in ds.questions:
            index.embed_query(q.question)  # cached: the timed call below does not embed
            start = time.perf_counter()
            nodes = retriever.retrieve(q.question)
            times.append((time.perf_counter() - start) * 1000)
            ranked = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in nodes]
            recalls.append(recall_at(ranked, q.supporting_ids, TOP_K))
        out[method] = {"first_query_s": round(first_s, 2), "p50_ms": round(percentile(times, 50), 2),
                       "p95_ms": round(percentile(times, 95), 2), "recall@5": round(sum(recalls) / len(recalls), 4)}
    return out


def requery_child(dataset: str, folder: str, embed: str, methods: list[str]) -> dict:
    """In the child process: load a kept index and time the methods again (the build is not redone). A kept index
    whose current version is the build's insert of 1,000 passages is loaded twice: first the version before the
    insert (``load_seconds``), then the current one (``reload_seconds``), on which the methods are timed."""
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    model = None if embed == "minilm" else embed
    out = {}
    before = _version_before_insert(Path(folder))
    if before is not None:
        start = time.perf_counter()
        GraphRAGIndex.load(folder, embed_model=model, version=before)
        out["load_seconds"] = round(time.perf_counter() - start, 2)
    start = time.perf_counter()  # before the corpus is read: a million passages held as objects slow a load by 3 s
    index = GraphRAGIndex.load(folder, embed_model=model)
    out["reload_seconds" if before is not None else "load_seconds"] = round(time.perf_counter() - start, 2)
    ds = load_dataset(dataset)
    return {**out, "methods": query_methods(index, ds, methods), "peak_rss_query_mb": round(_peak_rss_mb())}


def _version_before_insert(folder: Path) -> int | None:
    """The newest kept version of ``folder`` holding fewer documents than the current one (the build's own, before
    the bench inserted 1,000 passages), or None."""
    current = json.loads((folder / "CURRENT").read_text())["version"]
    docs = {}
    for manifest in folder.glob("v-*/manifest.json"):
        docs[manifest.parent.name] = json.loads(manifest.read_text()).get("counts", {}).get("documents")
    now = docs.get(current)
    fewer = [v for v, d in docs.items() if now is not None and d is not None and d < now]
    return int(max(fewer).split("-")[1]) if fewer else None


def serve_memory(keep: Path, n: int, embed: str, count: int, methods: list[str]) -> dict:
    """``benchmarks/serve_memory.py`` on the kept index of size ``n``: the serving process's RSS once loaded and
    after ``count`` questions over HTTP, and each method's median round trip."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "serve.json"
        cmd = [sys.executable, str(HERE / "serve_memory.py"), "--index", str(keep / f"index-{n}"), "--questions",
               str(keep / f"synth-{n}" / "questions.jsonl"), "--count", str(count), "--methods", ",".join(methods),
               "--json", str(out), *(["--embed", embed] if embed != "minilm" else [])]
        done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                              env={**os.environ, "HF_HUB_OFFLINE": "1"})
        if done.returncode or not out.is_file():
            sys.exit(f"serve_memory at N={n} failed:\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())


# -- fitting and extrapolation ------------------------------------------------------------------------
def slope(rows: list[dict], value) -> float | None:
    """Least-squares slope of log ``value(row)`` against log N over all sizes (None if not measurable).

    All sizes rather than the last two: one noisy measurement then moves the fit less.
    """
    points = [(math.log(r["n"]), math.log(value(r))) for r in rows if value(r) > 0]
    if len({x for x, _ in points}) < 2:
        return None
    mx, my = sum(x for x, _ in points) / len(points), sum(y for _, y in points) / len(points)
    return sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)


def _stage_key(rows: list[dict]) -> str:
    """CPU time per stage when every row has it, else wall time (rows from before CPU time was recorded)."""
    return "stage_cpu_seconds" if all(r.get("stage_cpu_seconds") for r in rows) else "stage_seconds"


def extrapolate(rows: list[dict], n: int = EXTRAPOLATE_TO) -> dict:
    """Each stage at its own measured exponent from the largest size to ``n``, and linearly for contrast.

    Stages are extrapolated separately because they grow differently (a quadratic stage that is cheap at 3k
    can dominate at 1M), and summed. Memory and disk: linear in N through the two largest sizes.
    """
    top = max(rows, key=lambda r: r["n"])
    factor = n / top["n"]
    key = _stage_key(rows)
    stages = {}
    for stage, seconds in top[key].items():
        k = slope(rows, lambda r, s=stage: r[key].get(s, 0.0))
        k = 1.0 if k is None else max(k, 1.0)  # nothing indexes N passages in sublinear time; a low slope is noise
        stages[stage] = {"exponent": round(k, 2), "seconds": seconds * factor ** k, "linear": seconds * factor}
    out = {"n": n, "stages": stages, "measure": "CPU" if key == "stage_cpu_seconds" else "wall",
           "seconds": sum(s["seconds"] for s in stages.values()),
           "linear_seconds": sum(s["linear"] for s in stages.values())}
    if len(rows) >= 2:
        a, b = sorted(rows, key=lambda r: r["n"])[-2:]
        for key in ("peak_rss_build_mb", "disk_mb"):
            per = (b[key] - a[key]) / (b["n"] - a["n"])
            out[key] = b[key] + per * (n - b["n"])
    return out


# -- report ------------------------------------------------------------------------------------------
# The million-passage targets: build peak RSS, disk, load, an insert of 1,000 documents, per-method
# latency, and the growth exponent of build CPU time.
TARGET_N = 1_000_000
TARGET_RSS_GB, TARGET_DISK_GB, TARGET_LOAD_S, TARGET_INSERT_S = 12.0, 8.0, 10.0, 60.0
TARGET_P50_MS, TARGET_P95_MS, TARGET_EXPONENT = 100.0, 300.0, 1.05
TARGET_SERVE_GB = 6.0  # a serving process's RSS after 100 questions (GiB, as the other memory figures here)


def _batch_size(run: dict) -> int:
    """The passages per batch of a run built in batches (``--batch-size``), 0 for one insert."""
    return int(run["rows"][0].get("batch_size", 0)) if run.get("rows") else 0


def _carried(rows: list[dict], key: str, n: int = TARGET_N) -> float | None:
    """``key`` carried linearly in N through the two largest sizes to ``n`` (None with one size)."""
    if len(rows) < 2:
        return None
    a, b = sorted(rows, key=lambda r: r["n"])[-2:]
    if key not in a or key not in b:
        return None
    return b[key] + (b[key] - a[key]) / (b["n"] - a["n"]) * (n - b["n"])


def drift_corrected(rows: list[dict]) -> dict[int, float] | None:
    """Each size's build CPU with every batch's CPU scaled to one machine speed: by the ratio of the run's median
    yardstick (``_yardstick``) to the mean of the yardsticks taken before and after that batch (the compaction and
    any preparation after the last batch, by those around them). None unless every row has its yardsticks."""
    if not rows or not all(r.get("yardstick_s") for r in rows):
        return None
    marks = sorted(y for r in rows for y in r["yardstick_s"])
    ref = marks[len(marks) // 2]
    out = {}
    for r in rows:
        y, parts = r["yardstick_s"], [b["cpu_seconds"] for b in r.get("batches", [])] + [r["after_batches_cpu_seconds"]]
        if len(y) != len(parts) + 1:
            return None
        out[r["n"]] = sum(cpu * ref / ((y[k] + y[k + 1]) / 2) for k, cpu in enumerate(parts))
    return out


def corrected_exponent(rows: list[dict]) -> float | None:
    """The build CPU growth exponent of ``drift_corrected`` (None without yardsticks)."""
    corrected = drift_corrected(rows)
    return slope(rows, lambda r: corrected[r["n"]]) if corrected else None


def targets(rows: list[dict], curve: list[dict] | None = None) -> list[str]:
    """Each million-passage target beside what was measured at the largest size, and (for sizes, memory and times
    that grow with N) carried linearly to 1M through the two largest sizes: on paper unless 1M was run. ``curve``:
    the rows the build CPU growth exponent is fitted on (default ``rows``; a one-size run at 1M passes the rows of
    every run of its setting)."""
    top = max(rows, key=lambda r: r["n"])
    curve = rows if curve is None else curve
    reached = top["n"] >= TARGET_N

    def verdict(value: float | None, limit: float) -> str:
        if value is None:
            return "-"
        ok = value <= limit
        return ("met" if ok else "**not met**") + ("" if reached else " (carried)")

    def row(target: str, key: str, limit: float, scale: float = 1.0, unit: str = "") -> str:
        if key not in top:
            return f"| {target} | - | - | - |"
        carried = _carried(rows, key)
        value = carried / scale if carried is not None and not reached else top[key] / scale
        return (f"| {target} | {top[key] / scale:.1f}{unit} | "
                f"{'-' if carried is None or reached else f'{carried / scale:.1f}{unit}'} | {verdict(value, limit)} |")

    cpu = slope(curve, lambda r: r.get("index_cpu_seconds", r["index_seconds"]))
    steady = corrected_exponent(curve)
    sizes = ", ".join(f"{n:,}" for n in sorted({r["n"] for r in curve}))
    out = ["", f"Targets at {TARGET_N:,} passages, measured at {top['n']:,}"
           + ("" if reached else "; sizes and times carried linearly to 1M through the two largest sizes "
              "(on paper, not run)") + ":", "",
           f"| target | at {top['n']:,} | carried to 1M | |", "|---|---:|---:|---|",
           row(f"build peak RSS ≤ {TARGET_RSS_GB:g} GB", "peak_rss_build_mb", TARGET_RSS_GB, 1024, " GB"),
           row(f"disk ≤ {TARGET_DISK_GB:g} GB", "disk_mb", TARGET_DISK_GB, 1024, " GB"),
           row(f"load ≤ {TARGET_LOAD_S:g} s", "load_seconds", TARGET_LOAD_S, 1, " s"),
           *([row(f"load after the insert below ≤ {TARGET_LOAD_S:g} s", "reload_seconds", TARGET_LOAD_S, 1, " s")]
             if top.get("reload_seconds") is not None else []),
           row(f"insert 1,000 documents ≤ {TARGET_INSERT_S:g} s", "insert_seconds", TARGET_INSERT_S, 1, " s"),
           *_serve_row(top, reached),
           f"| build CPU growth ≤ n^{TARGET_EXPONENT} | "
           + (f"n^{cpu:.2f} over {sizes} | | {'met' if cpu <= TARGET_EXPONENT else '**not met**'} |"
              if cpu is not None else "- | | - |"),
           *([f"| the same, each batch's CPU at one machine speed (yardstick) | n^{steady:.3f} | | "
              f"{'met' if steady <= TARGET_EXPONENT else '**not met**'} |"] if steady is not None else [])]
    for method, stats in top["methods"].items():
        ok = stats["p50_ms"] <= TARGET_P50_MS and stats["p95_ms"] <= TARGET_P95_MS
        out.append(f"| {method} p50 ≤ {TARGET_P50_MS:g} ms, p95 ≤ {TARGET_P95_MS:g} ms | "
                   f"{stats['p50_ms']:.1f} / {stats['p95_ms']:.1f} ms | | {'met' if ok else '**not met**'} at "
                   f"{top['n']:,} |")
    return out


def _serve_row(top: dict, reached: bool) -> list[str]:
    """The serving target's row, when the run served its largest index (``--serve``)."""
    served = top.get("serve")
    if not served:
        return []
    gb = served["after_mb"]["VmRSS"] / 1024
    verdict = ("met" if gb <= TARGET_SERVE_GB else "**not met**") + ("" if reached else " (not at 1M)")
    return [f"| serving process ≤ {TARGET_SERVE_GB:g} GB RSS after {served['questions']} questions | {gb:.1f} GB "
            f"(peak {served['after_mb']['VmHWM'] / 1024:.1f} GB) | - | {verdict} |"]


def _hms(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _num(seconds: float) -> str:
    return f"{seconds:.2f}" if seconds < 10 else f"{seconds:.0f}"


def render(runs: list[dict]) -> str:
    lines = ["# Scaling on the synthetic encyclopedia", "",
             "Generated by `benchmarks/scale.py` (`make bench-scale`) on `benchmarks/synth.py` corpora (seed 0): "
             "passages about generated people, places, organisations and works, with 2- and 3-hop questions whose "
             "gold passages are known by construction. Index LLM-free; retrieval latency excludes the query "
             "embedding; recall@5 = share of a question's gold passages in the top 5. Each size in a fresh process.",
             ""]
    for run in runs:
        rows = sorted(run["rows"], key=lambda r: r["n"])
        batch = _batch_size(run)
        lines += [f"## embed={run['embed']}, entities={run['entities']}" + (f", built in batches of {batch:,}" if batch else ""), "",
                  f"Command: `{run['command']}`  ", f"Machine: {run['machine']}; run {run['date']}. {run.get('note', '')}", "",
                  "| passages | chunks | entities | relations | index s (CPU s) | stages: wall s (CPU s) | peak RSS MB | disk MB | save s | load s |",
                  "|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
        for r in rows:
            cpu = r.get("stage_cpu_seconds", {})
            stages = ", ".join(f"{k} {_num(v)}" + (f" ({_num(cpu[k])})" if k in cpu else "") for k, v in r["stage_seconds"].items())
            total = f"{r['index_seconds']}" + (f" ({r['index_cpu_seconds']})" if "index_cpu_seconds" in r else "")
            lines.append(f"| {r['n']:,} | {r['chunks']:,} | {r['entities']:,} | {r['relations']:,} | {total} | "
                         f"{stages} | {r['peak_rss_build_mb']} | {r['disk_mb']} | {r['save_seconds']} | {r['load_seconds']} |")
        for r in rows:
            if r.get("batches"):  # index/batched.py: each batch inserted, saved and the tables loaded back
                lines += ["", f"Batches of the {r['n']:,}-passage build (each inserted, saved, loaded back; peak RSS of "
                              "the process so far): " + "; ".join(
                                  f"{b['passages']:,} passages after {b['seconds']} s, {b['peak_rss_mb']:,} MB"
                                  for b in r["batches"]) + (". The build's peak RSS above includes ArchRAG's hierarchy."
                                                            if "prepare.archrag" in r["stage_seconds"] else ".")]
        if all("synonym_edges" in r for r in rows):
            lines += ["", "Synonym pairs (entity names whose vectors are closer than the threshold, Eq. 5): " + ", ".join(
                f"{r['synonym_edges']:,} at {r['n']:,} ({r['synonym_edges'] / max(r['entities'], 1):.1f} per entity)"
                for r in rows) + "." + (" (Runs before the hash embedding spread each word over 8 dimensions "
                                        "counted far more: with one dimension per word two unrelated one-word names "
                                        "were identical once in 512 pairs, 6,330,189 pairs at 100,000.)"
                                        if run["embed"] == "hash" else "")]
        if any("insert_seconds" in r for r in rows):
            lines += ["", "Insert into the loaded index, prepare ArchRAG again (its hierarchy is built anew, not updated; "
                      "\"-\": not measured in that run), then save (a save writes the changed rows as new segments, "
                      "not the whole index), then load again:", "",
                      "| passages | inserted | insert s | prepare again s | save s | written MB | segments written | "
                      "disk before MB | load again s |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for r in rows:
                if "insert_seconds" in r:
                    lines.append(f"| {r['n']:,} | {r['insert_docs']:,} | {r['insert_seconds']} | "
                                 f"{r.get('insert_prepare_seconds', '-')} | {r['insert_save_seconds']} | "
                                 f"{r['insert_written_mb']} | {r['insert_segments_written']} | {r['disk_before_insert_mb']} | "
                                 f"{r['reload_seconds']} |")
        methods = list(dict.fromkeys(m for r in rows for m in r["methods"]))  # a requery may add one at a size
        again = run.get("requery")
        lines += ["", "Retrieval per method: p50 / p95 ms (query embedding excluded), recall@5 %, first query s "
                  "(lazy set-up, untimed in p50/p95)" + (
                      f"; {_requeried(again, rows)} measured again on the kept indexes with later code by "
                      f"`{again['command']}` on {again['date']} "
                      f"(load s above is from that run too). {again.get('note', '')}" if again else "") + ":", "",
                  "| method | " + " | ".join(f"{r['n']:,}: p50 / p95 ms | recall@5 | first s" for r in rows) + " |",
                  "|---|" + "---:|---:|---:|" * len(rows)]
        for m in methods:
            cells = []
            for r in rows:
                s = r["methods"].get(m)
                cells.append(f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} | {100 * s['recall@5']:.1f} | {s['first_query_s']:.1f}"
                             if s else "- | - | -")
            lines.append(f"| {m} | " + " | ".join(cells) + " |")
        for r in rows:
            if r.get("serve"):  # --serve: the kept index served over HTTP (benchmarks/serve_memory.py)
                sv = r["serve"]
                lines += ["", f"Served at {r['n']:,} (`graphrag-suite serve`, {sv['questions']} questions over HTTP, "
                          f"methods in turn): ready after {sv['ready_s']} s at {sv['loaded_mb']['VmRSS']:,} MB RSS; "
                          f"after the questions {sv['after_mb']['VmRSS']:,} MB (anonymous {sv['after_mb']['RssAnon']:,}, "
                          f"file-backed {sv['after_mb']['RssFile']:,}), peak {sv['after_mb']['VmHWM']:,} MB. Median "
                          "round trip ms (query embedding included): " + ", ".join(
                              f"{m} {v['median_ms']}" for m, v in sv["methods"].items()) + "."]
        if len(rows) >= 2:
            ex = extrapolate(rows)
            measure = ex["measure"]
            total_key = "index_cpu_seconds" if measure == "CPU" else "index_seconds"
            total_k, wall_k = slope(rows, lambda r: r[total_key]), slope(rows, lambda r: r["index_seconds"])
            sizes = ", ".join(f"{r['n']:,}" for r in rows)
            corrected = drift_corrected(rows) if measure == "CPU" else None
            marks = [y for r in rows for y in r.get("yardstick_s", [])]
            steady = "" if not corrected else (
                f" With each batch's CPU scaled to the run's median machine speed (a fixed piece of work timed before "
                f"the build and after each batch; its seconds from {min(marks)} to {max(marks)}): "
                + ", ".join(f"{n:,}: {v:,.1f} CPU s" for n, v in corrected.items())
                + f", exponent **{corrected_exponent(rows):.3f}**.")
            lines += ["", f"Growth exponent of index {measure} time over {sizes} "
                      f"passages: **{total_k:.2f}** (least-squares log-log slope; 1 = linear; of wall time: {wall_k:.2f}).{steady} "
                      "A stage's exponent below 1 is taken as 1. "
                      f"Per stage, and each stage's {measure} time carried to 1,000,000 passages at its own exponent "
                      "(on paper, not run):", "",
                      "| stage | exponent | at 1M (own exponent) | at 1M (if linear) |", "|---|---:|---:|---:|"]
            for stage, s in ex["stages"].items():
                lines.append(f"| {stage} | {s['exponent']} | {_hms(s['seconds'])} | {_hms(s['linear'])} |")
            lines.append(f"| **total** | | **{_hms(ex['seconds'])}** | {_hms(ex['linear_seconds'])} |")
            if "peak_rss_build_mb" in ex:
                lines += ["", f"Linear in N through the two largest sizes, 1M passages would need about "
                          f"{ex['peak_rss_build_mb'] / 1024:.0f} GB peak RSS to build and {ex['disk_mb'] / 1024:.1f} GB on disk."]
            lines += targets(rows)
        elif rows[-1]["n"] >= TARGET_N:  # one size, the target's own: measured, not carried
            skip = "prepare.archrag" not in rows[-1]["stage_cpu_seconds"]  # then leave it out of every size
            curve = [r for other in runs if (other["embed"], other["entities"]) == (run["embed"], run["entities"])
                     for r in other["rows"]]
            if skip:
                curve = [dict(r, index_cpu_seconds=r["index_cpu_seconds"]
                              - r["stage_cpu_seconds"].get("prepare.archrag", 0.0)) for r in curve]
            lines += targets(rows, curve) + ["", "The growth exponent above is fitted over the rows of every run of this "
                                             "setting on this page (different commits and build modes: one insert "
                                             "below 300,000, batches, whose CPU includes each batch's save and load, "
                                             "above)" + (", without ArchRAG's hierarchy, which this run left out."
                                                         if skip else ".")]
        lines.append("")
    lines += ["## Reading the numbers", "",
              "- recall@5 of 43.3 % is the first hop alone: every question names a work, whose passage any method "
              "finds; the second and third gold passages are reached only by following the graph (60 two-hop and 40 "
              "three-hop questions: 60 x 1/2 + 40 x 1/3 = 43.3). Methods above it follow links.",
              "- synonyms: every entity's nearest neighbours over all entity vectors (graph/synonyms.py): an exact "
              "faiss IndexFlatIP search below 20,000 entities searched (quadratic), a seeded IVF index above it "
              "(4·√n lists, nprobe 16: 99.5-100 % of the exact pairs at about a tenth of the CPU at 100k-200k "
              "names, benchmarks/results/synonyms.md), which grows as about n^1.3-1.5. A run's exponent for this "
              "stage mixes both modes when its sizes straddle the threshold.",
              "- ArchRAG's hierarchy (KNN graph, weighted Leiden per layer, C-HNSW) is built at index time "
              "(stage prepare.archrag, as `graphrag-suite index` does) and saved; in runs before that it was its first "
              "query's work (the \"first s\" column).",
              "- dense and hybrid p50 jump from ~0.2 ms to 10-15 ms at a few thousand chunks here: on this loaded "
              "2-core machine OpenBLAS's two threads wait for each other in the one matrix-vector product (the same "
              "10,000 x 256 product timed 0.1 ms with one BLAS thread and 12-16 ms with two, measured separately "
              "under the same load). OPENBLAS_NUM_THREADS=1 avoids it on a busy server.",
              "- Peak RSS includes the embedding model and spaCy (~0.5 GB with MiniLM and NER). The default `simple` "
              "graph store is a lazy mirror (index/lazy_store.py): it is not filled during a build, saved or parsed on "
              "load unless something outside the index uses it, so it is not in these figures (before, at 20,000 "
              "statistical passages, its JSON was 145.5 of a version folder's 305 MB: benchmarks/results/lazy_store.md). Since "
              "index format 2 every vector table is memory-mapped from its segments on load (index/tables.py).",
              "- --requery measures retrieval again on the kept indexes; on a loaded machine p50 can be twice what it "
              "is on an idle one, so compare runs made under the same load (the run notes say which).",
              "- At 300,000 passages every vector table has 100,000+ rows, so queries read them through their lists "
              "(index/vectors.py), and the graph has 1,000,000+ entries, so a PageRank on few nodes is a local push "
              "(graph/ppr_push.py). Their recall cost there, each switched off in turn on the same loaded index "
              "(studies/perf/scale_approximations.py, 100 questions): dense 5.3 -> 3.5 (lists), archrag 43.3 -> 42.2 "
              "(lists; 42.5 after its exact item and relation cosines), agrag 43.3 -> 43.0 (lists), a2rag 74.7 -> "
              "73.8 (0.5 push, 0.3 lists); hipporag, hybrid, bm25 and pathrag unchanged. On the same day the code "
              "before both (04f369f) timed p50 dense 95.5, hybrid 105.8, hipporag 1296, agrag 1936, pathrag 151, "
              "archrag 87.6, a2rag 192 ms on this index (a busier machine: two other jobs ran).",
              "- Format 3 saved a listed chunk or fact table's rows a second time, list by list, so a probed list is "
              "one contiguous read instead of a page per row (3.2 GB of the 9.5 GB at 1,000,000 passages). Since "
              "format 4 (index/vector_io.py) those tables are stored list by list only, read by row through a row "
              "map: the same rows, cosines and rankings; the kept 1,000,000-passage index saved in format 4 took "
              "6,349.5 MB (docs/index-storage.md). Table segments are uncompressed Arrow files that a load maps (1.97 GB there, "
              "against 0.41 GB as Parquet).",
              ""]
    lines += ["## Larger runs", "",
              "100k passages with the bundled MiniLM and spaCy NER takes about an hour here; `--keep DIR` keeps each "
              "size's corpus and index, and `--requery` times the methods again on them with later code (the build "
              "columns stay as measured):", "",
              "```bash", "make bench-scale SIZES=10000,100000 ARGS='--max-size 100000 --keep /tmp/keep'",
              "python benchmarks/scale.py --sizes 10000,100000 --keep /tmp/keep --requery   # after a retrieval change",
              "# or, model-free and much faster:",
              "python benchmarks/scale.py --sizes 10000,30000,100000 --max-size 100000 --embed hash --entities statistical", "```", "",
              "The synthetic corpus itself streams: `python benchmarks/synth.py --n 1000000 --out DIR` wrote 316 MB of "
              "JSONL (1,000,000 distinct titles, 200 questions) in 1 min 45 s with a 19 MB peak RSS on this machine "
              "(`/usr/bin/time -v`), and reading it back with the streaming JSONL reader peaked at 254 MB (the ids).", "", "![scaling](scale.png)", ""]
    return "\n".join(lines)


def plot(runs: list[dict], path: Path) -> None:
    """One row per run: index CPU time per stage (with a slope-1 guide: parallel = linear) and retrieval p50."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(runs), 2, figsize=(11, 4.2 * len(runs)), squeeze=False)
    for (left, right), run in zip(axes, runs):
        rows = sorted(run["rows"], key=lambda r: r["n"])
        ns = [r["n"] for r in rows]
        key = _stage_key(rows)
        total = [r["index_cpu_seconds" if key == "stage_cpu_seconds" else "index_seconds"] for r in rows]
        left.plot(ns, total, "o-", lw=2.5, color="black", label="total")
        left.plot(ns, [total[0] * n / ns[0] for n in ns], ":", color="grey", label="linear from the first size")
        for stage in rows[-1][key]:
            left.plot(ns, [max(r[key].get(stage, 0), 1e-3) for r in rows], "o--", lw=1.2, label=stage)
        for m in rows[-1]["methods"]:  # a method a requery added at the largest size only: its points where measured
            held = [(n, r["methods"][m]["p50_ms"]) for n, r in zip(ns, rows) if m in r["methods"]]
            right.plot([n for n, _ in held], [v for _, v in held], "o-", label=m)
        measure = "CPU" if key == "stage_cpu_seconds" else "wall"
        setting = f"embed={run['embed']}, entities={run['entities']}"
        for ax, title, ylabel in ((left, f"index {measure} time per stage ({setting})", "seconds"),
                                  (right, f"retrieval p50, query embedding excluded ({setting})", "ms")):
            ax.set_xscale("log"); ax.set_yscale("log")
            ax.set_xlabel("passages"); ax.set_ylabel(ylabel); ax.set_title(title, fontsize=9)
            ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _machine() -> str:
    from llama_index_graphrag_suite.eval.bench import machine_description

    return machine_description()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,3000,10000", help="passages per run, comma-separated")
    ap.add_argument("--max-size", type=int, default=30_000,
                    help="refuse sizes above this (a cap for this machine; raise it on a bigger one)")
    ap.add_argument("--embed", default="minilm", help="minilm (the bundled all-MiniLM-L6-v2, the default) or hash")
    ap.add_argument("--entities", default="ner", choices=("ner", "statistical", "both"))
    ap.add_argument("--methods", default="dense,bm25,hybrid,hipporag,agrag,pathrag,archrag,a2rag")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results", default=str(RESULTS), help="folder for scale.json, scale.md, scale.png")
    ap.add_argument("--note", default="", help="a sentence for the report (e.g. the machine was shared)")
    ap.add_argument("--render-only", action="store_true", help="rewrite scale.md and scale.png from scale.json")
    ap.add_argument("--keep", default=None, metavar="DIR",
                    help="keep each size's corpus and saved index in DIR (synth-N, index-N) for --requery")
    ap.add_argument("--requery", action="store_true",
                    help="with --keep: reload the kept indexes of --sizes and time the methods again with the "
                         "current code (the build columns stay as measured)")
    ap.add_argument("--batch-size", type=int, default=0, metavar="N",
                    help="build in batches of N passages streamed from the corpus, each inserted and saved "
                         "(index/batched.py: memory bounded by a batch); 0 (default): one insert of the whole corpus")
    ap.add_argument("--no-prepare-again", action="store_true",
                    help="after the 1,000-passage insert, do not build ArchRAG's hierarchy again (it is built anew, "
                         "as long as at build time)")
    ap.add_argument("--serve", type=int, default=0, metavar="Q",
                    help="with --keep: serve each kept index (`graphrag-suite serve`, benchmarks/serve_memory.py) and "
                         "record its RSS after Q questions over HTTP (the 1M target: <= 6 GB after 100)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--child-index", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    methods = args.methods.split(",")
    if args.child and args.requery:
        print(json.dumps(requery_child(args.child, args.child_index, args.embed, methods)))
        return
    if args.child:
        print(json.dumps(run_child(args.child, args.embed, args.entities, methods, args.child_index, args.batch_size,
                                   not args.no_prepare_again)))
        return
    if args.render_only:
        write_report(Path(args.results), json.loads((Path(args.results) / "scale.json").read_text()))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    if max(sizes) > args.max_size:
        sys.exit(f"size {max(sizes)} is above --max-size {args.max_size}; raise it deliberately on a machine that fits")
    sys.path.insert(0, str(HERE))
    import synth

    command = "python benchmarks/scale.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    print(f"embed={args.embed} entities={args.entities} methods={args.methods} sizes={sizes}", flush=True)
    if args.requery:
        requery(args, sizes, methods, command)
        return
    rows = []
    with contextlib.ExitStack() as stack:
        base = Path(args.keep) if args.keep else Path(stack.enter_context(tempfile.TemporaryDirectory()))
        for n in sizes:
            folder = base / f"synth-{n}"
            if not (folder / "corpus.jsonl").is_file():
                folder = synth.write(folder, n, seed=args.seed, questions=args.questions)
            kept = base / f"index-{n}"
            if args.keep and kept.exists():  # a save into it would add a version, and disk MB would count both
                print(f"removing the index kept by an earlier run: {kept}", flush=True)
                shutil.rmtree(kept)
            extra = ["--child-index", str(kept)] if args.keep else []
            row = _child(folder, args, extra)
            if args.serve and args.keep:
                row["serve"] = serve_memory(base, n, args.embed, args.serve, methods)
            rows.append(row)
            print(f"N={n}: index {row['index_seconds']} s {row['stage_seconds']}, peak RSS {row['peak_rss_build_mb']} MB, "
                  f"disk {row['disk_mb']} MB; " + ", ".join(f"{m} {s['p50_ms']} ms r@5 {s['recall@5']}"
                                                              for m, s in row["methods"].items()), flush=True)
    results = Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    store = results / "scale.json"
    runs = json.loads(store.read_text()) if store.is_file() else []
    runs = [r for r in runs if (r["embed"], r["entities"], _batch_size(r)) != (args.embed, args.entities, args.batch_size)]
    runs.append({"embed": args.embed, "entities": args.entities, "command": command, "machine": _machine(),
                 "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "note": args.note, "rows": rows})
    store.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    write_report(results, runs)


def _child(folder: Path, args, extra: list[str]) -> dict:
    """Run one size in a fresh process (so peak memory is per size); its JSON row."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, __file__, "--child", str(folder), "--embed", args.embed,
                          "--entities", args.entities, "--methods", args.methods, "--batch-size", str(args.batch_size),
                          *(["--no-prepare-again"] if args.no_prepare_again else []), *extra],
                         capture_output=True, text=True, check=False, env=env)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        sys.exit(f"{folder.name} failed:\n{out.stderr[-3000:]}")
    return json.loads(lines[-1])


def requery(args, sizes: list[int], methods: list[str], command: str) -> None:
    """Reload the kept indexes and replace the retrieval columns of the stored run (the build columns stay)."""
    if not args.keep:
        sys.exit("--requery needs --keep DIR (where an earlier run kept its indexes)")
    results = Path(args.results)
    runs = json.loads((results / "scale.json").read_text())
    run = next((r for r in reversed(runs) if (r["embed"], r["entities"]) == (args.embed, args.entities)
                and set(sizes) <= {row["n"] for row in r["rows"]}), None)  # the newest run that measured these sizes
    if run is None:
        sys.exit(f"no stored run of sizes {sizes} for embed={args.embed} entities={args.entities} in "
                 f"{results / 'scale.json'}")
    for n in sizes:
        row = next((r for r in run["rows"] if r["n"] == n), None)
        index_dir = Path(args.keep) / f"index-{n}"
        if row is None or not index_dir.is_dir():
            sys.exit(f"N={n}: no stored row or no kept index at {index_dir}")
        got = _child(Path(args.keep) / f"synth-{n}", args, ["--requery", "--child-index", str(index_dir)])
        row["methods"].update(got["methods"])
        row["load_seconds"] = got["load_seconds"]
        if "reload_seconds" in got:
            row["reload_seconds"] = got["reload_seconds"]
        if args.serve:
            row["serve"] = serve_memory(Path(args.keep), n, args.embed, args.serve, methods)
            print(f"N={n}: served, RSS after {args.serve} questions {row['serve']['after_mb']['VmRSS']} MB", flush=True)
        print(f"N={n}: load {got['load_seconds']} s; " + ", ".join(f"{m} {s['p50_ms']} ms r@5 {s['recall@5']}"
                                                                   for m, s in got["methods"].items()), flush=True)
    run["requery"] = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                      "note": args.note, "sizes": sizes}
    (results / "scale.json").write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")
    write_report(results, runs)


def _requeried(again: dict, rows: list[dict]) -> str:
    """Which columns a requery measured again: its sizes (before they were recorded: those of its command)."""
    sizes = again.get("sizes")
    if sizes is None:
        given = re.search(r"--sizes[ =]'?([\d,]+)", again.get("command", ""))
        sizes = [int(n) for n in given.group(1).split(",")] if given else [r["n"] for r in rows]
    if len(sizes) == len(rows):
        return "every column"
    return "the " + ", ".join(f"{n:,}" for n in sizes) + f"-passage column{'s' if len(sizes) > 1 else ''}"


def write_report(results: Path, runs: list[dict]) -> None:
    (results / "scale.md").write_text(render(runs), encoding="utf-8")
    try:
        plot(runs, results / "scale.png")
    except ImportError:
        print("matplotlib is missing (pip install -c constraints.txt matplotlib): no plot", file=sys.stderr)
    print(f"wrote {results / 'scale.md'}")


if __name__ == "__main__":
    main()
