import numpy as np
import scipy.sparse as sp

from llama_index_graphrag_suite.graph.costs import PairCostIndex
from llama_index_graphrag_suite.graph.steiner import symmetric_min


def test_pair_cost_matrix_matches_symmetric_min_and_names_the_cheapest_edge():
    rng = np.random.default_rng(0)
    n, m = 30, 200
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    costs = rng.uniform(0, 1, m)
    index = PairCostIndex(src, dst, n)
    ours, best = index.matrix(costs)
    keep = src != dst
    ref = symmetric_min(sp.coo_matrix((costs[keep], (src[keep], dst[keep])), shape=(n, n)))  # coo keeps duplicates
    np.testing.assert_allclose(ours.toarray(), ref.toarray(), atol=1e-15)
    for p in range(index.num_pairs):
        u, v = index.pair_lo[p], index.pair_hi[p]
        parallel = [e for e in range(m) if {src[e], dst[e]} == {u, v}]
        assert best[p] in parallel and costs[best[p]] == min(costs[parallel])
        assert index.pair_id(int(v), int(u)) == p
    assert index.pair_id(0, 0) == -1
