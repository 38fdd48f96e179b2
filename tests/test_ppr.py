"""Personalized PageRank: agrees with networkx, hand-computed values, dangling nodes, bad input."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph.ppr import personalized_pagerank, transition_matrix


def random_graph(seed: int, n: int, m: int, isolated: int) -> nx.Graph:
    """A random undirected weighted simple graph with ``isolated`` extra nodes that have no edges."""
    rng = np.random.default_rng(seed)
    g = nx.gnm_random_graph(n, m, seed=seed)
    for u, v in g.edges:
        g[u][v]["weight"] = float(rng.uniform(0.1, 2.0))
    g.add_nodes_from(range(n, n + isolated))
    return g


@pytest.mark.parametrize("seed, n, m, isolated", [(0, 20, 40, 0), (1, 50, 80, 5), (2, 200, 600, 20), (3, 12, 11, 3)])
@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_matches_networkx(seed, n, m, isolated, damping):
    g = random_graph(seed, n, m, isolated)
    rng = np.random.default_rng(seed + 100)
    reset = rng.random(g.number_of_nodes()) * (rng.random(g.number_of_nodes()) < 0.3)
    reset[-1] = 1.0  # an isolated node in the reset when there is one: its mass must come back via the reset
    adjacency = nx.to_scipy_sparse_array(g, nodelist=range(g.number_of_nodes()), weight="weight", format="csr")
    expected = nx.pagerank(g, alpha=damping, personalization=dict(enumerate(reset)), weight="weight",
                           tol=1e-13, max_iter=10_000)
    got = personalized_pagerank(adjacency, reset, damping=damping, tol=1e-12, max_iter=10_000)
    assert got.sum() == pytest.approx(1.0)
    assert np.abs(got - np.array([expected[i] for i in range(len(reset))])).max() < 1e-6


def test_path_of_three_by_hand():
    # a - b - c, restart at a, d = 0.5:
    # x_a = 0.5 + 0.5 * x_b / 2,  x_b = 0.5 * (x_a + x_c),  x_c = 0.5 * x_b / 2  ->  (7/12, 4/12, 1/12)
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float))
    got = personalized_pagerank(adjacency, np.array([2.0, 0.0, 0.0]), damping=0.5, tol=1e-12)
    np.testing.assert_allclose(got, [7 / 12, 4 / 12, 1 / 12], atol=1e-10)


def test_dangling_mass_returns_by_the_reset_vector():
    # a - b, c isolated, reset (a, c) = (1/2, 1/2). c's mass goes back half to a, half to c:
    # x_c = 0.25 + 0.5 * x_c / 2 -> 1/3;  x_a = 0.25 + 0.5 * (x_b + x_c / 2), x_b = 0.5 * x_a -> 4/9, 2/9
    adjacency = sp.csr_matrix(np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]], float))
    got = personalized_pagerank(adjacency, np.array([1.0, 0.0, 1.0]), damping=0.5, tol=1e-12)
    np.testing.assert_allclose(got, [4 / 9, 2 / 9, 1 / 3], atol=1e-10)


def test_weights_and_a_reused_transition():
    # Star centre 0 with edge weights 3 (to 1) and 1 (to 2): from 0 the walker goes to 1 three times as often.
    adjacency = sp.csr_matrix(np.array([[0, 3, 1], [3, 0, 0], [1, 0, 0]], float))
    transition = transition_matrix(adjacency)
    np.testing.assert_allclose(transition.matrix_t.toarray(), [[0, 1, 1], [0.75, 0, 0], [0.25, 0, 0]])
    got = personalized_pagerank(transition, np.array([1.0, 0.0, 0.0]))
    assert got[1] == pytest.approx(3 * got[2])
    np.testing.assert_array_equal(got, personalized_pagerank(adjacency, np.array([1.0, 0.0, 0.0])))


def test_damping_zero_returns_the_reset_distribution():
    adjacency = sp.csr_matrix(np.ones((3, 3)) - np.eye(3))
    np.testing.assert_allclose(personalized_pagerank(adjacency, np.array([1.0, 3.0, 0.0]), damping=0.0), [0.25, 0.75, 0])


@pytest.mark.parametrize("reset, message", [
    (np.zeros(3), "sums to 0"),
    (np.array([1.0, -1.0, 1.0]), "non-negative"),
    (np.array([1.0, np.nan, 0.0]), "finite"),
    (np.ones(4), "4 entries for 3 nodes"),
])
def test_bad_reset_vectors_are_rejected(reset, message):
    adjacency = sp.csr_matrix(np.ones((3, 3)) - np.eye(3))
    with pytest.raises(ValueError, match=message):
        personalized_pagerank(adjacency, reset)


def test_bad_damping_and_weights_are_rejected():
    adjacency = sp.csr_matrix(np.ones((2, 2)) - np.eye(2))
    with pytest.raises(ValueError, match="damping"):
        personalized_pagerank(adjacency, np.ones(2), damping=1.0)
    with pytest.raises(ValueError, match="negative edge weights"):
        transition_matrix(-adjacency)


def test_non_convergence_warns_and_returns_a_distribution(caplog):
    adjacency = sp.csr_matrix(np.array([[0, 1], [1, 0]], float))
    got = personalized_pagerank(adjacency, np.array([1.0, 0.0]), damping=0.9, tol=1e-15, max_iter=3)
    assert got.sum() == pytest.approx(1.0)
    assert "did not converge" in caplog.text
