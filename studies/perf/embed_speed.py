"""Embedding speed: the bundled all-MiniLM-L6-v2 on PyTorch (sentence-transformers via LlamaIndex's
HuggingFaceEmbedding, as before) and on ONNX Runtime (``embeddings_onnx``), side by side in one run.

The texts are what an index build embeds, taken from a real corpus: chunk texts (title + passage), sentences
(fact texts) and titles (entity names). Rounds alternate between the backends; the table gives the median
seconds per round, texts per second and the ratio, and the agreement of the vectors (minimum cosine).

    python benchmarks/embed_speed.py --corpus ../shared/datasets/2wiki_retrieval101/corpus.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import time


def _texts(corpus: str, n: int) -> dict[str, list[str]]:
    rows = [json.loads(line) for line in open(corpus, encoding="utf-8") if line.strip()]
    chunks = [f"{r.get('title', '')}\n{r['text']}" for r in rows[:n]]
    sentences = [s for r in rows[n:3 * n] for s in re.split(r"(?<=[.!?])\s+", r["text"]) if len(s) > 40][:2 * n]
    names = [r.get("title", "") or r["text"][:20] for r in rows[:4 * n]]
    return {"chunks": chunks, "sentences": sentences, "names": names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--n", type=int, default=400, help="chunks (2n sentences, 4n names)")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np

    from llama_index_graphrag_suite.embeddings import resolve_embed_model

    models = {}
    for backend in ("torch", "onnx"):
        os.environ["GRAPHRAG_SUITE_EMBED_BACKEND"] = backend
        models[backend] = resolve_embed_model(None)
    print(f"machine: {os.cpu_count()} CPUs; models: " + ", ".join(f"{b}={type(m).__name__}" for b, m in models.items()))
    print("| texts | n | torch s | onnx s | torch texts/s | onnx texts/s | speed-up | min cosine |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, texts in _texts(args.corpus, args.n).items():
        seconds: dict[str, list[float]] = {b: [] for b in models}
        vectors = {}
        for _ in range(args.rounds):
            for backend, model in models.items():
                start = time.perf_counter()
                vectors[backend] = np.asarray(model.get_text_embedding_batch(texts), dtype=np.float32)
                seconds[backend].append(time.perf_counter() - start)
        t, o = (statistics.median(seconds[b]) for b in ("torch", "onnx"))
        cos = float((vectors["torch"] * vectors["onnx"]).sum(axis=1).min())
        print(f"| {kind} | {len(texts)} | {t:.2f} | {o:.2f} | {len(texts) / t:.0f} | {len(texts) / o:.0f} | "
              f"{t / o:.2f}x | {cos:.6f} |", flush=True)


if __name__ == "__main__":
    main()
