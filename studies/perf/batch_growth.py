"""Does a batch of a batched build cost more when the index already built is larger?

``index/batched.py`` builds a corpus ``--batch`` passages at a time: each batch is inserted, saved and loaded back.
If every batch cost the same, the build's CPU time would grow linearly with the corpus; a stage whose per-batch
cost grows with the index already built makes the whole build super-linear. This study builds the first
``--passages`` passages of a synthetic corpus (``benchmarks/synth.py``; hash embedding, statistical entities, as
the 1M scale run) in batches, in one process, and prints one JSON line per batch: the CPU seconds of each build
stage (the index's timed stages), of the save and of the load that follow it, of the cyclic garbage collector's
passes (timed by a ``gc.callbacks`` hook; all threads' CPU while a pass runs) and the process's peak RSS so far;
then the fitted growth of each stage's per-batch cost with the batch number.

    PYTHONPATH=. python studies/perf/batch_growth.py --corpus /work/scratch/m1/synth-300000/corpus.jsonl \\
        --passages 300000 --batch 50000 --out /tmp/growth.jsonl

``--profile 2,6`` writes a cProfile of batches 2 and 6 (insert, save and load) next to ``--out``.

``--into INDEX --offset K --passages N`` measures one later batch on a kept index instead (a copy: it is changed):
the same figures for N passages from line K of ``--corpus`` inserted into it, saved and loaded again. Run on kept
indexes of several sizes, it gives a batch's cost as a function of the index already built, without building them.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import gc
import itertools
import json
import math
import resource
import sys
import tempfile
from pathlib import Path


def cpu_seconds() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def count_cpu(cls, name: str, into: dict[str, float], *, method: bool = True, context: bool = False) -> None:
    """Wrap ``cls.name`` (a method, a classmethod or the index's stage context manager) so its CPU seconds are
    added to ``into[key]``."""
    original = getattr(cls, name)
    if context:
        @contextlib.contextmanager
        def wrapped(self, stage: str):
            start = cpu_seconds()
            try:
                with original(self, stage):
                    yield
            finally:
                into[stage] = into.get(stage, 0.0) + cpu_seconds() - start
        setattr(cls, name, wrapped)
        return

    def timed(*args, **kwargs):
        start = cpu_seconds()
        try:
            return original(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + cpu_seconds() - start
    setattr(cls, name, timed if method else staticmethod(timed))


def slope(ys: list[float]) -> float:
    """Least-squares slope of log(cost of batch k) over log(k): 0 when every batch costs the same."""
    pts = [(math.log(k), math.log(y)) for k, y in enumerate(ys, 1) if y > 0]
    if len(pts) < 2:
        return float("nan")
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else float("nan")


def one_batch(args) -> None:
    """``--into INDEX``: one later batch of a batched build, on a kept index of some size: load it, insert
    ``--passages`` passages from ``--offset`` of ``--corpus`` (ids prefixed, so they are new), save, load again.
    Prints one JSON line: CPU seconds of the first load, of reading the saved n-gram statistics (what a batch
    of ``build_in_batches`` paid at its statistics step before the statistics were handed from batch to batch),
    of each build stage, of the save and of the load after it; peak RSS."""
    from llama_index_graphrag_suite.documents import document_key, make_document
    from llama_index_graphrag_suite.index.build import entity_statistics
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    cpu: dict[str, float] = {}
    count_cpu(GraphRAGIndex, "_stage", cpu, context=True)
    start = cpu_seconds()
    index = GraphRAGIndex.load(args.into, embed_model="hash")
    cpu["first_load"] = cpu_seconds() - start
    size = len(index.chunks)
    start = cpu_seconds()
    entity_statistics(index.state)
    cpu["stats_read"] = cpu_seconds() - start
    docs = [make_document(f"x{args.offset}-{document_key(d)[0]}", d.text, d.metadata.get("title", ""))
            for d in itertools.islice(iter_jsonl(args.corpus), args.offset, args.offset + args.passages)]
    start = cpu_seconds()
    index.insert(docs)
    cpu["insert"] = cpu_seconds() - start  # the stages and what the insert does around them (its change's start)
    start = cpu_seconds()
    index.persist(args.into)
    cpu["persist"] = cpu_seconds() - start
    del index
    start = cpu_seconds()
    GraphRAGIndex.load(args.into, embed_model="hash")
    cpu["load"] = cpu_seconds() - start
    from llama_index_graphrag_suite.index import batched

    row = {"index_passages": size, "inserted": len(docs), "peak_rss_mb": round(peak_rss_mb()),
           "hands_over": hasattr(batched, "_hand_over"),  # build_in_batches then keeps the statistics: no read
           "cpu_s": {k: round(v, 2) for k, v in cpu.items()},
           "batch_cpu_s": round(cpu["insert"] + cpu["persist"] + cpu["load"], 2)}  # what a build's batch pays
    print(json.dumps(row), flush=True)
    with Path(args.out).open("a") as f:
        f.write(json.dumps(row) + "\n")


def summarize(paths: list[str], batch: int, sizes: list[int]) -> None:
    """``--summarize old.jsonl new.jsonl``: the rows of ``--into`` runs, side by side; per stage a least-squares
    line ``a + b·n`` over the index sizes n (the part of a batch's cost that grows with the index already built
    is ``b·n``); and what that carries to: a build of N passages in batches of ``--batch``, batch k (0-based)
    costing ``a·batch/measured batch + b·k·batch``, and the growth exponent of those totals over ``--sizes``."""
    runs = {p: [json.loads(x) for x in Path(p).read_text().splitlines() if x.strip()] for p in paths}
    for path, rows in runs.items():
        rows.sort(key=lambda r: r["index_passages"])
        names = list(rows[0]["cpu_s"])
        print(f"\n{path}: CPU s of one batch of {rows[0]['inserted']:,} passages into an index of n passages "
              f"(batch: every row but {', '.join(skipped(rows[0]))})")
        print("| stage | " + " | ".join(f"n={r['index_passages']:,}" for r in rows) + " | b: s per 100k indexed |")
        print("|---|" + "---:|" * (len(rows) + 1))
        fits = {}
        for name in names + ["batch"]:
            ys = [sum(v for k, v in r["cpu_s"].items() if k not in skipped(r)) if name == "batch" else r["cpu_s"][name]
                  for r in rows]
            xs = [r["index_passages"] for r in rows]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
            fits[name] = (my - b * mx, b)
            print(f"| {name} | " + " | ".join(f"{y:.1f}" for y in ys) + f" | {b * 1e5:.2f} |")
        print("| peak RSS MB | " + " | ".join(str(r["peak_rss_mb"]) for r in rows) + " | |")
        a, b = fits["batch"]
        scale = batch / rows[0]["inserted"]

        def total(n: int) -> float:
            count = math.ceil(n / batch)
            return sum(a * min(batch, n - k * batch) / rows[0]["inserted"] + b * k * batch for k in range(count))
        totals = [total(n) for n in sizes]
        print(f"carried (batches of {batch:,}; batch cost a·{scale:.2f} + b·n): " +
              ", ".join(f"{n:,}: {t:,.0f} s" for n, t in zip(sizes, totals)) +
              f"; exponent {fit_exponent(sizes, totals):.2f}")


def skipped(row: dict) -> tuple[str, ...]:
    """What a batch of ``build_in_batches`` does not pay of a ``--into`` row: the first load (the previous batch's
    load is the one it reads), and the statistics read when the code hands them from batch to batch; ``insert``
    is the stages' sum and the rest of the insert (a total, not a stage)."""
    return ("first_load", "stats_read", "insert") if row.get("hands_over") else ("first_load", "insert")


def fit_exponent(xs: list[int], ys: list[float]) -> float:
    pts = [(math.log(x), math.log(y)) for x, y in zip(xs, ys)]
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)


def iter_jsonl(path):
    from llama_index_graphrag_suite.documents import iter_jsonl_documents

    return iter_jsonl_documents(path)


def later_batch_arguments(parser: argparse.ArgumentParser, into_help: str) -> None:
    """The arguments of a study that inserts one later batch into a kept index (``later_batch.py``,
    ``link_reach.py``): ``--into``, ``--corpus``, ``--offset``, ``--passages``."""
    parser.add_argument("--into", required=True, help=into_help)
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--offset", type=int, required=True, help="the corpus line the batch starts at")
    parser.add_argument("--passages", type=int, default=100_000)


def later_batch_documents(args: argparse.Namespace) -> list:
    """The batch :func:`later_batch_arguments` names: ``--passages`` documents from line ``--offset`` of ``--corpus``."""
    return list(itertools.islice(iter_jsonl(Path(args.corpus)), args.offset, args.offset + args.passages))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus")
    parser.add_argument("--passages", type=int, default=0)
    parser.add_argument("--batch", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--folder", default=None, help="where the index is built (default: a temporary folder)")
    parser.add_argument("--profile", default="", help="cProfile these batch numbers (comma-separated)")
    parser.add_argument("--into", default=None, help="a kept index (a copy: it is changed): one batch into it")
    parser.add_argument("--offset", type=int, default=0, help="with --into: the corpus line the batch starts at")
    parser.add_argument("--summarize", nargs="*", default=None, help="--into results (.jsonl) to tabulate and carry")
    parser.add_argument("--sizes", default="10000,30000,100000,300000,1000000", help="with --summarize")
    args = parser.parse_args()
    if args.summarize:
        return summarize(args.summarize, args.batch or 100_000, [int(x) for x in args.sizes.split(",")])
    if args.into:
        return one_batch(args)
    if not args.batch:
        parser.error("--batch is required for a build")

    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.documents import iter_jsonl_documents
    from llama_index_graphrag_suite.index.batched import build_in_batches
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    cpu: dict[str, float] = {}
    count_cpu(GraphRAGIndex, "_stage", cpu, context=True)
    count_cpu(GraphRAGIndex, "persist", cpu)
    original_load = GraphRAGIndex.load.__func__

    def load(cls, *a, **k):
        start = cpu_seconds()
        try:
            return original_load(cls, *a, **k)
        finally:
            cpu["load"] = cpu.get("load", 0.0) + cpu_seconds() - start
    GraphRAGIndex.load = classmethod(load)

    collected = {"cpu_s": 0.0, "full_passes": 0}  # the cyclic garbage collector's passes (index/collector.py)

    def collector_timer(phase: str, info: dict) -> None:
        if phase == "start":
            collected["started"] = cpu_seconds()
            return
        collected["cpu_s"] += cpu_seconds() - collected["started"]
        collected["full_passes"] += info["generation"] == 2
    gc.callbacks.append(collector_timer)

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    profiled = {int(k) for k in args.profile.split(",") if k}
    profiler = cProfile.Profile() if profiled else None
    state = {"cpu": cpu_seconds()}

    def on_batch(number: int, held: int, seconds: float) -> None:
        if profiler is not None and number in profiled:
            profiler.disable()
            profiler.dump_stats(str(out.with_suffix(f".batch{number}.prof")))
            profiler.clear()
        now = cpu_seconds()
        row = {"batch": number, "passages": held, "wall_s": round(seconds, 1), "cpu_s": round(now - state["cpu"], 1),
               "peak_rss_mb": round(peak_rss_mb()), "stages_cpu_s": {k: round(v, 1) for k, v in cpu.items()},
               "collector_cpu_s": round(collected["cpu_s"], 1), "collector_full_passes": collected["full_passes"]}
        state["cpu"] = now
        cpu.clear()
        collected.update(cpu_s=0.0, full_passes=0)
        rows.append(row)
        print(json.dumps(row), flush=True)
        with out.open("a") as f:
            f.write(json.dumps(row) + "\n")
        if profiler is not None and number + 1 in profiled:
            profiler.enable()

    if profiler is not None and 1 in profiled:
        profiler.enable()
    docs = itertools.islice(iter_jsonl_documents(args.corpus), args.passages)
    started = cpu_seconds()
    with contextlib.ExitStack() as stack:
        folder = args.folder or stack.enter_context(tempfile.TemporaryDirectory(dir="/work/scratch"))
        build_in_batches(docs, folder, args.batch, resume=False, embed_model="hash",
                         config=IndexConfig(entities="statistical"), on_batch=on_batch)
        # the whole build: every batch, and the compaction and load after the last one (no batch row has those)
        total = {"build_cpu_s": round(cpu_seconds() - started, 1), "after_last_batch_cpu_s": round(
            cpu_seconds() - state["cpu"], 1), "peak_rss_mb": round(peak_rss_mb())}
        print(json.dumps(total), flush=True)
        with out.open("a") as f:
            f.write(json.dumps(total) + "\n")
    names = sorted({k for r in rows for k in r["stages_cpu_s"]})
    print("per-batch growth (log-log slope of a batch's CPU s over its number; 0 = flat):", file=sys.stderr)
    for name in [*names, "cpu_s"]:
        ys = [r["stages_cpu_s"].get(name, 0.0) if name != "cpu_s" else r["cpu_s"] for r in rows]
        print(f"  {name:12s} {slope(ys):6.2f}   " + " ".join(f"{y:7.1f}" for y in ys), file=sys.stderr)


if __name__ == "__main__":
    main()
