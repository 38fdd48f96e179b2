"""Can the graph re-rank hybrid's top chunks better than the guard's coverage does? Probes of the ceiling.

On graphrag_bench_medical the guard's family cannot lift A2RAG to hybrid + 1 (BENCHMARKS.md "Any corpus", column
*best*). These probes try other graph signals on the same footing: each re-orders hybrid's top ``DEPTH`` chunks
by ``2 / (2 + rank) + gain · signal`` (``guard.fusion.linked_hybrid``), nothing else changes. Signals:

* ``coverage``: the share of the question's entities a chunk is linked to (what the guard uses);
* ``coverage_idf``: the same, each entity weighted by ``log(1 + chunks / its chunks)`` (a rare term says more);
* ``coverage_words``: the same, each entity weighted by its number of words (a long phrase says more);
* ``graph_prf``: pseudo-relevance feedback through the graph: a chunk's cosine, over IDF-weighted entity links
  (hubs left out), with hybrid's top 3/5/10 chunks weighted by rank (the cluster hypothesis);
* ``next_to_top``: the chunks before and after hybrid's top 1 or 2 in the corpus order, under the same title (a
  long document's answer often follows the chunk whose heading the question matches) join the candidates, with
  a bonus.

Beside them: hybrid's recall@5, @10 and @20 (what a re-ranking of its top 20 could reach at most), A2RAG's own
top 5, and the better of the two per question (an oracle of the guard's choice).

Then ``switch``: how much of that oracle the guard's signals can tell apart at all. Per question, a decision tree
chooses hybrid's top 5 or A2RAG's own from every signal the guard could weigh (the query's link share under each
hub rule, with all entities and with names only; A2RAG's agreement with hybrid's, dense's and BM25's top 5 and
whether its first chunk is hybrid's; dense's agreement with BM25; the coverage of hybrid's top chunk and top 5). The
tree is fit on the set itself, each question weighted by how much its choice matters: *in-sample* is about the most
a rule that picks one of the two rankings per question from these signals could reach there (a fusion such as the
guard's can also mix the two, so this bounds switching, not fusing); *5-fold* measures each question with a tree
fit on the other four fifths of the same set.

Reads the ``rankings.json`` and the index of ``benchmarks/domain_tuning.py`` (its ``rank`` step), so run that
first:

    python benchmarks/rerank_probes.py --work /tmp/gr25 --tag default --sets graphrag_bench_medical,covidqa_dev
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import probe_args, probe_each_set, recall_at  # noqa: E402 (the folder on the path first)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

DEPTH = 20
K = 5
GAINS = (0.1, 0.2, 0.35, 0.5)


def recall(ranked, doc_of, gold, k: int = K) -> float:
    return recall_at(ranked, doc_of, gold, k)


def entity_matrix(index) -> tuple[sp.csr_matrix, np.ndarray]:
    """Chunks x entities (links), and each entity's chunk count."""
    keys = {k: i for i, k in enumerate(index.entities)}
    rows, cols = [], []
    for c, cid in enumerate(index.chunk_order):
        for k in index.chunks[cid].entities:
            if k in keys:
                rows.append(c)
                cols.append(keys[k])
    m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(index.chunk_order), len(keys)))
    return m, np.asarray(m.sum(axis=0)).ravel()


def probe(work: Path, ds: str, texts: list[str]) -> list[str]:
    """The table of one dataset; ``texts``: its questions with gold, in the order of ``rankings.json``."""
    from llama_index_graphrag_suite.embeddings import resolve_embed_model
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods.guard import signals as guard

    data = json.loads((work / ds / "rankings.json").read_text())
    index = GraphRAGIndex.load(work / ds / "index", embed_model=resolve_embed_model("all-MiniLM-L6-v2"),
                               show_progress=False)
    doc_of, golds, n = data["doc_of"], data["gold"], len(index.chunk_order)
    links, chunk_count = entity_matrix(index)
    idf = np.log(1 + n / np.maximum(chunk_count, 1))
    specific = chunk_count <= guard.hub_chunks(n, 0.05, 20)
    weighted = links @ sp.diags(idf * specific)
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel()) + 1e-12
    unit = sp.diags(1.0 / norms) @ weighted
    key_pos = {k: i for i, k in enumerate(index.entities)}
    titles = [index.chunks[cid].title for cid in index.chunk_order]

    rows: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        rows.setdefault(name, []).append(value)

    for i, (hyb_list, gold) in enumerate(zip(data["hybrid"], golds)):
        hyb = np.asarray(hyb_list, np.int64)
        for k in (5, 10, 20):
            add(f"hybrid @{k}", recall(hyb_list, doc_of, gold, k))
        own = data["methods"].get("a2rag@5", [[]] * len(golds))[i]
        add("a2rag own ranking", recall(own, doc_of, gold))
        add("better of hybrid and a2rag own (oracle)", max(recall(hyb_list, doc_of, gold), recall(own, doc_of, gold)))
        _, keys = guard.query_link(index, texts[i], n)
        cols = [key_pos[k] for k in keys if k in key_pos]
        held = links[hyb][:, cols].toarray() if cols else np.zeros((hyb.size, 0))
        signals = {"coverage": guard.entity_coverage(index, keys, hyb)}  # the guard's own signal
        for name, weights in (("coverage_idf", idf[cols]), ("coverage_words", np.array([len(k.split()) for k in keys
                                                                                          if k in key_pos], float))):
            signals[name] = held @ weights / weights.sum() if cols else np.zeros(hyb.size)
        for name, signal in signals.items():
            for gain in GAINS:
                add(f"{name}, gain {gain}", recall(guard.linked_hybrid(hyb, signal, gain).tolist(), doc_of, gold))
        for top in (3, 5, 10):
            weights = 1.0 / (np.arange(top) + 2.0)
            centre = unit[hyb[:top]].T @ weights
            sim = np.asarray(unit[hyb] @ centre).ravel()
            sim[:top] -= weights  # a top chunk's own share of the centre is no evidence
            sim = sim / sim.max() if sim.max() > 0 else sim
            for gain in GAINS:
                order = guard.linked_hybrid(hyb, sim, gain).tolist()
                add(f"graph_prf top {top}, gain {gain}", recall(order, doc_of, gold))
        for top in (1, 2):
            near = _neighbours(hyb[:top], titles)
            candidates = np.asarray(list(dict.fromkeys(hyb.tolist() + sorted(near))), np.int64)
            rank = np.arange(candidates.size)
            base = np.where(rank < hyb.size, 2.0 / (2.0 + rank), 0.0)
            bonus = np.isin(candidates, list(near)).astype(float)
            for gain in GAINS:
                order = candidates[np.lexsort((rank, -(base + gain * bonus)))]
                add(f"next_to_top {top}, gain {gain}", recall(order.tolist(), doc_of, gold))
    rows.update(switch_ceiling(data))
    lines = [f"# {ds} ({len(golds)} questions)", "", "| ranking | recall@5 |", "|---|---:|"]
    lines += [f"| {name} | {100 * float(np.mean(v)):.1f} |" for name, v in rows.items()]
    return lines + [""]


SWITCH_DEPTHS = (1, 2, 3, 4)


def switch_ceiling(data: dict, method: str = "a2rag@5") -> dict[str, np.ndarray]:
    """Per-question recall@5 of choosing hybrid's top 5 or ``method``'s own by a decision tree over the guard's
    signals (see the module doc): fit and measured on the set (in-sample), and 5-fold cross-validated."""
    from sklearn.model_selection import KFold
    from sklearn.tree import DecisionTreeClassifier

    doc_of, golds = data["doc_of"], data["gold"]
    own, hyb, dense, bm25 = data["methods"][method], data["hybrid"], data["dense"], data["bm25"]
    h = np.array([recall(r, doc_of, g) for r, g in zip(hyb, golds)])
    m = np.array([recall(r, doc_of, g) for r, g in zip(own, golds)])

    def overlap(a, b) -> np.ndarray:
        return np.array([len(set(x[:K]) & set(y[:K])) / K for x, y in zip(a, b)])

    cover = np.asarray(data["cover"], float)
    features = np.column_stack(
        [data["link"][rule] for rule in sorted(data["link"])] + [data["link_names"][rule] for rule in
                                                                 sorted(data["link_names"])]
        + [overlap(own, hyb), overlap(own, dense), overlap(own, bm25), overlap(dense, bm25),
           np.array([float(x[:1] == y[:1]) for x, y in zip(own, hyb)]), cover[:, :K].mean(axis=1), cover[:, 0]])
    graph_better, stake = (m > h).astype(int), np.abs(m - h) + 1e-9

    def tree(depth: int) -> DecisionTreeClassifier:
        return DecisionTreeClassifier(max_depth=depth, min_samples_leaf=20, random_state=0)

    out: dict[str, np.ndarray] = {}
    for depth in SWITCH_DEPTHS:
        pick = tree(depth).fit(features, graph_better, sample_weight=stake).predict(features)
        out[f"switch, depth {depth}, in-sample"] = np.where(pick == 1, m, h)
        held_out = np.zeros(len(h), int)
        for fit, test in KFold(5, shuffle=True, random_state=0).split(features):
            held_out[test] = tree(depth).fit(features[fit], graph_better[fit],
                                             sample_weight=stake[fit]).predict(features[test])
        out[f"switch, depth {depth}, 5-fold"] = np.where(held_out == 1, m, h)
    return out


def _neighbours(top: np.ndarray, titles: list[str]) -> set[int]:
    """Chunk positions just before and after each of ``top`` in the corpus order, when they carry the same title
    (the same source document, which a dataset may have split into passages)."""
    out = set()
    for c in top.tolist():
        for other in (c - 1, c + 1):
            if 0 <= other < len(titles) and titles[other] == titles[c]:
                out.add(other)
    return out - set(top.tolist())


def main() -> None:
    args = probe_args(__doc__, "graphrag_bench_medical,covidqa_dev").parse_args()
    lines = ["recall@5 in %, all-MiniLM-L6-v2, the default index; each row re-orders hybrid's top 20 by "
             "`2 / (2 + rank) + gain · signal` (the script's docstring says what each signal is).", ""]
    print("\n".join(lines + probe_each_set(args, probe)))


if __name__ == "__main__":
    main()
