"""What else could lift the domain sets: a text signal, not the graph. Does matching the question to a
chunk's best sentence (not to the whole chunk) rank better?

``graph_headroom.py`` shows that on the domain sets the chunks a graph walk brings in are gold less often than the
one they would replace. The chunks there are long (clinical guidelines: 185 words at the median, against 49 to 82
on the Wikipedia sets), and all-MiniLM-L6-v2 reads at most 256 word pieces of a chunk and averages over them, so a
question about one qualifier in one sentence may be drowned by the rest. This probe embeds every sentence of every
chunk (``text.split_sentences``) with the index's own model and scores a chunk by its best sentence's cosine to the
question. Rows, recall@2 and recall@5 in % of gold passages:

* ``hybrid``, ``dense``, ``bm25``: the shipped baselines (AGRAG Eq. 21: min-max each, then average);
* ``best sentence``: the chunk's best sentence alone;
* ``dense + best sentence, then hybrid``: the dense score replaced by the mean of the chunk's and its best
  sentence's cosines, then fused with BM25 as hybrid is;
* ``three-way``: dense, BM25 and best sentence, each min-maxed, averaged with equal weights (no weight is tuned).

The index-time cost is printed beside: the number of sentences and the seconds their embedding took here. Nothing
in the library changes; this measures a candidate for hybrid itself (it would lift every method that builds on
hybrid, and the baseline with them), not a way for the graph to beat it.

Reads the indexes and ``rankings.json`` of ``benchmarks/domain_tuning.py`` (its ``build`` and ``rank`` steps):

    python benchmarks/sentence_probe.py --work /tmp/gr25 --tag default > benchmarks/results/sentence_probe.md
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import SHARED_SETS, probe_args, probe_each_set, recall_at  # noqa: E402 (the folder on the path first)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

def chunk_sentences(texts: list[str]) -> tuple[list[str], np.ndarray]:
    """Every sentence of every chunk (a chunk without a sentence break is one sentence), and the chunk position each
    came from, in chunk order."""
    from llama_index_graphrag_suite.text import split_sentences

    sentences, owner = [], []
    for c, text in enumerate(texts):
        spans = [(a, b) for a, b in split_sentences(text) if text[a:b].strip()] or [(0, len(text))]
        for a, b in spans:
            sentences.append(text[a:b].strip())
            owner.append(c)
    return sentences, np.asarray(owner, np.int64)


def best_sentence_scores(query_vecs: np.ndarray, sentence_vecs: np.ndarray, owner: np.ndarray,
                         n_chunks: int) -> np.ndarray:
    """Questions x chunks: the highest cosine between a question and any sentence of the chunk (vectors are unit
    length). ``owner`` is sorted (chunk order), so each chunk's sentences are one run of columns."""
    starts = np.r_[0, np.flatnonzero(np.diff(owner)) + 1]
    out = np.full((query_vecs.shape[0], n_chunks), -1.0, np.float32)
    out[:, owner[starts]] = np.maximum.reduceat(query_vecs @ sentence_vecs.T, starts, axis=1)
    return out


def probe(folder: Path, ds: str, questions: list[str], model=None) -> list[str]:
    """The table rows of one dataset; ``questions``: those with gold, in the order of ``rankings.json``; ``model``:
    the index's embedding model (all-MiniLM-L6-v2 when None)."""
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.index.vectors import normalize_rows
    from llama_index_graphrag_suite.methods.scoring import hybrid, minmax, top_k

    data = json.loads((folder / ds / "rankings.json").read_text())
    model = model or resolve_embed_model("all-MiniLM-L6-v2")
    index = GraphRAGIndex.load(folder / ds / "index", embed_model=model, show_progress=False)
    texts = [index.chunks[cid].text for cid in index.chunk_order]
    sentences, owner = chunk_sentences(texts)
    started = time.perf_counter()
    sentence_vecs = normalize_rows(model.get_text_embedding_batch(sentences))
    seconds = time.perf_counter() - started
    query_vecs = normalize_rows([index.embed_query(q) for q in questions])  # once each: dense and best sentence
    best = best_sentence_scores(query_vecs, sentence_vecs, owner, len(texts))

    rows: dict[str, list[tuple[float, float]]] = {}
    for i, (question, gold) in enumerate(zip(questions, data["gold"])):
        dense, bm25 = index.chunk_dense_scores(query_vecs[i]), index.bm25.scores(question)
        rankings = {
            "hybrid": hybrid(dense, bm25),
            "dense": dense,
            "bm25": bm25,
            "best sentence": best[i],
            "dense + best sentence, then hybrid": hybrid((dense + best[i]) / 2, bm25),
            "three-way": (minmax(dense) + minmax(bm25) + minmax(best[i])) / 3,
        }
        for name, scores in rankings.items():
            ranked = top_k(scores, 5).tolist()
            rows.setdefault(name, []).append((recall_at(ranked, data["doc_of"], gold, 2),
                                              recall_at(ranked, data["doc_of"], gold, 5)))
    words = np.median([len(t.split()) for t in texts])
    lines = [f"## {ds}", "",
             f"{len(questions)} questions, {len(texts)} chunks ({words:.0f} words at the median), {len(sentences)} "
             f"sentences embedded in {seconds:.0f} s", "",
             "| ranking | recall@2 | recall@5 |", "|---|---:|---:|"]
    for name, values in rows.items():
        at2, at5 = np.mean(values, axis=0)
        lines.append(f"| {name} | {100 * at2:.1f} | {100 * at5:.1f} |")
    return lines + [""]


def main() -> None:
    args = probe_args(__doc__, ",".join(SHARED_SETS)).parse_args()
    lines = ["# A chunk's best sentence as a ranking signal (`benchmarks/sentence_probe.py`)", "",
             "all-MiniLM-L6-v2, the default index of `domain_tuning.py`; the script's docstring says what each row "
             "is.", ""]
    print("\n".join(lines + probe_each_set(args, probe)))


if __name__ == "__main__":
    main()
