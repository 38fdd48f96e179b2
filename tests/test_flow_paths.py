"""PathRAG flow-based pruning (Eq. 2-4) on hand-drawn graphs, with hand-computed numbers."""

import random

import numpy as np
import pytest

from llama_index_graphrag_suite.graph.flow_paths import (
    FlowGraph,
    exhaustive_paths,
    flow_paths,
    propagate,
    reference_scores,
    resource_scores,
    select_paths,
)

# Diamond with a tail:   1
#                      /   \
#                     0     3 - 4
#                      \   /
#                        2
DIAMOND = FlowGraph.from_edges(5, [0, 0, 1, 2, 3], [1, 2, 3, 3, 4])


def test_graph_is_simple_and_keeps_edge_ids():
    g = FlowGraph.from_edges(3, [0, 1, 0, 2], [1, 0, 0, 1], [10, 11, 12, 13])  # parallel 0-1, self loop 0-0
    assert g.degree.tolist() == [1, 2, 1]
    assert g.edge_between(0, 1) == 10 and g.edge_between(1, 0) == 10  # the first of the parallel edges
    assert g.edge_between(1, 2) == 13 and g.edge_between(0, 2) == -1
    with pytest.raises(ValueError):
        FlowGraph.from_edges(2, [0], [5])


def test_resources_follow_eq_2():
    flow = propagate(DIAMOND, 0, alpha=0.5, theta=0.0)
    # S(0)=1; 1 and 2 get 0.5*1/2; 3 gets 0.5*0.25/2 from each of them; 4 gets 0.5*0.125/3.
    expected = {0: 1.0, 1: 0.25, 2: 0.25, 3: 0.125, 4: 0.125 / 6}
    got = flow.resource()
    assert got.keys() == expected.keys()
    for node, value in expected.items():
        assert got[node] == pytest.approx(value)
    assert [layer.tolist() for layer in flow.layers] == [[0], [1, 2], [3], [4]]


def test_early_stop_eq_3():
    # theta 0.1: node 1 holds 0.25 over 2 neighbours (0.125 >= 0.1) and propagates; node 3 holds
    # 0.125 over 3 neighbours (0.042 < 0.1) and stops, so 4 is never reached.
    flow = propagate(DIAMOND, 0, alpha=0.5, theta=0.1)
    assert set(flow.resource()) == {0, 1, 2, 3}
    assert [a.tolist() for a in flow.alive] == [[True], [True, True], [False]]
    # A start with 2 neighbours and theta above 1/2 sends nothing at all (Eq. 3 applies to it too).
    assert propagate(DIAMOND, 0, alpha=0.5, theta=0.6).resource() == {0: 1.0}


def test_each_node_is_updated_once():
    # Triangle 0-1-2: 1 and 2 are reached at depth 1; their edge 1-2 must not add resource later.
    g = FlowGraph.from_edges(3, [0, 0, 1], [1, 2, 2])
    res = propagate(g, 0, alpha=0.7, theta=0.0).resource()
    assert res[1] == pytest.approx(0.35) and res[2] == pytest.approx(0.35)


def test_max_hops_limits_depth():
    assert set(propagate(DIAMOND, 0, alpha=0.5, theta=0.0, max_hops=1).resource()) == {0, 1, 2}


def test_path_reliabilities_eq_4():
    search = flow_paths(DIAMOND, [0, 3, 4], alpha=0.5, theta=0.0, top_k=10, paths_per_pair=2)
    got = {p.nodes: p.reliability for p in search.paths}
    # 4 -> 3: flow from 4 (one neighbour) gives S(3) = 0.5: (1 + 0.5) / 1. The other direction,
    # from 3 (three neighbours), gives (1 + 0.5/3) / 1 and is the same relational path: dropped.
    assert got[(4, 3)] == pytest.approx(1.5)
    # 0 -> 3 through 1 or 2: (1 + 0.25 + 0.125) / 2; from 3 it would be (1 + 1/6 + 1/12) / 2 = 0.625.
    assert got[(0, 1, 3)] == pytest.approx(0.6875) and got[(0, 2, 3)] == pytest.approx(0.6875)
    # 4 -> 3 -> 1 -> 0: S(3) = 0.5, S(1) = 0.5*0.5/3, S(0) = 2 * 0.5*(1/12)/2 = 1/24: sum / 3.
    assert got[(4, 3, 1, 0)] == pytest.approx((1 + 0.5 + 1 / 12 + 1 / 24) / 3)
    assert [p.reliability for p in search.paths] == sorted(got.values(), reverse=True)
    assert search.paths[0].edges == (DIAMOND.edge_between(4, 3),)
    assert search.paths[1].resources == pytest.approx((1.0, 0.25, 0.125))


def test_top_paths_per_pair_and_global_k():
    one = flow_paths(DIAMOND, [0, 3, 4], alpha=0.5, theta=0.0, top_k=10, paths_per_pair=1)
    assert [p.nodes for p in one.paths] == [(4, 3), (0, 1, 3), (4, 3, 1, 0)]  # tie 0-1-3 / 0-2-3: lower rows
    assert len(flow_paths(DIAMOND, [0, 3, 4], alpha=0.5, theta=0.0, top_k=2).paths) == 2
    with pytest.raises(ValueError):
        flow_paths(DIAMOND, [0], top_k=0)
    with pytest.raises(ValueError):
        propagate(DIAMOND, 0, alpha=1.5)
    with pytest.raises(ValueError):
        propagate(DIAMOND, 9)


def _random_tree(n, seed):
    rng = random.Random(seed)
    parents = [rng.randrange(i) for i in range(1, n)]
    return FlowGraph.from_edges(n, parents, list(range(1, n)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_agrees_with_exhaustive_enumeration_on_trees(seed):
    # On a tree every path is the unique shortest one, so with theta = 0 the flow search must find
    # exactly the exhaustive enumeration's paths, with the same Eq. 4 scores.
    g = _random_tree(40, seed)
    nodes = random.Random(seed).sample(range(40), 8)
    ours = flow_paths(g, nodes, alpha=0.7, theta=0.0, top_k=100).paths
    theirs = select_paths(resource_scores(g, exhaustive_paths(g, nodes, max_hops=40), 0.7, 0.0), 100)
    assert len(ours) == len(theirs) == 28  # every one of the 8*7/2 pairs, once
    assert [p.nodes for p in ours] == [p.nodes for p in theirs]
    assert [p.reliability for p in ours] == pytest.approx([p.reliability for p in theirs])


def test_exhaustive_enumerates_simple_paths_within_hops():
    paths = exhaustive_paths(DIAMOND, [0, 3], max_hops=3)
    assert sorted(p for p, _ in paths) == [(0, 1, 3), (0, 2, 3), (3, 1, 0), (3, 2, 0)]
    assert sorted(p for p, _ in exhaustive_paths(DIAMOND, [0, 4], max_hops=2)) == []


def test_reference_scoring_hand_computed():
    # Pair 0 -> 3: 0's successors on the paths are {1, 2}: each edge gets 1/2; 0.5 > 0.3 so each
    # passes 0.5*0.8/1 to its edge into 3. Mean edge flow (0.5 + 0.4) / 2.
    paths = [p for p in exhaustive_paths(DIAMOND, [0, 3]) if p[0][0] == 0]
    scored = reference_scores(paths, alpha=0.8, theta=0.3)
    assert [p.reliability for p in scored] == pytest.approx([0.45, 0.45])
    # With theta 0.6 the first edges do not pass anything on: (0.5 + 0) / 2.
    assert [p.reliability for p in reference_scores(paths, alpha=0.8, theta=0.6)] == pytest.approx([0.25, 0.25])


def test_cost_bound_on_alive_nodes():
    rng = np.random.default_rng(0)
    n = 3000
    src, dst = rng.integers(0, n, 12000), rng.integers(0, n, 12000)
    g = FlowGraph.from_edges(n, src, dst)
    alpha, theta = 0.7, 0.02
    for s in range(20):
        flow = propagate(g, s, alpha, theta)
        assert flow.num_alive <= 1 / ((1 - alpha) * theta)
        assert flow.touched < n  # pruning stops well before the whole graph
    search = flow_paths(g, list(range(20)), alpha=alpha, theta=theta)
    assert search.alive <= 20 / ((1 - alpha) * theta)


@pytest.mark.parametrize("seed", range(6))
def test_flow_graph_from_edges_keeps_one_entry_per_neighbour_named_by_the_smallest_edge_id(seed):
    """Parallel edges both ways, self-loops and shuffled ids: the CSR a sort by (row, column, id) gives."""
    rng = np.random.default_rng(seed)
    n, m = int(rng.integers(1, 30)), int(rng.integers(0, 200))
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    ids = rng.permutation(10 * m + 1)[:m]
    graph = FlowGraph.from_edges(n, src, dst, ids)
    rows, cols, eids = np.r_[src, dst], np.r_[dst, src], np.r_[ids, ids]
    best: dict[tuple[int, int], int] = {}
    for r, c, e in zip(rows.tolist(), cols.tolist(), eids.tolist()):
        if r != c:
            best[r, c] = min(best.get((r, c), e), e)
    expected = sorted(best)
    assert [(r, c) for r in range(n) for c in graph.neighbours(r).tolist()] == expected
    assert graph.edge_ids.tolist() == [best[k] for k in expected]
    assert graph.indptr[-1] == len(expected) and graph.indptr.size == n + 1
