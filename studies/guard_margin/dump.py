"""Per question of a set, what the guard fuses: the base's three scores (dense, BM25, best sentence), the wrapped
method's own ranking, the guard's signals (links, coverage, names held), and the guarded method's recall@5 as it
ships, so that guard settings and base fusions can be replayed in numpy (``replay.py``) without re-running methods.

    python studies/guard_margin/dump.py --index IDX/covidqa_dev --dataset DATASETS/covidqa_dev --out D/covidqa_dev

Writes ``OUT.npz`` (score matrices, questions x chunks, float32) and ``OUT.json`` (everything else). No pickle.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
HUB_SHARES = (0.02, 0.1, 1.0)  # 1.0: no entity is a hub


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--out", required=True, help="path prefix of the .npz and .json written")
    parser.add_argument("--methods", default="a2rag,agrag", help="guarded methods whose own ranking is kept")
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()

    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods import query_scores as qs
    from llama_index_graphrag_suite.methods.guard import retriever as guard_mod
    from llama_index_graphrag_suite.methods.guard.signals import (corpus_name_density, entity_specificity,
                                                                 hub_chunks, query_link, written_in_names)
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(Path(args.index), show_progress=False)
    questions = [q for q in load_dataset(Path(args.dataset)).questions if q.supporting_ids][: args.limit]
    order, chunks = index.chunk_order, index.chunks
    doc_of = [chunks[c].doc_id for c in order]
    n = len(order)
    guards = {m: get_retriever(index, m, top_k=5, guard_best_sentence=True) for m in args.methods.split(",")}
    specific = hub_chunks(n)
    dense_m = np.zeros((len(questions), n), np.float32)
    bm25_m = np.zeros_like(dense_m)
    sent_m = np.zeros_like(dense_m)
    rows = []
    position = guard_mod.ChunkPositions(index)
    for i, q in enumerate(questions):
        text = q.question
        index.embed_query(text)
        row: dict = {"question": text, "gold": sorted(set(q.supporting_ids))}
        with qs.shared_query_scores():
            dense_m[i], bm25_m[i], sent_m[i] = (qs.dense_scores(index, text), qs.bm25_scores(index, text),
                                              qs.sentence_scores(index, text))
        for names_only in (False, True):
            link, linked = query_link(index, text, specific, names_only)
            row[f"link_{'names' if names_only else 'all'}"] = link
            row[f"linked_{'names' if names_only else 'all'}"] = linked
            for share in HUB_SHARES:  # the hub cut-off's other values (the floor HUB_MIN kept)
                link, linked = query_link(index, text, hub_chunks(n, share), names_only)
                row[f"link_{'names' if names_only else 'all'}@{share}"] = link
                row[f"linked_{'names' if names_only else 'all'}@{share}"] = linked
        _, covered = query_link(index, text, n)
        row["covered"] = covered
        row["covered_weight"] = entity_specificity(index, covered).tolist()
        keys = sorted(set(covered).union(*(v for k, v in row.items() if k.startswith("linked_"))))
        row["keys"] = keys
        # chunk position -> indices (into keys) of the question's entities it is linked to (only chunks with any)
        held: dict[int, list[int]] = {}
        for k_i, key in enumerate(keys):
            rec = index.entities.get(key)
            for cid in (rec.chunks if rec is not None else ()):
                if cid in position:
                    held.setdefault(int(position[cid]), []).append(k_i)
        row["held"] = {str(c): v for c, v in held.items()}
        for m, guard in guards.items():
            with guard.reading(), qs.shared_query_scores(), qs.sentence_base(True):
                own, evidence = guard.inner.retrieve_with_evidence(text)
                fused, trace = guard.fuse(text, list(own), evidence)
            pos = position
            row[f"{m}_own"] = [int(pos[nd.node.node_id]) for nd in own if nd.node.node_id in pos]
            row[f"{m}_src"] = [nd.node.metadata.get("a2rag_source", "") for nd in own]
            row[f"{m}_fused"] = [int(pos[nd.node.node_id]) for nd in fused
                                 if nd.node.metadata.get("kind", "chunk") == "chunk"]
            row[f"{m}_trace"] = {k: v for k, v in trace.items() if k not in ("linked_entities", "coverage_entities")}
        rows.append(row)
        if i % 100 == 0:
            print(i, flush=True)
    meta = {"chunks": n, "doc_of": doc_of, "density": corpus_name_density(index),
            "written_in_names": bool(written_in_names(index)), "specific": specific, "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out.with_suffix(".npz"), dense=dense_m, bm25=bm25_m, sentence=sent_m)
    out.with_suffix(".json").write_text(json.dumps(meta))


if __name__ == "__main__":
    sys.exit(main())
