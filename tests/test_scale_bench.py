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
