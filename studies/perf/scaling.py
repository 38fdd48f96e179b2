"""Index time, peak memory and query latency as the corpus grows.

    python benchmarks/scaling.py --data ../shared/datasets --out benchmarks/results/scaling

Runs `graphrag-suite bench --methods all` in a fresh process (so peak memory is per run) on the first
1,000 / 3,000 / all 6,119 passages of 2wiki_retrieval101 (keeping the questions whose gold passages
are all inside the subset) and on graphrag_bench_medical, writing one JSON report per run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIZES = (1000, 3000, 6119)


def subset(src: Path, n: int, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    lines = (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:n]
    ids = {json.loads(line)["id"] for line in lines}
    (dst / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    kept = [q for q in (src / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if q.strip() and set(json.loads(q)["supporting_ids"]) <= ids]
    (dst / "questions.jsonl").write_text("\n".join(kept) + "\n", encoding="utf-8")


def bench(dataset: Path, out: Path, limit: int) -> None:
    cmd = [sys.executable, "-m", "llama_index_graphrag_suite.cli", "bench", "--dataset", str(dataset),
           "--methods", "all", "--out", str(out), "--quiet"]
    if limit:
        cmd += ["--limit", str(limit)]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="../shared/datasets")
    parser.add_argument("--out", default="benchmarks/results/scaling")
    parser.add_argument("--medical-limit", type=int, default=300, help="questions of the medical set to time")
    args = parser.parse_args()
    data, out = Path(args.data), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="scaling-"))
    try:
        for n in SIZES:
            ds = tmp / f"2wiki_first{n}"
            subset(data / "2wiki_retrieval101", n, ds)
            bench(ds, out / f"2wiki_first{n}.json", 0)
        bench(data / "graphrag_bench_medical", out / "graphrag_bench_medical.json", args.medical_limit)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
