"""benchmarks/scale.py, the harness of `make bench-scale`, end to end on a tiny synthetic corpus."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_scale_runs_a_size_and_reports_the_insert_and_the_save_after_it(tmp_path):
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--sizes", "300", "--embed", "hash",
                          "--entities", "statistical", "--methods", "bm25,archrag", "--questions", "10",
                          "--results", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    (run,) = json.loads((tmp_path / "scale.json").read_text())
    (row,) = run["rows"]
    assert row["n"] == 300 and row["insert_docs"] == 30 and row["insert_segments_written"] > 0
    assert 0 < row["insert_written_mb"] < row["disk_before_insert_mb"]  # a save writes what changed
    assert "prepare.archrag" in row["stage_seconds"]  # the hierarchy is a build step, and again after the insert
    assert row["insert_prepare_seconds"] > 0
    report = (tmp_path / "scale.md").read_text()
    assert "Insert into the loaded index" in report and "| 300 | 30 |" in report and "prepare again s" in report


def test_load_memory_reports_the_load_and_each_method(tmp_path):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import synth

    docs = tmp_path / "corpus.jsonl"
    with open(docs, "w", encoding="utf-8") as f:
        for p in synth.Synth(200, seed=0).passages():
            f.write(json.dumps(p) + "\n")
    (tmp_path / "q.jsonl").write_text(json.dumps({"question": "Where was the founder born?"}) + "\n")
    built = subprocess.run([sys.executable, "-m", "llama_index_graphrag_suite.cli", "index", str(docs), "--out",
                            str(tmp_path / "idx"), "--embed", "hash", "--entities", "statistical", "--quiet"],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "load_memory.py"), "--index", str(tmp_path / "idx"),
                          "--questions", str(tmp_path / "q.jsonl"), "--methods", "bm25,pathrag"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[1].startswith("loaded in ") and "VmHWM" in lines[1]
    assert [line.split()[0] for line in lines[2:]] == ["bm25", "pathrag"]


def test_scale_requery_loads_before_and_after_the_insert_and_serves_the_kept_index(tmp_path):
    keep, results = tmp_path / "keep", tmp_path / "results"
    common = ["--sizes", "300", "--embed", "hash", "--entities", "statistical", "--methods", "bm25,hybrid",
              "--questions", "6", "--keep", str(keep), "--results", str(results), "--no-prepare-again"]
    built = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), *common],
                           capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    again = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "scale.py"), *common, "--requery", "--serve", "4"],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    (run,) = json.loads((results / "scale.json").read_text())
    (row,) = run["rows"]
    # the kept index's current version is the bench's insert: the requery loads the build's version, then that one
    assert row["load_seconds"] > 0 and row["reload_seconds"] > 0 and "requery" in run
    served = row["serve"]
    assert served["questions"] == 4 and set(served["methods"]) == {"bm25", "hybrid"}
    assert served["after_mb"]["VmRSS"] > served["loaded_mb"]["VmRSS"] * 0.5 > 0
    assert "Served at 300 (`graphrag-suite serve`, 4 questions" in (results / "scale.md").read_text()
    assert "; every column measured again on the kept indexes" in (results / "scale.md").read_text()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scale

    small = {"n": 100, "index_seconds": 1.0, "methods": {}}
    for rss, verdict in ((5000, "met"), (7000, "**not met**")):
        top = {"n": 1_000_000, "index_seconds": 9.0, "methods": {},
               "serve": {**served, "after_mb": {**served["after_mb"], "VmRSS": rss}}}
        (line,) = [ln for ln in scale.targets([small, top]) if ln.startswith("| serving process")]
        assert line.startswith("| serving process ≤ 6 GB RSS after 4 questions | ") and line.endswith(f"| {verdict} |")


def test_a_requery_of_some_sizes_names_the_columns_it_measured_again():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scale

    rows = [{"n": n} for n in (10_000, 100_000, 1_000_000)]
    assert scale._requeried({"sizes": [1_000_000]}, rows) == "the 1,000,000-passage column"
    assert scale._requeried({"sizes": [10_000, 1_000_000]}, rows) == "the 10,000, 1,000,000-passage columns"
    assert scale._requeried({"command": "python benchmarks/scale.py --sizes 100000 --requery"}, rows) == \
        "the 100,000-passage column"
    assert scale._requeried({"sizes": [10_000, 100_000, 1_000_000]}, rows) == "every column"


def test_drift_corrected_cpu_scales_each_batch_to_one_machine_speed():
    """A size built while the machine ran at half speed (its yardstick twice as long, its CPU twice the work) counts
    the work, not the machine: the corrected ratio of two sizes is the ratio of their work."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import scale

    small = {"n": 1_000, "yardstick_s": [1.0, 1.0, 1.0], "batches": [{"cpu_seconds": 5.0}],
             "after_batches_cpu_seconds": 0.0}
    large = {"n": 10_000, "yardstick_s": [2.0, 2.0, 2.0, 2.0], "batches": [{"cpu_seconds": 100.0}] * 2,
             "after_batches_cpu_seconds": 0.0}  # 100 units of work, each costing twice as much CPU
    corrected = scale.drift_corrected([small, large])
    assert corrected[10_000] / corrected[1_000] == 20.0  # raw: 200 / 5 = 40
    assert round(scale.slope([small, large], lambda r: corrected[r["n"]]), 3) == 1.301
    assert scale.drift_corrected([small, {**large, "yardstick_s": [2.0, 2.0]}]) is None  # a mark missing
    assert scale.drift_corrected([{k: v for k, v in small.items() if k != "yardstick_s"}, large]) is None
    assert 0 < scale._yardstick() < 5
