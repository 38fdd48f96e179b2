"""The best sentence as a third score of the hybrid base (methods/query_scores.py: ``sentence_scores``,
``three_way``, ``sentence_base``) and the guard's ``guard_best_sentence`` setting, on hand-written inputs."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.methods.query_scores import (best_sentence, bm25_scores, dense_scores, hybrid_scores,
                                                             sentence_base, sentence_chunk_pairs, sentence_scores,
                                                             shared_query_scores, three_way)
from llama_index_graphrag_suite.methods.scoring import hybrid, top_k

SECOND_SENTENCE = "She studied at the Vant Gallery school."


@pytest.fixture(scope="module")
def index():
    from conftest import GALLERY_TEXTS, UNRELATED_TEXTS, index_of_texts

    return index_of_texts({**GALLERY_TEXTS, **UNRELATED_TEXTS})


def test_best_sentence_takes_each_chunks_largest_sentence_and_keeps_the_fallback_elsewhere():
    sims = np.array([0.1, 0.9, 0.3, 0.5, 0.2], np.float32)  # five sentences
    # chunk 0 states sentences 0 and 1, chunk 2 states 3, 4 and 2 (any order); chunk 1 states none
    starts, chunks, rows = np.array([0, 2]), np.array([0, 2]), np.array([0, 1, 3, 4, 2])
    fallback = np.array([0.4, 0.6, 0.7], np.float32)
    out = best_sentence(sims, starts, chunks, rows, fallback)
    assert out.tolist() == pytest.approx([0.9, 0.6, 0.5])
    assert fallback.tolist() == pytest.approx([0.4, 0.6, 0.7])  # the fallback is not written to
    assert best_sentence(sims, np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64),
                         fallback).tolist() == pytest.approx(fallback.tolist())


def test_three_way_weighs_the_three_min_max_scaled_scores_equally():
    dense = np.array([0.2, 0.4, 0.6])  # min-max: 0, 0.5, 1
    sparse = np.array([3.0, 0.0, 0.0])  # 1, 0, 0
    sentence = np.array([0.5, 0.9, 0.1])  # 0.5, 1, 0
    assert three_way(dense, sparse, sentence).tolist() == pytest.approx([0.5, 0.5, 1 / 3])
    # a third score that orders as dense does leans the fusion to dense, from hybrid's tie to dense's first
    assert top_k(hybrid(np.array([0.1, 0.3]), np.array([1.0, 0.0])), 1).tolist() == [0]
    assert top_k(three_way(np.array([0.1, 0.3]), np.array([1.0, 0.0]), np.array([0.1, 0.3])), 1).tolist() == [1]


def test_a_chunk_scores_its_best_fact_sentence_and_a_chunk_without_facts_its_own_cosine(index):
    position = index.chunk_position
    scores = sentence_scores(index, SECOND_SENTENCE)
    dense = dense_scores(index, SECOND_SENTENCE)
    ada = position["ada#0"]
    assert scores[ada] == pytest.approx(1.0, abs=1e-5)  # the question is the chunk's second sentence
    assert dense[ada] < 0.99  # the whole chunk (two sentences) is further from it
    stating = set(sentence_chunk_pairs(index)[1].tolist())
    for cid in ("tea#0", "bread#0", "rain#0"):  # no fact, so no fact sentence: the chunk is its one sentence
        assert position[cid] not in stating
        assert scores[position[cid]] == pytest.approx(dense[position[cid]])


def test_every_sentence_a_chunk_is_scored_by_is_a_fact_text_of_that_chunk(index):
    starts, chunks, rows = sentence_chunk_pairs(index)
    ends = np.r_[starts[1:], rows.size]
    texts = {}
    for fid, row in zip(index.fact_ids, np.asarray(index.fact_text_rows).tolist()):
        texts.setdefault(row, set()).add(fid)
    order = index.chunk_order
    for c, a, z in zip(chunks.tolist(), starts.tolist(), ends.tolist()):
        for row in rows[a:z].tolist():
            assert any(order[c] in index.facts[fid].chunks for fid in texts[row])


def test_hybrid_scores_take_the_sentence_only_inside_the_block(index):
    question = "Who founded the Vant Gallery?"
    plain = hybrid(dense_scores(index, question), bm25_scores(index, question))
    with shared_query_scores():
        assert hybrid_scores(index, question) == pytest.approx(plain)
        with sentence_base():
            three = hybrid_scores(index, question)
            assert three == pytest.approx(three_way(dense_scores(index, question), bm25_scores(index, question),
                                                    sentence_scores(index, question)))
            with sentence_base(False):  # switched back off inside
                assert hybrid_scores(index, question) == pytest.approx(plain)
        assert hybrid_scores(index, question) == pytest.approx(plain)  # the block's scores did not leak
    assert not np.allclose(three, plain)


@pytest.mark.parametrize("method", ["agrag", "hipporag"])
def test_the_guard_fuses_with_the_base_its_setting_names(index, method, monkeypatch):
    from llama_index_graphrag_suite.methods.guard import fusion
    from llama_index_graphrag_suite.registry import get_retriever

    seen: list[np.ndarray] = []
    real = fusion.hybrid_scores
    monkeypatch.setattr(fusion, "hybrid_scores", lambda ix, q: seen.append(real(ix, q)) or seen[-1])
    question = "Who founded the Vant Gallery?"
    expected = {False: hybrid(dense_scores(index, question), bm25_scores(index, question)),
                True: three_way(dense_scores(index, question), bm25_scores(index, question),
                                sentence_scores(index, question))}
    for on in (False, True):
        seen.clear()
        get_retriever(index, method, top_k=3, guard_best_sentence=on).retrieve(question)
        assert seen and seen[-1] == pytest.approx(expected[on])
    default = get_retriever(index, method)
    assert default.guard_config.guard_best_sentence is None and default.reads_best_sentence is False  # hash embedding


def test_the_default_reads_the_best_sentence_with_a_model_and_not_with_the_hash_embedding(index, monkeypatch):
    from llama_index.core.embeddings import MockEmbedding

    from llama_index_graphrag_suite.methods.query_scores import sentences_carry_meaning
    from llama_index_graphrag_suite.registry import get_retriever

    assert not sentences_carry_meaning(index)  # the fixture's hash embedding
    retriever = get_retriever(index, "agrag")
    monkeypatch.setattr(index.state, "embed_model", MockEmbedding(embed_dim=64))  # any model but the hash one
    assert sentences_carry_meaning(index) and retriever.reads_best_sentence
    assert get_retriever(index, "agrag", guard_best_sentence=False).reads_best_sentence is False


def test_a_loaded_index_reads_the_same_pairs_off_its_fact_columns(index, tmp_path):
    from llama_index_graphrag_suite.index import GraphRAGIndex

    index.persist(tmp_path / "ix")
    loaded = GraphRAGIndex.load(tmp_path / "ix", embed_model=index.state.embed_model)
    assert hasattr(loaded.facts, "arrow_column") and not hasattr(index.facts, "arrow_column")  # the two paths
    assert loaded.chunk_order == index.chunk_order
    for built, read in zip(sentence_chunk_pairs(index), sentence_chunk_pairs(loaded)):
        assert built.tolist() == read.tolist()
    assert sentence_scores(loaded, SECOND_SENTENCE) == pytest.approx(sentence_scores(index, SECOND_SENTENCE))


def test_groups_of_picks_the_wanted_chunks_sentences_group_by_group():
    from llama_index_graphrag_suite.methods.query_scores import groups_of

    # chunk 0: rows 0-1, chunk 2: rows 2-4, chunk 5: row 5 (as sentence_chunk_pairs gives them)
    starts, chunks = np.array([0, 2, 5]), np.array([0, 2, 5])
    new_starts, got_chunks, picked = groups_of(starts, chunks, 6, np.array([5, 1, 2, 9]))  # 1 and 9 state none
    assert got_chunks.tolist() == [2, 5] and new_starts.tolist() == [0, 3] and picked.tolist() == [2, 3, 4, 5]
    assert [a.size for a in groups_of(starts, chunks, 6, np.array([1, 3]))] == [0, 0, 0]


def test_on_a_listed_fact_table_the_leaders_best_sentences_are_exact_and_the_rest_keep_dense(index, monkeypatch):
    """A list's estimate must not rank as a sentence score: on a listed fact table the leaders of dense and BM25 are
    scored by their sentences' exact cosines, every other chunk by its own dense cosine."""
    from llama_index_graphrag_suite.graph import vector_lists
    from llama_index_graphrag_suite.methods import query_scores

    question = SECOND_SENTENCE
    exact = sentence_scores(index, question)
    dense = dense_scores(index, question)
    table = index.fact_vectors
    saved = table.lists
    lists = vector_lists.train_lists(table.vectors(), nlist=3)
    lists.moves = table.moves
    monkeypatch.setattr(query_scores, "SENTENCE_LEADERS", 2)
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 1)
    table.lists = lists
    try:
        assert table.listed
        got = sentence_scores(index, question)
    finally:
        table.lists = saved
    leaders = set(top_k(dense, 2).tolist()) | set(top_k(bm25_scores(index, question), 2).tolist())
    assert leaders and index.chunk_position["ada#0"] in leaders
    for position in range(len(index.chunk_order)):
        expected = exact[position] if position in leaders else dense[position]
        assert got[position] == pytest.approx(expected, abs=1e-6)


def test_agrag_with_the_sentence_base_reads_every_fact_texts_cosine_once(index, monkeypatch):
    """The best sentence and AGRAG's fact mapping (and Eq. 14's fact costs) need the cosine of the question with
    every fact text: one pass over the fact table per retrieval, not one each (query_scores.fact_text_cosines)."""
    from llama_index_graphrag_suite.registry import get_retriever

    table = index.fact_vectors
    passes = []
    real = table.scores
    monkeypatch.setattr(table, "scores", lambda query, *a, **k: passes.append(1) or real(query, *a, **k))
    question = "Where did the painter of the Vant Gallery portrait study?"
    retriever = get_retriever(index, "agrag", top_k=3, guard_best_sentence=True)
    first = [(n.node.node_id, n.score) for n in retriever.retrieve(question)]
    assert len(passes) == 1
    monkeypatch.setattr(table, "scores", real)
    assert [(n.node.node_id, n.score) for n in retriever.retrieve(question)] == first  # the same ranking
