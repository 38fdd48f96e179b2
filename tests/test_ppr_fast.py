"""The fast form of graph/ppr.py (large symmetric graphs): Chebyshev on the RCM-ordered adjacency, numba or scipy.

Small graphs take the fast form here by lowering ``FAST_MIN_NNZ``; the scipy fallback is what runs when
numba cannot be imported (``_kernels`` returns None).
"""

import multiprocessing
import sys
import threading
from types import SimpleNamespace

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph import ppr, ppr_fast
from llama_index_graphrag_suite.graph.ppr import binary_adjacency, personalized_pagerank, transition_matrix

HAVE_NUMBA = ppr_fast._kernels() is not None
needs_numba = pytest.mark.skipif(not HAVE_NUMBA, reason="numba is not importable: only the scipy fallback runs")


def random_graph(seed: int, n: int, m: int, isolated: int, weights: str = "float32") -> nx.Graph:
    """A random undirected graph plus ``isolated`` nodes without edges (dangling); weights float32-exact,
    float64 (not float32-exact) or all 1."""
    rng = np.random.default_rng(seed)
    g = nx.gnm_random_graph(n, m, seed=seed)
    for u, v in g.edges:
        w = rng.uniform(0.1, 2.0)
        g[u][v]["weight"] = {"float32": float(np.float32(w)), "float64": float(w), "ones": 1.0}[weights]
    g.add_nodes_from(range(n, n + isolated))
    return g


def adjacency_of(g: nx.Graph) -> sp.csr_matrix:
    return sp.csr_matrix(nx.to_scipy_sparse_array(g, nodelist=range(g.number_of_nodes()), weight="weight"))


def reset_of(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed + 100)
    reset = rng.random(n) * (rng.random(n) < 0.3)
    reset[-1] = 1.0  # an isolated node in the reset: its mass must come back via the reset
    return reset


@pytest.fixture
def fast_everywhere(monkeypatch):
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 0)


@pytest.fixture
def without_numba(monkeypatch, fast_everywhere):
    monkeypatch.setattr(ppr_fast, "_kernels", lambda: None)


def plain_pagerank(adjacency, reset, **kw) -> np.ndarray:
    """The power iteration (a raw adjacency always takes the plain form)."""
    return personalized_pagerank(adjacency, reset, **kw)


CASES = [(0, 20, 40, 0, "float32"), (1, 50, 80, 5, "float64"), (2, 200, 600, 20, "ones"), (3, 12, 11, 3, "float32"),
         (4, 300, 2000, 0, "float64")]


@pytest.mark.parametrize("seed, n, m, isolated, weights", CASES)
@pytest.mark.parametrize("damping", [0.5, 0.85])
@pytest.mark.parametrize("backend", ["numba", "scipy"])
def test_fast_form_matches_networkx(request, fast_everywhere, seed, n, m, isolated, weights, damping, backend):
    if backend == "numba" and not HAVE_NUMBA:
        pytest.skip("numba is not importable")
    if backend == "scipy":
        request.getfixturevalue("without_numba")
    g = random_graph(seed, n, m, isolated, weights)
    reset = reset_of(seed, g.number_of_nodes())
    transition = transition_matrix(adjacency_of(g))
    assert transition.fast is not None and (transition.fast.matrix is None) == (backend == "numba")
    expected = nx.pagerank(g, alpha=damping, personalization=dict(enumerate(reset)), weight="weight",
                           tol=1e-13, max_iter=10_000)
    got = personalized_pagerank(transition, reset, damping=damping, tol=1e-12, max_iter=10_000)
    assert got.sum() == pytest.approx(1.0) and got.min() >= 0
    assert np.abs(got - np.array([expected[i] for i in range(len(reset))])).sum() < 1e-9


@pytest.mark.parametrize("seed, n, m, isolated, weights", CASES)
@pytest.mark.parametrize("damping, tol", [(0.5, 1e-7), (0.5, 1e-4), (0.85, 1e-6), (0.2, 1e-7)])
def test_fast_form_is_within_the_power_iterations_error_bound(fast_everywhere, seed, n, m, isolated, weights,
                                                             damping, tol):
    adjacency = adjacency_of(random_graph(seed, n, m, isolated, weights))
    reset = reset_of(seed, adjacency.shape[0])
    exact = plain_pagerank(adjacency, reset, damping=damping, tol=1e-15, max_iter=10_000)
    bound = damping / (1 - damping) * tol  # what the power iteration's stopping rule guarantees
    fast = personalized_pagerank(transition_matrix(adjacency), reset, damping=damping, tol=tol)
    old = plain_pagerank(adjacency, reset, damping=damping, tol=tol)
    assert np.abs(old - exact).sum() <= bound
    assert np.abs(fast - exact).sum() <= bound
    assert np.abs(fast - old).sum() <= 2 * bound


@needs_numba
@pytest.mark.parametrize("seed, n, m, isolated, weights", CASES)
def test_the_scipy_fallback_gives_the_numba_result(monkeypatch, fast_everywhere, seed, n, m, isolated, weights):
    adjacency = adjacency_of(random_graph(seed, n, m, isolated, weights))
    reset = reset_of(seed, adjacency.shape[0])
    with_numba = personalized_pagerank(transition_matrix(adjacency), reset)
    monkeypatch.setattr(ppr_fast, "_kernels", lambda: None)
    fallback = transition_matrix(adjacency)
    assert fallback.fast.matrix is not None and fallback.fast.matrix.dtype == np.float64
    np.testing.assert_allclose(personalized_pagerank(fallback, reset), with_numba, rtol=0, atol=1e-15)


@needs_numba
def test_the_numba_switch_off_takes_the_scipy_form_with_the_same_scores(monkeypatch, fast_everywhere):
    adjacency = adjacency_of(random_graph(2, 200, 600, 20, "float32"))
    reset = reset_of(2, adjacency.shape[0])
    compiled = transition_matrix(adjacency)
    monkeypatch.setenv(ppr_fast.NUMBA_ENV, "0")
    switched_off = transition_matrix(adjacency)
    assert compiled.fast.matrix is None and switched_off.fast.matrix is not None
    np.testing.assert_allclose(personalized_pagerank(switched_off, reset), personalized_pagerank(compiled, reset),
                               rtol=0, atol=1e-15)


@needs_numba
def test_values_are_stored_in_float32_only_when_exact(fast_everywhere):
    forms = {w: transition_matrix(adjacency_of(random_graph(2, 200, 600, 20, w))).fast for w in ("float32", "float64", "ones")}
    assert forms["float32"].data.dtype == np.float32
    assert forms["float64"].data.dtype == np.float64
    assert forms["ones"].data is None  # unit weights (A2RAG's binary matrix): no values at all
    assert forms["ones"].indices.dtype == np.uint32 and forms["ones"].indptr.dtype == np.uint64


@pytest.mark.parametrize("numba", [True, False])
def test_matrix_t_and_dangling_are_those_of_the_plain_form(monkeypatch, fast_everywhere, numba):
    if numba and not HAVE_NUMBA:
        pytest.skip("numba is not importable")
    if not numba:
        monkeypatch.setattr(ppr_fast, "_kernels", lambda: None)
    adjacency = adjacency_of(random_graph(1, 50, 80, 5, "float64"))
    fast = transition_matrix(adjacency)
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 10**12)
    plain = transition_matrix(adjacency)
    assert fast.fast is not None and plain.plain is not None and fast.num_nodes == plain.num_nodes == 55
    np.testing.assert_array_equal(fast.dangling, plain.dangling)
    assert np.abs(fast.matrix_t - plain.matrix_t).max() == 0


def test_which_graphs_take_the_fast_form(monkeypatch):
    small = adjacency_of(random_graph(0, 20, 40, 0))
    assert transition_matrix(small).plain is not None  # below FAST_MIN_NNZ: the scores stay bit-for-bit
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 0)
    assert transition_matrix(small).fast is not None
    directed = small.copy().tolil()
    directed[0, 1], directed[1, 0] = 1.0, 0.0
    assert transition_matrix(directed.tocsr()).plain is not None  # not symmetric: the power iteration
    reset = np.ones(small.shape[0])
    np.testing.assert_array_equal(personalized_pagerank(small, reset), plain_pagerank(small, reset))


def test_a_graph_above_the_threshold_takes_the_fast_form_by_default():
    g = random_graph(5, 20_000, 60_000, 10)
    adjacency = adjacency_of(g)
    assert adjacency.nnz >= ppr.FAST_MIN_NNZ
    transition = transition_matrix(adjacency)
    assert transition.fast is not None
    reset = np.zeros(adjacency.shape[0])
    reset[[3, 17, 20_004]] = 1.0
    got = personalized_pagerank(transition, reset)
    exact = plain_pagerank(adjacency, reset, tol=1e-14)
    assert np.abs(got - exact).sum() <= 1e-7
    top = np.argsort(-exact, kind="stable")[:100]
    np.testing.assert_array_equal(np.argsort(-got, kind="stable")[:100], top)


def test_the_callers_adjacency_is_not_modified(fast_everywhere):
    adjacency = adjacency_of(random_graph(1, 50, 80, 5))
    adjacency.data[:3] = 0.0  # explicit zeros, which the fast form drops from its own copy
    before = (adjacency.data.copy(), adjacency.indices.copy(), adjacency.indptr.copy())
    transition_matrix(adjacency)
    for got, want in zip((adjacency.data, adjacency.indices, adjacency.indptr), before):
        np.testing.assert_array_equal(got, want)


@needs_numba
@pytest.mark.parametrize("threads", [1, 2, 3, 4])
def test_the_result_does_not_depend_on_the_thread_count(monkeypatch, fast_everywhere, threads):
    adjacency = adjacency_of(random_graph(4, 300, 2000, 0, "float64"))
    reset = reset_of(4, adjacency.shape[0])
    transition = transition_matrix(adjacency)
    monkeypatch.setattr(ppr_fast, "PARALLEL_MIN_ENTRIES", 0)  # a small graph, shared by the threads all the same
    monkeypatch.setattr(ppr_fast, "THREADS", 1)
    single = personalized_pagerank(transition, reset)
    monkeypatch.setattr(ppr_fast, "THREADS", threads)
    np.testing.assert_array_equal(personalized_pagerank(transition, reset), single)


@needs_numba
def test_a_small_graph_runs_on_the_calling_thread_a_large_one_on_the_pool(monkeypatch, fast_everywhere):
    """Below PARALLEL_MIN_ENTRIES stored entries no chunk goes to the pool (its hand-off costs more than it saves)."""
    adjacency = adjacency_of(random_graph(4, 300, 2000, 0, "float64"))
    transition = transition_matrix(adjacency)
    monkeypatch.setattr(ppr_fast, "THREADS", 2)
    ran_on: set[str] = set()
    kernels = ppr_fast._kernels()

    def spy(fn):
        def wrapped(*args):
            ran_on.add(threading.current_thread().name)
            return fn(*args)
        return wrapped

    spied = SimpleNamespace(step=spy(kernels.step), step_ones=spy(kernels.step_ones))
    monkeypatch.setattr(ppr_fast, "_kernels", lambda: spied)
    personalized_pagerank(transition, reset_of(4, adjacency.shape[0]))
    assert ran_on == {threading.current_thread().name}
    monkeypatch.setattr(ppr_fast, "PARALLEL_MIN_ENTRIES", 0)
    ran_on.clear()
    for _ in range(20):  # the pool thread claims chunks whenever it is free first: over 20 solves, it is
        personalized_pagerank(transition, reset_of(4, adjacency.shape[0]))
    assert any(name.startswith("ppr") for name in ran_on)


def test_fast_form_edge_cases(fast_everywhere, caplog):
    adjacency = sp.csr_matrix(np.array([[0, 1, 0, 0], [1, 0, 1, 0], [0, 1, 0, 0], [0, 0, 0, 0]], float))
    transition = transition_matrix(adjacency)
    # hand-computed (tests/test_ppr.py): a - b - c restarting at a gives 7/12, 4/12, 1/12
    np.testing.assert_allclose(personalized_pagerank(transition, np.array([1.0, 0, 0, 0]), tol=1e-13),
                               [7 / 12, 4 / 12, 1 / 12, 0], atol=1e-12)
    np.testing.assert_array_equal(personalized_pagerank(transition, np.array([0, 0, 0, 2.0])), [0, 0, 0, 1])
    np.testing.assert_allclose(personalized_pagerank(transition, np.array([1.0, 3.0, 0, 0]), damping=0.0),
                               [0.25, 0.75, 0, 0])
    with pytest.raises(ValueError, match="3 entries for 4 nodes"):
        personalized_pagerank(transition, np.ones(3))
    got = personalized_pagerank(transition, np.array([1.0, 0, 0, 0]), damping=0.9, tol=1e-15, max_iter=2)
    assert got.sum() == pytest.approx(1.0) and "did not converge" in caplog.text


@pytest.mark.parametrize("numba", [True, False])
def test_a2rag_binary_matrix(monkeypatch, fast_everywhere, numba):
    if numba and not HAVE_NUMBA:
        pytest.skip("numba is not importable")
    if not numba:
        monkeypatch.setattr(ppr_fast, "_kernels", lambda: None)
    adjacency = binary_adjacency(adjacency_of(random_graph(2, 200, 600, 20)))
    degree = np.asarray(adjacency.sum(axis=1)).ravel()
    fast = ppr.degree_normalised_ppr(transition_matrix(adjacency), degree, np.array([0, 5, 7]), alpha=0.5, tol=1e-10)
    plain = ppr.degree_normalised_ppr(ppr.Transition(dangling=np.flatnonzero(degree == 0),
                                                     plain=ppr._plain_form(adjacency, degree)),
                                      degree, np.array([0, 5, 7]), alpha=0.5, tol=1e-10)
    assert np.abs(fast - plain).sum() < 1e-9


def _ppr_in_child(queue, transition, reset) -> None:
    queue.put(personalized_pagerank(transition, reset))


@needs_numba
@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
def test_a_forked_child_runs_the_fast_form_after_the_parent_did(monkeypatch, fast_everywhere):
    monkeypatch.setattr(ppr_fast, "THREADS", 2)  # the parent's pool has a thread, which the child does not inherit
    adjacency = adjacency_of(random_graph(4, 300, 2000, 0))
    transition = transition_matrix(adjacency)
    reset = reset_of(4, adjacency.shape[0])
    in_parent = personalized_pagerank(transition, reset)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_ppr_in_child, args=(queue, transition, reset))
    child.start()
    in_child = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(in_child, in_parent)


@pytest.mark.skipif(not HAVE_NUMBA, reason="numba not importable")
def test_each_kernel_is_jitted_once_per_process():
    # A new dispatcher loads its code from numba's disk cache at its first call (~8 ms): when the cache of
    # dispatchers held one function, every PageRank solve paid that for one of its two kernels.
    step = ppr_fast.cached_njit(ppr_fast._kernel_step)
    ppr_fast.cached_njit(ppr_fast._kernel_step_ones)
    assert ppr_fast.cached_njit(ppr_fast._kernel_step) is step
    assert ppr_fast._kernels() is ppr_fast._kernels()
    assert ppr_fast._kernels().step is step
