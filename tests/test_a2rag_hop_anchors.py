"""A2RAG's hop anchors: from a page the question names to the page it leads to (``evidence.hop_chunks``).

"Where was the director of film Billy Elliot born?" names the film's page; the answer is on the page of one of
the people that page names. The walk from the film's page spreads over all of them alike; the question's other
words ("director", "born") pick the director's page. Hand-written encyclopaedic pages, spaCy NER, hash embedding.
"""

from __future__ import annotations

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever, evidence
from llama_index_graphrag_suite.registry import get_retriever

PAGES = [
    ("film-billy", "Billy Elliot", "Billy Elliot is a 2000 British drama film directed by Stephen Daldry and written by "
     "Lee Hall. Its music is by Stephen Warbeck. Jamie Bell plays Billy, a boy from a mining town who wants to dance."),
    ("p-warbeck", "Stephen Warbeck", "Stephen Warbeck is an English composer of music for film and theatre. Warbeck "
     "was born in Southampton in 1953."),
    ("p-daldry", "Stephen Daldry", "Stephen Daldry is an English director of theatre and film. Daldry was born in "
     "Dorset in 1960."),
    ("p-hall", "Lee Hall", "Lee Hall is an English playwright and screenwriter. Hall was born in Newcastle in 1966."),
    ("p-bell", "Jamie Bell", "Jamie Bell is an English actor who began as a dancer. Bell was born in Billingham in "
     "1986."),
    ("p-scores", "Film score", "A film score is music written for a film. The composer of a score works with the "
     "director; many were born into families of musicians."),
]


@pytest.fixture(scope="module")
def index():
    docs = [make_document(i, text, title) for i, title, text in PAGES]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128, spread=1), config=IndexConfig())  # the scenario's similarities were set with one dimension per word


def hops(index, question: str, monkeypatch) -> list[str]:
    """The documents hop_chunks picks for the question, caught inside a real retrieve() (its seeds and graph)."""
    picked: list[list[int]] = []
    real = evidence.hop_chunks

    def catch(*args):
        picked.append(real(*args))
        return picked[-1]

    with monkeypatch.context() as m:
        m.setattr(evidence, "hop_chunks", catch)
        A2RAGRetriever(index, top_k=3).retrieve(question)
    assert len(picked) == 1
    return [index.chunks[index.chunk_order[c]].doc_id for c in picked[0]]


def sources(nodes) -> dict[str, str]:
    return {n.node.metadata["doc_id"]: n.node.metadata["a2rag_source"] for n in nodes
            if n.node.metadata["kind"] == "chunk"}


def test_the_question_words_pick_the_next_page_among_those_the_named_page_links(index, monkeypatch):
    # The film's page links four people with pages of their own; "director" and "composer" tell them apart.
    assert hops(index, "Where was the director of film Billy Elliot born?", monkeypatch) == ["p-daldry"]
    assert hops(index, "Where was the composer of film Billy Elliot born?", monkeypatch) == ["p-warbeck"]
    # when that page is hybrid's best chunk already (the walk starts there: it ranks first), the hop adds nothing
    q = "Which actor of Billy Elliot began as a dancer?"
    assert hops(index, q, monkeypatch) == []
    assert next(iter(sources(A2RAGRetriever(index, top_k=3).retrieve(q)))) == "p-bell"


def test_no_hop_when_nothing_is_named_or_the_question_tells_no_page_apart(index, monkeypatch):
    assert hops(index, "Where was the composer of a film score born?", monkeypatch) == []  # no page named by its title
    # "born" is on every person's page and "writer" on none ("screenwriter" is another word): no pick
    assert hops(index, "When was the writer of Billy Elliot born?", monkeypatch) == []


def test_the_hop_page_gets_a_place_in_the_answer_and_the_option_turns_it_off(index):
    q = "Where was the director of film Billy Elliot born?"
    on = sources(A2RAGRetriever(index, top_k=2, hybrid_anchors=0).retrieve(q))
    off = sources(A2RAGRetriever(index, top_k=2, hybrid_anchors=0,
                                 hop_anchors=False).retrieve(q))
    assert on.get("p-daldry") == "hop_anchor" and "film-billy" in on
    assert "p-daldry" not in off  # the walk alone ranks another of the film's people second


def test_the_hop_page_survives_the_hybrid_guard_as_shipped(index):
    # Defaults (guard on): the film's page, hybrid's best chunk, and the page the question's words pick.
    for q, page in [("Where was the director of film Billy Elliot born?", "p-daldry"),
                    ("Where was the composer of film Billy Elliot born?", "p-warbeck")]:
        on = sources(get_retriever(index, "a2rag", top_k=3).retrieve(q))
        off = sources(get_retriever(index, "a2rag", top_k=3, hop_anchors=False).retrieve(q))
        assert on.get(page) == "hop_anchor" and "film-billy" in on
        assert page not in off


def test_a_question_that_names_no_page_hops_from_hybrids_top_chunk(index, monkeypatch):
    # No title in the question: the film's page is hybrid's best chunk, and the hop goes from there.
    q = "Where was the man who wrote the music of the British drama film about a boy from a mining town born?"
    assert hops(index, q, monkeypatch) == ["p-warbeck"]


def test_the_paper_variant_ranks_without_our_additions_and_unguarded_keeps_them(index):
    # "a2rag:paper" is the paper's retrieval alone: no hybrid chunk in the restart and no anchors of any kind, so
    # no hop page either; "a2rag:unguarded" is the shipped ranking with only the guard off.
    q = "Where was the director of film Billy Elliot born?"
    paper = A2RAGRetriever(index, top_k=3, variant="paper")
    assert (paper.config.ppr_dense_seeds, paper.config.hybrid_anchors,
            paper.config.title_anchors, paper.config.hop_anchors) == (0, 0, False, False)
    got = sources(paper.retrieve(q))
    assert not {"hybrid_anchor", "title_anchor", "hop_anchor"} & set(got.values()) and got.get("p-daldry") is None
    unguarded = sources(get_retriever(index, "a2rag:unguarded", top_k=3).retrieve(q))
    assert unguarded == sources(A2RAGRetriever(index, top_k=3).retrieve(q))
    assert unguarded.get("p-daldry") == "hop_anchor"
