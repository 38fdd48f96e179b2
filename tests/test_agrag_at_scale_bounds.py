"""AGRAG's at-scale approximations and their contracts: its own local-push bound ``push_eps`` (larger than the shared
``ppr.PUSH_EPS``) and the Steiner search budget, each acting only on graphs larger than any shared set's."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.graph import ppr
from llama_index_graphrag_suite.graph import steiner as steiner_module
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
from llama_index_graphrag_suite.methods.agrag import retriever as agrag_module
from llama_index_graphrag_suite.methods.agrag.config import PUSH_EPS, AGRAGConfig


def _index():
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    from conftest import CORPUS

    return GraphRAGIndex.from_documents([make_document(i, text, title) for i, title, text in CORPUS],
                                        embed_model=HashEmbedding(dim=128),
                                        config=IndexConfig(entities="statistical", entity_threshold=0.1))


def test_defaults_are_looser_than_the_shared_ones_only_at_scale():
    cfg = AGRAGConfig()
    assert cfg.push_eps == PUSH_EPS > ppr.PUSH_EPS  # HippoRAG's and A2RAG's push keeps the shared bound
    assert cfg.steiner_max_entries == steiner_module.MAX_ENTRIES == 1 << 18
    # the push answers from 1M entries on, the budget from 8 budgets on: above every shared set's graph (< 0.25M)
    assert ppr.PUSH_MIN_NNZ >= 1_000_000 and 8 * steiner_module.MAX_ENTRIES > 2_000_000


def test_a_small_graph_never_pushes_so_push_eps_changes_nothing():
    index = _index()
    terminals = [0, 3, 7]
    loose, tight = AGRAGRetriever(index, push_eps=1e-3), AGRAGRetriever(index, push_eps=1e-9)
    assert not loose._graph().transition.pushes
    np.testing.assert_array_equal(loose._ppr_scores(loose._graph(), terminals).copy(),
                                  tight._ppr_scores(tight._graph(), terminals))


@pytest.mark.parametrize("eps", [PUSH_EPS, 1e-5, 1e-4])
def test_pushed_scores_are_within_the_push_bound_of_the_dense_ones(eps, monkeypatch):
    """With the push forced on a small graph: AGRAG's scores at ``push_eps`` against the dense solver's (tolerance
    1e-7). Before normalising, the push's estimate is below the exact one by at most ``S = eps * sum(degree) / (1 - d)``
    in total (``ppr_push``'s bound), so the normalised scores differ by at most ``2 S / (1 - S)`` in L1 (plus the
    dense solver's own error), the passage factor only shrinking chunk entries."""
    for name, value in (("FAST_MIN_NNZ", 0), ("PUSH_MIN_NNZ", 0), ("PUSH_MAX_RESET_SHARE", 1.0)):
        monkeypatch.setattr(ppr, name, value)
    index = _index()
    pushed = AGRAGRetriever(index, push_eps=eps)
    graph = pushed._graph()
    assert graph.transition.pushes
    seen = []
    real = agrag_module.pushed_pagerank
    monkeypatch.setattr(agrag_module, "pushed_pagerank", lambda *a, **k: seen.append(k["eps"]) or real(*a, **k))
    n, d = graph.num_nodes, pushed.config.damping
    total = float(graph.transition.fast.degree.sum()) * eps / (1 - d)
    for terminals in ([0, 3, 7], [1], [2, 5, n - 1]):
        got = pushed._ppr_scores(graph, terminals).copy()
        monkeypatch.setattr(agrag_module, "pushed_pagerank", lambda *a, **k: None)
        dense = AGRAGRetriever(index)._ppr_scores(graph, terminals).copy()
        monkeypatch.setattr(agrag_module, "pushed_pagerank", lambda *a, **k: seen.append(k["eps"]) or real(*a, **k))
        assert np.abs(got - dense).sum() <= 2 * total / (1 - total) + 1e-6
    assert seen == [eps] * 3
