"""A2RAG retriever benchmark, LLM-free: latency, stage breakdown (paper Fig. 4), robustness to extraction
loss (paper Fig. 5) and the gate's score distributions (how tau_g was chosen). Prints Markdown.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/a2rag_bench.py \\
        --index-dir /tmp/dev/2wiki_retrieval101 --questions /work/shared/datasets/2wiki_retrieval101

* Latency: median and p95 of ``retrieve`` per query, (a) with the query embedding (query cache cleared
  before every query) and (b) without it (every query embedded once beforehand). Other processes on the
  machine make these noisy; the median is the number to read.
* Stages: share of queries whose retrieval ended at local / bridge / global.
* Extraction loss: a random ``p`` share of entity nodes (seeded) is deleted with their edges from a
  read-only view of the index (``GraphRAGIndex.view``: the index is never changed); recall@5 of A2RAG and of
  the dense baseline (which reads no graph, so it must not move) at each ``p``.
* Gate: ``gate_score`` of the dataset's questions (in scope by construction) and of clearly
  out-of-scope queries (below), with the accuracy of each candidate tau_g.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import Counter

import numpy as np

OUT_OF_SCOPE = [
    "How do I bake sourdough bread at home?",
    "What is the best way to learn Python decorators?",
    "How many calories are in a banana?",
    "What is the derivative of x squared times sine of x?",
    "How do I reset my wifi router password?",
    "What are good exercises for lower back pain?",
    "How do I change a flat tyre on a bicycle?",
    "Which programming language is faster, Rust or Go?",
    "What is the weather forecast for tomorrow?",
    "How long should I boil an egg for a soft yolk?",
    "How do I configure nginx as a reverse proxy?",
    "What is the capital gains tax rate on crypto trading?",
    "How do I remove red wine stains from a carpet?",
    "What is a good name for a golden retriever puppy?",
    "How do I solve a quadratic equation?",
    "What causes the northern lights?",
    "How can I improve my credit score quickly?",
    "What is the difference between TCP and UDP?",
    "How often should I water a cactus?",
    "How do I write a cover letter for a software job?",
    "What is the recipe for vegan chocolate chip cookies?",
    "How do I install CUDA drivers on Ubuntu?",
    "What is the boiling point of water at high altitude?",
    "How do I train for a half marathon in eight weeks?",
    "What does a kubernetes pod disruption budget do?",
    "How do I fold a fitted sheet?",
    "What is compound interest and how is it calculated?",
    "How do I unclog a kitchen sink without chemicals?",
    "Which houseplants are safe for cats?",
    "How do I merge two branches in git without conflicts?",
]


def deleted_view(index, share: float, seed: int):
    """A read-only view of ``index`` whose graph lost ``share`` of its entity nodes (and their edges).

    Node rows are kept (a deleted entity stays as an isolated row, so every array stays aligned); its
    edges go, its entity record goes (so neither seeding nor the map-back π can find it). Chunks,
    vectors and BM25 are the index's own (``GraphRAGIndex.view``); the view has its own artefact memo, and
    the index is never changed.
    """
    from llama_index_graphrag_suite.graph.snapshot import GraphSnapshot

    if share <= 0:
        return index.view()
    keys = list(index.entities)
    rng = np.random.default_rng(seed)
    gone = set(rng.choice(len(keys), size=int(round(share * len(keys))), replace=False).tolist())
    snap = index.snapshot
    gone_rows = np.zeros(snap.num_nodes, bool)
    gone_rows[[snap.row(keys[i]) for i in gone]] = True
    keep = ~(gone_rows[snap.edge_src] | gone_rows[snap.edge_dst])
    pruned = GraphSnapshot(snap.node_ids, snap.node_kind, snap.edge_src[keep], snap.edge_dst[keep],
                           snap.edge_kind[keep], snap.edge_fact[keep], snap.edge_weight[keep])
    return index.view(snapshot=pruned, entities={k: e for i, (k, e) in enumerate(index.entities.items()) if i not in gone})


def recall_at(nodes, gold: set[str], k: int = 5) -> float:
    docs = [n.node.metadata["doc_id"] for n in nodes if n.node.metadata.get("kind") == "chunk"][:k]
    return len(gold & set(docs)) / len(gold) if gold else 0.0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index-dir", required=True)
    parser.add_argument("--questions", required=True, help="dataset folder (questions.jsonl) or the file")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--deletions", default="0,0.1,0.2,0.4")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import logging

    logging.disable(logging.WARNING)
    from llama_index_graphrag_suite import GraphRAGIndex
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.methods.a2rag import A2RAGConfig, A2RAGRetriever
    from llama_index_graphrag_suite.methods.baselines import DenseRetriever

    qpath = args.questions if os.path.isdir(args.questions) else os.path.dirname(args.questions)
    dataset = load_dataset(qpath, args.limit)
    questions = [q.question for q in dataset.questions]
    index = GraphRAGIndex.load(args.index_dir, show_progress=False)
    retriever = A2RAGRetriever(index, top_k=5)
    retriever.retrieve(questions[0])  # builds the cached per-snapshot structures, untimed
    out = ["# A2RAG retriever benchmark (LLM-free)\n",
           f"Index `{args.index_dir}`, {len(questions)} questions from `{qpath}`, config defaults "
           f"({A2RAGConfig().model_dump_json()}).\n"]

    # ---------------------------------------------------------------- latency
    with_embed, stages, traces = [], Counter(), []
    for q in questions:
        index.clear_query_cache()
        t = time.perf_counter()
        _, trace = retriever.retrieve_with_trace(q)
        with_embed.append((time.perf_counter() - t) * 1000)
        stages[trace["stage_reached"]] += 1
        traces.append(trace)
    without_embed = []
    for q in questions:
        index.embed_query(q)
        t = time.perf_counter()
        retriever.retrieve(q)
        without_embed.append((time.perf_counter() - t) * 1000)
    out.append("## Latency per query (ms; noisy when other processes share the CPU)\n")
    out.append("| measured | median | p95 |\n|---|---|---|")
    for name, xs in (("with query embedding", with_embed), ("without query embedding", without_embed)):
        out.append(f"| {name} | {statistics.median(xs):.1f} | {np.percentile(xs, 95):.1f} |")
    stage_ms = {s: [] for s in ("local", "bridge", "global")}
    for tr in traces:
        for stage, ms in tr["timings_ms"].items():
            if stage in stage_ms:
                stage_ms[stage].append(ms)
    out.append("\nMedian time inside each stage when it ran (ms): "
               + ", ".join(f"{s} {statistics.median(v):.1f} ({len(v)} runs)" for s, v in stage_ms.items() if v) + "\n")

    # ---------------------------------------------------------------- stages
    n = len(questions)
    out.append("## Where retrieval stopped (paper Fig. 4)\n")
    out.append("| stage | queries | share |\n|---|---|---|")
    for s in ("local", "bridge", "global"):
        out.append(f"| {s} | {stages[s]} | {100 * stages[s] / n:.1f}% |")
    seeds = [len(t["seeds"]) for t in traces]
    out.append(f"\nSeeds per query: mean {np.mean(seeds):.2f}; queries with no seed: {sum(s == 0 for s in seeds)}.\n")

    # ---------------------------------------------------------------- extraction loss
    out.append("## Robustness to extraction loss (paper Fig. 5): recall@5 (%)\n")
    out.append(f"Entity nodes deleted at random (numpy seed {args.seed}) with their edges, in a read-only view of the index.\n")
    out.append("| entity nodes deleted | A2RAG | dense | A2RAG stages (local/bridge/global) |\n|---|---|---|---|")
    for share in (float(x) for x in args.deletions.split(",")):
        view = deleted_view(index, share, args.seed)
        a2, dense = A2RAGRetriever(view, top_k=5), DenseRetriever(view, top_k=5)
        r_a, r_d, st = [], [], Counter()
        for q in dataset.questions:
            nodes, trace = a2.retrieve_with_trace(q.question)
            st[trace["stage_reached"]] += 1
            r_a.append(recall_at(nodes, set(q.supporting_ids)))
            r_d.append(recall_at(dense.retrieve(q.question), set(q.supporting_ids)))
        out.append(f"| {share:.0%} | {100 * np.mean(r_a):.1f} | {100 * np.mean(r_d):.1f} | "
                   f"{st['local']}/{st['bridge']}/{st['global']} |")

    # ---------------------------------------------------------------- gate
    inside = np.array([retriever.gate_score(q) for q in questions])
    outside = np.array([retriever.gate_score(q) for q in OUT_OF_SCOPE])
    out.append("\n## Gate scores (Eq. 1: max_j clip(cos(q, s_j), 0, 1), extractive summaries)\n")
    out.append("| queries | n | min | 5th pct | median | max |\n|---|---|---|---|---|---|")
    for name, xs in (("dataset questions (in scope)", inside), ("out-of-scope queries", outside)):
        out.append(f"| {name} | {xs.size} | {xs.min():.3f} | {np.percentile(xs, 5):.3f} | {np.median(xs):.3f} | {xs.max():.3f} |")
    out.append("\n| tau_g | in-scope kept | out-of-scope abstained |\n|---|---|---|")
    for tau in (0.25, 0.3, 0.35, 0.4, 0.45, 0.5):
        out.append(f"| {tau:.2f} | {100 * np.mean(inside >= tau):.1f}% | {100 * np.mean(outside < tau):.1f}% |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
