#!/usr/bin/env bash
# `make bench`: regenerates every number in BENCHMARKS.md. DATASETS defaults to ../shared/datasets.
# Finished studies (studies/) are not run here: each says how it was run, at which commit.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATASETS:-../shared/datasets}
OUT=benchmarks/results
mkdir -p "$OUT"
rm -f "$OUT/micro_runs.json"  # which micro-benchmark a later commit re-ran alone: a full run supersedes it
# built fresh below (reused by the latency, the tuning tables and the top_k check), never committed
rm -rf "$OUT/index-2wiki" "$OUT/index-hotpot" "$OUT/index-musique" "$OUT/index-sherlock" "$OUT/index-books"
export HF_HUB_OFFLINE=1
# the five shared sets: Wikipedia multi-hop and two domains (clinical guidelines, biomedical articles); every
# graph method runs with its defaults (the hybrid guard on) and as its paper variant (":paper", guard off; A2RAG's
# also without our anchors, and ":unguarded", A2RAG's own ranking with only the guard off)
PAPER=hipporag:paper,agrag:paper,pathrag:paper,archrag:paper,a2rag:paper,a2rag:unguarded
for ds in 2wiki_retrieval101 hotpotqa_train100 musique_train100 graphrag_bench_medical covidqa_dev; do
  keep=()
  [ "$ds" = 2wiki_retrieval101 ] && keep=(--index-dir "$OUT/index-2wiki")
  [ "$ds" = hotpotqa_train100 ] && keep=(--index-dir "$OUT/index-hotpot")
  [ "$ds" = musique_train100 ] && keep=(--index-dir "$OUT/index-musique")
  .venv/bin/graphrag-suite bench --dataset "$DATA/$ds" --methods all,$PAPER,agrag:no_mcmi,agrag:no_filter,agrag:hybrid_only,pathrag:paths_only,archrag:no_knn,archrag:best_item,a2rag:no_global,a2rag:global_only \
    --out "$OUT/$ds.json" --quiet "${keep[@]}"
  # the same methods on AGRAG's statistical graph (the paper-faithful extractor), side by side in the report
  .venv/bin/graphrag-suite bench --dataset "$DATA/$ds" --methods all --entities statistical \
    --out "$OUT/$ds-statistical.json" --quiet
done
# a novel no tuning reads (benchmarks/datasets/sherlock_holmes_check/README.md): how the defaults carry to narrative text
.venv/bin/graphrag-suite bench --dataset benchmarks/datasets/sherlock_holmes_check --methods all,$PAPER \
  --out "$OUT/sherlock_holmes_check.json" --quiet --index-dir "$OUT/index-sherlock"
# the same novel among three more books (benchmarks/datasets/four_books_check/README.md), 180 questions
.venv/bin/graphrag-suite bench --dataset benchmarks/datasets/four_books_check --methods all,$PAPER \
  --out "$OUT/four_books_check.json" --quiet --index-dir "$OUT/index-books"
# the guard at top_k 2, 3 and 5 through retrieve() on the books, which no tuning read
.venv/bin/python benchmarks/top_k_check.py --dataset benchmarks/datasets/sherlock_holmes_check \
  --index-dir "$OUT/index-sherlock" --ks 2,3,5 > "$OUT/top_k_books.md"
.venv/bin/python benchmarks/top_k_check.py --dataset benchmarks/datasets/four_books_check \
  --index-dir "$OUT/index-books" --ks 2,3,5 >> "$OUT/top_k_books.md"
rm -rf "$OUT/index-sherlock" "$OUT/index-books"
# The methods' tuning scripts (still in benchmarks/ while the methods use them): the hybrid guard's defaults by
# leave-one-dataset-out over the five sets (in-sample and left-out columns, entity counts and the most linked entities
# per set); indexes in a scratch folder, not committed
.venv/bin/python benchmarks/domain_tuning.py build rank check tune --datasets "$DATA" --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" \
  --out "$OUT/domain_tuning.json"
# other graph signals re-ranking hybrid's top 20 on the two domain sets, on the indexes and rankings just made
.venv/bin/python benchmarks/rerank_probes.py --datasets "$DATA" --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" \
  --tag default > "$OUT/rerank_probes.md"
# the order in which the guard lists the chunks its fusion chose (A2RAG's own order from half the weight)
.venv/bin/python benchmarks/guard_order.py --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" --tag default \
  > "$OUT/guard_order.md"
# how often the chunk a graph method would bring into hybrid's top 5 is gold, against hybrid's own 4th and 5th
.venv/bin/python benchmarks/graph_headroom.py --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" --tag default \
  > "$OUT/graph_headroom.md"
# a text signal instead: a chunk's best sentence against the question (what it would lift, and its embedding cost)
.venv/bin/python benchmarks/sentence_probe.py --datasets "$DATA" --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" \
  --tag default > "$OUT/sentence_probe.md"
# whether the guard keeps every method at or above hybrid at top_k 2, 3 and 10 too (A2RAG ranked at each)
.venv/bin/python benchmarks/domain_tuning.py rank --datasets "$DATA" --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" \
  --methods a2rag@2,a2rag@3,a2rag@10
.venv/bin/python benchmarks/guard_top_k.py --work "${TMPDIR:-/tmp}/graphrag-domain-tuning" --tag default \
  > "$OUT/guard_top_k.md"
.venv/bin/python benchmarks/name_density_sample.py --datasets "$DATA" > "$OUT/name_density_sample.md"
# retrieval without the embedding model, one BLAS thread as serve runs; then with PathRAG's key phrases timed, and
# with OpenBLAS's default threads
.venv/bin/python benchmarks/latency.py --index-dir "$OUT/index-2wiki" --questions "$DATA/2wiki_retrieval101/questions.jsonl" \
  > "$OUT/latency_2wiki.txt"
.venv/bin/python benchmarks/latency.py --index-dir "$OUT/index-2wiki" --questions "$DATA/2wiki_retrieval101/questions.jsonl" \
  --methods pathrag --phrases timed >> "$OUT/latency_2wiki.txt"
.venv/bin/python benchmarks/latency.py --index-dir "$OUT/index-2wiki" --questions "$DATA/2wiki_retrieval101/questions.jsonl" \
  --blas-threads default >> "$OUT/latency_2wiki.txt"
.venv/bin/python benchmarks/guard_latency.py --index-dir "$OUT/index-2wiki" --questions "$DATA/2wiki_retrieval101/questions.jsonl" \
  > "$OUT/guard_latency.md"
.venv/bin/python benchmarks/archrag_signal.py --index-dir "$OUT/index-2wiki" --dataset "$DATA/2wiki_retrieval101" > "$OUT/archrag_signal.txt"
.venv/bin/python benchmarks/archrag_signal.py --index-dir "$OUT/index-musique" --dataset "$DATA/musique_train100" >> "$OUT/archrag_signal.txt"
.venv/bin/python benchmarks/tuning.py --index-dir "$OUT/index-2wiki" --dataset "$DATA/2wiki_retrieval101" > "$OUT/tuning.txt"
.venv/bin/python benchmarks/tuning.py --index-dir "$OUT/index-hotpot" --dataset "$DATA/hotpotqa_train100" >> "$OUT/tuning.txt"
.venv/bin/python benchmarks/tuning.py --index-dir "$OUT/index-musique" --dataset "$DATA/musique_train100" >> "$OUT/tuning.txt"
# PathRAG's and ArchRAG's sweeps on the two domain sets too (domain_tuning.py's indexes), and whether their
# two-parameter defaults would survive leave-one-dataset-out over the five
for ds in graphrag_bench_medical covidqa_dev; do
  .venv/bin/python benchmarks/tuning.py --methods pathrag,archrag --index-dir "${TMPDIR:-/tmp}/graphrag-domain-tuning/default/$ds/index" \
    --dataset "$DATA/$ds" >> "$OUT/tuning.txt"
done
.venv/bin/python benchmarks/sweep_lodo.py --tables "$OUT/tuning.txt" --method pathrag --params sparse_weight,path_weight \
  --default "sparse_weight 0.25, path_weight 0.2" > "$OUT/pathrag_lodo.md"
.venv/bin/python benchmarks/sweep_lodo.py --tables "$OUT/tuning.txt" --method archrag --params sparse_weight,item_weight \
  --default "sparse_weight 0.25, item_weight 0.2" > "$OUT/archrag_lodo.md"
rm -rf "$OUT/index-2wiki" "$OUT/index-hotpot" "$OUT/index-musique"
# the synthetic curve toward a million passages (about 25 min), then a served index's memory on its 100k index
SCALE_KEEP="$(mktemp -d)"
.venv/bin/python benchmarks/scale.py --sizes 10000,30000,100000 --max-size 100000 --embed hash --entities statistical \
  --keep "$SCALE_KEEP"
rm -f benchmarks/results/serve_memory.md
.venv/bin/python benchmarks/serve_memory.py --index "$SCALE_KEEP/index-100000" \
  --questions "$SCALE_KEEP/synth-100000/questions.jsonl" --embed hash --out benchmarks/results/serve_memory.md
rm -rf "$SCALE_KEEP"
# the quick MiniLM curve goes beside the committed 10k/100k one (make bench-scale SIZES=10000,100000 ARGS=...,
# about an hour: benchmarks/results/scale.md), which it would otherwise replace
.venv/bin/python benchmarks/scale.py --sizes 1000,3000,10000 --results "$OUT/scale-quick"
.venv/bin/python benchmarks/report.py --results "$OUT" --out BENCHMARKS.md
