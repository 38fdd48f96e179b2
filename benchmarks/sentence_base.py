"""The best sentence as a third score of the hybrid base, measured through the methods: recall@5 per question of
the base alone and of every guarded method on it, on the five shared sets.

``sentence_probe.py`` embedded every sentence of every chunk; the index already holds one vector per sentence that
states a fact (``index.fact_vectors``: a fact's text is its source sentence), so a chunk's best fact sentence costs
no index time. Bases (``query_scores``):

* ``hybrid``: dense and BM25, min-max each, averaged (AGRAG Eq. 21; today's base and the ``hybrid`` row);
* ``fact``: ``three_way`` of dense, BM25 and the chunk's best fact sentence (``sentence_scores``: a chunk stating
  no fact is read as one sentence, its dense cosine), what ``guard_best_sentence=true`` ships;
* ``fact|chunk``: the same, the third score the larger of the best fact sentence and the chunk's own cosine;
* ``all``: ``three_way`` with every sentence embedded (``sentence_probe.py``'s split; an index cost, printed).

Each guarded method (the registry's name: the method inside the hybrid guard) is run on the bases ``hybrid``,
``fact`` and ``all`` (``guard_best_sentence`` off / on / on with the all-sentence scores patched in). HippoRAG,
PathRAG and ArchRAG do not read the base in their own ranking, only the guard does: their ranking is computed once
per question and fused with each base (``HybridGuard.fuse``); AGRAG and A2RAG read it, so they run whole per base.
Writes the per-question recall@5 as JSON (``--out``), for ``sentence_base_report.py``:

    HF_HUB_OFFLINE=1 python benchmarks/sentence_base.py --indexes /work/scratch/q50 --out sb.json
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS  # noqa: E402 (the folder on the path first)
from sentence_probe import best_sentence_scores, chunk_sentences  # noqa: E402

os.environ.setdefault("HF_HUB_OFFLINE", "1")

BASES = ("hybrid", "fact", "fact|chunk", "all")
METHOD_BASES = ("hybrid", "fact", "all")
METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")
READS_BASE = {"agrag", "a2rag"}  # their own ranking reads hybrid_scores (the others' only through the guard)


def all_sentence_vectors(index, cache: Path, name: str) -> tuple[np.ndarray, np.ndarray, float]:
    """Every sentence of every chunk embedded (unit rows), each sentence's chunk position, and the seconds the
    embedding took; kept in ``cache`` (an ``.npz`` of arrays, no pickle) as it is the slow part."""
    path = cache / f"{name}.npz"
    if not path.exists():
        texts = [index.chunks[c].text for c in index.chunk_order]
        sentences, owner = chunk_sentences(texts)
        from llama_index_graphrag_suite.index.vectors import normalize_rows

        started = time.perf_counter()
        vecs = normalize_rows(index.state.embed_model.get_text_embedding_batch(sentences)).astype(np.float32)
        seconds = time.perf_counter() - started
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.npz")
        np.savez(tmp, vecs=vecs, owner=owner, seconds=seconds)
        os.replace(tmp, path)
    data = np.load(path, allow_pickle=False)
    return data["vecs"], data["owner"], float(data["seconds"])


def recall5(doc_ids: list[str], gold: list[str]) -> float:
    return len(set(gold) & set(doc_ids[:5])) / len(set(gold))


def run_set(index_dir: Path, dataset: Path, cache: Path | None, methods: tuple[str, ...], limit: int | None,
            method_bases: tuple[str, ...] = METHOD_BASES) -> dict:
    """Per-question recall@5 of each base and each (method, base) on one set, and the index-side costs."""
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods import query_scores as qs
    from llama_index_graphrag_suite.methods.scoring import hybrid, top_k
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(index_dir, show_progress=False)
    questions = [q for q in load_dataset(dataset).questions if q.supporting_ids][:limit]
    order, chunks = index.chunk_order, index.chunks
    doc_of = [chunks[c].doc_id for c in order]
    bases = BASES if cache is not None else tuple(b for b in BASES if b != "all")
    method_bases = tuple(b for b in method_bases if b in bases)
    vecs, owner, embed_seconds = (all_sentence_vectors(index, cache, dataset.name) if cache is not None
                                  else (np.zeros((0, 1), np.float32), np.zeros(0, np.int64), float("nan")))
    started = time.perf_counter()
    qs.sentence_chunk_pairs(index)
    pair_seconds = time.perf_counter() - started

    def all_sentences(ix, question: str) -> np.ndarray:  # patched in for the "all" base
        return best_sentence_scores(ix.embed_query(question)[None, :], vecs, owner, len(order))[0]

    library_sentences = qs.sentence_scores
    plain = {m: get_retriever(index, m, top_k=5) for m in methods}
    on = {m: get_retriever(index, m, top_k=5, guard_best_sentence=True) for m in methods if m in READS_BASE}
    out: dict = {"questions": len(questions), "chunks": len(order), "sentences": int(len(owner)),
                 "fact_sentences": len(index.fact_vectors), "embed_all_seconds": round(embed_seconds, 1),
                 "pairs_seconds": round(pair_seconds, 3), "base": {b: [] for b in bases},
                 "methods": {f"{m}/{b}": [] for m in methods for b in method_bases}, "base_ms": {b: [] for b in bases}}

    def ranked(nodes) -> list[str]:
        return [n.node.metadata["doc_id"] for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]

    for q in questions:
        text, gold = q.question, q.supporting_ids
        index.embed_query(text)  # embedded once, read from the index's query cache after
        with qs.shared_query_scores():
            t0 = time.perf_counter()
            dense, bm25 = qs.dense_scores(index, text), qs.bm25_scores(index, text)
            base = {"hybrid": hybrid(dense, bm25)}
            t1 = time.perf_counter()
            fact = qs.sentence_scores(index, text)
            base["fact"] = qs.three_way(dense, bm25, fact)
            t2 = time.perf_counter()
            base["fact|chunk"] = qs.three_way(dense, bm25, np.maximum(fact, dense))
            t3 = time.perf_counter()
            if "all" in bases:
                base["all"] = qs.three_way(dense, bm25, all_sentences(index, text))
            t4 = time.perf_counter()
        for b, (a, z) in zip(bases, ((t0, t1), (t1, t2), (t1, t3), (t3, t4))):
            out["base_ms"][b].append(1000 * (z - a))
        for b in bases:
            out["base"][b].append(recall5([doc_of[i] for i in top_k(base[b], 5).tolist()], gold))
        for m in methods:
            if m in READS_BASE:
                for b in method_bases:
                    retriever = plain[m] if b == "hybrid" else on[m]
                    qs.sentence_scores = all_sentences if b == "all" else library_sentences
                    try:
                        nodes = retriever.retrieve(text)
                    finally:
                        qs.sentence_scores = library_sentences
                    out["methods"][f"{m}/{b}"].append(recall5(ranked(nodes), gold))
                continue
            guard = plain[m]
            own, evidence = guard.inner.retrieve_with_evidence(text)
            for b in method_bases:
                qs.sentence_scores = all_sentences if b == "all" else library_sentences
                try:
                    with qs.shared_query_scores(), qs.sentence_base(b != "hybrid"):
                        fused, _ = guard.fuse(text, copy.deepcopy(own), copy.deepcopy(evidence))
                finally:
                    qs.sentence_scores = library_sentences
                out["methods"][f"{m}/{b}"].append(recall5(ranked(fused), gold))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--indexes", default="/work/scratch/q50", help="a folder of saved indexes, one per set")
    parser.add_argument("--datasets", default="../shared/datasets")
    parser.add_argument("--sets", default=",".join(SHARED_SETS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--cache", default="/tmp/sentence_base", help="where the all-sentence vectors are kept")
    parser.add_argument("--no-all", action="store_true", help="leave out the 'all' base (no sentence embedded)")
    parser.add_argument("--method-bases", default=",".join(METHOD_BASES),
                        help="the bases the methods run on (hybrid first; 'all' doubles A2RAG's and AGRAG's time)")
    parser.add_argument("--limit", type=int, help="first N questions with gold only (a quick check)")
    parser.add_argument("--out", required=True, help="JSON of per-question recall@5 (merged into an existing one)")
    args = parser.parse_args()
    out_path = Path(args.out)
    results = json.loads(out_path.read_text()) if out_path.exists() else {}
    for name in args.sets.split(","):
        started = time.perf_counter()
        results[name] = run_set(Path(args.indexes) / name, Path(args.datasets) / name,
                                None if args.no_all else Path(args.cache),
                                tuple(m for m in args.methods.split(",") if m), args.limit,
                                tuple(args.method_bases.split(",")))
        tmp = out_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(results))
        os.replace(tmp, out_path)
        means = {k: round(100 * float(np.mean(v)), 1) for k, v in results[name]["base"].items()}
        print(name, f"{time.perf_counter() - started:.0f}s", means, flush=True)


if __name__ == "__main__":
    main()
