"""The compiled Steiner searches (graph/steiner_search.py) against the numpy/scipy ones, on small graphs forced
down the compiled path (``COMPILED_MIN_ENTRIES = 0``; by default only graphs of a million row entries take it)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from llama_index_graphrag_suite.graph import steiner as steiner_module
from llama_index_graphrag_suite.graph import steiner_search
from llama_index_graphrag_suite.graph.costs import CSRCosts, PairCostIndex
from llama_index_graphrag_suite.graph.steiner import steiner_tree
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever

from test_agrag_costs import QUESTIONS, local_instance, random_instance, reference_steiner_tree, reference_terminal_mst

pytest.importorskip("numba")


@pytest.fixture
def compiled(monkeypatch):
    monkeypatch.setattr(steiner_module, "COMPILED_MIN_ENTRIES", 0)


def _tree_checks(tree, terminals, full):
    t = nx.Graph()
    t.add_edges_from((u, v) for u, v, _ in tree)
    assert nx.is_tree(t) and set(terminals) <= set(t.nodes)
    assert {x for x in t.nodes if t.degree(x) == 1} <= set(terminals)
    for u, v, c in tree:
        assert c == pytest.approx(max(full[u, v] - 1e-12, 0.0), abs=1e-12)


@pytest.mark.parametrize("seed", range(40))
def test_unique_costs_give_the_scipy_tree_and_prices_equal_the_numpy_ones(seed, compiled):
    """One uniform cost per edge (every shortest path unique): the same tree as the whole-graph reference."""
    rng, n, _, _, (src, dst, _, _) = random_instance(seed, n_range=(20, 400))
    pairs = PairCostIndex(src, dst, n)
    w = rng.uniform(0.01, 1.0, src.size)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    for _ in range(3):
        terminals = rng.choice(n, size=int(rng.integers(2, min(n, 12) + 1)), replace=False).tolist()
        query, stats = pairs.query(w), {}
        assert steiner_tree(query, terminals, max_entries=None, stats=stats) == reference_steiner_tree(full, terminals)
        assert stats["compiled"] and not stats["voronoi_stopped"]
        assert steiner_tree(CSRCosts(full), terminals, max_entries=None) == reference_steiner_tree(full, terminals)


@pytest.mark.parametrize("seed", range(40))
def test_equal_costs_give_a_tree_of_the_same_terminal_graph(seed, compiled):
    """Quantised costs (ties everywhere): a valid tree whose cost is within the MST of G1' (the 2-approximation's
    bound), and every row the search priced the numpy
    price (two-slot entries and multi-edge pairs' minima included)."""
    rng, n, pairs, w, _ = random_instance(seed)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    for _ in range(3):
        terminals = rng.choice(n, size=int(rng.integers(2, min(n, 9) + 1)), replace=False).tolist()
        query = pairs.query(w)
        tree = steiner_tree(query, terminals, max_entries=None)
        _tree_checks(tree, terminals, full)
        rows = np.flatnonzero(query._priced)
        entries = np.concatenate([np.arange(full.indptr[r], full.indptr[r + 1]) for r in rows])
        np.testing.assert_array_equal(query._data[entries], full.data[entries])
        mst1 = reference_terminal_mst(full, np.unique(terminals), np.inf)
        assert sum(c for *_, c in tree) <= mst1.data.sum() + 1e-9


def test_small_cases_and_errors(compiled):
    import scipy.sparse as sp

    m = sp.csr_matrix(([5.0, 1.0, 2.0], ([0, 1, 1], [1, 0, 2])), shape=(3, 3))
    assert steiner_tree(m, [0, 2]) == [(0, 1, 1.0), (1, 2, 2.0)]
    assert steiner_tree(m, [1]) == []
    zero = sp.csr_matrix(([0.0, 0.0], ([0, 1], [1, 2])), shape=(3, 3))
    assert [(u, v) for u, v, _ in steiner_tree(zero, [0, 2])] == [(0, 1), (1, 2)]
    with pytest.raises(ValueError, match="not connected"):
        steiner_tree(sp.csr_matrix(([1.0], ([0], [1])), shape=(3, 3)), [0, 2])


def test_a_budget_stops_the_search_into_a_forest_and_scratch_is_reset(compiled):
    seen = {"stopped": 0, "whole": 0}
    for seed in range(20):
        rng, n, pairs, w = local_instance(seed, quantised=False)
        full, _ = pairs.matrix(pairs.edge_costs(w))
        for budget in (pairs.indices.size // d for d in (400, 100, 30)):
            start = int(rng.integers(0, n - 80))
            terminals = (start + rng.choice(80, size=int(rng.integers(2, 9)), replace=False)).tolist()
            stats = {}
            got = steiner_tree(pairs.query(w), terminals, max_entries=budget, stats=stats)
            assert stats["voronoi_entries"] <= budget
            if stats["voronoi_stopped"]:
                seen["stopped"] += 1
                forest = nx.Graph()
                forest.add_edges_from((u, v) for u, v, _ in got)
                assert not got or nx.is_forest(forest)
                assert {x for x in forest.nodes if forest.degree(x) == 1} <= set(terminals)
            else:
                seen["whole"] += 1
                assert got == reference_steiner_tree(full, terminals)
        for scratch in steiner_search._pools[pairs]:  # given back as found: every distance inf, every state 0
            assert not scratch.state.any()
            assert np.isinf(scratch.dist).all()
    assert seen["stopped"] and seen["whole"], seen


@pytest.mark.parametrize("question", QUESTIONS)
def test_agrag_retrieval_is_the_same_down_the_compiled_path(graph_index, question, monkeypatch):
    retriever = AGRAGRetriever(graph_index, steiner_first_join=False)  # Mehlhorn's stop: the numpy search's tree
    nodes_before = retriever.retrieve(question)
    monkeypatch.setattr(steiner_module, "COMPILED_MIN_ENTRIES", 0)
    calls = []
    real = steiner_search.compiled_paths
    monkeypatch.setattr(steiner_search, "compiled_paths", lambda *a: calls.append(1) or real(*a))
    nodes_after = retriever.retrieve(question)
    assert [(n.node.node_id, n.score, n.node.get_content()) for n in nodes_after] == \
        [(n.node.node_id, n.score, n.node.get_content()) for n in nodes_before]
    assert calls  # the Steiner search ran down the compiled path


@pytest.mark.parametrize("seed", range(20))
def test_first_join_stops_sooner_with_a_steiner_tree(seed, compiled):
    """``first_join``: the search reads no more than the exact one and still gives a tree over the terminals whose
    leaves are terminals, with the edges' true costs; its cost is at least the optimum's lower bound, half the MST
    of G1' (the 2-approximation's)."""
    rng, n, pairs, w, _ = random_instance(seed)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    for _ in range(3):
        terminals = rng.choice(n, size=int(rng.integers(2, min(n, 9) + 1)), replace=False).tolist()
        exact, early = {}, {}
        steiner_tree(pairs.query(w), terminals, max_entries=None, stats=exact)
        tree = steiner_tree(pairs.query(w), terminals, max_entries=None, stats=early, first_join=True)
        assert early["voronoi_entries"] <= exact["voronoi_entries"]
        _tree_checks(tree, terminals, full)
        mst1 = reference_terminal_mst(full, np.unique(terminals), np.inf)
        assert sum(c for *_, c in tree) >= mst1.data.sum() / 2 - 1e-9


def test_first_join_is_ignored_by_the_numpy_search():
    """Below COMPILED_MIN_ENTRIES (every shared set's graph) the tree is Mehlhorn's whatever ``first_join``."""
    rng, n, pairs, w, _ = random_instance(3)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    terminals = rng.choice(n, size=5, replace=False).tolist()
    assert steiner_tree(pairs.query(w), terminals, first_join=True) == reference_steiner_tree(full, terminals)


@pytest.mark.parametrize("question", QUESTIONS)
def test_agrag_first_join_acts_only_down_the_compiled_path(graph_index, question, monkeypatch):
    """On by default, AGRAG's ``steiner_first_join`` reaches the search; below COMPILED_MIN_ENTRIES (every shared set)
    the retrieval is the exact search's."""
    assert AGRAGRetriever(graph_index).config.steiner_first_join
    exact = AGRAGRetriever(graph_index, steiner_first_join=False).retrieve(question)
    seen = []
    real = steiner_search.compiled_paths
    monkeypatch.setattr(steiner_search, "compiled_paths", lambda *a: seen.append(a[-1]) or real(*a))
    got = AGRAGRetriever(graph_index).retrieve(question)
    assert [(n.node.node_id, n.score) for n in got] == [(n.node.node_id, n.score) for n in exact] and not seen
    monkeypatch.setattr(steiner_module, "COMPILED_MIN_ENTRIES", 0)
    nodes = AGRAGRetriever(graph_index).retrieve(question)
    assert seen == [True] and nodes
