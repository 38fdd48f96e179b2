"""AGRAG's per-query work without arrays of the whole graph, against the plain versions it replaced:

* fact slots derived where a search reads them (``graph/costs.CosineSlots``) instead of written for every fact;
* the local push's estimate and residual arrays kept between calls (``ppr_push.forward_push_reached``) and its
  totals summed without an array of every node (``ppr_push.pairwise_total``);
* AGRAG's PageRank array zeroed where the last query wrote instead of everywhere.

Each is compared bit for bit with the plain computation on small graphs.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph import ppr, ppr_push
from llama_index_graphrag_suite.graph import steiner as steiner_module
from llama_index_graphrag_suite.graph.costs import CosineSlots
from llama_index_graphrag_suite.graph.steiner import steiner_tree
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
from llama_index_graphrag_suite.methods.agrag import retriever as agrag_module
from llama_index_graphrag_suite.methods.query_scores import hybrid_scores

from test_agrag_costs import QUESTIONS, random_instance


def _derived_instance(seed: int, dtype):
    """A random cost graph whose first slots come from cosines (some repeated: texts shared by facts), and the
    dense slot vector holding the same values."""
    rng, n, pairs, w, _ = random_instance(seed)
    count = int(rng.integers(1, pairs.num_slots + 1))
    levels = int(rng.integers(2, 9))  # quantised cosines: equal costs are common
    cosines = (np.round(rng.uniform(-1.0, 1.0, count // 2 + 1) * levels) / levels).astype(dtype)
    rows = rng.integers(0, cosines.size, count)
    dense = w.copy()
    dense[:count] = ((1.0 - cosines) / 2.0).astype(np.float64)[rows]
    lazy = w.copy()
    lazy[:count] = np.nan  # never read
    return rng, n, pairs, dense, lazy, CosineSlots(cosines, rows)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(10))
def test_derived_fact_slots_price_every_entry_as_the_written_slots(seed, dtype):
    rng, n, pairs, dense, lazy, derived = _derived_instance(seed, dtype)
    plain, query = pairs.query(dense), pairs.query(lazy, derived)
    rows = rng.choice(n, size=n // 2, replace=False)
    np.testing.assert_array_equal(query.gather(rows)[2], plain.gather(rows)[2])
    np.testing.assert_array_equal(query.entry_costs(np.arange(query.indices.size)),
                                  plain.entry_costs(np.arange(plain.indices.size)))
    for p in range(pairs.num_pairs):
        u, v = int(pairs.pair_lo[p]), int(pairs.pair_hi[p])
        assert query.best_edge(u, v) == plain.best_edge(u, v)
    assert (query.to_csr() != plain.to_csr()).nnz == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("seed", range(10))
def test_derived_fact_slots_give_the_same_tree_down_the_compiled_search(seed, dtype, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setattr(steiner_module, "COMPILED_MIN_ENTRIES", 0)
    rng, n, pairs, dense, lazy, derived = _derived_instance(seed, dtype)
    for _ in range(3):
        terminals = rng.choice(n, size=int(rng.integers(2, min(n, 9) + 1)), replace=False).tolist()
        plain, query = pairs.query(dense), pairs.query(lazy, derived)
        assert steiner_tree(query, terminals) == steiner_tree(plain, terminals)
        priced = np.flatnonzero(query._priced)  # what the compiled search priced equals the written slots' prices
        np.testing.assert_array_equal(query.gather(priced)[2], plain.gather(priced)[2])


def test_pairwise_total_is_numpys_sum_of_the_dense_array():
    rng = np.random.default_rng(3)
    for n in (1, 7, 8, 9, 127, 128, 129, 1000, 8192, 8193, 100_003, 1_048_583):
        for _ in range(4):
            k = int(rng.integers(1, min(n, 5000) + 1))
            positions = rng.choice(n, k, replace=False)
            values = rng.random(k) * 10.0 ** rng.integers(-12, 3, k)
            dense = np.zeros(n)
            dense[positions] = values
            assert ppr_push.pairwise_total(positions, values, n) == dense.sum()


def test_pushes_in_a_row_reuse_zeroed_arrays_and_equal_fresh_pushes():
    rng = np.random.default_rng(5)
    for t in range(12):
        n = int(rng.integers(50, 2000))
        m = int(rng.integers(n, 6 * n))
        a = sp.coo_matrix((rng.random(m), (rng.integers(0, n, m), rng.integers(0, n, m))), shape=(n, n)).tocsr()
        a = (a + a.T).tocsr()
        a.sort_indices()
        data = a.data if t % 2 else None
        degree = np.asarray(a.sum(axis=1)).ravel() if data is not None else np.diff(a.indptr).astype(float)
        for _ in range(4):  # the same graph: the kept arrays come back zeroed
            seeds = rng.choice(n, int(rng.integers(1, 6)), replace=False)
            weights = rng.random(seeds.size) + 0.1
            eps = 10.0 ** -int(rng.integers(3, 8))
            y, entries = ppr_push.forward_push(a.indptr, a.indices, data, degree, seeds, weights, 0.5, eps)
            rows, values, read = ppr_push.forward_push_reached(a.indptr, a.indices, data, degree, seeds, weights,
                                                               0.5, eps)
            np.testing.assert_array_equal(rows, np.flatnonzero(y))
            np.testing.assert_array_equal(values, y[rows])
            assert read == entries


def test_agrag_pagerank_arrays_in_a_row_equal_the_dense_scores(monkeypatch):
    """Queries in a row on one retriever (its PageRank array zeroed only where the last push wrote) against the
    dense path's scores of every node."""
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    from conftest import CORPUS

    for name, value in (("FAST_MIN_NNZ", 0), ("PUSH_MIN_NNZ", 0), ("PUSH_MAX_RESET_SHARE", 1.0)):
        monkeypatch.setattr(ppr, name, value)
    index = GraphRAGIndex.from_documents([make_document(i, text, title) for i, title, text in CORPUS],
                                         embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    retriever = AGRAGRetriever(index, push_eps=ppr.PUSH_EPS)  # the dense path's bound: the same bits
    graph = retriever._graph()
    assert graph.transition.pushes
    n = graph.num_nodes
    sets = [[0, 3, 7], [1], [2, 5, n - 1], [0, 3, 7], [4, 6]]
    pushed = [retriever._ppr_scores(graph, t).copy() for t in sets]
    dense_path = AGRAGRetriever(index, push_eps=ppr.PUSH_EPS)
    monkeypatch.setattr(agrag_module, "pushed_pagerank", lambda *a, **k: None)
    for terminals, scores in zip(sets, pushed):
        np.testing.assert_array_equal(scores, dense_path._ppr_scores(dense_path._graph(), terminals))


@pytest.mark.parametrize("question", QUESTIONS)
def test_agrag_query_costs_equal_the_written_slots(graph_index, question):
    retriever = AGRAGRetriever(graph_index)
    graph = retriever._graph()
    q = graph_index.embed_query(question)
    hyb = hybrid_scores(graph_index, question)
    sims = graph_index.fact_vectors.scores(q)
    plain = graph.pairs.query(retriever._slot_costs(graph, q, hyb, sims).copy())
    graph.buffer("slots", graph.pairs.num_slots)[:graph.num_facts] = np.nan  # fact slots must not be read
    lazy = retriever._query_costs(graph, q, hyb, sims)
    assert graph.num_facts and np.isnan(lazy.slot_costs[:graph.num_facts]).all()
    everything = np.arange(plain.indices.size)
    np.testing.assert_array_equal(lazy.entry_costs(everything), plain.entry_costs(everything))


@pytest.fixture
def listed_facts(graph_index):
    from llama_index_graphrag_suite.graph.vector_lists import train_lists

    table = graph_index.fact_vectors
    saved = table.lists
    lists = train_lists(table.vectors(), nlist=6)
    lists.moves = table.moves
    table.lists = lists
    assert table.listed
    yield graph_index
    table.lists = saved


@pytest.mark.parametrize("nprobe", [1, 2, 3, 10**6])
@pytest.mark.parametrize("question", QUESTIONS)
def test_listed_fact_cosines_give_the_array_facts_and_slots(listed_facts, question, nprobe, monkeypatch):
    """On a listed fact table the mapped facts and every fact slot's value, from the probed rows and the lists'
    estimates, equal those from ``VectorTable.scores``' array; and so do the retrieval's answers, down the
    compiled search too."""
    from llama_index_graphrag_suite.graph import vector_lists
    from llama_index_graphrag_suite.methods.agrag import fact_cosines
    from llama_index_graphrag_suite.methods.baselines import facts_from_cosines

    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", nprobe)
    index = listed_facts
    q = index.embed_query(question)
    every = index.fact_vectors.scores(q)
    cosines, mapped = fact_cosines.map_facts(index, q, 5)
    assert mapped == facts_from_cosines(index, every, 5)
    assert (cosines.every is None) or nprobe < 3  # with few rows probed the k-th may tie the cap: the array
    rows = np.asarray(index.fact_text_rows)
    np.testing.assert_array_equal(cosines.slots(index, rows).values(np.arange(rows.size)),
                                  ((1.0 - every) / 2.0).astype(np.float64)[rows])
    retriever = AGRAGRetriever(index)
    monkeypatch.setattr(steiner_module, "COMPILED_MIN_ENTRIES", 0)
    answers = [(n.node.node_id, n.score, n.node.get_content()) for n in retriever.retrieve(question)]
    monkeypatch.setattr(fact_cosines, "_listed", lambda *a: None)  # the array path
    assert answers == [(n.node.node_id, n.score, n.node.get_content()) for n in retriever.retrieve(question)]




@pytest.mark.parametrize("question", QUESTIONS)
def test_listed_fact_mapping_with_a_tie_at_the_kth_takes_the_array(listed_facts, question, monkeypatch):
    """Rows tied at the k-th cosine: the array's argpartition picks among them, so the array path runs."""
    from llama_index_graphrag_suite.graph import vector_lists
    from llama_index_graphrag_suite.methods.agrag import fact_cosines
    from llama_index_graphrag_suite.methods.baselines import facts_from_cosines

    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 10**6)
    index = listed_facts
    lists = index.fact_vectors.lists
    real = lists.probed_scores

    def tied(q, probed, rows_of):  # the 6th best exact cosine made equal to the 5th (both paths read this)
        rows, sims = real(q, probed, rows_of)
        sims = sims.copy()
        order = np.lexsort((rows, -sims))
        sims[order[5]] = sims[order[4]]
        return rows, sims

    monkeypatch.setattr(lists, "probed_scores", tied)
    q = index.embed_query(question)
    cosines, mapped = fact_cosines.map_facts(index, q, 5)
    assert cosines.every is not None
    assert mapped == facts_from_cosines(index, index.fact_vectors.scores(q), 5)


def test_mcmi_expansions_in_a_row_leave_their_kept_arrays_reset():
    """mcmi_expand keeps its per-node arrays for the next call: equal to the heap reference call after call
    (tests/test_agrag_costs.py checks each), and all False / inf / -1 again after each."""
    from llama_index_graphrag_suite.graph import mcmi
    from test_agrag_costs import reference_mcmi, reference_steiner_tree

    for seed in range(6):
        rng, n, pairs, w, _ = random_instance(500 + seed, n_range=(60, 61))  # one node count: the arrays are reused
        full, _ = pairs.matrix(pairs.edge_costs(w))
        terminals = rng.choice(n, size=4, replace=False).tolist()
        tree = reference_steiner_tree(full, terminals)
        scores = np.round(rng.random(n) * 4) / 4 * (rng.random(n) < 0.8)
        for max_iter in (1, 20):
            got = mcmi.mcmi_expand(pairs.query(w), scores, tree, terminals, max_iter, "sum")
            expected = reference_mcmi(full, scores, tree, terminals, max_iter, "sum")
            assert (got.nodes, got.edges, got.added) == expected[:3]
            in_nodes, key, pos = mcmi._idle.arrays
            assert not in_nodes.any() and np.isinf(key).all() and (pos == -1).all()
