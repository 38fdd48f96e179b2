"""The local push of graph/ppr_push.py, and when graph/ppr.py takes it.

The push's guarantee (module docstring): below the exact solution of ``y = p + d A D^-1 y`` by at most
``eps * deg / (1 - d)`` on every node, never above it. Checked against a direct sparse solve.
"""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from llama_index_graphrag_suite.graph import ppr
from llama_index_graphrag_suite.graph.ppr import personalized_pagerank, transition_matrix
from llama_index_graphrag_suite.graph.ppr import pushed_pagerank
from llama_index_graphrag_suite.graph.ppr_push import forward_push, forward_push_reached

from test_ppr_fast import adjacency_of, random_graph


def exact_y(a: sp.csr_matrix, seeds, weights, damping) -> np.ndarray:
    """``y`` of ``(I - d A D^-1) y = p`` by a direct solve (dangling columns of ``A D^-1`` are zero)."""
    degree = np.asarray(a.sum(axis=1)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    p = np.zeros(a.shape[0])
    p[seeds] = weights
    system = sp.identity(a.shape[0], format="csc") - damping * (a @ sp.diags(inv)).tocsc()
    return spla.spsolve(system, p)


@pytest.mark.parametrize("seed, n, m, isolated, weights", [(0, 200, 700, 5, "float32"), (1, 500, 1500, 10, "ones"),
                                                           (2, 60, 59, 3, "float64")])
@pytest.mark.parametrize("damping", [0.5, 0.85])
@pytest.mark.parametrize("eps", [1e-3, 1e-5, 1e-8])
def test_push_is_below_the_exact_solution_by_at_most_its_bound(seed, n, m, isolated, weights, damping, eps):
    a = adjacency_of(random_graph(seed, n, m, isolated, weights))
    degree = np.asarray(a.sum(axis=1)).ravel()
    rng = np.random.default_rng(seed)
    seeds = np.r_[rng.choice(n, 4, replace=False), n + isolated - 1]  # an isolated (dangling) seed too
    weights_ = rng.uniform(0.1, 1.0, seeds.size)
    data = None if weights == "ones" else a.data
    y, entries = forward_push(a.indptr, a.indices, data, degree, seeds, weights_, damping, eps)
    exact = exact_y(a, seeds, weights_, damping)
    gap = exact - y
    assert gap.min() >= -1e-12  # never above the exact answer
    assert np.all(gap <= eps * degree / (1 - damping) + 1e-12)
    assert y[seeds[-1]] == pytest.approx(weights_[-1])  # a dangling seed keeps its own mass
    assert 0 < entries


def test_push_reads_a_neighbourhood_not_the_graph():
    """On a long path the pushed mass dies out within a few dozen hops: the work does not grow with the graph."""
    reads = []
    for n in (2_000, 200_000):
        a = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
        degree = np.asarray(a.sum(axis=1)).ravel()
        _, entries = forward_push(a.indptr, a.indices, None, degree, np.array([n // 2]), np.array([1.0]), 0.5, 1e-7)
        reads.append(entries)
    assert reads[0] == reads[1] < 1_000  # the same few hundred entries at both sizes


@pytest.fixture
def push_small_graphs(monkeypatch):
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 0)
    monkeypatch.setattr(ppr, "PUSH_MIN_NNZ", 0)


def test_pagerank_takes_the_push_for_a_sparse_reset_on_a_large_graph(push_small_graphs, monkeypatch):
    a = adjacency_of(random_graph(4, 3_000, 12_000, 20))
    transition = transition_matrix(a)
    reset = np.zeros(a.shape[0])
    reset[[5, 77, 2_999, 3_010]] = [1.0, 0.5, 0.25, 0.25]
    monkeypatch.setattr(ppr, "PUSH_MIN_NNZ", 10**12)
    global_scores = personalized_pagerank(transition, reset, tol=1e-12)
    monkeypatch.setattr(ppr, "PUSH_MIN_NNZ", 0)
    calls = []
    real = ppr.forward_push
    monkeypatch.setattr(ppr, "forward_push", lambda *args: calls.append(1) or real(*args))
    pushed = personalized_pagerank(transition, reset)
    assert calls == [1]
    assert pushed.sum() == pytest.approx(1.0)
    # unnormalised, each node is short by at most PUSH_EPS * deg / (1 - d); over all nodes, the L1 of the scores:
    shortfall = ppr.PUSH_EPS * a.sum() / 0.5
    assert np.abs(pushed - global_scores).sum() <= 2 * shortfall
    top = np.argsort(-global_scores, kind="stable")[:50]
    np.testing.assert_array_equal(np.argsort(-pushed, kind="stable")[:50], top)


def test_a_reset_on_many_nodes_is_solved_globally(push_small_graphs, monkeypatch):
    """HippoRAG 2 weighs every passage: the push would read the whole graph, so the global solver runs."""
    a = adjacency_of(random_graph(5, 1_000, 4_000, 0))
    transition = transition_matrix(a)
    monkeypatch.setattr(ppr, "forward_push", lambda *args: pytest.fail("pushed a dense reset"))
    monkeypatch.setattr(ppr, "forward_push_reached", lambda *args, **kw: pytest.fail("pushed a dense reset"))
    scores = personalized_pagerank(transition, np.ones(a.shape[0]))
    assert scores.sum() == pytest.approx(1.0)


def test_small_graphs_keep_the_global_solver(monkeypatch):
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 0)
    a = adjacency_of(random_graph(6, 1_000, 4_000, 0))
    assert a.nnz < ppr.PUSH_MIN_NNZ
    monkeypatch.setattr(ppr, "forward_push", lambda *args: pytest.fail("pushed on a small graph"))
    monkeypatch.setattr(ppr, "forward_push_reached", lambda *args, **kw: pytest.fail("pushed on a small graph"))
    reset = np.zeros(a.shape[0])
    reset[3] = 1.0
    personalized_pagerank(transition_matrix(a), reset)


def test_pushed_pagerank_is_the_dense_push_on_the_reached_nodes(push_small_graphs):
    a = adjacency_of(random_graph(10, 3_000, 12_000, 20))
    transition = transition_matrix(a)
    seeds, weights = np.array([2_999, 5, 3_010, 77]), np.array([0.25, 1.0, 0.25, 0.5])
    reset = np.zeros(a.shape[0])
    reset[seeds] = weights
    dense = personalized_pagerank(transition, reset)
    nodes, scores = pushed_pagerank(transition, np.r_[seeds, 11], np.r_[weights, 0.0])  # a zero weight: no seed
    np.testing.assert_array_equal(nodes, np.flatnonzero(dense))
    np.testing.assert_array_equal(scores, dense[nodes])  # the same reset total, pushes and normalisation
    with pytest.raises(ValueError, match="distinct"):
        pushed_pagerank(transition, np.array([5, 5]), np.array([1.0, 1.0]))


def test_pushed_pagerank_declines_where_the_push_would_not_run(monkeypatch):
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 0)
    a = adjacency_of(random_graph(11, 1_000, 4_000, 0))
    assert pushed_pagerank(transition_matrix(a), np.array([3]), np.array([1.0])) is None  # a small graph
