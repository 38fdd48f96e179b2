"""A2RAG's pure graph parts on hand-drawn graphs: K-hop bridges (Eq. 8) and degree-normalised PPR (Eq. 9-11)."""

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph.bridges import (
    UNREACHED, bridge_candidates, find_bridges, hop_distances, shortest_paths,
)
from llama_index_graphrag_suite.graph.ppr import (
    binary_adjacency, degree_normalised_personalization, degree_normalised_ppr, personalized_pagerank,
    transition_matrix,
)


def csr(n, edges):
    """Undirected CSR neighbour list (both directions, as GraphSnapshot.neighbours)."""
    rows = [u for u, v in edges] + [v for u, v in edges]
    cols = [v for u, v in edges] + [u for u, v in edges]
    m = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    m.sum_duplicates()
    return m.indptr, m.indices


PATH5 = csr(5, [(0, 1), (1, 2), (2, 3), (3, 4)])  # 0 - 1 - 2 - 3 - 4
DIAMOND = csr(4, [(0, 1), (0, 2), (1, 3), (2, 3)])  # 0 and 3 joined through 1 and through 2


def test_hop_distances_on_a_path():
    dist = hop_distances(*PATH5, np.array([0, 4]), max_hops=2)
    np.testing.assert_array_equal(dist, [[0, 1, 2, UNREACHED, UNREACHED], [UNREACHED, UNREACHED, 2, 1, 0]])


def test_hop_distances_match_networkx_within_k():
    g = nx.gnm_random_graph(60, 120, seed=3)
    indptr, indices = csr(60, list(g.edges))
    dist = hop_distances(indptr, indices, np.array([0, 7, 30]), max_hops=3)
    for i, s in enumerate([0, 7, 30]):
        expected = nx.single_source_shortest_path_length(g, s, cutoff=3)
        got = {v: int(d) for v, d in enumerate(dist[i]) if d != UNREACHED}
        assert got == expected


def test_the_middle_of_a_path_is_the_only_bridge():
    found = find_bridges(*PATH5, seeds=np.array([0, 4]), max_hops=2)
    assert found.rows == [2] and found.seeds_reached == [2]
    assert sorted(found.paths) == [[2, 1, 0], [2, 3, 4]]
    assert not found.truncated
    # K = 1: the seeds are four hops apart, nothing reaches both.
    assert find_bridges(*PATH5, seeds=np.array([0, 4]), max_hops=1).rows == []


def test_diamond_bridges_order_and_paths():
    # Every node is within 2 hops of both seeds: the seeds reach each other in 2 hops.
    rows, count, hops = bridge_candidates(hop_distances(*DIAMOND, np.array([0, 3]), 2))
    assert rows.tolist() == [0, 1, 2, 3] and count.tolist() == [2, 2, 2, 2] and hops.tolist() == [2, 2, 2, 2]
    found = find_bridges(*DIAMOND, seeds=np.array([0, 3]), max_hops=2, exclude_seeds=True)
    assert found.rows == [1, 2]
    assert found.paths == [[1, 0], [1, 3], [2, 0], [2, 3]]
    # From seed 0 to seed 3 there are two shortest paths; the priority picks which comes first.
    dist3 = hop_distances(*DIAMOND, np.array([3]), 2)[0]
    assert shortest_paths(*DIAMOND, dist3, 0, max_paths=5) == [[0, 1, 3], [0, 2, 3]]
    assert shortest_paths(*DIAMOND, dist3, 0, max_paths=5, priority=np.array([0, 0.1, 0.9, 0])) == [[0, 2, 3], [0, 1, 3]]
    assert shortest_paths(*DIAMOND, dist3, 0, max_paths=1) == [[0, 1, 3]]


def test_caps_on_bridges_and_paths():
    found = find_bridges(*DIAMOND, seeds=np.array([0, 3]), max_hops=2, max_bridges=1, exclude_seeds=True)
    assert found.rows == [1] and found.truncated
    found = find_bridges(*DIAMOND, seeds=np.array([0, 3]), max_hops=2, max_paths=3, exclude_seeds=True)
    assert len(found.paths) == 3 and found.truncated


def test_hubs_are_neither_crossed_nor_bridges():
    # 0 - 5 - 1 through hub 5 (also linked to 2, 3, 4); and a long way 0 - 6 - 7 - 1.
    indptr, indices = csr(8, [(0, 5), (5, 1), (5, 2), (5, 3), (5, 4), (0, 6), (6, 7), (7, 1)])
    free = find_bridges(indptr, indices, seeds=np.array([0, 1]), max_hops=2, exclude_seeds=True)
    assert 5 in free.rows
    expand = np.ones(8, bool)
    expand[5] = False
    blocked = find_bridges(indptr, indices, seeds=np.array([0, 1]), max_hops=2, exclude_seeds=True, expand=expand)
    assert 5 not in blocked.rows and set(blocked.rows) == {6, 7}
    # The hub is still reached (distance 1) but not passed through: 2 is out of reach.
    dist = hop_distances(indptr, indices, np.array([0]), 2, expand)[0]
    assert dist[5] == 1 and dist[2] == UNREACHED


def test_fewer_than_two_seeds_and_bad_input():
    assert find_bridges(*PATH5, seeds=np.array([2])).rows == []
    assert find_bridges(*PATH5, seeds=np.array([2, 2])).rows == []  # one seed named twice
    with pytest.raises(ValueError):
        hop_distances(*PATH5, np.array([9]), 2)
    with pytest.raises(ValueError):
        find_bridges(*PATH5, seeds=np.array([0, 4]), min_seeds=1)


# ---------------------------------------------------------------------- degree-normalised PPR


def test_binary_adjacency_collapses_weights_and_parallel_edges():
    a = sp.coo_matrix(([3.0, 3.0, 1.0, 1.0, 2.0, 2.0], ([0, 1, 0, 1, 1, 2], [1, 0, 1, 0, 2, 1])), shape=(3, 3))
    np.testing.assert_array_equal(binary_adjacency(a).toarray(), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])


def test_personalization_is_inverse_degree():
    # Eq. 10: seeds of degree 1 and 2 get 1/1 and 1/2, normalised: 2/3 and 1/3.
    np.testing.assert_allclose(degree_normalised_personalization(np.array([1, 2, 1]), np.array([0, 1])), [2 / 3, 1 / 3, 0])
    # Weights multiply deg^-1 before normalising; a repeated seed counts once.
    np.testing.assert_allclose(degree_normalised_personalization(np.array([1, 2, 1]), np.array([0, 1, 1]),
                                                                 np.array([1.0, 4.0, 9.0])), [1 / 3, 2 / 3, 0])
    with pytest.raises(ValueError):
        degree_normalised_personalization(np.array([1, 2]), np.array([], dtype=int))


def test_degree_normalised_ppr_by_hand():
    # Path a - b - c, seeds {a, b}, α = 0.5. p0 = (2/3, 1/3, 0) and
    #   r_a = 1/3 + r_b/4,  r_b = 1/6 + (r_a + r_c)/2,  r_c = r_b/4   ->   r = (4/9, 4/9, 1/9).
    adj = binary_adjacency(sp.csr_matrix(np.array([[0, 5, 0], [5, 0, 1], [0, 1, 0]], float)))
    degree = np.asarray(adj.sum(axis=1)).ravel()
    r = degree_normalised_ppr(transition_matrix(adj), degree, np.array([0, 1]), alpha=0.5, tol=1e-13)
    np.testing.assert_allclose(r, [4 / 9, 4 / 9, 1 / 9], atol=1e-10)
    # α is the teleport probability: the same as personalized_pagerank with damping 1 - α.
    p0 = degree_normalised_personalization(degree, np.array([0, 1]))
    np.testing.assert_allclose(
        degree_normalised_ppr(transition_matrix(adj), degree, np.array([0, 1]), alpha=0.2, tol=1e-13),
        personalized_pagerank(adj, p0, damping=0.8, tol=1e-13), atol=1e-12)
    with pytest.raises(ValueError):
        degree_normalised_ppr(transition_matrix(adj), degree, np.array([0]), alpha=0.0)


def test_seeds_of_one_mention_count_once():
    # Seeds 0 and 1 are one mention (an entity and its passage): they do not bridge each other.
    assert find_bridges(*PATH5, seeds=np.array([0, 1]), max_hops=2, groups=np.array([7, 7])).rows == []
    # Group a = {0, 1} reaches 2 in 1 hop and 3 in 2; group b = {4} reaches 3 in 1 and 2 in 2.
    found = find_bridges(*PATH5, seeds=np.array([0, 1, 4]), max_hops=2, groups=np.array([0, 0, 1]))
    assert found.rows == [2, 3] and found.seeds_reached == [2, 2]
    assert found.paths == [[2, 1], [2, 3, 4], [3, 2, 1], [3, 4]]
