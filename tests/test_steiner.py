"""Mehlhorn's Steiner tree on scipy.sparse: validity, the 2-approximation, and parity with networkx."""

import itertools

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph.steiner import steiner_tree


def random_graph(n, p, seed):
    rng = np.random.default_rng(seed)
    g = nx.connected_watts_strogatz_graph(n, 4, p, seed=int(seed))
    for u, v in g.edges:
        g[u][v]["weight"] = float(rng.uniform(0.05, 1.0))
    return g, rng


def to_sparse(g):
    n = g.number_of_nodes()
    rows, cols, data = zip(*((u, v, d["weight"]) for u, v, d in g.edges(data=True)))
    return sp.csr_matrix((data, (rows, cols)), shape=(n, n))


def assert_valid_tree(edges, terminals):
    t = nx.Graph()
    t.add_edges_from((u, v) for u, v, _ in edges)
    assert nx.is_tree(t)
    assert set(terminals) <= set(t.nodes)
    leaves = [x for x in t.nodes if t.degree(x) == 1]
    assert set(leaves) <= set(terminals)  # no useless branch


@pytest.mark.parametrize("seed", range(8))
def test_equal_cost_to_networkx_mehlhorn(seed):
    g, rng = random_graph(60, 0.3, seed)
    terminals = rng.choice(60, size=int(rng.integers(2, 9)), replace=False).tolist()
    ours = steiner_tree(to_sparse(g), terminals)
    assert_valid_tree(ours, terminals)
    theirs = nx.algorithms.approximation.steiner_tree(g, terminals, weight="weight", method="mehlhorn")
    assert sum(c for _, _, c in ours) == pytest.approx(theirs.size(weight="weight"), abs=1e-9)
    for u, v, c in ours:
        assert c == pytest.approx(g[u][v]["weight"])


def optimum(g, terminals):
    others = [x for x in g.nodes if x not in terminals]
    best = np.inf
    for r in range(len(others) + 1):
        for extra in itertools.combinations(others, r):
            sub = g.subgraph(list(terminals) + list(extra))
            if nx.is_connected(sub):
                best = min(best, nx.minimum_spanning_tree(sub).size(weight="weight"))
    return best


@pytest.mark.parametrize("seed", range(6))
def test_within_twice_the_brute_forced_optimum(seed):
    g, rng = random_graph(9, 0.5, 100 + seed)
    terminals = rng.choice(9, size=4, replace=False).tolist()
    ours = steiner_tree(to_sparse(g), terminals)
    assert_valid_tree(ours, terminals)
    assert sum(c for _, _, c in ours) <= 2 * optimum(g, terminals) + 1e-9


def test_parallel_edges_keep_the_cheapest_and_small_cases():
    m = sp.csr_matrix(([5.0, 1.0, 2.0], ([0, 1, 1], [1, 0, 2])), shape=(3, 3))  # 0-1 twice (5 and 1), 1-2
    assert steiner_tree(m, [0, 2]) == [(0, 1, 1.0), (1, 2, 2.0)]
    assert steiner_tree(m, [1]) == []
    zero = sp.csr_matrix(([0.0, 0.0], ([0, 1], [1, 2])), shape=(3, 3))  # free edges are still edges
    assert [(u, v) for u, v, _ in steiner_tree(zero, [0, 2])] == [(0, 1), (1, 2)]
    split = sp.csr_matrix(([1.0], ([0], [1])), shape=(3, 3))
    with pytest.raises(ValueError, match="not connected"):
        steiner_tree(split, [0, 2])


@pytest.mark.parametrize("seed", range(6))
def test_a_bounded_search_on_a_lent_distance_array_finds_dijkstras_nodes_and_gives_it_back_all_inf(seed):
    import scipy.sparse as sp
    from scipy.sparse.csgraph import dijkstra

    from llama_index_graphrag_suite.graph.costs import CSRCosts
    from llama_index_graphrag_suite.graph.steiner import Ball, ball, symmetric_min

    rng = np.random.default_rng(seed)
    n, m = 200, 600
    costs = symmetric_min(sp.coo_matrix((np.round(rng.random(m), 1), (rng.integers(0, n, m), rng.integers(0, n, m))),
                                        shape=(n, n)))
    graph = CSRCosts(costs)
    scratch = np.full(n, np.inf)
    for limit in (0.0, 0.3, 0.7, 1.5):
        sources = rng.choice(n, 3, replace=False)
        expected = np.flatnonzero(dijkstra(costs, indices=sources, min_only=True, limit=limit) <= limit)
        np.testing.assert_array_equal(ball(graph, sources, limit), expected)
        np.testing.assert_array_equal(ball(graph, sources, limit, dist=scratch), expected)
        assert np.isinf(scratch).all()
        assert ball(graph, sources, limit, max_entries=1, dist=scratch) is None or expected.size <= 3
        assert np.isinf(scratch).all()
    near = Ball(graph, [0, 1])  # a growing search reports every node within the last limit
    for limit in (0.2, 0.5, 0.9):
        expected = np.flatnonzero(dijkstra(costs, indices=[0, 1], min_only=True, limit=limit) <= limit)
        np.testing.assert_array_equal(near.grow(limit), expected)
    assert np.isinf(near.release()).all() and near.grow(2.0) is None
