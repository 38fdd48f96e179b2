"""ArchRAG's hierarchy at scale: the memory and CPU measures give the numbers they replace, and the KNN step can
search the C-HNSW's own per-layer HNSW (shared from ``SHARED_HNSW_ENTITIES`` entities on)."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.graph.chnsw import CHNSW, faiss_layers, hnsw_layer, hnsw_rows, hnsw_search
from llama_index_graphrag_suite.graph.chnsw_search import unit_rows
from llama_index_graphrag_suite.graph.communities import (AugmentedGraph, HierarchyParams, build_hierarchy, centroids,
                                                          internal_strength)
from llama_index_graphrag_suite.graph.knn_augment import knn_augment


def _clustered(n: int, dim: int = 16, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(max(2, n // 40), dim))
    return (centres[rng.integers(0, len(centres), n)] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)


def test_unit_rows_in_place_is_the_copy_bit_for_bit():
    x = _clustered(500) * 3.0
    x[7] = 0.0  # a zero row stays zero
    copy = unit_rows(x)
    same = unit_rows(x, in_place=True)
    assert same is x and copy is not x
    assert copy.tobytes() == x.tobytes() and not x[7].any()


def test_chnsw_without_copy_scales_the_layers_in_place_into_the_same_index():
    layers = [_clustered(800, seed=1), _clustered(60, seed=2)]
    given = [layer.copy() for layer in layers]
    a = CHNSW.build(layers, seed=0)
    b = CHNSW.build(given, seed=0, copy=False)
    assert b.layer_vectors(0) is given[0]  # kept, not copied
    for layer in range(2):
        assert a.layer_vectors(layer).tobytes() == b.layer_vectors(layer).tobytes()
        assert np.array_equal(a._links[layer], b._links[layer])
    assert np.array_equal(a.inter_layer_links(1), b.inter_layer_links(1))


def test_chnsw_reuses_prebuilt_layer_indexes_and_refuses_foreign_ones():
    layers = [unit_rows(_clustered(900, seed=3)), unit_rows(_clustered(70, seed=4))]
    fresh = CHNSW.build(layers, M=8, ef_construction=32, seed=0)
    prebuilt = {0: hnsw_layer(layers[0], 8, 32)}
    reused = CHNSW.build(layers, M=8, ef_construction=32, seed=0, prebuilt=prebuilt)
    for layer in range(2):
        assert np.array_equal(fresh._links[layer], reused._links[layer])
    assert np.array_equal(fresh.inter_layer_links(1), reused.inter_layer_links(1))
    assert reused.layer_vectors(0).tobytes() == layers[0].tobytes()
    with pytest.raises(ValueError, match="prebuilt HNSW of layer 0"):
        CHNSW.build(layers, M=16, ef_construction=32, prebuilt=prebuilt)  # built with other settings
    with pytest.raises(ValueError, match="prebuilt HNSW of layer 1"):
        CHNSW.build(layers, M=8, ef_construction=32, prebuilt={1: prebuilt[0]})  # over other rows
    with pytest.raises(ValueError, match="builder='faiss'"):
        CHNSW.build(layers, M=8, ef_construction=32, builder="insertion", prebuilt=prebuilt)


def test_hnsw_search_finds_each_rows_nearest():
    x = unit_rows(_clustered(1200, seed=5))
    sims, rows = hnsw_search(hnsw_layer(x, 16, 64), x, 5, 32)
    assert sims.shape == rows.shape == (1200, 5)
    exact = np.argsort(-(x @ x.T), axis=1)[:, :5]
    found = np.mean([len(set(a) & set(b)) / 5 for a, b in zip(rows.tolist(), exact.tolist())])
    assert found >= 0.9 and np.all(np.diff(sims, axis=1) <= 1e-6)  # best first


@pytest.mark.parametrize("seed", range(3))
def test_centroids_and_strength_are_the_sequential_sums_they_replace(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    x = rng.normal(size=(n, int(rng.integers(1, 70)))).astype(np.float32)
    membership = rng.integers(0, max(1, n // 3), n)
    membership = np.unique(membership, return_inverse=True)[1]
    for normalise in (True, False):
        sums = np.zeros((membership.max() + 1, x.shape[1]))
        np.add.at(sums, membership, x)
        means = sums / np.bincount(membership)[:, None]
        if normalise:
            means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
        assert centroids(x, membership, normalise).tobytes() == means.astype(np.float32).tobytes()
    m = int(rng.integers(0, 4 * n))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    graph = AugmentedGraph(n, src, dst, rng.uniform(0, 1, m), np.zeros(m, bool), 0.5, 1)
    inside = membership[src] == membership[dst]
    expected = np.zeros(n)
    np.add.at(expected, src[inside], graph.weight[inside])
    np.add.at(expected, dst[inside], graph.weight[inside])
    assert internal_strength(membership, graph).tobytes() == expected.tobytes()


def test_knn_augment_with_a_given_search_uses_it_on_the_rows_as_given():
    rng = np.random.default_rng(6)
    x = unit_rows(_clustered(600, seed=6))
    src, dst = rng.integers(0, 600, 1200), rng.integers(0, 600, 1200)
    calls = []

    def exact(rows, k):
        calls.append(k)
        sims = rows @ x.T
        order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(sims, order, axis=1), order

    given = knn_augment(x, src, dst, nearest=exact)
    default = knn_augment(x, src, dst, approx_rows=0)
    assert calls == [min(600, int(1.5 * given.k) + 2)]
    assert np.array_equal(given.src, default.src) and np.array_equal(given.dst, default.dst)
    np.testing.assert_allclose(given.weight, default.weight, atol=1e-6)


def test_build_hierarchy_asks_each_layer_for_its_search():
    x = _clustered(400, seed=7)
    rng = np.random.default_rng(7)
    src, dst = rng.integers(0, 400, 800), rng.integers(0, 400, 800)
    asked = []

    def layer_search(layer, vectors):
        asked.append((layer, vectors.shape[0]))
        unit_rows(vectors, in_place=True)
        index = hnsw_layer(vectors, 16, 64)
        return lambda rows, k: hnsw_search(index, rows, k, 16)

    params = HierarchyParams(max_cluster_size=8, min_nodes=5, max_layers=3)
    layers = build_hierarchy(x, src, dst, params, layer_search=layer_search)
    assert [layer for layer, _ in asked][:len(layers)] == list(range(len(layers))) and layers
    assert asked[0][1] == 400 and all(asked[l + 1][1] == layers[l].count for l in range(len(asked) - 1))
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)  # scaled where it was, as the contract says
    asked.clear()
    build_hierarchy(x, src, dst, HierarchyParams(augment=False, max_cluster_size=8), layer_search=layer_search)
    assert asked == []  # without augmentation there is no neighbour search to give


@pytest.fixture(scope="module")
def small_index():
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from tests.conftest import CORPUS

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128),
                                        config=IndexConfig(entities="statistical", entity_threshold=0.1))


def test_hierarchy_shares_the_layer_indexes_from_the_threshold_on(small_index, monkeypatch):
    from llama_index_graphrag_suite.methods.archrag import ArchRAGConfig
    from llama_index_graphrag_suite.methods.archrag import hierarchy as module

    config = ArchRAGConfig(max_cluster_size=4, min_nodes=3)
    built = []
    real = module.hnsw_layer
    monkeypatch.setattr(module, "hnsw_layer", lambda *a: built.append(a[0].shape[0]) or real(*a))
    default = module.ArchRAGHierarchy.build(small_index, config)
    assert built == []  # below the threshold: the hierarchy it always was
    monkeypatch.setattr(module, "SHARED_HNSW_ENTITIES", 0)
    shared = module.ArchRAGHierarchy.build(small_index, config)
    assert built[0] == len(shared.entity_ids) and len(built) >= shared.num_layers - 1
    # The C-HNSW's bottom links are those of an HNSW built afresh over its bottom rows.
    links, _ = faiss_layers([np.asarray(shared.entity_vectors)], config.M, config.ef_construction)
    assert np.array_equal(links[0], shared.chnsw._links[0])
    assert default.entity_ids == shared.entity_ids and shared.communities_per_layer()


def test_hnsw_rows_share_the_index_memory_and_keep_it_alive():
    import gc

    x = unit_rows(_clustered(300, seed=8))
    rows = hnsw_rows(hnsw_layer(x, 8, 16))  # the index itself is referenced only through the array
    gc.collect()
    assert rows.dtype == np.float32 and rows.shape == x.shape and rows.tobytes() == x.tobytes()
    assert not rows.flags.writeable
    with pytest.raises(ValueError):
        rows[0, 0] = 1.0


def test_bottom_links_gathered_in_blocks_are_the_whole_gather(monkeypatch):
    import faiss

    from llama_index_graphrag_suite.graph import chnsw_build

    index = hnsw_layer(unit_rows(_clustered(700, seed=9)), 8, 16)
    hnsw = index.hnsw
    offsets = faiss.vector_to_array(hnsw.offsets).astype(np.int64)
    slots = offsets[:-1, None] + hnsw.cum_nb_neighbors(0) + np.arange(hnsw.nb_neighbors(0))[None, :]
    whole = faiss.vector_to_array(hnsw.neighbors)[slots].astype(np.intp)
    for block in (700, 64, 7):
        monkeypatch.setattr(chnsw_build, "LINK_BLOCK", block)
        links = chnsw_build._bottom_links(index)
        assert links.dtype == np.intp and np.array_equal(links, whole) and (links >= 0).any()
