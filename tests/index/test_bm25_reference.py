"""The index's BM25 (kept as counts an insert extends, index/bm25.py) scores as bm25s does, on every shared set:
the same scores up to float32 rounding and the same top 5 for every question, so replacing bm25s moved no ranking."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

SETS = Path(__file__).resolve().parents[3] / "shared" / "datasets"
NAMES = ["2wiki_retrieval101", "hotpotqa_train100", "musique_train100", "covidqa_dev", "graphrag_bench_medical"]


@pytest.mark.parametrize("name", NAMES)
def test_scores_and_top5_equal_bm25s_on_the_shared_set(name):
    bm25s = pytest.importorskip("bm25s")
    if not (SETS / name).is_dir():
        pytest.skip(f"no shared set {name} beside the clone")
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index.bm25 import BM25Table, bm25_tokens

    ds = load_dataset(str(SETS / name))
    texts = [d.text for d in ds.documents]
    ours = BM25Table(texts, ids=[str(i) for i in range(len(texts))])
    vocab: dict[str, int] = {}
    ids = [[vocab.setdefault(t, len(vocab)) for t in bm25_tokens(x)] for x in texts]
    reference = bm25s.BM25(k1=1.5, b=0.75)
    reference.index(bm25s.tokenization.Tokenized(ids=ids, vocab=vocab), show_progress=False)
    for q in ds.questions:
        terms = [vocab[t] for t in bm25_tokens(q.question) if t in vocab]
        want = np.asarray(reference.get_scores(terms), np.float32) if terms else np.zeros(len(texts), np.float32)
        got = ours.scores(q.question)
        np.testing.assert_allclose(got, want, atol=1e-5)
        assert list(np.argsort(-got, kind="stable")[:5]) == list(np.argsort(-want, kind="stable")[:5]), q.question


def test_rows_with_all_finds_the_chunks_writing_every_word_of_a_name():
    from llama_index_graphrag_suite.index.bm25 import BM25Table, bm25_tokens

    table = BM25Table(["Lasgel Hollow River runs north.", "The river is wide.", "A hollow tree.", "Lasgel and the river"],
                      ids=["a", "b", "c", "d"])
    assert table.rows_with_all([bm25_tokens("Lasgel Hollow River"), bm25_tokens("tree")]).tolist() == [0, 2]
    assert table.rows_with_all([bm25_tokens("Lasgel river")]).tolist() == [0, 3]
    assert table.rows_with_all([bm25_tokens("Lasgel Ghost")]).tolist() == []  # a word no chunk has


def test_rows_with_all_equals_reading_every_chunk_on_random_texts():
    from llama_index_graphrag_suite.index.bm25 import BM25Table, bm25_tokens

    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(40)]  # a few words in most texts, most in few (Zipf-like)
    texts = [" ".join(rng.choice(words, size=12, p=np.r_[[0.3], np.full(39, 0.7 / 39)])) for _ in range(500)]
    table = BM25Table(texts, ids=[str(i) for i in range(len(texts))])
    names = [" ".join(rng.choice(words, size=int(rng.integers(1, 4)), replace=False)) for _ in range(60)]
    groups = [bm25_tokens(n) for n in names]
    want = sorted(r for r, t in enumerate(texts) if any(set(g) <= set(bm25_tokens(t)) for g in groups))
    assert table.rows_with_all(groups).tolist() == want


@pytest.mark.parametrize("entities", ["statistical", "ner"])
def test_an_insert_links_the_same_older_chunks_through_bm25_as_by_reading_every_chunk(monkeypatch, entities):
    """The link step asks BM25's term columns which older chunks write every word of a new name (build.py); on a slice
    of a shared set, two inserts give the links, relations and supports of reading every older chunk."""
    if not (SETS / "hotpotqa_train100").is_dir():
        pytest.skip("no shared set hotpotqa_train100 beside the clone")
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import rows

    docs = load_dataset(str(SETS / "hotpotqa_train100")).documents[:400]

    def tables():
        index = GraphRAGIndex.from_documents(docs[:300], embed_model="hash", config=IndexConfig(entities=entities))
        index.insert(docs[300:350])
        index.insert(docs[350:])
        assert any(rec["links"] for rec in index.state.provenance)  # the inserts did link older chunks
        return ({c: r.entities for c, r in index.chunks.items()}, {k: e.chunks for k, e in index.entities.items()},
                {f: x.chunks for f, x in index.facts.items()})

    through_bm25 = tables()
    monkeypatch.setattr(rows, "chunks_that_may_mention",
                        lambda state, keys, new: [c for c in state.chunks if c not in new])
    assert through_bm25 == tables()
