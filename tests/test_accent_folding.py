"""A question typed without a name's accents ("Tekeze River", "Aschenbrodel") finds the entity the corpus writes with
them, and one typed with accents finds a name the corpus writes without: in the guard's link share and in A2RAG's
seeds. Keys stay as the corpus writes them; only look-ups fold."""

from __future__ import annotations

import pytest

from llama_index_graphrag_suite.methods.guard import query_link
from llama_index_graphrag_suite.text import accent_aliases, fold_accents


def test_folding_drops_diacritics_only():
    assert fold_accents("tekezé river") == "tekeze river" and fold_accents("akinoshū kenji") == "akinoshu kenji"
    assert fold_accents("malmö") == "malmo" and fold_accents("søren") == "søren"  # ø is a letter of its own
    assert fold_accents("plain") == "plain"


def test_aliases_leave_out_exact_keys_and_ambiguous_foldings():
    keys = ["tekezé river", "résumé", "resume", "josé", "jose\u0301", "malmo"]
    aliases = accent_aliases(keys)
    assert aliases["tekeze river"] == "tekezé river"
    assert "resume" not in aliases  # an exact key: itself
    assert "jose" not in aliases  # two keys fold alike: neither
    assert "malmo" not in aliases


@pytest.fixture(scope="module")
def index():
    from conftest import UNRELATED_TEXTS, index_of_texts

    return index_of_texts({
        "tekeze": "The Tekezé River rises in the Ethiopian Highlands. The Tekezé River flows west into Sudan.",
        "atbarah": "The Atbarah River is a tributary of the Nile. The Tekezé River becomes the Atbarah River in Sudan.",
        "malmo": "Malmo is a city in southern Sweden. Malmo lies on the Oresund strait.",
        **UNRELATED_TEXTS,
    })


def test_the_guard_links_a_name_typed_without_its_accents(index):
    assert "tekezé river" in index.entities and "malmo" in index.entities
    share, found = query_link(index, "Where does the Tekeze River flow?", max_chunks=3)
    assert "tekezé river" in found and share > 0
    assert "malmo" in query_link(index, "Which strait is Malmö on?", max_chunks=3)[1]


def test_a2rag_seeds_align_a_name_typed_without_its_accents(index):
    from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

    _, trace = A2RAGRetriever(index, top_k=2).retrieve_with_trace("Where does the Tekeze River flow?")
    seeds = {s["node"]: s for s in trace["seeds"]}
    assert "tekezé river" in seeds and seeds["tekezé river"]["lexical"] == 1.0
    _, trace = A2RAGRetriever(index, top_k=2).retrieve_with_trace("Which strait is Malmö on?")
    assert "malmo" in {s["node"] for s in trace["seeds"]}
