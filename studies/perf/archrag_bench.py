"""ArchRAG benchmark: hierarchy build time (LLM-free), communities per layer, hierarchical search latency,
community quality with vs without KNN augmentation. Recall of every chunk ranking: ``archrag_signal.py``.

    .venv/bin/python benchmarks/archrag_bench.py --index-dir /tmp/dev/2wiki_retrieval101 \
        --dataset /work/shared/datasets/2wiki_retrieval101 [--out results.md]

Targets (the ArchRAG work's): build (communities + summaries + C-HNSW) <= 5 min; hierarchical search median <= 10 ms
per query, measured after every query has been embedded (query embedding excluded).
Community quality (paper Appendix B.1): Calinski-Harabasz index and mean member-to-centroid cosine of the
layer-1 communities (features: entity attribute vectors; clusters of one left out of the cosine), for
weighted Leiden on the KNN-augmented graph and on the KG edges alone (same cosine weights).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit  # noqa: E402
from llama_index_graphrag_suite.eval.datasets import load_dataset  # noqa: E402
from llama_index_graphrag_suite.graph.communities import (  # noqa: E402
    build_hierarchy, calinski_harabasz, member_centroid_cosine)
from llama_index_graphrag_suite.graph.snapshot import RELATION  # noqa: E402
from llama_index_graphrag_suite.index import GraphRAGIndex  # noqa: E402
from llama_index_graphrag_suite.methods.archrag import (  # noqa: E402
    ArchRAGConfig, ArchRAGHierarchy, ArchRAGRetriever)


def _ms(values: list[float]) -> str:
    values = sorted(values)
    return f"{statistics.median(values):.2f} / {values[int(0.9 * (len(values) - 1))]:.2f}"


def quality_rows(index, hierarchy: ArchRAGHierarchy, config: ArchRAGConfig) -> list[tuple[str, str, str, str, str]]:
    features = hierarchy.entity_vectors
    snap = index.snapshot
    rel = snap.edge_kind == RELATION
    rows = []
    labels_knn = hierarchy.memberships[0]
    t0 = time.perf_counter()
    params = config.hierarchy_params()
    params.augment, params.max_layers = False, 1
    plain = build_hierarchy(features, snap.edge_src[rel], snap.edge_dst[rel], params)
    plain_seconds = time.perf_counter() - t0
    for name, labels, seconds in (("weighted Leiden + KNN", labels_knn, hierarchy.cost["seconds"].get("clustering_and_summaries")),
                                  ("weighted Leiden, no KNN", plain[0].membership if plain else None, plain_seconds)):
        if labels is None:
            rows.append((name, "-", "-", "-", "-"))
            continue
        sizes = np.bincount(labels)
        rows.append((name, str(int(sizes.size)), f"{(sizes == 1).sum()}",
                     f"{calinski_harabasz(features, labels):.2f}", f"{member_centroid_cosine(features, labels):.4f}"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--index-dir", default="/tmp/dev/2wiki_retrieval101")
    ap.add_argument("--dataset", default="/work/shared/datasets/2wiki_retrieval101")
    ap.add_argument("--community-vector", default="auto", choices=("auto", "summary", "centroid"))
    ap.add_argument("--out", help="write the markdown here too")
    args = ap.parse_args()

    t0 = time.perf_counter()
    index = GraphRAGIndex.load(args.index_dir, show_progress=False)
    load_seconds = time.perf_counter() - t0
    dataset = load_dataset(args.dataset)
    config = ArchRAGConfig(community_vector=args.community_vector)

    t0 = time.perf_counter()
    hierarchy = ArchRAGHierarchy.build(index, config)
    build_seconds = time.perf_counter() - t0
    cost = hierarchy.cost

    questions = [q.question for q in dataset.questions]
    vectors = [index.embed_query(q) for q in questions]  # embed first: latency excludes the query embedding
    retriever = ArchRAGRetriever(index, hierarchy=hierarchy)
    retriever.retrieve(questions[0])  # warm-up (chunk maps, caches)
    search_ms, retrieve_ms, exact_ms = [], [], []
    all_vectors = [hierarchy.entity_vectors] + hierarchy.community_vectors
    for question, q in zip(questions, vectors):
        t = time.perf_counter()
        retriever.search(q)
        search_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        retriever.retrieve(question)  # query embedding is cached: this is search + mapping + nodes
        retrieve_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        for layer in all_vectors:  # exact search over every node, for comparison
            sims = layer @ q
            np.argpartition(-sims, min(5, sims.size - 1))[:5]
        exact_ms.append((time.perf_counter() - t) * 1000)

    lines = [f"## ArchRAG on `{args.index_dir}` (LLM-free, community vectors: {args.community_vector})", "",
             f"Index load {load_seconds:.1f} s (not counted). Timings on a shared 2-core machine: noisy.", "",
             "| step | value |", "|---|---|",
             f"| entities | {cost['entities']} |",
             f"| communities per layer | {cost['communities_per_layer']} |",
             f"| KNN edges added per layer | {cost['knn_edges_per_layer']} |",
             f"| KNN threshold per layer | {cost['knn_threshold_per_layer']} |"]
    lines += [f"| seconds: {k} | {v:.1f} |" for k, v in cost["seconds"].items()]
    lines += [f"| build total (target <= 300 s) | {build_seconds:.1f} |",
              f"| summary LLM calls / tokens | {cost['summary_llm_calls']} / "
              f"{cost['summary_prompt_tokens'] + cost['summary_completion_tokens']} |",
              f"| C-HNSW search, all {hierarchy.num_layers} layers, k=5: median / p90 ms (target median <= 10) | {_ms(search_ms)} |",
              f"| full retrieve without query embedding: median / p90 ms | {_ms(retrieve_ms)} |",
              f"| exact search over all nodes (numpy): median / p90 ms | {_ms(exact_ms)} |",
              f"| queries | {len(questions)} |", "",
              "### Community quality, layer 1 (Appendix B.1)", "",
              "| clustering | communities | singletons | Calinski-Harabasz | member-centroid cosine |",
              "|---|---|---|---|---|"]
    lines += ["| " + " | ".join(row) + " |" for row in quality_rows(index, hierarchy, config)]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
