"""A build on a two-node Ray cluster against the same build in one process, with checksums and per-shard times.

    nice -n 10 python benchmarks/ray_scale.py --n 100000            # writes benchmarks/results/ray_scale.{json,md}
    python benchmarks/ray_scale.py --n 30000 --compare-staging       # the cluster builds twice: vectors returned
                                                                     # through the object store, then staged as files
    python benchmarks/ray_scale.py --n 2000 --compare-staging --json OUT.json --no-report   # tests/index/test_ray_scale.py

Steps: write ``benchmarks/synth.py``'s corpus (seed 0, as ``scale.py`` does); in a fresh process build it locally
(``--embed hash``, statistical entities, no LLM) and save it; start a two-node Ray cluster on this machine
(``ray start --head`` and ``ray start --address``, one CPU each, loopback, token authentication, each node its own
temp dir, as ``tests/index/test_ray_cluster.py`` does); in another fresh process build the same corpus through
``ray_build(index, address)`` and save it; stop both nodes (always). Then compare the two saved indexes.

"Identical" means: every table a version reads (chunks, chunk_links, entities, facts, synonyms, the BM25
vocabulary, the n-gram document frequencies) has the same values in the same order, column by column, after its
segments are folded as a load folds them (so segment file names, which are random, and Parquet encoding do not
matter); the n-gram table is a map (n-gram -> document frequency) saved in the order of a Python set, which
follows the per-process string hash (two local builds in two processes differ in it), so it is compared sorted
by n-gram; every vector table has the same ids in the same order and the same float32 bytes; and the manifest
agrees on config, embed model, dimension and counts. Build timings, creation time and version ids differ and are
not compared.

Per-shard figures come from the Ray executor's own task log (``RayRunner.tasks``: each task's function, node,
items, wall and CPU seconds, the worker's peak RSS) and its map log (each sharded operation's wall seconds on the
driver). A build step's driver time is its stage time (``build_info["stage_seconds"]``) less the wall time of the
sharded operations inside it.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
RAY = Path(sys.executable).with_name("ray")
# which build step each sharded function belongs to
STEP_OF = {"_chunk_shard": "chunk", "_count_shard": "statistics", "_score_shard": "extract",
           "_link_shard": "extract", "_parse_shard": "extract", "_embed_shard": "embed"}
STEPS = ("chunk", "statistics", "extract", "tables", "link", "embed", "synonyms", "graph")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


class MemorySampler:
    """Peaks of this process's anonymous, file-backed and shared-memory resident pages (``/proc/self/status``
    RssAnon, RssFile, RssShmem), sampled every 50 ms: the kernel keeps only the peak of their sum (VmHWM), and
    file-backed pages (memory-mapped vectors) can be dropped under pressure where anonymous ones cannot."""

    FIELDS = ("RssAnon", "RssFile", "RssShmem")

    def __init__(self) -> None:
        self.peak = dict.fromkeys(self.FIELDS, 0.0)
        self.stage_peak = dict.fromkeys(self.FIELDS, 0.0)  # since the current build stage began
        self.stages: dict[str, float] = {}  # build stage -> its peak anonymous MB
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        with open("/proc/self/status") as f:
            for line in f:
                name, _, value = line.partition(":")
                if name in self.peak:
                    mb = int(value.split()[0]) / 1024.0
                    self.peak[name] = max(self.peak[name], mb)
                    self.stage_peak[name] = max(self.stage_peak[name], mb)

    @contextlib.contextmanager
    def stage(self, name: str):
        """Record the peak anonymous memory of one build stage (the index's stage timer is wrapped in this)."""
        self.sample()
        self.stage_peak = dict.fromkeys(self.FIELDS, 0.0)
        self.sample()
        try:
            yield
        finally:
            self.sample()
            self.stages[name] = round(max(self.stages.get(name, 0.0), self.stage_peak["RssAnon"]))

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.sample()

    def __enter__(self) -> "MemorySampler":
        if os.path.exists("/proc/self/status"):
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
            self.sample()


# --- checksums ------------------------------------------------------------------------------------------------------

def _column_hash(values: list) -> str:
    return hashlib.sha256(json.dumps(values, ensure_ascii=False, separators=(",", ":")).encode()).hexdigest()


def _folded(tables: list, key: tuple[str, ...]):
    """A table's rows as a load folds its segments (``folding.fold``), without the ``gone`` flag."""
    import pyarrow as pa

    from llama_index_graphrag_suite.index.folding import any_gone, fold

    if len(tables) == 1 and not any_gone(tables[0]):
        table = tables[0]
    else:
        at, starts, offset = fold(tables, key), [], 0
        for t in tables:
            starts.append(offset)
            offset += len(t)
        table = pa.concat_tables(tables).take(pa.array([starts[s] + r for s, r in at.values()], pa.int64()))
    return table.drop_columns(["gone"])


def checksums(root: str | Path) -> dict[str, str]:
    """sha256 per table of the current version of the index saved at ``root`` (see the module docstring)."""
    import numpy as np

    from llama_index_graphrag_suite.index.segment_files import read_segment
    from llama_index_graphrag_suite.index.storage import open_version
    from llama_index_graphrag_suite.index.tables import SEGMENTS

    root = Path(root)
    _, manifest = open_version(root)
    folder = root / SEGMENTS
    read = lambda name: read_segment(folder / name)  # noqa: E731
    out: dict[str, str] = {}
    keys = {"entities": ("key",), "synonyms": ("a", "b")}
    for name, segments in sorted(manifest["tables"].items()) + [("ngrams", manifest["ngrams"])]:
        table = _folded([read(s) for s in segments], keys.get(name, ("key",) if name == "ngrams" else ("id",)))
        if name == "ngrams":  # a map saved in set order, which follows Python's per-process string hashing
            table = table.sort_by("key")
        digest = hashlib.sha256(str(table.num_rows).encode())
        for column in table.column_names:
            digest.update(f"{column}:{_column_hash(table.column(column).to_pylist())}".encode())
        out[name] = digest.hexdigest()
    out["vocabulary"] = _column_hash([t for s in manifest["vocabulary"] for t in read(s).column("term").to_pylist()])
    for name, parts in sorted(manifest["vectors"].items()):
        ids, digest = [], hashlib.sha256()
        for part in parts:
            ids_segment, matrix_segment, used = part[:3]
            ids += read(ids_segment).column("id").to_pylist()[:used]
            matrix = np.load(folder / matrix_segment, mmap_mode="r", allow_pickle=False)[:used]
            if len(part) == 4:  # rows stored list by list (index/vector_io.py): entry i is row `row`; row order here
                rows = read(part[3]).column("row").to_numpy()
                matrix = np.load(folder / matrix_segment, mmap_mode="r", allow_pickle=False)[
                    np.flatnonzero(rows >= 0)[np.argsort(rows[rows >= 0])]]
            digest.update(f"{matrix.dtype}{matrix.shape[1:]}".encode())
            for start in range(0, len(matrix), 65536):  # a block at a time: the matrix stays on disk
                digest.update(np.ascontiguousarray(matrix[start:start + 65536]).tobytes())
        digest.update(_column_hash(ids).encode())
        out[f"{name}_vectors"] = digest.hexdigest()
    kept = {k: manifest.get(k) for k in ("config", "embed_model", "embed_dim", "counts", "ngram_chunks", "format_version")}
    out["manifest"] = _column_hash([kept])
    return out


# --- one build, in a fresh process ----------------------------------------------------------------------------------

def build_child(corpus: str, mode: str, address: str | None, out: str, embed: str, entities: str,
                staging: str | None = None) -> dict:
    """Build ``corpus`` here (``mode`` "local") or through Ray at ``address``, save it into ``out``; one row."""
    from llama_index_graphrag_suite.config import IndexConfig
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index.distributed import ray_build
    from llama_index_graphrag_suite.index.graph_index import GraphRAGIndex

    rss_start = _peak_rss_mb()  # Python and the libraries: what the driver holds whatever the corpus
    docs = load_dataset(corpus).documents
    rss_loaded = _peak_rss_mb()
    index = GraphRAGIndex(embed_model=embed, config=IndexConfig(entities=entities))
    row: dict = {"mode": mode, "n": len(docs)}
    start = time.perf_counter()
    with MemorySampler() as memory:
        timer = GraphRAGIndex._stage

        @contextlib.contextmanager
        def stage(self, name: str):
            with memory.stage(name), timer(self, name):
                yield

        GraphRAGIndex._stage = stage
        if mode == "local":
            index.insert(docs)
        else:
            with ray_build(index, address, staging=staging or False) as runner:
                index.insert(docs)
                row["cluster_cpus"] = runner.cpus
                row["vectors_via"] = "staging folder" if runner.staging else "object store"
            row["nodes_used"] = len(runner.nodes_used)
            row["tasks"] = runner.tasks
            row["maps"] = runner.maps
    row["build_seconds"] = round(time.perf_counter() - start, 2)
    row["build_peak_mb"] = {k: round(v) for k, v in memory.peak.items()}
    row["stage_peak_anon_mb"] = memory.stages
    row["stage_seconds"] = dict(index.build_info.get("stage_seconds", {}))
    row["peak_rss_build_mb"] = round(_peak_rss_mb())
    row["rss_start_mb"] = round(rss_start)
    row["rss_after_loading_corpus_mb"] = round(rss_loaded)
    start = time.perf_counter()
    index.persist(out)
    row["save_seconds"] = round(time.perf_counter() - start, 2)
    row["peak_rss_mb"] = round(_peak_rss_mb())
    row["counts"] = index.stats()
    row["vectors"] = {t: len(getattr(index, t)) for t in ("chunk_vectors", "entity_vectors", "fact_vectors")}
    row["embed_dim"] = index.chunk_vectors.dim
    start = time.perf_counter()
    row["checksums"] = checksums(out)
    row["checksum_seconds"] = round(time.perf_counter() - start, 2)
    return row


def _run_child(args, mode: str, corpus: Path, out: Path, env: dict, address: str | None = None,
               staging: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--child", mode, "--corpus", str(corpus), "--index", str(out),
           "--embed", args.embed, "--entities", args.entities]
    if address:
        cmd += ["--address", address]
    if staging:
        cmd += ["--staging", staging]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    if run.returncode or not lines:
        raise SystemExit(f"the {mode} build failed:\n{run.stderr[-4000:]}")
    return json.loads(lines[-1])


# --- a two-node cluster on this machine -----------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_node(args: list[str], log: Path, env: dict, object_store_mb: int) -> subprocess.Popen:
    """``ray start ARGS --block`` as a child in its own session; returns once the node is up."""
    with open(log, "w") as out:
        node = subprocess.Popen([str(RAY), "start", *args, "--num-cpus=1", f"--object-store-memory={object_store_mb * 10**6}",
                                 "--disable-usage-stats", "--block"], stdout=out, stderr=subprocess.STDOUT, env=env,
                                start_new_session=True)
    deadline = time.monotonic() + 180
    while "block forever" not in log.read_text():
        if node.poll() is not None or time.monotonic() > deadline:
            stop_node(node)
            raise RuntimeError(f"ray start {args[0]} did not come up:\n{log.read_text()[-3000:]}")
        time.sleep(0.5)
    return node


def stop_node(node: subprocess.Popen) -> None:
    """SIGTERM to the node's ``ray start --block`` (it stops its own daemons), then its session killed: a raylet or
    GCS server it left behind (seen after a test run) goes too. Its own session: only this node's processes."""
    if node.poll() is None:
        node.send_signal(signal.SIGTERM)
        try:
            node.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(node.pid, signal.SIGKILL)
    except ProcessLookupError:  # nothing of the session is left
        pass
    node.wait(timeout=30)


@contextlib.contextmanager
def two_node_cluster(work: Path, env: dict, object_store_mb: int):
    """A head and a second node, one CPU each, on 127.0.0.1; yields the address; both stopped afterwards."""
    if not RAY.exists():
        raise SystemExit(f"no ray command beside {sys.executable}: install the 'ray' extra")
    port = _free_port()
    head = start_node(["--head", "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={work / 'head'}",
                        "--include-dashboard=false"], work / "head.log", env, object_store_mb)
    try:
        second = start_node([f"--address=127.0.0.1:{port}", "--node-ip-address=127.0.0.1",
                              f"--temp-dir={work / 'second'}"], work / "second.log", env, object_store_mb)
        try:
            yield f"127.0.0.1:{port}"
        finally:
            stop_node(second)
    finally:
        stop_node(head)


# --- per-shard figures and the 10-node carry -------------------------------------------------------------------------

def shard_figures(ray_row: dict) -> dict:
    """Per build step: tasks, items, task wall/CPU seconds, seconds per 1,000 items, the sharded maps' wall time
    on the driver, and the step's driver-only time (stage time less its maps)."""
    out: dict[str, dict] = {}
    for step in STEPS:
        tasks = [t for t in ray_row.get("tasks", []) if STEP_OF.get(t["fn"]) == step]
        maps = [m for m in ray_row.get("maps", []) if STEP_OF.get(m["fn"]) == step]
        items = sum(t["items"] for t in tasks)
        task_seconds = sum(t["seconds"] for t in tasks)
        task_cpu = sum(t["cpu_seconds"] for t in tasks)
        map_seconds = sum(m["seconds"] for m in maps)
        stage = ray_row["stage_seconds"].get(step, 0.0)
        cpus = ray_row.get("cluster_cpus", 1)
        out[step] = {"tasks": len(tasks), "items": items, "task_seconds": round(task_seconds, 2),
                     "task_cpu_seconds": round(task_cpu, 2), "max_task_seconds": round(max((t["seconds"] for t in tasks), default=0), 2),
                     "cpu_ms_per_1000_items": round(1e6 * task_cpu / items, 1) if items else None,
                     "map_wall_seconds": round(map_seconds, 2), "stage_seconds": stage,
                     # what waiting on the maps cost beyond the tasks themselves run side by side: worker start-up,
                     # shipping shards and results through the object store, a core shared with the neighbours
                     "overhead_seconds": round(max(map_seconds - task_seconds / cpus, 0.0), 2) if tasks else 0.0,
                     "driver_seconds": round(max(stage - map_seconds, 0.0), 2),
                     "worker_peak_rss_mb": round(max((t["peak_rss_mb"] or 0 for t in tasks if t["node"] != "driver"), default=0))}
    return out


# Driver steps that grow faster than N, with the exponent benchmarks/results/scale.md measured for them (hash
# embedding, statistical entities, 10k-100k): synonym edges search every entity's neighbours over all entities.
EXPONENT = {"synonyms": 1.25}


def carry(figures: dict, ray_row: dict, n: int, to_n: int, nodes: int) -> dict:
    """Paper figures for ``to_n`` passages on ``nodes`` one-CPU nodes: each step's task CPU time scaled linearly
    by items and divided over the nodes; the maps' overhead and the driver's time scaled linearly (at
    :data:`EXPONENT` where measured: they are global and do not shrink with nodes); the driver's peak RSS above its
    start-up scaled linearly."""
    k = to_n / n
    steps = {}
    for step, f in figures.items():
        steps[step] = {"sharded_seconds": round(f["task_cpu_seconds"] * k / nodes),
                       "overhead_seconds": round(f["overhead_seconds"] * k),
                       "driver_seconds": round(f["driver_seconds"] * k ** EXPONENT.get(step, 1.0))}
    save = ray_row["save_seconds"] * k
    total = sum(sum(s.values()) for s in steps.values()) + save
    base = ray_row["rss_start_mb"]
    return {"n": to_n, "nodes": nodes, "steps": steps, "save_seconds": round(save), "total_seconds": round(total),
            "driver_peak_rss_gb": round((base + (ray_row["peak_rss_mb"] - base) * k) / 1024, 1)}


def render(result: dict) -> str:
    local, ray_row, figures, paper = result["local"], result["ray"], result["figures"], result["carry"]
    staged = result.get("ray_staged")
    same = result["identical"]
    lines = ["# A build on a two-node Ray cluster against the local build", "",
             f"Generated by `benchmarks/ray_scale.py` on {result['date']}.", "",
             f"Command: `{result['command']}`", "",
             f"Machine: {result['machine']}. {result['note']}".rstrip() + f" The script ran at niceness "
             f"{result.get('niceness', '?')}, OMP_NUM_THREADS={result.get('omp_threads', '?')}.", "",
             f"Corpus: `benchmarks/synth.py`, {local['n']:,} passages (seed 0); `--embed {result['embed']}`, "
             f"entities `{result['entities']}`, no LLM. Cluster: `ray start --head` + `ray start --address`, "
             "one CPU each, both on 127.0.0.1 of this machine (so the two nodes share its 2 cores and its disk).", "",
             "## Identical?", "",
             "Each table as a load folds its segments, compared column by column (values and order; the n-gram "
             "frequencies, a map saved in per-process hash order, sorted by n-gram); each vector "
             "table's ids and float32 bytes; the manifest's config, embed model, dimension and counts "
             "(see the script's docstring).", "",
             "| table | local sha256 (first 16) | Ray sha256 (first 16) | same |"
             + (" staged vectors: same |" if staged else ""), "|---|---|---|---|" + ("---|" if staged else "")]
    for name, digest in local["checksums"].items():
        other = ray_row["checksums"].get(name, "")
        line = f"| {name} | `{digest[:16]}` | `{other[:16]}` | {'yes' if digest == other else '**no**'} |"
        if staged:
            line += f" {'yes' if staged['checksums'].get(name) == digest else '**no**'} |"
        lines.append(line)
    lines += ["", f"**All identical: {'yes' if same else 'NO'}.** The Ray build ran tasks on {ray_row['nodes_used']} "
              f"node(s) of a {ray_row['cluster_cpus']}-CPU cluster.", "",
              "## The builds", "",
              "| build | wall s | stages: wall s | save s | driver peak RSS MB (after build / after save) | "
              "driver peaks during the build, MB: anonymous / file-backed / shared memory |",
              "|---|---|---|---|---|---|"]
    for row in [local, ray_row] + ([staged] if staged else []):
        stages = ", ".join(f"{k} {v:.1f}" for k, v in row["stage_seconds"].items())
        label = row["mode"] + (f", vectors via {row['vectors_via']}" if "vectors_via" in row else "")
        peaks = row.get("build_peak_mb", {})
        lines.append(f"| {label} | {row['build_seconds']} | {stages} | {row['save_seconds']} | "
                     f"{row['peak_rss_build_mb']} / {row['peak_rss_mb']} | "
                     f"{' / '.join(str(peaks.get(k, '-')) for k in MemorySampler.FIELDS)} |")
    rows = [r for r in [local, ray_row, staged] if r and r.get("stage_peak_anon_mb")]
    if rows:
        lines += ["", "The driver's peak anonymous memory (RssAnon, MB) within each build step:", "",
                  "| build | " + " | ".join(STEPS) + " |", "|---|" + "---|" * len(STEPS)]
        for row in rows:
            label = row["mode"] + (f", {row['vectors_via']}" if "vectors_via" in row else "")
            lines.append(f"| {label} | " + " | ".join(str(row["stage_peak_anon_mb"].get(s, "-")) for s in STEPS) + " |")
    c = local["counts"]
    lines += ["", f"Index: {c['chunks']:,} chunks, {c['entities']:,} entities, {c['relations']:,} relations; vectors "
              + ", ".join(f"{k} {v:,}" for k, v in local["vectors"].items()) + ".", "",
              "## Per shard (the Ray build)", "",
              "Task seconds are each task's own wall and CPU time on its worker; \"maps\" is the wall time the driver "
              "waited for a step's sharded operations (task start-up, shipping shards and results, the tasks); "
              "\"overhead\" is that wait less the tasks' wall time run side by side on the cluster's CPUs (worker start-up, "
              "shipping shards and results, a core shared with neighbours); "
              "\"driver\" is the rest of the step's stage time, spent on the driver.", "",
              "| step | tasks | items | task wall s (sum / max) | task CPU s | CPU ms per 1,000 items | maps wall s "
              "(overhead) | driver s | worker peak RSS MB |", "|---|---|---|---|---|---|---|---|---|"]
    for step, f in figures.items():
        per = f["cpu_ms_per_1000_items"]
        lines.append(f"| {step} | {f['tasks']} | {f['items']:,} | {f['task_seconds']} / {f['max_task_seconds']} | "
                     f"{f['task_cpu_seconds']} | {per if per is not None else '-'} | {f['map_wall_seconds']} "
                     f"({f['overhead_seconds']}) | {f['driver_seconds']} | {f['worker_peak_rss_mb'] or '-'} |")
    lines += ["", f"## {paper['nodes']} nodes, {paper['n']:,} passages (on paper)", "", result["paper_text"], "",
              "| step | sharded s (task CPU x N/n / nodes) | maps overhead s (x N/n) | driver s (x N/n) |",
              "|---|---|---|---|"]
    for step, s in paper["steps"].items():
        scale = f" (x (N/n)^{EXPONENT[step]})" if step in EXPONENT else ""
        lines.append(f"| {step} | {s['sharded_seconds']:,} | {s['overhead_seconds']:,} | {s['driver_seconds']:,}{scale} |")
    lines.append(f"| save | - | - | {paper['save_seconds']:,} |")
    lines += [f"| **total** | | | **{paper['total_seconds']:,} s = {paper['total_seconds'] / 3600:.1f} h** |", ""]
    if staged:
        lines += ["## Vectors written by the workers (staging folder) or returned through the object store", "",
                  staging_text(ray_row, staged, local), ""]
    return "\n".join(lines)


def paper_text(result: dict) -> str:
    paper, ray_row = result["carry"], result["ray"]
    n = ray_row["n"]
    sharded = sum(s["sharded_seconds"] for s in paper["steps"].values())
    overhead = sum(s["overhead_seconds"] for s in paper["steps"].values())
    driver = sum(s["driver_seconds"] for s in paper["steps"].values()) + paper["save_seconds"]
    total = max(sharded + overhead + driver, 1)
    return (f"Carried from this run's {n:,}-passage figures, not measured. The sharded work (chunking, n-gram counts, "
            f"entity scoring and linking, embedding) is each step's task CPU seconds times {paper['n'] / n:g}, divided "
            f"over {paper['nodes']} one-CPU nodes: about {sharded:,} s. The maps' overhead (shipping every shard from the "
            f"driver and every result back to it, which the driver serialises) is carried linearly: {overhead:,} s. "
            f"What stays on the driver does not shrink with nodes: merging the shards' output in chunk order, the global "
            f"vocabulary of names, the tables step (rows from the extractors' output), linking new names to older "
            f"chunks, synonym edges over all entities (Eq. 5; carried at its measured exponent {EXPONENT['synonyms']}), "
            f"the graph snapshot and BM25, and the save: about {driver:,} s. The driver's memory: it holds every "
            f"chunk, entity and fact row and every vector of the index until the save; its peak RSS here was "
            f"{ray_row['peak_rss_mb']:,} MB for {n:,} passages ({ray_row['rss_start_mb']:,} MB of it before the "
            f"corpus was read), so about {paper['driver_peak_rss_gb']:,} GB for {paper['n']:,} passages, far beyond "
            f"one machine. A 10M build on 10 nodes is therefore bound by its driver, not by its workers: the sharded "
            f"steps are {100 * sharded / total:.0f}% of the carried {total / 3600:.1f} h, and the rest, with all of the "
            f"memory, is the driver's until the workers write the tables themselves and the global steps "
            f"(vocabulary, synonyms, BM25 statistics) run as map/reduce over those shards.")


def staging_text(ray_row: dict, staged: dict, local: dict) -> str:
    a, b = ray_row.get("build_peak_mb", {}), staged.get("build_peak_mb", {})
    vectors = sum(local["vectors"].values())
    dim = local["embed_dim"]
    return (f"The same cluster built the corpus twice. With the object store, embedding tasks return float32 arrays, "
            f"which the driver receives and concatenates; with a staging folder (`ray_build(..., staging=DIR)`), "
            f"each task writes its shard as a `.npy` file and returns its name and row count, and the driver "
            f"memory-maps the shards and joins them into one file-backed matrix (`index/distributed_embed.py`). "
            f"Driver peak RSS (VmHWM) during the build: {ray_row['peak_rss_build_mb']:,} MB through the object store, "
            f"{staged['peak_rss_build_mb']:,} MB staged; peak anonymous memory {a.get('RssAnon', '-')} MB vs "
            f"{b.get('RssAnon', '-')} MB; peak file-backed {a.get('RssFile', '-')} vs {b.get('RssFile', '-')} MB; "
            f"peak shared memory (the object store's pages mapped into the driver) {a.get('RssShmem', '-')} vs "
            f"{b.get('RssShmem', '-')} MB. The index holds {vectors:,} vectors of {dim} float32 "
            f"({vectors * dim * 4 / 1e6:,.0f} MB).{_embed_step_text(local, ray_row)} What is still anonymous on the "
            f"driver either way: the build step "
            f"that embeds (`build.embed_texts`) copies the executor's rows into a new array in text order, and "
            f"`VectorTable.add` normalises them into its RAM block; the index's vectors live there until the save "
            f"writes them as segments.")


def _embed_step_text(local: dict, ray_row: dict) -> str:
    """Where the builds' anonymous peak is: how much the embed step adds over the step before it."""
    a, b = local.get("stage_peak_anon_mb", {}), ray_row.get("stage_peak_anon_mb", {})
    if not all(k in d for d in (a, b) for k in ("link", "embed")):
        return ""
    mib = sum(local["vectors"].values()) * local["embed_dim"] * 4 / 2**20  # RssAnon figures are MiB too
    return (f" Every build reaches its anonymous peak in the embed step, which adds {a['embed'] - a['link']:,} MB "
            f"(local) and {b['embed'] - b['link']:,} MB (Ray) over the step before it: {(a['embed'] - a['link']) / mib:.1f} "
            f"and {(b['embed'] - b['link']) / mib:.1f} times the vectors' {mib:,.0f} MiB.")


def machine() -> str:
    from llama_index_graphrag_suite.eval.bench import machine_description

    return machine_description()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="passages")
    ap.add_argument("--embed", default="hash")
    ap.add_argument("--entities", default="statistical", choices=("statistical", "ner", "both"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--object-store-mb", type=int, default=1500, help="each node's object store")
    ap.add_argument("--compare-staging", action="store_true",
                    help="build on the cluster twice: vectors back through Ray's object store, then written by the "
                         "workers into a staging folder and memory-mapped by the driver; compare the driver's memory")
    ap.add_argument("--results", default=str(RESULTS))
    ap.add_argument("--json", default=None, help="also write the result as JSON here")
    ap.add_argument("--no-report", action="store_true", help="do not write ray_scale.md/json into --results")
    ap.add_argument("--render-only", action="store_true", help="rewrite ray_scale.md from --results' ray_scale.json")
    ap.add_argument("--note", default="Shared machine: another engineer's jobs ran beside this one.")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--corpus", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--index", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--address", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--staging", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(build_child(args.corpus, args.child, args.address, args.index, args.embed, args.entities,
                                     args.staging)))
        return
    if args.render_only:
        result = json.loads((Path(args.results) / "ray_scale.json").read_text())
        result["paper_text"] = paper_text(result)
        (Path(args.results) / "ray_scale.md").write_text(render(result), encoding="utf-8")
        return
    sys.path.insert(0, str(HERE))
    import synth

    command = "python benchmarks/ray_scale.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    with tempfile.TemporaryDirectory(prefix="ray-scale-") as tmp:
        work = Path(tmp)
        corpus = synth.write(work / "corpus", args.n, seed=args.seed, questions=10)
        print(f"corpus: {args.n} passages; local build ...", flush=True)
        local = _run_child(args, "local", corpus, work / "local", env)
        print(f"local: {local['build_seconds']} s, peak RSS {local['peak_rss_mb']} MB; starting two Ray nodes ...", flush=True)
        cluster_env = {**env, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        with two_node_cluster(work, cluster_env, args.object_store_mb) as address:
            ray_row = _run_child(args, "ray", corpus, work / "ray", cluster_env, address)
            print(f"ray: {ray_row['build_seconds']} s, peak RSS {ray_row['peak_rss_mb']} MB", flush=True)
            staged = None
            if args.compare_staging:
                staged = _run_child(args, "ray", corpus, work / "ray-staged", cluster_env, address, str(work / "staging"))
                print(f"ray, staged vectors: {staged['build_seconds']} s, peak RSS {staged['peak_rss_mb']} MB", flush=True)
    different = sorted(k for row in ([ray_row] + ([staged] if staged else []))
                       for k in set(local["checksums"]) | set(row["checksums"])
                       if local["checksums"].get(k) != row["checksums"].get(k))
    figures = shard_figures(ray_row)
    result = {"command": command, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
              "note": args.note, "niceness": os.nice(0), "omp_threads": env["OMP_NUM_THREADS"], "embed": args.embed, "entities": args.entities, "identical": not different,
              "different": different, "local": local, "ray": ray_row, "figures": figures,
              "carry": carry(figures, ray_row, args.n, 10_000_000, 10)}
    if staged:
        result["ray_staged"] = staged
    result["paper_text"] = paper_text(result)
    print(json.dumps({"identical": result["identical"], "different": different,
                      "tables": sorted(local["checksums"])}), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    if not args.no_report:
        results = Path(args.results)
        results.mkdir(parents=True, exist_ok=True)
        slim = {k: v for k, v in result.items()}
        for key in ("ray", "ray_staged"):  # the task logs are long; the figures summarise them
            if key in slim:
                slim[key] = {k: v for k, v in slim[key].items() if k != "tasks"}
        (results / "ray_scale.json").write_text(json.dumps(slim, indent=1) + "\n", encoding="utf-8")
        (results / "ray_scale.md").write_text(render(result), encoding="utf-8")
        print(f"wrote {results / 'ray_scale.md'}", flush=True)
    if different:
        sys.exit(f"the Ray build differs from the local build in: {', '.join(different)}")


if __name__ == "__main__":
    main()
