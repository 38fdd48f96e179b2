"""C-HNSW (ArchRAG Section 3.1.3, Algorithms 2-3): recall, inter-layer links, persistence, errors."""

from __future__ import annotations

import json

import heapq
import math
import threading

import numpy as np
import pytest

from llama_index_graphrag_suite.graph.chnsw import (
    ARRAYS_FILE,
    META_FILE,
    CHNSW,
    EXACT_LAYER_SIZE,
    EXPAND_BATCH,
    CHNSWNotFoundError,
    CorruptCHNSWError,
)

SIZES = (2000, 200, 20)  # bottom (entities) → top
DIM = 32


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def hierarchy(sizes=SIZES, dim=DIM, seed=0, spread=0.6) -> list[np.ndarray]:
    """Clustered vectors: each node is a noisy copy of a random node one layer up (top layer uniform)."""
    rng = np.random.default_rng(seed)
    layers = [unit(rng.standard_normal((sizes[-1], dim)))]
    for n in reversed(sizes[:-1]):
        parents = layers[0][rng.integers(len(layers[0]), size=n)]
        layers.insert(0, unit(parents + spread * rng.standard_normal((n, dim)) / math.sqrt(dim) * 2))
    return layers


@pytest.fixture(scope="module")
def layers() -> list[np.ndarray]:
    return hierarchy()


@pytest.fixture(scope="module")
def index(layers) -> CHNSW:
    """Walks the graph on every layer (by default layers this small would be scored exactly)."""
    index = CHNSW.build(layers, seed=0)
    index.exact_layer_size = 0
    return index


@pytest.fixture(scope="module")
def queries(layers) -> np.ndarray:
    """Held-out points drawn like the bottom layer (near the data, not on it)."""
    rng = np.random.default_rng(42)
    base = layers[0][rng.integers(len(layers[0]), size=100)]
    return unit(base + 0.5 * rng.standard_normal(base.shape) / math.sqrt(DIM) * 2)


def exact_top(vectors: np.ndarray, q: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(vectors @ q), kind="stable")[:k]


def recall(found: np.ndarray, true: np.ndarray) -> float:
    return len(set(found.tolist()) & set(true.tolist())) / len(true)


def test_shape_properties(index):
    assert index.num_layers == 3
    assert index.layer_sizes == list(SIZES)
    assert index.dim == DIM
    assert index.capacity == 32  # 2M with M = 16


@pytest.mark.parametrize("k", [1, 5, 10])
def test_search_layer_recall_at_default_ef(index, layers, queries, k):
    for layer in range(3):
        scores = [recall(index.search_layer(q, layer, k)[0], exact_top(layers[layer], q, k)) for q in queries]
        assert np.mean(scores) >= 0.95, (layer, k, np.mean(scores))


def test_search_all_layers_recall_and_matches_per_layer_scores(index, layers, queries):
    k = 10
    per_layer = [[] for _ in range(3)]
    for q in queries:
        results = index.search_all_layers(q, k)
        assert len(results) == 3
        for layer, (ids, sims) in enumerate(results):
            per_layer[layer].append(recall(ids, exact_top(layers[layer], q, k)))
            # similarities are the true cosines of the returned rows, best first
            np.testing.assert_allclose(sims, layers[layer][ids] @ q, atol=1e-5)
            assert np.all(np.diff(sims) <= 1e-7)
            assert len(set(ids.tolist())) == len(ids) == k
    for layer in range(3):
        assert np.mean(per_layer[layer]) >= 0.95, (layer, np.mean(per_layer[layer]))


def test_small_layers_are_scored_exactly_by_default(index, layers, queries):
    index.exact_layer_size = EXACT_LAYER_SIZE
    try:
        for q in queries[:20]:
            for layer, (ids, sims) in enumerate(index.search_all_layers(q, 10)):
                assert ids.tolist() == exact_top(layers[layer], q, 10).tolist()
            assert index.search_layer(q, 0, 3)[0].tolist() == exact_top(layers[0], q, 3).tolist()
    finally:
        index.exact_layer_size = 0


def textbook_search_layer(index: CHNSW, q: np.ndarray, entry: int, layer: int, ef: int) -> list[int]:
    """HNSW's SEARCH-LAYER (Malkov & Yashunin, Algorithm 2) with a candidate heap, for comparison."""
    vecs = index._vectors[layer]
    visited = {entry}
    sim = float(vecs[entry] @ q)
    candidates, found = [(-sim, entry)], [(sim, entry)]
    while candidates:
        neg, c = heapq.heappop(candidates)
        if -neg < found[0][0]:
            break
        for e in index.neighbours(layer, c).tolist():
            if e in visited:
                continue
            visited.add(e)
            s = float(vecs[e] @ q)
            if len(found) < ef or s > found[0][0]:
                heapq.heappush(candidates, (-s, e))
                heapq.heappush(found, (s, e))
                if len(found) > ef:
                    heapq.heappop(found)
    return [n for _, n in sorted(found, reverse=True)]


@pytest.mark.parametrize("layer", [0, 1])
def test_batch_of_one_is_the_textbook_search_layer(index, queries, layer):
    index.expand_batch = 1
    try:
        for i, q in enumerate(queries[:25]):
            entry = (37 * i) % SIZES[layer]
            _, ids = index._best_first(q, [entry], layer, ef=20)
            assert ids.tolist() == textbook_search_layer(index, q, entry, layer, ef=20)
    finally:
        index.expand_batch = EXPAND_BATCH


def test_search_layer_on_bottom_layer_walks_the_graph(index, layers, queries):
    """The bottom layer (2000 nodes) is searched through links, so it touches far fewer nodes than exact search."""
    visited = []
    for q in queries[:20]:
        index.search_layer(q, 0, 10)
        marks, _, gen = index._scratch(0)  # the next generation; the last search used gen - 1
        visited.append(int((marks[:-1] == gen - 1).sum()))
    assert 0 < np.mean(visited) < 0.5 * SIZES[0]


def test_inter_layer_links_are_mostly_true_nearest_neighbours(index, layers):
    for layer in (1, 2):
        links = index.inter_layer_links(layer)
        assert links.shape == (SIZES[layer],) and links.min() >= 0 and links.max() < SIZES[layer - 1]
        true = np.argmax(layers[layer] @ layers[layer - 1].T, axis=1)
        assert np.mean(links == true) >= 0.95


def test_link_update_cases_keep_the_closest_inserted_node():
    """One top node: every bottom insertion's descent ends at it, so Appendix A.2's two cases (no link
    yet → link; closer than the current link → replace) leave it linked to the nearest bottom node."""
    rng = np.random.default_rng(11)
    bottom = unit(rng.standard_normal((40, 8)))
    top = unit(rng.standard_normal((1, 8)))
    nearest = int(np.argmax(bottom @ top[0]))
    # build() draws the entry node, then each layer's insertion order, top layer first, from one seeded
    # generator: the first bottom node inserted (case 1) is not the nearest, so case 2 must replace it.
    order_rng = np.random.default_rng(0)
    order_rng.integers(1), order_rng.permutation(1)
    assert int(order_rng.permutation(40)[0]) != nearest
    index = CHNSW.build([bottom, top], seed=0, refine_links=False, builder="insertion")
    assert index.inter_layer_links(1).tolist() == [nearest]


def test_paper_link_updates_alone_give_every_node_a_link(layers):
    """Without the refinement pass: the two cases plus the final check that every node has a link."""
    index = CHNSW.build(layers[1:], seed=0, refine_links=False, builder="insertion")  # two layers: 200 and 20 nodes
    links = index.inter_layer_links(1)
    assert links.min() >= 0
    true = np.argmax(layers[2] @ layers[1].T, axis=1)
    assert np.mean(links == true) >= 0.8


def test_intra_layer_links_respect_capacity(index):
    for layer, n in enumerate(SIZES):
        degrees = []
        for row in range(n):
            nbrs = index.neighbours(layer, row)
            assert len(nbrs) <= index.capacity
            assert row not in nbrs and len(set(nbrs.tolist())) == len(nbrs)
            assert np.all((0 <= nbrs) & (nbrs < n))
            degrees.append(len(nbrs))
        assert min(degrees) >= 1  # every node is reachable from somewhere
        assert np.mean(degrees) >= 8


def test_hand_computed_circle():
    """Unit vectors on a circle: inter-layer links and search results are checkable by hand."""
    def at(*deg):
        return np.array([[math.cos(math.radians(d)), math.sin(math.radians(d))] for d in deg], np.float32)

    bottom = at(0, 90, 180, 270)
    top = at(10, 200)
    index = CHNSW.build([bottom, top], M=2)
    assert index.inter_layer_links(1).tolist() == [0, 2]  # 10° → 0°, 200° → 180°
    ids, sims = index.search_layer(at(80)[0], 0, k=2)
    assert ids.tolist() == [1, 0]  # 90° (10° away), then 0° (80° away)
    np.testing.assert_allclose(sims, [math.cos(math.radians(10)), math.cos(math.radians(80))], atol=1e-6)
    all_layers = index.search_all_layers(at(190)[0], k=1)
    assert [r[0].tolist() for r in all_layers] == [[2], [1]]  # 180° below, 200° on top


def test_single_node_layer_and_k_larger_than_layer():
    rng = np.random.default_rng(3)
    bottom = unit(rng.standard_normal((5, 8)))
    top = unit(rng.standard_normal((1, 8)))
    index = CHNSW.build([bottom, top])
    assert index.inter_layer_links(1).tolist() == [int(np.argmax(bottom @ top[0]))]
    q = unit(rng.standard_normal(8))
    ids, sims = index.search_layer(q, 1, k=3)
    assert ids.tolist() == [0] and sims.shape == (1,)
    ids, sims = index.search_layer(q, 0, k=50)
    assert ids.tolist() == exact_top(bottom, q, 5).tolist()
    results = index.search_all_layers(q, k=10)
    assert [len(r[0]) for r in results] == [5, 1]
    assert CHNSW.build([top]).search_layer(q, 0, k=1)[0].tolist() == [0]  # one layer, one node


def test_unnormalised_input_is_normalised():
    rng = np.random.default_rng(5)
    raw = rng.standard_normal((50, 6)).astype(np.float32) * 7
    index = CHNSW.build([raw])
    q = rng.standard_normal(6) * 3
    ids, sims = index.search_layer(q, 0, k=3)
    assert ids.tolist() == exact_top(unit(raw), unit(q), 3).tolist()
    assert np.all(sims <= 1 + 1e-6)


def test_literal_nearest_rule_links_the_nearest_found(layers, queries):
    """``neighbour_rule="nearest"`` (Eq. 1 read literally): the node inserted last links to its exact M
    nearest (the search from any entry reaches the whole 200-node layer with ef_construction=256)."""
    index = CHNSW.build(layers[1:], M=6, ef_construction=256, neighbour_rule="nearest", seed=1, builder="insertion")
    index.exact_layer_size = 0
    order_rng = np.random.default_rng(1)
    order_rng.integers(SIZES[2]), order_rng.permutation(SIZES[2])
    last = int(order_rng.permutation(SIZES[1])[-1])  # insertion order of layer 1 (see build())
    sims = layers[1] @ layers[1][last]
    sims[last] = -np.inf
    assert set(index.neighbours(0, last)[:6].tolist()) == set(np.argsort(-sims)[:6].tolist())
    scores = [recall(index.search_layer(q, 0, 5)[0], exact_top(layers[1], q, 5)) for q in queries]
    assert np.mean(scores) >= 0.95


@pytest.mark.parametrize("builder", ["faiss", "insertion"])
def test_deterministic_with_seed(layers, builder):
    small = [layers[1], layers[2]]
    a, b = CHNSW.build(small, seed=7, builder=builder), CHNSW.build(small, seed=7, builder=builder)
    c = CHNSW.build(small, seed=8, builder=builder)
    for layer in range(2):
        np.testing.assert_array_equal(a._links[layer], b._links[layer])
    np.testing.assert_array_equal(a.inter_layer_links(1), b.inter_layer_links(1))
    if builder == "insertion":  # the seed also orders the insertions
        assert any(not np.array_equal(a._links[l], c._links[l]) for l in range(2))
    else:  # faiss builds each layer alone, whatever the seed; the seed draws the top-layer entry node
        assert all(np.array_equal(a._links[l], c._links[l]) for l in range(2))


@pytest.mark.parametrize("k", [1, 10])
def test_both_builders_reach_the_same_recall(layers, queries, k):
    """The faiss layers and Algorithm 3's insertion make graphs the same search finds as much in."""
    built = {b: CHNSW.build(layers, seed=0, builder=b) for b in ("faiss", "insertion")}
    for index in built.values():
        index.exact_layer_size = 0
    for layer in range(len(layers)):
        got = {b: np.mean([recall(index.search_layer(q, layer, k)[0], exact_top(layers[layer], q, k))
                           for q in queries]) for b, index in built.items()}
        assert got["faiss"] >= 0.95 and got["faiss"] >= got["insertion"] - 0.02


def test_unknown_builder_and_literal_rule_with_faiss_are_refused(layers):
    with pytest.raises(ValueError, match="builder must be one of"):
        CHNSW.build(layers, builder="hnswlib")
    with pytest.raises(ValueError, match="needs builder='insertion'"):
        CHNSW.build(layers, neighbour_rule="nearest")


def test_concurrent_searches_match_sequential(index, queries):
    expected = [index.search_all_layers(q, 5) for q in queries[:40]]
    got: dict[int, list] = {}

    def work(offset: int) -> None:
        for i in range(offset, 40, 4):
            got[i] = index.search_all_layers(queries[i], 5)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, result in enumerate(expected):
        for (ids_a, sims_a), (ids_b, sims_b) in zip(result, got[i]):
            np.testing.assert_array_equal(ids_a, ids_b)


def test_save_load_round_trip(index, queries, tmp_path):
    index.save(tmp_path / "chnsw")
    arrays = [f"{kind}_{l}.npy" for kind in ("vectors", "links", "down") for l in range(index.num_layers)]
    assert sorted(p.name for p in (tmp_path / "chnsw").iterdir()) == sorted(arrays + [META_FILE])
    loaded = CHNSW.load(tmp_path / "chnsw")
    assert all(isinstance(loaded.layer_vectors(l), np.memmap) for l in range(loaded.num_layers))  # not read into RAM
    assert all(isinstance(lk, np.memmap) and lk.dtype == np.int32 for lk in loaded._links)  # nor widened to intp
    assert loaded.layer_sizes == index.layer_sizes and loaded.dim == index.dim and loaded.M == index.M
    for q in queries[:30]:
        for (ids_a, sims_a), (ids_b, sims_b) in zip(index.search_all_layers(q, 5), loaded.search_all_layers(q, 5)):
            np.testing.assert_array_equal(ids_a, ids_b)
            np.testing.assert_array_equal(sims_a, sims_b)
        np.testing.assert_array_equal(index.search_layer(q, 1, 7)[0], loaded.search_layer(q, 1, 7)[0])
    index.save(tmp_path / "chnsw")  # overwriting in place works too
    assert CHNSW.load(tmp_path / "chnsw").layer_sizes == index.layer_sizes


def test_load_errors(index, tmp_path):
    with pytest.raises(CHNSWNotFoundError, match="missing"):
        CHNSW.load(tmp_path / "nothing")
    folder = tmp_path / "idx"
    index.save(folder)
    arrays = (folder / "links_0.npy").read_bytes()
    (folder / "links_0.npy").write_bytes(arrays[:-100] + b"x" * 100)
    with pytest.raises(CorruptCHNSWError, match="checksum"):
        CHNSW.load(folder)
    index.save(folder)
    (folder / META_FILE).write_text("{not json")
    with pytest.raises(CorruptCHNSWError, match="JSON"):
        CHNSW.load(folder)
    index.save(folder)
    (folder / "vectors_1.npy").unlink()
    with pytest.raises(CHNSWNotFoundError, match="vectors_1.npy"):
        CHNSW.load(folder)


def test_a_format_1_index_in_one_npz_still_loads(index, queries, tmp_path):
    """Saved before each array had its own file: one ``.npz`` and its checksum in the JSON."""
    from llama_index_graphrag_suite.fileio import sha256_file

    folder = tmp_path / "old"
    index.save(folder)
    meta = json.loads((folder / META_FILE).read_text())
    arrays = {p.stem: np.load(p) for p in folder.glob("*.npy")}
    for p in folder.glob("*.npy"):
        p.unlink()
    np.savez(folder / ARRAYS_FILE, **arrays)
    meta = {k: v for k, v in meta.items() if k != "sha256"}
    meta.update(format_version=1, arrays_sha256=sha256_file(folder / ARRAYS_FILE))
    (folder / META_FILE).write_text(json.dumps(meta))
    loaded = CHNSW.load(folder)
    for q in queries[:10]:
        for (ids_a, _), (ids_b, _) in zip(index.search_all_layers(q, 5), loaded.search_all_layers(q, 5)):
            np.testing.assert_array_equal(ids_a, ids_b)
    (folder / ARRAYS_FILE).write_bytes(b"x")
    with pytest.raises(CorruptCHNSWError, match="checksum"):
        CHNSW.load(folder)


def test_build_errors():
    good = np.ones((3, 4), np.float32)
    with pytest.raises(ValueError, match="non-empty list"):
        CHNSW.build([])
    with pytest.raises(ValueError, match="layer 1 is empty"):
        CHNSW.build([good, np.zeros((0, 4), np.float32)])
    with pytest.raises(ValueError, match="dimension 5 differs"):
        CHNSW.build([good, np.ones((2, 5), np.float32)])
    with pytest.raises(ValueError, match="2-D"):
        CHNSW.build([np.ones(4, np.float32)])
    with pytest.raises(ValueError, match="NaN"):
        CHNSW.build([np.array([[1.0, np.nan]], np.float32)])
    with pytest.raises(ValueError, match="M must be an integer"):
        CHNSW.build([good], M=0)
    with pytest.raises(ValueError, match="neighbour_rule"):
        CHNSW.build([good], neighbour_rule="random")


def test_search_errors(index):
    q = np.ones(DIM, np.float32)
    with pytest.raises(ValueError, match="dimension 32"):
        index.search_layer(np.ones(DIM + 1), 0, 5)
    with pytest.raises(ValueError, match="layer must be"):
        index.search_layer(q, 3, 5)
    with pytest.raises(ValueError, match="k must be"):
        index.search_all_layers(q, 0)
    with pytest.raises(ValueError, match="ef must be"):
        index.search_layer(q, 0, 5, ef=0)
    with pytest.raises(ValueError, match="NaN"):
        index.search_layer(np.full(DIM, np.nan), 0, 5)
    with pytest.raises(ValueError, match="no inter-layer links"):
        index.inter_layer_links(0)
