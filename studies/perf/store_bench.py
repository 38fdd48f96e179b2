"""The embedded LadybugDB store against SimplePropertyGraphStore on one corpus: build, disk, load, query, delete.

    python benchmarks/store_bench.py --corpus /work/shared/datasets/hotpotqa_train100/corpus.jsonl \\
        --questions /work/shared/datasets/hotpotqa_train100/questions.jsonl --out benchmarks/results/store_bench.md

LLM-free and cheap on purpose: the hashing embedder (``--embed hash``) and the statistical entity
extractor, so the numbers are the store's cost, not the embedder's or spaCy's. Both indexes are built
from the same documents in one run, one after the other; the methods read derived arrays, so their
answers must be the same (checked) and only the store's own reads differ (PathRAG asks the store for
each rendered entity's properties; AGRAG and hybrid read no store).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import emit  # noqa: E402

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig  # noqa: E402
from llama_index_graphrag_suite.documents import load_documents  # noqa: E402
from llama_index_graphrag_suite.embeddings import HashEmbedding  # noqa: E402
from llama_index_graphrag_suite.index.storage import open_version  # noqa: E402
from llama_index_graphrag_suite.index.stores import LADYBUG_FILE, SIMPLE_FILE  # noqa: E402

METHODS = ("hybrid", "agrag", "pathrag")


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _time_queries(rows: list[dict], indexes: list[GraphRAGIndex], questions: list[str]) -> None:
    """p50 retrieve time per method and store, the stores taking turns question by question (so that what
    else runs on the machine slows both alike), after a warm-up of each (imports, per-snapshot structures)."""
    for method in METHODS:
        retrievers = [index.as_retriever(method, top_k=5) for index in indexes]
        for index, retriever in zip(indexes, retrievers):
            for q in questions:  # embed first (the index remembers the vector): time the method and its reads only
                index.embed_query(q)
            retriever.retrieve(questions[0])
        times = [[] for _ in indexes]
        for row in rows:
            row["answers"][method] = []
        for q in questions:
            for i, retriever in enumerate(retrievers):
                start = time.perf_counter()
                nodes = retriever.retrieve(q)
                times[i].append((time.perf_counter() - start) * 1000)
                rows[i]["answers"][method].append([(n.node.node_id, round(n.score, 6)) for n in nodes])
        for row, t in zip(rows, times):
            row[f"{method}_p50_ms"] = statistics.median(t)


def build_and_load(store: str, docs, workdir: Path) -> tuple[dict, GraphRAGIndex]:
    embed = HashEmbedding(dim=256)
    config = IndexConfig(entities="statistical")
    row: dict = {"store": store}
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(docs, embed_model=embed, config=config, store=store)
    row["build_s"] = time.perf_counter() - start
    row["counts"] = index.stats()
    out = workdir / store
    start = time.perf_counter()
    index.persist(out)
    row["persist_s"] = time.perf_counter() - start
    folder, _ = open_version(out)
    row["disk_mb"] = _size(folder) / 1e6
    store_file = folder / (LADYBUG_FILE if store == "ladybug" else SIMPLE_FILE)
    # the simple store writes no file while it holds only the tables (index/lazy_store.py)
    row["store_mb"] = store_file.stat().st_size / 1e6 if store_file.is_file() else 0.0
    del index
    start = time.perf_counter()
    loaded = GraphRAGIndex.load(out, embed_model=embed)
    row["load_s"] = time.perf_counter() - start
    row["answers"] = {}
    return row, loaded


def time_deletes(row: dict, index: GraphRAGIndex, n: int) -> None:
    gone = sorted({c.doc_id for c in index.chunks.values()})[:n]
    start = time.perf_counter()
    for doc_id in gone:
        index.delete(doc_id)
    row["delete_ms"] = (time.perf_counter() - start) * 1000 / max(1, len(gone))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default="/work/shared/datasets/hotpotqa_train100/corpus.jsonl")
    parser.add_argument("--questions", default="/work/shared/datasets/hotpotqa_train100/questions.jsonl")
    parser.add_argument("--limit", type=int, default=0, help="use the first N documents (0: all)")
    parser.add_argument("--n-questions", type=int, default=30)
    parser.add_argument("--delete", type=int, default=5, help="documents deleted one by one (time per delete)")
    parser.add_argument("--stores", default="simple,ladybug")
    parser.add_argument("--out", help="write the markdown here too")
    args = parser.parse_args()
    docs = load_documents(args.corpus)
    docs = docs[: args.limit] if args.limit else docs
    questions = [json.loads(line)["question"] for line in open(args.questions, encoding="utf-8") if line.strip()]
    questions = questions[: args.n_questions]
    workdir = Path(tempfile.mkdtemp(prefix="store-bench-"))
    try:
        built = [build_and_load(store, docs, workdir) for store in args.stores.split(",")]
        rows, indexes = [b[0] for b in built], [b[1] for b in built]
        _time_queries(rows, indexes, questions)
        for row, index in zip(rows, indexes):
            time_deletes(row, index, args.delete)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    same = all(r["answers"] == rows[0]["answers"] for r in rows)
    c = rows[0]["counts"]
    lines = [
        f"# Graph store: SimplePropertyGraphStore vs LadybugDB ({len(docs)} documents)",
        "",
        f"`python benchmarks/store_bench.py --corpus {args.corpus} --questions {args.questions} "
        f"--n-questions {len(questions)} --delete {args.delete}"
        f"{f' --limit {args.limit}' if args.limit else ''}`",
        "",
        f"Corpus: {c['documents']} documents, {c['chunks']} chunks, {c['entities']} entities, {c['relations']} relations, "
        f"{c['contains_edges']} contains edges, {c['synonym_edges']} synonym edges (hash embedding, statistical entities, "
        f"no LLM). Retrieval answers identical across stores: **{'yes' if same else 'NO'}**.",
        "",
        "| store | build s | persist s | version folder MB | store file MB | load s | "
        + " | ".join(f"{m} p50 ms" for m in METHODS) + " | delete ms/doc |",
        "|---|" + "---:|" * (6 + len(METHODS)),
    ]
    for r in rows:
        lines.append(f"| {r['store']} | {r['build_s']:.1f} | {r['persist_s']:.2f} | {r['disk_mb']:.1f} | {r['store_mb']:.1f} "
                     f"| {r['load_s']:.2f} | " + " | ".join(f"{r[f'{m}_p50_ms']:.1f}" for m in METHODS)
                     + f" | {r['delete_ms']:.0f} |")
    if len(rows) == 2:
        a, b = rows
        lines += ["", f"Ratio {b['store']}/{a['store']}: build {b['build_s'] / a['build_s']:.2f}x, "
                  f"disk {b['disk_mb'] / a['disk_mb']:.2f}x, load {b['load_s'] / a['load_s']:.2f}x, "
                  + ", ".join(f"{m} {b[f'{m}_p50_ms'] / a[f'{m}_p50_ms']:.2f}x" for m in METHODS)
                  + f", delete {b['delete_ms'] / a['delete_ms']:.2f}x."]
    lines += ["", "One run, one after the other, on a 2-core machine shared with other jobs: read the ratios, "
              "not the absolute times."]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
