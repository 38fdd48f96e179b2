"""Where ArchRAG's LLM-free chunk recall comes from: what its retrieved items reach, and every chunk ranking
measured against dense retrieval on the same index.

    .venv/bin/python benchmarks/archrag_signal.py --index-dir /tmp/dev/2wiki_retrieval101 \
        --dataset /work/shared/datasets/2wiki_retrieval101 [--out results.md]

Three tables, on one index and its LLM-free hierarchy (the index artefact, default ArchRAGConfig):

1. **Recall** through the official bench loop (``eval.bench.run_method``, top 5 chunks) for dense and for each
   ArchRAG chunk ranking: ``dense_boost`` (the default), ``best_item``, and ``ppr_refine`` (the authors'
   option: PageRank personalised on the retrieved items) with 0 or 3 vanilla chunks in the restart at
   several restart shares. The row with share 1.0 restarts from the 3 chunks alone and ignores ArchRAG's
   items: it is the control that tells whether the items add anything.
2. **Reach of the items, per layer**: of the gold passages, the share that lie among the chunks of the
   top-5 items of that layer, and how many chunks those 5 items span, beside dense's top 5 chunks.
3. **The gold passages dense misses** (not in its top 5): how many the items reach, per kind of item, and
   the median number of chunks of the smallest item that reaches one (the haystack it sits in).
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import emit, index_and_dataset_args, recall_cells  # noqa: E402
from llama_index_graphrag_suite.eval.bench import run_method  # noqa: E402
from llama_index_graphrag_suite.eval.datasets import load_dataset  # noqa: E402
from llama_index_graphrag_suite.index import GraphRAGIndex  # noqa: E402
from llama_index_graphrag_suite.methods.archrag import ArchRAGRetriever  # noqa: E402
from llama_index_graphrag_suite.registry import resolve_method  # noqa: E402

RANKINGS = [  # (label, ArchRAG settings: config overrides of the search, so every row shares one hierarchy)
    ("dense_boost (default: blend with BM25 weight 0.25, item weight 0.2)", {}),
    ("control: the same blend without items (item_weight 0)", {"item_weight": 0.0}),
    ("dense_boost on dense alone (sparse_weight 0)", {"sparse_weight": 0.0}),
    ("best_item (the items alone)", {"chunk_ranking": "best_item"}),
    ("ppr_refine, items only", {"chunk_ranking": "ppr_refine"}),
    ("ppr_refine, items + 3 chunks, share 0.5", {"chunk_ranking": "ppr_refine", "chunk_top_k": 3, "chunk_share": 0.5}),
    ("ppr_refine, items + 3 chunks, share 0.9", {"chunk_ranking": "ppr_refine", "chunk_top_k": 3, "chunk_share": 0.9}),
    ("control: ppr from the 3 chunks alone (share 1.0)", {"chunk_ranking": "ppr_refine", "chunk_top_k": 3, "chunk_share": 1.0}),
]


def recall_rows(index, dataset) -> list[str]:
    rows = ["| ranking | recall@2 | recall@5 | all-gold@5 |", "|---|---:|---:|---:|"]

    def line(label: str, r: dict) -> str:
        return f"| {label} | {recall_cells(r)} |"

    for name in ("dense", "hybrid"):
        rows.append(line(f"{name} (baseline)", run_method(index, dataset, resolve_method(name), None, show_progress=False)))
    for label, settings in RANKINGS:  # search settings only: every row reads the index's one hierarchy artefact
        rows.append(line(f"archrag: {label}", run_method(index, dataset, resolve_method("archrag", settings), None,
                                                         show_progress=False)))
    return rows


def reach_rows(index, dataset, hierarchy) -> tuple[list[str], list[str]]:
    retriever = ArchRAGRetriever(index, hierarchy=hierarchy)
    doc_of = np.array([index.chunks[c].doc_id for c in index.chunk_order])
    layers = ["dense top 5 chunks", "layer 0: top-5 entities", "layer 0: relations among them"] + [
        f"layer {layer}: top-5 communities" for layer in range(1, hierarchy.num_layers)]
    reached = {name: [] for name in layers}  # per question: share of gold reached
    spans = {name: [] for name in layers}  # per question: chunks spanned
    missed_total, missed_reach = 0, {name: [] for name in layers[1:]}  # per missed gold: smallest item's chunk count
    for q in dataset.questions:
        qv = index.embed_query(q.question)
        items = retriever._items(qv)
        gold = set(q.supporting_ids)
        dense_top = np.argsort(-index.chunk_dense_scores(qv), kind="stable")[:5]
        groups = {"dense top 5 chunks": [dense_top.tolist()]}
        for item in items:
            name = ("layer 0: top-5 entities" if item["kind"] == "entity" else "layer 0: relations among them"
                    if item["kind"] == "relation" else f"layer {item['layer']}: top-5 communities")
            groups.setdefault(name, []).append(item["chunks"])
        for name in layers:
            chunks = sorted({c for group in groups.get(name, []) for c in group})
            reached[name].append(len(gold & set(doc_of[chunks].tolist())) / len(gold))
            spans[name].append(len(chunks))
        missed = gold - set(doc_of[dense_top].tolist())
        missed_total += len(missed)
        for g in missed:
            for name in layers[1:]:
                sizes = [len(group) for group in groups.get(name, []) if g in set(doc_of[group].tolist())]
                if sizes:
                    missed_reach[name].append(min(sizes))
    reach = ["| items | gold passages reached | chunks spanned (median) |", "|---|---:|---:|"]
    reach += [f"| {name} | {100 * statistics.mean(reached[name]):.1f}% | {statistics.median(spans[name]):.0f} |" for name in layers]
    missed_lines = [f"Gold passages not in dense's top 5: {missed_total}.", "",
                    "| items | of those, reached | median chunks of the smallest item reaching one |", "|---|---:|---:|"]
    missed_lines += [f"| {name} | {len(v)} | {statistics.median(v) if v else 0:.0f} |" for name, v in missed_reach.items()]
    return reach, missed_lines


def main() -> None:
    args = index_and_dataset_args(__doc__).parse_args()

    index = GraphRAGIndex.load(args.index_dir, show_progress=False)
    dataset = load_dataset(args.dataset)
    hierarchy = ArchRAGRetriever(index).hierarchy  # the index's artefact (default settings), which every row reads
    reach, missed = reach_rows(index, dataset, hierarchy)
    lines = [f"## ArchRAG item signal on `{Path(args.dataset).name}` (LLM-free, {len(dataset.questions)} questions, "
             f"communities per layer {hierarchy.communities_per_layer()})", "",
             "### Recall (eval.bench.run_method, top 5 chunks)", ""]
    lines += recall_rows(index, dataset)
    lines += ["", "### What the top-5 items of each layer reach", ""] + reach
    lines += ["", "### The gold passages dense misses", ""] + missed
    emit(lines, args.out)


if __name__ == "__main__":
    main()
