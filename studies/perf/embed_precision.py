"""Does building with bfloat16 document vectors change what the methods retrieve?

    python studies/perf/embed_precision.py --work DIR [--sets 2wiki_retrieval101,...] [--methods ...] [--out MD]

For each shared set, two indexes of the same code (default config, the bundled all-MiniLM-L6-v2): document vectors in
float32 (ONNX Runtime) and in bfloat16 (``embeddings_bf16``), built once and kept in ``DIR/SET-PRECISION``. Then
every method over every question on both: recall@5 as the bench counts it (top 5 chunks' documents against the gold
ones), and how many questions' top 5 documents differ. Also how far the vectors moved: the cosine of each text's two
vectors (chunks, entity names, fact texts), minimum and first percentile. Query vectors are float32 on both.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

from llama_index_graphrag_suite.embeddings import resolve_embed_model
from llama_index_graphrag_suite.eval.bench import TOP_K, build_or_load_index, resolve_methods
from llama_index_graphrag_suite.eval.datasets import load_dataset
from llama_index_graphrag_suite.eval.metrics import recall_at

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "datasets"
SETS = "2wiki_retrieval101,hotpotqa_train100,musique_train100,graphrag_bench_medical,covidqa_dev"
METHODS = ("dense,bm25,hybrid,hipporag,agrag,pathrag,archrag,a2rag,"
           "hipporag:paper,agrag:paper,pathrag:paper,archrag:paper,a2rag:unguarded")
PRECISIONS = ("float32", "bfloat16")


def top_documents(retriever, question: str) -> list[str]:
    nodes = retriever.retrieve(question)
    chunks = [n for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]
    return [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in chunks][:TOP_K]


def vector_cosines(a, b) -> dict[str, tuple[float, float]]:
    """Per table: (min, 1st percentile) cosine of a row of ``a`` with the row of the same id in ``b``."""
    out = {}
    for name in ("chunk_vectors", "entity_vectors", "fact_vectors"):
        ta, tb = getattr(a, name), getattr(b, name)
        if ta is None or not len(ta):
            continue
        rows = tb.rows_in(ta.id_array())
        keep = np.flatnonzero(rows >= 0)
        cos = np.einsum("ij,ij->i", ta.at(keep), tb.at(rows[keep]))
        out[name.split("_")[0]] = (float(cos.min()), float(np.percentile(cos, 1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, help="folder for the kept indexes")
    ap.add_argument("--sets", default=SETS)
    ap.add_argument("--methods", default=METHODS)
    ap.add_argument("--limit", type=int, default=0, help="only the first N questions of each set")
    ap.add_argument("--out", help="append the markdown report here too")
    args = ap.parse_args()
    specs = resolve_methods(args.methods.split(","))
    lines = [f"Command: `python studies/perf/embed_precision.py {' '.join(sys.argv[1:])}`", ""]
    for name in args.sets.split(","):
        dataset = load_dataset(SHARED / name if not Path(name).is_dir() else name, limit=args.limit)
        indexes, built = {}, {}
        for precision in PRECISIONS:
            embed = resolve_embed_model(None)
            embed.bulk_precision = precision
            indexes[precision], info = build_or_load_index(dataset, Path(args.work) / f"{name}-{precision}", embed, None,
                                                           show_progress=False)
            built[precision] = (info.get("stage_seconds", {}).get("embed"), info.get("reused"))
        cosines = vector_cosines(indexes["float32"], indexes["bfloat16"])
        lines += [f"## {name} ({len(dataset.questions)} questions)", "",
                  "Embed stage s (float32 / bfloat16, contended machine, as built): "
                  + " / ".join(f"{s:.0f}" if s else "-" for s, _ in built.values())
                  + ". Vector cosine float32 vs bfloat16 (min, 1st percentile): "
                  + ", ".join(f"{t} {lo:.5f}, {p1:.5f}" for t, (lo, p1) in cosines.items()) + ".", "",
                  "| method | recall@5 float32 | bfloat16 | difference | questions whose top 5 differ |",
                  "|---|---:|---:|---:|---:|"]
        for spec in specs:
            start = time.perf_counter()
            retrievers = {p: spec.retriever(indexes[p], top_k=TOP_K) for p in PRECISIONS}
            recall = {p: 0.0 for p in PRECISIONS}
            differ = 0
            for q in dataset.questions:
                tops = {p: top_documents(retrievers[p], q.question) for p in PRECISIONS}
                differ += tops["float32"] != tops["bfloat16"]
                for p in PRECISIONS:
                    recall[p] += recall_at(tops[p], q.supporting_ids, TOP_K)
            n = len(dataset.questions)
            a, b = (100 * recall[p] / n for p in PRECISIONS)
            lines.append(f"| {spec.label} | {a:.1f} | {b:.1f} | {b - a:+.1f} | {differ} |")
            print(lines[-1], f"({time.perf_counter() - start:.0f} s)", flush=True)
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
