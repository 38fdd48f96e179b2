"""MCMI expansion (AGRAG Eq. 15-17): the paper's Figure 2 situation and the stopping rules."""

import numpy as np
import pytest
import scipy.sparse as sp

from llama_index_graphrag_suite.graph.mcmi import mcmi_expand
from llama_index_graphrag_suite.graph.steiner import steiner_tree, symmetric_min

KIDNEY, CANCER, TUMORS, VESSELS, NOISE = range(5)


def figure2():
    """Mapped facts (kidney, works with, kidney cancer) and (kidney, spreads to, tumors): the Steiner tree
    is those two edges. 'Blood vessels' (the answer) touches kidney cancer and tumors cheaply and has high
    influence; 'noise' hangs off the kidney at a high cost with little influence."""
    edges = [(KIDNEY, CANCER, 0.10), (KIDNEY, TUMORS, 0.12), (CANCER, VESSELS, 0.07), (TUMORS, VESSELS, 0.08),
             (KIDNEY, NOISE, 0.45)]
    u, v, c = zip(*edges)
    costs = symmetric_min(sp.csr_matrix((c, (u, v)), shape=(5, 5)))
    scores = np.array([0.30, 0.25, 0.20, 0.50, 0.01])
    return costs, scores


@pytest.mark.parametrize("ratio", ["sum", "mean"])
def test_mcmi_adds_the_node_the_steiner_tree_misses_through_a_cycle(ratio):
    costs, scores = figure2()
    terminals = [KIDNEY, CANCER, TUMORS]
    tree = steiner_tree(costs, terminals, symmetric=True)
    assert {(u, v) for u, v, _ in tree} == {(KIDNEY, CANCER), (KIDNEY, TUMORS)}
    result = mcmi_expand(costs, scores, tree, terminals, ratio=ratio)
    assert result.added[0] == VESSELS
    assert VESSELS in result.nodes and NOISE not in result.nodes
    pairs = {(u, v) for u, v, _ in result.edges}
    assert {(CANCER, VESSELS), (TUMORS, VESSELS)} <= pairs  # both edges: kidney-cancer-vessels-tumors is a cycle
    assert len(result.edges) == len(result.nodes)  # a connected graph with as many edges as nodes has one cycle
    assert result.stopped == "ratio"
    # Eq. 15 by hand for the final subgraph
    r = sum(c / (scores[u] + scores[v]) for u, v, c in result.edges)
    assert result.ratio == pytest.approx(r if ratio == "sum" else r / len(result.edges), rel=1e-6)


def test_mean_ratio_falls_with_every_addition_and_the_cap_holds():
    rng = np.random.default_rng(3)
    n = 40
    dense = np.triu(rng.uniform(0.01, 0.5, (n, n)) * (rng.random((n, n)) < 0.15), 1)
    costs = symmetric_min(sp.csr_matrix(dense + np.diag(np.ones(n - 1), 1) * 0.3))  # a path keeps it connected
    scores = rng.uniform(0.001, 0.1, n)
    terminals = [0, 17, 33]
    tree = steiner_tree(costs, terminals, symmetric=True)
    mean = mcmi_expand(costs, scores, tree, terminals, ratio="mean", max_iter=50)
    assert all(b < a for a, b in zip(mean.ratios, mean.ratios[1:]))  # Theorem 3: strictly better each step
    capped = mcmi_expand(costs, scores, tree, terminals, ratio="sum", max_iter=3)
    assert len(capped.added) <= 3 and capped.stopped in ("cap", "ratio", "frontier")
    assert set(terminals) <= set(capped.nodes)


def test_single_terminal_has_nothing_to_compare_with():
    costs, scores = figure2()
    result = mcmi_expand(costs, scores, [], [KIDNEY])
    assert result.nodes == [KIDNEY] and result.edges == [] and result.stopped == "ratio"
