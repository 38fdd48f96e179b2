"""Pure graph pieces: the CSR snapshot and the faiss synonym search."""

import numpy as np

from llama_index_graphrag_suite.graph.snapshot import CHUNK, CONTAINS, ENTITY, RELATION, SYNONYM, GraphSnapshot
from llama_index_graphrag_suite.graph.synonyms import synonym_pairs


def small_snapshot() -> GraphSnapshot:
    # entities a, b, c; chunk k. a-b twice (two facts), b-c synonym, k contains a and c.
    return GraphSnapshot(
        node_ids=["a", "b", "c", "k"],
        node_kind=np.array([ENTITY, ENTITY, ENTITY, CHUNK], np.int8),
        edge_src=np.array([0, 0, 1, 3, 3], np.int32),
        edge_dst=np.array([1, 1, 2, 0, 2], np.int32),
        edge_kind=np.array([RELATION, RELATION, SYNONYM, CONTAINS, CONTAINS], np.int8),
        edge_fact=np.array([0, 1, -1, -1, -1], np.int32),
        edge_weight=np.array([1, 1, 0.9, 1, 1], np.float32),
    )


def test_csr_neighbours_keep_parallel_edges_and_edge_ids():
    snap = small_snapshot()
    nbrs, eids = snap.neighbours_of(snap.row("a"))
    assert sorted(zip(nbrs.tolist(), eids.tolist())) == [(1, 0), (1, 1), (3, 3)]
    nbrs, eids = snap.neighbours_of(snap.row("b"))
    assert sorted(zip(nbrs.tolist(), eids.tolist())) == [(0, 0), (0, 1), (2, 2)]
    adj = snap.adjacency().toarray()
    assert adj[0, 1] == 2 and adj[1, 0] == 2 and (adj == adj.T).all()
    assert snap.adjacency("weight").toarray()[1, 2] == np.float32(0.9)


def test_rows_or_missing_gives_each_row_and_minus_one_for_an_unknown_id():
    snap = small_snapshot()
    assert snap.rows_or_missing(["k", "nowhere", "a", "c"]).tolist() == [3, -1, 0, 2]
    assert snap.rows_or_missing([]).dtype == np.int64


def test_snapshot_round_trips_through_arrays():
    snap = small_snapshot()
    again = GraphSnapshot.from_arrays(snap.node_ids, snap.to_arrays())
    assert (again.adjacency() != snap.adjacency()).nnz == 0


def test_synonym_pairs_match_brute_force():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(30, 16)).astype(np.float32)
    vecs = np.concatenate([base, base[:10] + 0.05 * rng.normal(size=(10, 16)).astype(np.float32)])
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    src, dst, sim = synonym_pairs(vecs, threshold=0.8, max_per_node=100)
    cos = vecs @ vecs.T
    brute = {(i, j) for i in range(len(vecs)) for j in range(i + 1, len(vecs)) if cos[i, j] > 0.8}
    assert set(zip(src.tolist(), dst.tolist())) == brute and len(brute) >= 10
    np.testing.assert_allclose(sim, [cos[i, j] for i, j in zip(src, dst)], rtol=1e-5)
    # a cap of one neighbour per query row, and rows restricted to the new ones
    s2, d2, _ = synonym_pairs(vecs, 0.8, max_per_node=1, query_rows=np.arange(30, 40))
    assert set(zip(s2.tolist(), d2.tolist())) == {(i - 30, i) for i in range(30, 40)}
    eligible = np.ones(len(vecs), bool)
    eligible[0] = False
    s3, d3, _ = synonym_pairs(vecs, 0.8, eligible=eligible)
    assert 0 not in set(s3.tolist()) | set(d3.tolist())


def test_neighbours_list_every_edge_both_ways_with_int32_ids():
    """The shared neighbour matrix: each edge under both endpoints (parallel edges apart), ids as int32."""
    import numpy as np

    from llama_index_graphrag_suite.graph.snapshot import GraphSnapshot

    rng = np.random.default_rng(3)
    src, dst = rng.integers(0, 40, 300), rng.integers(0, 40, 300)
    snap = GraphSnapshot.from_edges([f"n{i}" for i in range(40)], 20, (src[:200], dst[:200]), (src[200:250], dst[200:250]),
                                    (src[250:], dst[250:], rng.random(50)))
    assert snap.neighbours.data.dtype == np.int32
    for row in range(40):
        nbrs, eids = snap.neighbours_of(row)
        # in order: by neighbour, then edges listed under their source before those under their target, then by id
        expected = sorted([(int(d), 0, e) for e, (s, d) in enumerate(zip(src, dst)) if s == row] +
                          [(int(s), 1, e) for e, (s, d) in enumerate(zip(src, dst)) if d == row])
        assert list(zip(nbrs.tolist(), eids.tolist())) == [(n, e) for n, _, e in expected]
