"""The compiled hybrid fusion, blend and top-k (methods/query_kernels.py) against scoring's numpy forms, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.methods import query_kernels, scoring

pytest.importorskip("numba")


@pytest.fixture
def small_large(monkeypatch):
    monkeypatch.setattr(query_kernels, "LARGE", 1)  # every array takes the compiled pass


def _arrays(seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    dense = rng.uniform(-1, 1, n).astype(np.float32)
    if seed % 3 == 0:
        dense = np.round(dense * 4) / 4  # ties everywhere
    sparse = rng.exponential(2.0, n) * (rng.random(n) < 0.2)  # mostly zeros, as BM25
    if seed % 5 == 0:
        sparse[:] = 0.0  # a constant vector
    if seed % 7 == 0:
        dense = dense.astype(np.float64)
    return rng, dense, sparse


@pytest.mark.parametrize("seed", range(30))
def test_hybrid_and_top_k_equal_the_numpy_forms(seed, small_large):
    rng, dense, sparse = _arrays(seed)
    fused = query_kernels.hybrid(dense, sparse)
    np.testing.assert_array_equal(fused, scoring.hybrid(dense, sparse))
    assert fused.dtype == np.float64
    for scores in (fused, sparse, dense, -sparse):
        for k in (1, 2, 5, 100, 256, scores.size - 1, scores.size, scores.size + 3, 0):
            np.testing.assert_array_equal(query_kernels.top_k(scores, k), scoring.top_k(scores, k))


@pytest.mark.parametrize("seed", range(30))
def test_blended_equals_the_numpy_form_and_reads_bm25_only_when_weighted(seed, small_large):
    rng, dense, sparse = _arrays(seed)
    for weight in (0.25, 0.5, 1.0, float(rng.uniform(0.01, 0.99))):
        blend = query_kernels.blended(dense, lambda: sparse, weight)
        np.testing.assert_array_equal(blend, scoring.blended(dense, lambda: sparse, weight))
        assert blend.dtype == np.float64
    unread = lambda: pytest.fail("BM25 read at weight 0")  # noqa: E731
    np.testing.assert_array_equal(query_kernels.blended(dense, unread, 0.0), scoring.minmax(dense))


def test_nan_and_small_arrays_take_numpy(monkeypatch):
    scores = np.array([0.5, np.nan, 0.7, 0.1] * 50)
    monkeypatch.setattr(query_kernels, "LARGE", 1)
    np.testing.assert_array_equal(query_kernels.top_k(scores, 3), scoring.top_k(scores, 3))
    monkeypatch.setattr(query_kernels, "LARGE", 10**9)
    dense, sparse = np.arange(5.0), np.ones(5)
    np.testing.assert_array_equal(query_kernels.hybrid(dense, sparse), scoring.hybrid(dense, sparse))


def test_a_large_array_by_default():
    rng = np.random.default_rng(0)
    n = query_kernels.LARGE + 17
    dense, sparse = rng.uniform(-1, 1, n).astype(np.float32), rng.exponential(1.0, n) * (rng.random(n) < 0.01)
    fused = query_kernels.hybrid(dense, sparse)
    np.testing.assert_array_equal(fused, scoring.hybrid(dense, sparse))
    np.testing.assert_array_equal(query_kernels.blended(dense, lambda: sparse, 0.25),
                                  scoring.blended(dense, lambda: sparse, 0.25))
    for scores, k in ((fused, 100), (sparse, 256), (sparse, 5000)):
        np.testing.assert_array_equal(query_kernels.top_k(scores, k), scoring.top_k(scores, k))
