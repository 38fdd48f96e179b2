#!/usr/bin/env bash
# Regenerates every number in BENCHMARKS.md. DATASETS defaults to ../shared/datasets.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATASETS:-../shared/datasets}
OUT=benchmarks/results
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1
for ds in 2wiki_retrieval101 hotpotqa_train100 musique_train100; do
  .venv/bin/graphrag-suite bench --dataset "$DATA/$ds" --methods all --out "$OUT/$ds.json" --quiet
done
.venv/bin/python benchmarks/scaling.py --data "$DATA" --out "$OUT/scaling"
.venv/bin/python benchmarks/report.py --results "$OUT" --out BENCHMARKS.md
