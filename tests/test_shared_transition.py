"""methods/shared_graph.binary_transition: A2RAG's binary transition taken from the weighted one equals the one built
from the binary adjacency (forced onto the fast form with a lowered threshold), and so do the walks on it."""

import numpy as np
import pytest

from llama_index_graphrag_suite.graph import ppr
from llama_index_graphrag_suite.graph.ppr import binary_adjacency, personalized_pagerank, transition_matrix
from llama_index_graphrag_suite.graph.ppr_fast import NUMBA_ENV
from llama_index_graphrag_suite.graph.snapshot import GraphSnapshot
from llama_index_graphrag_suite.methods import shared_graph


class _Index:
    """What binary_transition reads: a snapshot and a per-snapshot memo."""

    def __init__(self, snapshot):
        self.snapshot, self._memo = snapshot, {}

    def cached(self, name, build):
        if name not in self._memo:
            self._memo[name] = build()
        return self._memo[name]


def _snapshot(seed=0, n=300, m=1500, zero_weight=False):
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n - 20, m), rng.integers(0, n - 20, m)  # the last 20 nodes have no edges
    weights = rng.uniform(0.5, 1.0, m // 5)
    if zero_weight:
        weights[0] = 0.0
    k = m - m // 5
    return GraphSnapshot.from_edges([f"n{i}" for i in range(n)], n // 2, (src[:k // 2], dst[:k // 2]),
                                    (src[k // 2:k], dst[k // 2:k]), (src[k:], dst[k:], weights))


@pytest.mark.parametrize("numba", ["1", "0"])
def test_binary_transition_taken_from_the_weighted_one_equals_the_built_one(monkeypatch, numba):
    monkeypatch.setenv(NUMBA_ENV, numba)
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 10)  # small graphs take the fast form too
    snap = _snapshot()
    index = _Index(snap)
    shared, degree = shared_graph.binary_transition(index)
    assert "transition.weight" in index._memo  # taken from it ...
    weighted = index._memo["transition.weight"].fast
    assert shared.fast.indices is weighted.indices and shared.fast.order is weighted.order  # ... sharing its lists
    adj = binary_adjacency(snap.adjacency("ones"))
    built = transition_matrix(adj)
    assert built.fast is not None and shared.fast is not None
    np.testing.assert_array_equal(degree, np.asarray(adj.sum(axis=1)).ravel())
    np.testing.assert_array_equal(shared.dangling, built.dangling)
    for name in ("order", "indptr", "indices", "inv_degree", "row_chunks"):
        np.testing.assert_array_equal(getattr(shared.fast, name), getattr(built.fast, name))
    assert (shared.fast.data is None) == (built.fast.data is None)
    if built.fast.data is not None:
        np.testing.assert_array_equal(shared.fast.data, built.fast.data)
        assert (shared.fast.matrix != built.fast.matrix).nnz == 0
    np.testing.assert_array_equal(shared.fast.degree, built.fast.degree)
    np.testing.assert_array_equal(shared.fast.position, built.fast.position)
    for seeds in ([3], [5, 17, 40], list(range(0, 280, 3))):
        p = np.zeros(snap.num_nodes)
        p[seeds] = 1.0
        np.testing.assert_array_equal(personalized_pagerank(shared, p, damping=0.5, tol=1e-7),
                                      personalized_pagerank(built, p, damping=0.5, tol=1e-7))


def test_a_zero_weight_edge_builds_the_binary_transition_apart(monkeypatch):
    monkeypatch.setattr(ppr, "FAST_MIN_NNZ", 10)
    snap = _snapshot(zero_weight=True)  # the weighted matrix drops that entry: not the binary one's entries
    index = _Index(snap)
    shared, degree = shared_graph.binary_transition(index)
    assert "transition.weight" not in index._memo
    adj = binary_adjacency(snap.adjacency("ones"))
    np.testing.assert_array_equal(shared.fast.indices, transition_matrix(adj).fast.indices)
    np.testing.assert_array_equal(degree, np.asarray(adj.sum(axis=1)).ravel())
