"""AGRAG's entity slots on a listed (large) entity table: only the synonym-edge entities are read (retriever
``_entity_cosines``). Forced on the small test index by giving its entity table lists."""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite.graph.vector_lists import row_products, train_lists
from llama_index_graphrag_suite.index.vectors import normalize_rows
from llama_index_graphrag_suite.methods.agrag import AGRAGRetriever
from llama_index_graphrag_suite.graph import vector_lists
from llama_index_graphrag_suite.methods.query_scores import hybrid_scores

QUESTIONS = ["Which painter taught Ada Lorne at Kell Academy?", "Where does the Esk River reach the sea?",
             "Who founded the gallery that holds The Grey Harbour?", "When was Kell Academy founded?"]


@pytest.fixture
def listed_entities(graph_index):
    table = graph_index.entity_vectors
    saved = table.lists
    lists = train_lists(table.vectors(), nlist=6)
    lists.moves = table.moves
    table.lists = lists
    assert table.listed
    yield graph_index
    table.lists = saved


def _plain(retriever):
    graph = retriever._graph()
    return type(graph)(**{**graph.__dict__, "synonyms": None})


@pytest.mark.parametrize("question", QUESTIONS)
def test_every_list_probed_gives_the_listed_scores_and_the_same_retrieval(listed_entities, question, monkeypatch):
    index = listed_entities
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 10**6)  # every list probed: every cosine exact
    retriever = AGRAGRetriever(index)
    graph = retriever._graph()
    ends = graph.synonyms
    assert ends is not None and ends.nodes.size > 0
    q = index.embed_query(question)
    hyb = hybrid_scores(index, question)
    new, old = retriever._slot_costs(graph, q, hyb).copy(), retriever._slot_costs(_plain(retriever), q, hyb)
    at = graph.num_facts + ends.nodes
    np.testing.assert_array_equal(new[at], old[at])
    np.testing.assert_array_equal(graph.pairs.edge_costs(new), graph.pairs.edge_costs(old))  # no other slot read
    nodes = retriever.retrieve(question)
    plain = _plain(retriever)
    monkeypatch.setattr(retriever, "_graph", lambda: plain)
    assert [(n.node.node_id, n.score, n.node.get_content()) for n in retriever.retrieve(question)] == \
        [(n.node.node_id, n.score, n.node.get_content()) for n in nodes]


@pytest.mark.parametrize("question", QUESTIONS)
def test_few_lists_probed_exact_there_capped_estimates_elsewhere(listed_entities, question, monkeypatch):
    index = listed_entities
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", 2)
    retriever = AGRAGRetriever(index)
    ends = retriever._graph().synonyms
    q = index.embed_query(question)
    got = retriever._entity_cosines(ends, q)
    table, u = index.entity_vectors, normalize_rows(q)[0]
    near = table.lists.centroids @ u
    probed = set(np.argsort(-near, kind="stable")[:2].tolist())
    inside = np.array([lst in probed for lst in ends.lists.tolist()])
    exact = row_products(table.at(ends.rows), u)
    np.testing.assert_array_equal(got[inside], exact[inside])
    np.testing.assert_array_equal(got[inside], table.lists.scores(u, table.at, nprobe=2)[ends.rows[inside]])
    if inside.any():
        cap = exact[inside].min()
        np.testing.assert_array_equal(got[~inside], np.minimum(near[ends.lists[~inside]], cap))


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("nprobe", [1, 2, 10**6])
def test_slots_written_from_the_parts_equal_the_formula_on_the_cosines(listed_entities, question, nprobe,
                                                                       monkeypatch):
    """The entity slots are written per list estimate and per exact cosine, the chunk slots by a compiled loop
    (forced here): the values of ``(1 - _entity_cosines) / 2`` and ``(1 - hybrid) / 2``, bit for bit."""
    from llama_index_graphrag_suite.methods.agrag import graph as agrag_graph

    index = listed_entities
    monkeypatch.setattr(vector_lists, "QUERY_NPROBE", nprobe)
    monkeypatch.setattr(agrag_graph, "COMPILED_MIN_CHUNKS", 0)
    retriever = AGRAGRetriever(index)
    graph = retriever._graph()
    ends = graph.synonyms
    q = index.embed_query(question)
    hyb = hybrid_scores(index, question)
    slots = retriever._slot_costs(graph, q, hyb).copy()
    np.testing.assert_array_equal(slots[graph.num_facts + ends.nodes], (1.0 - retriever._entity_cosines(ends, q)) / 2.0)
    np.testing.assert_array_equal(slots[graph.chunk_slots], (1.0 - np.asarray(hyb, np.float64)) / 2.0)


@pytest.mark.parametrize("question", QUESTIONS)
def test_an_unlisted_table_prices_synonym_edges_from_its_block_alone(graph_index, question, monkeypatch):
    """An unlisted entity table: the entity costs come from one product over the synonym-edge entities' copied
    vectors (``SynonymBlock``), never from the whole table, with the whole table's values and retrieval."""
    index = graph_index
    graph = AGRAGRetriever(index)._graph()
    if graph.synonyms is not None:  # a graph the listed tests above left in the index's memo
        monkeypatch.setattr(index, "cached", lambda name, build: build())
    retriever = AGRAGRetriever(index)
    graph = retriever._graph()
    block = graph.synonym_block
    assert not index.entity_vectors.listed and block is not None and 0 < block.slots.size < len(index.entity_vectors.ids)
    q = index.embed_query(question)
    hyb = hybrid_scores(index, question)
    whole = type(graph)(**{**graph.__dict__, "synonym_block": None})
    old = retriever._slot_costs(whole, q, hyb).copy()
    nodes_before = [(n.node.node_id, n.score) for n in retriever.retrieve(question)]

    def whole_table(*args, **kwargs):
        raise AssertionError("the whole entity table was read")

    monkeypatch.setattr(index.entity_vectors, "scores", whole_table)
    new = retriever._slot_costs(graph, q, hyb)
    np.testing.assert_array_equal(new[block.slots], old[block.slots])
    np.testing.assert_array_equal(graph.pairs.edge_costs(new), graph.pairs.edge_costs(old))  # no other slot read
    assert [(n.node.node_id, n.score) for n in retriever.retrieve(question)] == nodes_before
