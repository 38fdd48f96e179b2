"""AGRAG's per-query cost graph, Steiner tree and MCMI expansion against straightforward references.

The references are the whole-graph versions these replaced: every edge priced per query into one scipy
matrix (``PairCostIndex.matrix``), Mehlhorn with Dijkstra over the whole matrix (first bounded at 0.75,
then unbounded), and the heap-based MCMI loop. Costs are quantised so that equal distances and equal
ratios are common: the new code must make the same choices on ties too.
"""

from __future__ import annotations

import heapq

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra, minimum_spanning_tree

from llama_index_graphrag_suite.graph import steiner as steiner_module
from llama_index_graphrag_suite.graph.costs import ZERO_COST, CSRCosts, PairCostIndex
from llama_index_graphrag_suite.graph.mcmi import mcmi_expand
from llama_index_graphrag_suite.graph.steiner import steiner_tree
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
from llama_index_graphrag_suite.methods.scoring import hybrid

# ------------------------------------------------------------------------------------------- references


def reference_terminal_mst(graph, terms, limit):
    dist, _, nearest = dijkstra(graph, indices=terms, min_only=True, return_predecessors=True, limit=limit)
    if np.isinf(dist[terms]).any():
        return None
    rows = np.flatnonzero(np.isfinite(dist))
    starts, counts = graph.indptr[rows], np.diff(graph.indptr)[rows]
    u = np.repeat(rows, counts)
    entry = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    v, c = graph.indices[entry], graph.data[entry]
    su, sv = nearest[u], nearest[v]
    cross = (u < v) & (sv >= 0) & (su != sv)
    u, v, c, su, sv = u[cross], v[cross], c[cross], su[cross], sv[cross]
    k = terms.size
    pos = np.full(graph.shape[0], -1, dtype=np.int64)
    pos[terms] = np.arange(k)
    g1 = np.full((k, k), np.inf)
    np.minimum.at(g1, (pos[su], pos[sv]), dist[u] + c + dist[v])
    g1 = np.minimum(g1, g1.T)
    mst = minimum_spanning_tree(sp.csr_matrix(np.where(np.isfinite(g1), g1, 0.0))).tocoo()
    if mst.nnz < k - 1 or (mst.nnz and float(mst.data.max()) > limit):
        return None
    return mst


def reference_steiner_tree(graph: sp.csr_matrix, terminals) -> list[tuple[int, int, float]]:
    """Mehlhorn over the whole (symmetric, priced) matrix, as steiner.py did before the bounded searches."""
    terms = np.unique(np.asarray(list(terminals), dtype=np.int64))
    if terms.size == 1:
        return []
    mst1 = None
    for limit in (0.75, np.inf):
        mst1 = reference_terminal_mst(graph, terms, limit)
        if mst1 is not None:
            break
    sources = sorted({int(x) for x in mst1.row})
    reach = float(mst1.data.max()) * (1 + 1e-9) + 1e-9
    _, preds = dijkstra(graph, indices=[int(terms[s]) for s in sources], return_predecessors=True, limit=reach)
    row_of = {s: i for i, s in enumerate(sources)}
    g3 = {}
    for i, j in zip(mst1.row.tolist(), mst1.col.tolist()):
        path = [int(terms[j])]
        while path[-1] != terms[i]:
            path.append(int(preds[row_of[i]][path[-1]]))
        path = path[::-1]
        for x, y in zip(path, path[1:]):
            g3[(min(x, y), max(x, y))] = float(graph[x, y])
    nodes = sorted({x for e in g3 for x in e})
    local = {x: i for i, x in enumerate(nodes)}
    m = len(nodes)
    mst3 = minimum_spanning_tree(sp.csr_matrix((list(g3.values()), ([local[x] for x, _ in g3], [local[y] for _, y in g3])),
                                               shape=(m, m))).tocoo()
    edges = {(min(nodes[i], nodes[j]), max(nodes[i], nodes[j])): float(c)
             for i, j, c in zip(mst3.row.tolist(), mst3.col.tolist(), mst3.data.tolist())}
    return steiner_module._prune(edges, set(terms.tolist()))


def reference_mcmi(costs: sp.csr_matrix, scores, tree_edges, terminals, max_iter, ratio):
    """The heap version of the MCMI expansion: (nodes, edges, added, ratios, stopped)."""
    def edge_ratio(c, su, sv):
        return c / max(su + sv, 1e-12)

    nodes = {int(t) for t in terminals} | {x for u, v, _ in tree_edges for x in (u, v)}
    edges = {(min(u, v), max(u, v)): float(c) for u, v, c in tree_edges}
    total = sum(edge_ratio(c, scores[u], scores[v]) for (u, v), c in edges.items())

    def current():
        return total if ratio == "sum" else total / max(len(edges), 1)

    ratios, added, frontier = [current()], [], []

    def push(u):
        lo, hi = costs.indptr[u], costs.indptr[u + 1]
        for v, c in zip(costs.indices[lo:hi].tolist(), costs.data[lo:hi].tolist()):
            if v not in nodes and scores[v] > 0:
                heapq.heappush(frontier, (c / scores[v], v))

    for u in nodes:
        push(u)
    stopped = "frontier"
    while frontier:
        if len(added) >= max_iter:
            stopped = "cap"
            break
        best, v = heapq.heappop(frontier)
        if v in nodes:
            continue
        if not best < current():
            stopped = "ratio"
            break
        lo, hi = costs.indptr[v], costs.indptr[v + 1]
        links = sorted((c, u) for u, c in zip(costs.indices[lo:hi].tolist(), costs.data[lo:hi].tolist()) if u in nodes)
        for i, (c, u) in enumerate(links):
            if i == 0 or edge_ratio(c, scores[u], scores[v]) < current():
                edges[(min(u, v), max(u, v))] = float(c)
                total += edge_ratio(c, scores[u], scores[v])
        nodes.add(v)
        added.append(v)
        ratios.append(current())
        push(v)
    return sorted(nodes), [(u, v, c) for (u, v), c in sorted(edges.items())], added, ratios, stopped


# ------------------------------------------------------------------------------------------ random graphs


def random_instance(seed: int, n_range=(5, 120)):
    """A connected multigraph (parallel edges, self-loops) whose edge costs are the min of two of a few
    quantised slots (some negative): equal costs, distances and ratios are common."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(*n_range))
    m = int(rng.integers(n, 5 * n))
    src = np.r_[rng.integers(0, n, m), np.arange(n - 1)]  # a path keeps it connected
    dst = np.r_[rng.integers(0, n, m), np.arange(1, n)]
    slots = int(rng.integers(3, 40))
    slot_a = rng.integers(0, slots, src.size)
    slot_b = np.where(rng.random(src.size) < 0.5, slot_a, rng.integers(0, slots, src.size))
    levels = int(rng.integers(2, 12))
    w = np.round(rng.uniform(-0.05, 1.0, slots) * levels) / levels
    return rng, n, PairCostIndex(src, dst, n, slot_a, slot_b, slots), w, (src, dst, slot_a, slot_b)


@pytest.mark.parametrize("seed", range(12))
def test_query_costs_equal_the_whole_priced_matrix_and_name_the_cheapest_edge(seed):
    rng, n, pairs, w, (src, dst, slot_a, slot_b) = random_instance(seed)
    edge_costs = np.minimum(w[slot_a], w[slot_b])
    np.testing.assert_array_equal(pairs.edge_costs(w), edge_costs)
    full, best = pairs.matrix(edge_costs)
    query = pairs.query(w)
    # some rows priced through gather (the cache), then every entry read both ways
    rows = rng.choice(n, size=n // 2, replace=False)
    entries, owner, costs = query.gather(rows)
    np.testing.assert_array_equal(costs, full.data[entries])
    np.testing.assert_array_equal(query.indices[entries], full.indices[entries])
    np.testing.assert_array_equal(rows[owner], np.repeat(rows, np.diff(full.indptr)[rows]))
    np.testing.assert_array_equal(query.gather(np.arange(n))[2], full.data)
    np.testing.assert_array_equal(query.entry_costs(np.arange(full.nnz)), full.data)
    whole = query.to_csr()
    assert (whole != full).nnz == 0 and np.array_equal(whole.indptr, full.indptr)
    assert np.all(full.data >= ZERO_COST)
    for p in range(pairs.num_pairs):
        u, v = int(pairs.pair_lo[p]), int(pairs.pair_hi[p])
        assert query.best_edge(u, v) == query.best_edge(v, u) == best[p]
        assert query.cost(u, v) == full[u, v]
    assert query.best_edge(0, 0) == -1


@pytest.mark.parametrize("seed", range(40))
def test_steiner_tree_on_query_costs_equals_the_whole_graph_reference(seed):
    rng, n, pairs, w, _ = random_instance(seed)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    for _ in range(3):
        terminals = rng.choice(n, size=int(rng.integers(2, min(n, 9) + 1)), replace=False).tolist()
        expected = reference_steiner_tree(full, terminals)
        assert steiner_tree(pairs.query(w), terminals) == expected
        assert steiner_tree(full, terminals, symmetric=True) == expected
        assert steiner_tree(CSRCosts(full), terminals, first_radius=0.01) == expected
        assert steiner_tree(pairs.query(w), terminals, first_radius=2.0) == expected


@pytest.mark.parametrize("whole_reach", [0.0, 0.5, 2.0])  # path searches: whole graph to the reach / by bound / never
@pytest.mark.parametrize("seed", range(8))
def test_steiner_tree_whole_graph_fallback_gives_the_same_tree(seed, whole_reach, monkeypatch):
    rng, n, pairs, w, _ = random_instance(1000 + seed, n_range=(150, 600))
    full, _ = pairs.matrix(pairs.edge_costs(w))
    monkeypatch.setattr(steiner_module, "_WHOLE_GRAPH_SHARE", 0.01)  # nearly every search runs on the whole graph
    monkeypatch.setattr(steiner_module, "_PATH_SHARE", 0.01)
    monkeypatch.setattr(steiner_module, "_WHOLE_REACH", whole_reach)
    for _ in range(2):
        terminals = rng.choice(n, size=int(rng.integers(2, 10)), replace=False).tolist()
        assert steiner_tree(pairs.query(w), terminals) == reference_steiner_tree(full, terminals)


@pytest.mark.parametrize("seed", range(30))
def test_mcmi_expansion_equals_the_heap_reference(seed):
    rng, n, pairs, w, _ = random_instance(seed)
    full, _ = pairs.matrix(pairs.edge_costs(w))
    terminals = rng.choice(n, size=int(rng.integers(2, min(n, 6) + 1)), replace=False).tolist()
    tree = reference_steiner_tree(full, terminals)
    scores = np.round(rng.random(n) * 4) / 4 * (rng.random(n) < 0.8)  # zeros and equal scores
    for ratio in ("sum", "mean"):
        for max_iter in (0, 1, 3, 20, 200):
            got = mcmi_expand(pairs.query(w), scores, tree, terminals, max_iter, ratio)
            expected = reference_mcmi(full, scores, tree, terminals, max_iter, ratio)
            assert (got.nodes, got.edges, got.added, got.ratios, got.stopped) == expected
            plain = mcmi_expand(full, scores, tree, terminals, max_iter, ratio)
            assert (plain.nodes, plain.edges, plain.added, plain.ratios, plain.stopped) == expected


# ------------------------------------------------------------------------------------- the AGRAG retriever

QUESTIONS = ["Which painter taught Ada Lorne at Kell Academy?", "Where does the Esk River reach the sea?",
             "Who founded the gallery that holds The Grey Harbour?", "When was Kell Academy founded?"]


def reference_eq14(retriever, graph, q, hyb):
    """Eq. 14 per edge as the retriever computed it before slots: float32 fact and entity costs, float64 chunks."""
    index, snap = retriever.index, retriever.index.snapshot
    fact_cos = index.fact_vectors.scores(q)[index.fact_text_rows]
    ent_cos = index.entity_vectors.scores(q)[index.entity_vector_rows]
    chunk_hybrid = np.zeros(snap.num_nodes)
    chunk_hybrid[graph.chunk_rows] = hyb
    kind = snap.edge_kind
    cost = np.empty(snap.num_edges + graph.chunk_rows.size)
    rel, syn, con = (np.flatnonzero(kind == k) for k in (0, 2, 1))
    cost[rel] = (1.0 - fact_cos[snap.edge_fact[rel]]) / 2.0
    cost[syn] = (1.0 - np.maximum(ent_cos[snap.edge_src[syn]], ent_cos[snap.edge_dst[syn]])) / 2.0
    chunk_end = np.where(snap.node_kind[snap.edge_src[con]] == 1, snap.edge_src[con], snap.edge_dst[con])
    cost[con] = (1.0 - chunk_hybrid[chunk_end]) / 2.0
    cost[snap.num_edges:] = retriever.config.pseudo_cost
    return cost


@pytest.mark.parametrize("question", QUESTIONS)
def test_agrag_costs_tree_and_subgraph_equal_the_whole_matrix_pipeline(graph_index, question):
    retriever = AGRAGRetriever(graph_index)
    index, graph = graph_index, retriever._graph()
    q = index.embed_query(question)
    hyb = hybrid(index.chunk_dense_scores(q), index.bm25.scores(question))
    fact_sims = index.fact_vectors.scores(q)
    for k in range(1, 9):  # fact mapping from the cosines computed once
        assert retriever._search_facts(fact_sims, k) == index.search_facts(q, k)
    slots = retriever._slot_costs(graph, q, hyb, fact_sims).copy()  # the thread's buffer: the next call refills it
    again = retriever._slot_costs(graph, q, hyb)
    np.testing.assert_array_equal(slots, again)
    other = retriever._slot_costs(graph, index.embed_query("an unrelated question about music"), hyb[::-1].copy())
    assert other is again and not np.array_equal(other, slots)  # one buffer per thread, filled anew each call
    slots = retriever._slot_costs(graph, q, hyb, fact_sims)
    edge_costs = reference_eq14(retriever, graph, q, hyb)
    np.testing.assert_array_equal(graph.pairs.edge_costs(slots), edge_costs)
    full, best = graph.pairs.matrix(edge_costs)
    query = graph.pairs.query(slots)
    assert (query.to_csr() != full).nnz == 0
    kept, _ = retriever.filter_facts(question, retriever._search_facts(fact_sims, retriever.config.fact_top_k))
    snap = index.snapshot
    terminals = sorted({snap.row(x) for f, _ in kept for x in (index.facts[f].subject, index.facts[f].object)})
    tree = steiner_tree(query, terminals)
    assert tree == reference_steiner_tree(full, terminals)
    scores = np.r_[np.random.default_rng(0).random(snap.num_nodes), 0.0]
    got = mcmi_expand(query, scores, tree, terminals, 20, "sum")
    assert (got.nodes, got.edges, got.added, got.ratios, got.stopped) == reference_mcmi(full, scores, tree, terminals, 20, "sum")
    for u, v, _ in got.edges:
        assert query.best_edge(u, v) == best[graph.pairs.pair_id(u, v)]


# ------------------------------------------------------------------------------------------ search budget


def _assert_forest(edges, terminals, costs):
    """Edges of a forest whose leaves are terminals, each a graph edge at its cost."""
    import networkx as nx

    forest = nx.Graph()
    forest.add_edges_from((u, v) for u, v, _ in edges)
    assert nx.is_forest(forest) if edges else True
    assert {x for x in forest.nodes if forest.degree(x) == 1} <= set(terminals)
    for u, v, c in edges:
        assert u < v and c == pytest.approx(max(costs[u, v] - ZERO_COST, 0.0), abs=1e-12)


def local_instance(seed: int, quantised: bool):
    """A ring (each node joined to the next two) with a few chords: a search near a few close terminals stays
    local, so budgets far below 1/8 of the graph are met. Quantised costs (30 slots, 7 levels): ties are
    common; else one uniform cost per edge: every shortest path unique."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1000, 2000))
    ring, chords = np.arange(n), int(rng.integers(0, n // 50))
    src = np.r_[ring, ring, rng.integers(0, n, chords)]
    dst = np.r_[(ring + 1) % n, (ring + 2) % n, rng.integers(0, n, chords)]
    if not quantised:
        return rng, n, PairCostIndex(src, dst, n), rng.uniform(0.01, 1.0, src.size)
    slot = rng.integers(0, 30, src.size)
    return rng, n, PairCostIndex(src, dst, n, slot, slot, 30), np.round(rng.uniform(0.0, 1.0, 30) * 6) / 6


@pytest.mark.parametrize("path_parts", [8, 1])  # path searches get 1/8 of the budget (the default) / all of it
@pytest.mark.parametrize("quantised", [True, False])
def test_bounded_search_equals_the_whole_graph_search_unless_the_budget_stops_it(quantised, path_parts, monkeypatch):
    """Budgets from 1/400 to 1/10 of the graph (so they apply): a search no budget stopped gives the unbounded
    tree, ties included; one whose path searches stopped still spans the terminals, and with unique shortest
    paths it is the unbounded tree too (the Voronoi subgraph's paths are the same); one whose Voronoi search
    stopped is a Steiner forest. None prices the whole graph, and each case occurs."""
    monkeypatch.setattr(steiner_module, "_PATH_BUDGET_PARTS", path_parts)
    seen = {"none": 0, "paths": 0, "voronoi": 0}
    for seed in range(30):
        rng, n, pairs, w = local_instance(seed, quantised)
        full, _ = pairs.matrix(pairs.edge_costs(w))
        for budget in (pairs.indices.size // d for d in (400, 100, 30, 10)):
            start = int(rng.integers(0, n - 80))
            terminals = (start + rng.choice(80, size=int(rng.integers(2, 9)), replace=False)).tolist()
            query, stats = pairs.query(w), {}
            got = steiner_tree(query, terminals, max_entries=budget, stats=stats)
            assert not stats["whole_graph"] and not query._priced.all()
            expected = reference_steiner_tree(full, terminals)
            assert steiner_tree(pairs.query(w), terminals, max_entries=None) == expected
            if stats["voronoi_stopped"]:
                seen["voronoi"] += 1
                _assert_forest(got, terminals, full)
            elif stats["path_stops"]:
                seen["paths"] += 1
                _assert_forest(got, terminals, full)
                assert {x for e in got for x in e[:2]} >= set(terminals)
                if not quantised:
                    assert got == expected
            else:
                seen["none"] += 1
                assert got == expected
    assert seen["voronoi"] and seen["paths"] and (seen["none"] or path_parts > 1), seen  # (1/8: paths stop)


def test_the_budget_never_applies_to_a_graph_of_at_most_eight_budgets():
    rng, n, pairs, w, _ = random_instance(7, n_range=(300, 301))
    full, _ = pairs.matrix(pairs.edge_costs(w))
    budget = pairs.indices.size // 8 + 1  # 1/8 of the graph is not larger than the budget
    for _ in range(10):
        terminals = rng.choice(n, size=9, replace=False).tolist()
        stats = {}
        assert steiner_tree(pairs.query(w), terminals, max_entries=budget, stats=stats) == reference_steiner_tree(full, terminals)
        assert not stats["voronoi_stopped"] and not stats["path_stops"]
    stats = {}  # a budget of one entry on a larger graph: the first Voronoi search stops, no tree, no error
    assert steiner_tree(pairs.query(w), [0, n - 1], max_entries=1, stats=stats) == [] and stats["voronoi_stopped"]


def test_pagerank_by_the_local_push_gives_the_dense_scores_and_answers(monkeypatch):
    """On a large graph AGRAG writes the local push's reached nodes into zeros (``pushed_pagerank``) instead of
    taking every node's score from the dense path: the same scores, bit for bit, and the same answers."""
    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.graph import ppr
    from llama_index_graphrag_suite.methods.agrag import retriever as agrag_module

    from conftest import CORPUS

    for name, value in (("FAST_MIN_NNZ", 0), ("PUSH_MIN_NNZ", 0), ("PUSH_MAX_RESET_SHARE", 1.0)):
        monkeypatch.setattr(ppr, name, value)
    index = GraphRAGIndex.from_documents([make_document(i, text, title) for i, title, text in CORPUS],
                                         embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    # its own index: a graph built here, with the local push at the dense path's bound (AGRAG's own push_eps is
    # looser: tests/test_agrag_at_scale_bounds.py)
    retriever = AGRAGRetriever(index, push_eps=ppr.PUSH_EPS)
    graph = retriever._graph()
    assert graph.transition.pushes
    terminals = [0, 3, 7]
    pushed = retriever._ppr_scores(graph, terminals).copy()
    answers = {q: [(n.node.node_id, n.score) for n in retriever.retrieve(q)] for q in QUESTIONS}
    monkeypatch.setattr(agrag_module, "pushed_pagerank", lambda *a, **k: None)  # the dense scores of every node
    dense = retriever._ppr_scores(graph, terminals)
    np.testing.assert_array_equal(pushed, dense)
    assert np.count_nonzero(dense) < dense.size and dense[-1] == 0.0
    assert answers == {q: [(n.node.node_id, n.score) for n in retriever.retrieve(q)] for q in QUESTIONS}


def test_one_retriever_answers_from_many_threads_as_from_one(graph_index):
    """The per-query arrays (slots, PageRank scores) are each thread's own: concurrent queries on one retriever give
    the answers sequential ones give."""
    from concurrent.futures import ThreadPoolExecutor

    retriever = AGRAGRetriever(graph_index)
    asked = QUESTIONS * 6
    alone = [[(n.node.node_id, n.score) for n in retriever.retrieve(q)] for q in asked]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda q: [(n.node.node_id, n.score) for n in retriever.retrieve(q)], asked))
    assert together == alone
