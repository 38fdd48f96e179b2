"""ArchRAG Algorithm 1 on hand-drawn graphs: KNN augmentation, weighted Leiden, next layer, metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llama_index_graphrag_suite.graph.communities import (
    HierarchyParams,
    build_hierarchy,
    calinski_harabasz,
    leiden_membership,
    member_centroid_cosine,
    next_layer_edges,
)
from llama_index_graphrag_suite.graph.knn_augment import knn_augment, unique_pairs

# a and b are close (cos .96), c and d are close (cos .96), a-c orthogonal, b-d cos .5376.
A, B, C, D = [1.0, 0.0], [0.96, 0.28], [0.0, 1.0], [0.28, 0.96]


def _edges(g):
    return sorted(zip(g.src.tolist(), g.dst.tolist()))


def test_unique_pairs_drops_loops_and_parallel_edges():
    s, d = unique_pairs(np.array([1, 0, 2, 2]), np.array([0, 1, 2, 1]), 3)
    assert list(zip(s.tolist(), d.tolist())) == [(0, 1), (1, 2)]
    with pytest.raises(ValueError):
        unique_pairs(np.array([0]), np.array([3]), 3)


def test_knn_augment_percentile_threshold_and_mean_degree_k():
    # Existing edges a-b (cos .96) and a-c (cos 0). Threshold = 80th percentile of [0, .96] = .768;
    # k = mean degree of non-isolated nodes = int(4/3) = 1. c's nearest is d (.96 > .768): added.
    # b's best non-edge neighbour is d (.5376 < .768): not added.
    g = knn_augment(np.array([A, B, C, D]), np.array([0, 0]), np.array([1, 2]))
    assert g.threshold == pytest.approx(0.768)
    assert g.k == 1
    assert _edges(g) == [(0, 1), (0, 2), (2, 3)]
    assert g.is_knn.tolist() == [False, False, True]
    # Weights are attribute cosines; the orthogonal KG link keeps the floor weight instead of vanishing.
    assert g.weight.tolist() == pytest.approx([0.96, 1e-3, 0.96])


def test_knn_augment_explicit_threshold_k_and_ablation():
    x = np.array([A, B, C, D])
    g = knn_augment(x, np.array([], np.int64), np.array([], np.int64), k=2, threshold=0.5)
    # Pairs above .5: a-b .96, c-d .96, b-d .5376; a-d is .28, a-c 0.
    assert _edges(g) == [(0, 1), (1, 3), (2, 3)]
    assert g.num_knn_edges == 3
    g = knn_augment(x, np.array([0]), np.array([2]), k=2, threshold=0.5, augment=False)
    assert _edges(g) == [(0, 2)] and g.num_knn_edges == 0 and math.isnan(g.threshold)


def _two_triangles():
    # 0-1-2 triangle, 3-4-5 triangle, bridge 2-3.
    src = np.array([0, 0, 1, 3, 3, 4, 2])
    dst = np.array([1, 2, 2, 4, 5, 5, 3])
    return src, dst


def test_leiden_finds_the_two_triangles_and_repeats():
    src, dst = _two_triangles()
    m = leiden_membership(6, src, dst, np.ones(7))
    assert m.tolist() == [0, 0, 0, 1, 1, 1]
    assert leiden_membership(6, src, dst, np.ones(7), seed=0).tolist() == m.tolist()


def test_leiden_weights_matter():
    # A 4-cycle 0-1-2-3-0; heavy edges 0-1 and 2-3 pull those pairs together, light 1-2 and 3-0 separate.
    src, dst = np.array([0, 1, 2, 3]), np.array([1, 2, 3, 0])
    assert leiden_membership(4, src, dst, np.array([1.0, 0.01, 1.0, 0.01])).tolist() == [0, 0, 1, 1]
    assert leiden_membership(4, src, dst, np.array([0.01, 1.0, 0.01, 1.0])).tolist() == [0, 1, 1, 0]


def test_max_cluster_size_splits_oversize_communities():
    src, dst = _two_triangles()
    m = leiden_membership(6, src, dst, np.ones(7), max_cluster_size=2)
    assert np.bincount(m).max() <= 2
    # A 6-clique is one community for modularity; the cap must still split it.
    iu = np.triu_indices(6, 1)
    m = leiden_membership(6, iu[0], iu[1], np.ones(15), max_cluster_size=4)
    assert np.bincount(m).max() <= 4 and m.max() >= 1
    # Isolated nodes are singletons.
    assert leiden_membership(3, np.array([], int), np.array([], int), np.array([])).tolist() == [0, 1, 2]


def test_next_layer_edges_link_communities_with_crossing_counts():
    membership = np.array([0, 0, 1, 1, 2])
    src, dst = np.array([0, 1, 0, 2, 3, 4]), np.array([2, 3, 1, 3, 4, 0])
    s, d, w = next_layer_edges(membership, src, dst)
    # 0-2, 1-3 cross 0|1 (2 edges); 0-1 and 2-3 stay inside; 3-4 crosses 1|2; 4-0 crosses 0|2.
    assert list(zip(s.tolist(), d.tolist(), w.tolist())) == [(0, 1, 2.0), (0, 2, 1.0), (1, 2, 1.0)]


def _four_cliques():
    rng = np.random.default_rng(0)
    centres = np.eye(4, 8)
    vectors = np.repeat(centres, 4, axis=0) + 0.05 * rng.standard_normal((16, 8))
    src, dst = [], []
    for c in range(4):
        members = range(4 * c, 4 * c + 4)
        src += [i for i in members for j in members if i < j]
        dst += [j for i in members for j in members if i < j]
    src += [3, 7, 11, 15]  # a ring of single links between the cliques
    dst += [4, 8, 12, 0]
    return vectors, np.array(src), np.array(dst)


def test_build_hierarchy_layers_and_stop_rule():
    vectors, src, dst = _four_cliques()
    layers = build_hierarchy(vectors, src, dst, HierarchyParams(max_cluster_size=4, min_nodes=5, knn_k=1, knn_threshold=0.9))
    assert len(layers) == 1  # layer 2 would cluster 4 nodes < min_nodes = 5
    m = layers[0].membership
    assert m.tolist() == [c for c in range(4) for _ in range(4)]
    # The four communities form a ring in the next layer graph, one crossing edge each.
    pairs = sorted(zip(layers[0].next_src.tolist(), layers[0].next_dst.tolist()))
    assert pairs == [(0, 1), (0, 3), (1, 2), (2, 3)]
    assert layers[0].vectors.shape == (4, 8)
    assert np.allclose(np.linalg.norm(layers[0].vectors, axis=1), 1.0)
    # A second layer when allowed: the 4 communities cluster further; the custom vector callback is used.
    calls = []

    def vecs(layer, membership, below, graph):
        calls.append(layer)
        out = np.zeros((membership.max() + 1, below.shape[1]), np.float32)
        out[:, 0] = 1.0
        return out

    layers = build_hierarchy(vectors, src, dst, HierarchyParams(max_cluster_size=4, min_nodes=2, max_layers=3), vecs)
    assert calls[:2] == [1, 2] and len(layers) >= 2
    assert layers[1].membership.shape == (4,)


def test_calinski_harabasz_hand_computed():
    x = np.array([[0, 0], [0, 2], [10, 0], [10, 2]], float)
    # centres (0,1), (10,1), overall (5,1): B = 2*25 + 2*25 = 100, W = 4 * 1 = 4 -> (100/1) / (4/2) = 50.
    assert calinski_harabasz(x, np.array([0, 0, 1, 1])) == pytest.approx(50.0)
    # The crossed labelling is much worse: centres (5,0), (5,2): B = 2*1 + 2*1 = 4, W = 4*25 = 100 -> 0.08.
    assert calinski_harabasz(x, np.array([0, 1, 0, 1])) == pytest.approx(0.08)
    assert math.isnan(calinski_harabasz(x, np.zeros(4, int)))


def test_member_centroid_cosine_hand_computed():
    x = np.array([[1, 0], [0, 1], [1, 1]], float)
    # Cluster {0, 1}: centroid direction (1,1)/sqrt2, cos = 1/sqrt2 for both; the singleton {2} is left out.
    assert member_centroid_cosine(x, np.array([0, 0, 1])) == pytest.approx(1 / math.sqrt(2))
    assert member_centroid_cosine(x, np.array([0, 0, 1]), min_size=1) == pytest.approx((2 / math.sqrt(2) + 1) / 3)
    assert math.isnan(member_centroid_cosine(x, np.array([0, 1, 2])))


def test_knn_augmentation_from_the_approximate_search_keeps_nearly_every_exact_edge():
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(60, 32))
    x = (centres[rng.integers(0, 60, 3000)] + 0.3 * rng.normal(size=(3000, 32))).astype(np.float32)
    src, dst = rng.integers(0, 3000, 6000), rng.integers(0, 3000, 6000)
    exact = knn_augment(x, src, dst, approx_rows=0)
    approx = knn_augment(x, src, dst, approx_rows=1000)  # 3,000 nodes: the inverted-file search
    assert approx.threshold == exact.threshold and approx.k == exact.k and exact.num_knn_edges > 1000
    pairs = lambda g: set(zip(g.src[g.is_knn].tolist(), g.dst[g.is_knn].tolist()))  # noqa: E731
    found = len(pairs(exact) & pairs(approx)) / len(pairs(exact))
    assert found >= 0.95 and len(pairs(approx) - pairs(exact)) <= 0.05 * len(pairs(exact))
    assert np.array_equal(approx.src[~approx.is_knn], exact.src[~exact.is_knn])  # the real links are untouched


def test_edge_cosines_in_blocks_are_the_cosines_of_the_ends(monkeypatch):
    from llama_index_graphrag_suite.graph import knn_augment as module

    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    src, dst = rng.integers(0, 50, 1000), rng.integers(0, 50, 1000)
    monkeypatch.setattr(module, "EDGE_BLOCK", 7)  # many blocks and a short last one
    np.testing.assert_allclose(module.edge_cosines(x, src, dst), np.sum(x[src] * x[dst], axis=1), atol=1e-6)


@pytest.mark.parametrize("seed", range(6))
def test_knn_augment_in_blocks_of_nodes_is_the_same_as_in_one(seed, monkeypatch):
    from llama_index_graphrag_suite.graph import knn_augment as module

    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 1500))
    x = rng.normal(size=(n, 16)).astype(np.float32)
    m = int(rng.integers(0, 4 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    monkeypatch.setattr(module, "KNN_BLOCK_ENTRIES", 1 << 40)
    whole = module.knn_augment(x, src, dst, percentile=60.0)
    monkeypatch.setattr(module, "KNN_BLOCK_ENTRIES", int(rng.integers(1, 500)))
    blocks = module.knn_augment(x, src, dst, percentile=60.0)
    for name in ("src", "dst", "weight", "is_knn"):
        assert np.array_equal(getattr(whole, name), getattr(blocks, name)), name
    assert whole.threshold == blocks.threshold and whole.k == blocks.k


def test_internal_edges_of_all_groups_in_one_pass_are_each_groups_own_edges_in_edge_order():
    from llama_index_graphrag_suite.graph.communities import _groups, _internal_edges

    rng = np.random.default_rng(3)
    n, m = 500, 3000
    src, dst, weight = rng.integers(0, n, m), rng.integers(0, n, m), rng.uniform(0.1, 1.0, m)
    labels = rng.integers(0, 12, n)
    groups = [g for g in _groups(labels) if g.size > 30]
    for members, (s, d, w) in zip(groups, _internal_edges(groups, labels, src, dst, weight)):
        inside = np.isin(src, members) & np.isin(dst, members)
        position = {int(r): i for i, r in enumerate(members)}
        assert s.tolist() == [position[int(r)] for r in src[inside]]
        assert d.tolist() == [position[int(r)] for r in dst[inside]]
        assert np.array_equal(w, weight[inside])
