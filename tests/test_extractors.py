import math

import pytest
from llama_index.core import PropertyGraphIndex
from llama_index.core.graph_stores.types import EntityNode
from llama_index.core.schema import TextNode

from llama_index_graphrag_suite.extractors import (
    CooccurrenceRelationExtractor,
    EntityStatistics,
    StatisticalEntityExtractor,
    SynonymEdgeExtractor,
    find_mentions,
)


def test_er_score_matches_equation_2_by_hand():
    texts = ["alpha beta alpha", "beta gamma", "gamma delta"]
    stats = EntityStatistics(max_ngram=1)
    stats.fit(texts)
    n = 3
    scores = {e.key: e.score for e in stats.score(texts[0], "tokens")}
    # count(alpha)=2, |t|=3 tokens, df(alpha)=1
    assert scores["alpha"] == pytest.approx(2 / (3 * math.log(n + 1)) * math.log((n + 1) / 2))
    # beta: count 1, df 2
    assert scores["beta"] == pytest.approx(1 / (3 * math.log(n + 1)) * math.log((n + 1) / 3))
    maxc = {e.key: e.score for e in stats.score(texts[0], "max_count")}
    assert maxc["alpha"] == pytest.approx(1 / math.log(n + 1) * math.log((n + 1) / 2))  # |t| = max count = 2
    assert all(0 < s < 1 for s in maxc.values())
    kept = stats.extract(texts[0], 0.3, "max_count")
    assert [e.key for e in kept] == ["alpha"]  # ER(alpha)=0.5 > 0.3, ER(beta)=0.146 is not


def test_statistics_forget_undoes_fit():
    stats = EntityStatistics(max_ngram=2)
    stats.fit(["red fox", "blue fox"])
    stats.forget(["blue fox"])
    fresh = EntityStatistics(max_ngram=2)
    fresh.fit(["red fox"])
    assert stats.doc_freq == fresh.doc_freq and stats.n_chunks == fresh.n_chunks


def _nodes(documents):
    return [TextNode(text=f"{d.metadata['title']}\n\n{d.text}", id_=d.id_) for d in documents]


def test_statistical_extractor_merges_entities_across_chunks_and_links_passages(documents):
    nodes = _nodes(documents)
    ex = StatisticalEntityExtractor(threshold=0.3)
    ex(nodes)
    by_id = {n.node_id: n for n in nodes}
    ents = {n.node_id: {e.name for e in n.metadata["nodes"]} for n in nodes}
    # "The Grey Harbour" is extracted from its own page (named four times there, rare elsewhere) ...
    assert "grey harbour" in {e.key for e in ex.statistics.extract(by_id["p-harbour"].text, 0.3)}
    assert "grey harbour" not in {e.key for e in ex.statistics.extract(by_id["p-ada"].text, 0.3)}
    # ... and the painter's page, which names it once, is linked to the same entity.
    assert "grey harbour" in ents["p-ada"]
    contains = [(r.source_id, r.target_id) for r in by_id["p-ada"].metadata["relations"] if r.label == "contains"]
    assert ("p-ada", "grey harbour") in contains and ("p-ada", "marlow") in contains
    # "Ada Lorne" is named in four of six chunks: too common here to pass τ = 0.3 (TF-IDF at work)
    assert "ada lorne" not in ex.vocabulary
    # no stop-word entities, and every entity node is normalised
    assert all(name == name.lower() and "the" not in name.split()[:1] for e in ents.values() for name in e)


def test_cooccurrence_relations_carry_their_sentence(documents):
    nodes = _nodes(documents)
    StatisticalEntityExtractor(threshold=0.3)(nodes)
    CooccurrenceRelationExtractor()(nodes)
    rels = [r for n in nodes for r in n.metadata["relations"] if r.label != "contains"]
    sea = [r for r in rels if (r.source_id, r.target_id) == ("esk river", "marlow")]
    assert [r.label for r in sea] == ["reaches the sea at"]
    assert sea[0].properties["text"] == "The Esk River reaches the sea at Marlow."
    # the other sentence naming both ("Marlow is a town on the Esk River.") has too long a gap for a predicate
    assert [r.label for r in rels if (r.source_id, r.target_id) == ("marlow", "esk river")] == ["co-occurs with"]
    assert sea[0].properties["kind"] == "cooccurrence"
    # relations only join entities of one sentence
    for r in rels:
        text = r.properties["text"].lower()
        assert r.source_id.split()[0] in text and r.target_id.split()[0] in text


def test_cooccurrence_caps_pairs_per_sentence():
    node = TextNode(text="Aa1 Bb1 Cc1 Dd1 Ee1 Ff1 Gg1.", id_="c")
    keys = ["aa1", "bb1", "cc1", "dd1", "ee1", "ff1", "gg1"]
    node.metadata["nodes"] = [EntityNode(name=k) for k in keys]
    for n in node.metadata["nodes"]:
        n.label = "entity"
    CooccurrenceRelationExtractor(max_ngram=1, max_pairs_per_sentence=4)([node])
    rels = node.metadata["relations"]
    assert len(rels) == 4
    assert {(r.source_id, r.target_id) for r in rels} <= {(a, b) for a, b in zip(keys, keys[1:])}  # nearest first


def test_find_mentions_prefers_longest_match():
    text = "Morning at the Vellin Bridge hangs near the Vellin Bridge. Vellin is a river."
    ms = find_mentions(text, frozenset({"vellin bridge", "vellin", "bridge"}), 3)
    assert [m.key for m in ms] == ["vellin bridge", "vellin bridge", "vellin"]
    assert text[ms[0].start:ms[0].end] == "Vellin Bridge"


def test_synonym_edges_use_threshold(embed):
    nodes = [TextNode(text="x", id_="a"), TextNode(text="y", id_="b")]
    nodes[0].metadata["nodes"] = [EntityNode(name="grey harbour", label="entity", properties={"surface": "Grey Harbour"})]
    nodes[1].metadata["nodes"] = [EntityNode(name="the grey harbour", label="entity", properties={"surface": "The Grey Harbour"}),
                                  EntityNode(name="esk river", label="entity", properties={"surface": "Esk River"})]
    SynonymEdgeExtractor(embed_model=embed, threshold=0.6)(nodes)
    syn = [(r.source_id, r.target_id) for n in nodes for r in n.metadata["relations"]]
    assert syn == [("grey harbour", "the grey harbour")]


def test_extractors_work_inside_a_plain_property_graph_index(documents, embed):
    index = PropertyGraphIndex.from_documents(
        documents,
        kg_extractors=[StatisticalEntityExtractor(threshold=0.3), CooccurrenceRelationExtractor(),
                       SynonymEdgeExtractor(embed_model=embed)],
        embed_model=embed,
        embed_kg_nodes=False,
        use_async=False,
    )
    store = index.property_graph_store
    triplets = {(s, r, o) for s, r, o in store.graph.triplets}
    chunk_text = {n.id: n.text for n in store.graph.nodes.values() if n.label == "text_chunk"}
    linked = sorted(chunk_text[s][:20] for s, r, o in triplets if r == "contains" and o == "grey harbour")
    assert linked == ["Ada Lorne was a pain", "The Grey Harbour is "]  # its own page and the painter's
    assert ("esk river", "reaches the sea at", "marlow") in triplets


def _triples(rels) -> list[tuple[str, str, str, str]]:
    return [(r.source_id, r.label, r.target_id, r.properties["text"]) for r in rels]


def test_relations_of_added_keys_pair_only_the_sentences_that_mention_them():
    # what the link step asks when an older chunk gains "quell": the sentences without it gave their pairs before
    text = "Arno met Bexa in Corvin. Quell hired Arno later. Dovan and Bexa sailed home."
    keys = frozenset({"arno", "bexa", "corvin", "quell", "dovan"})
    cooc = CooccurrenceRelationExtractor(max_ngram=1)
    full = _triples(cooc.relations(text, keys, "c#0"))
    added = _triples(cooc.relations(text, keys, "c#0", frozenset({"quell"})))
    assert added == [("quell", "hired", "arno", "Quell hired Arno later.")]
    assert added[0] in full and len(full) == 3 + 1 + 1  # the first sentence's three pairs, the last one's one
    assert cooc.relations(text, keys, "c#0", frozenset({"nowhere"})) == []


def test_relations_of_added_keys_pair_every_sentence_when_one_has_more_pairs_than_the_cap():
    # six names in one sentence make 15 pairs, more than the cap of 12: which pairs a sentence keeps depends on the
    # pairs before it, so every sentence is paired again, as for a chunk seen for the first time
    names = ["arno", "bexa", "corvin", "dovan", "elsin", "farro"]
    text = "Quell hired Arno. " + " ".join(n.title() for n in names) + " sailed."
    keys = frozenset(names) | {"quell"}
    cooc = CooccurrenceRelationExtractor(max_ngram=1, max_pairs_per_sentence=12)
    full = _triples(cooc.relations(text, keys, "c#0"))
    assert len(full) == 1 + 12
    assert _triples(cooc.relations(text, keys, "c#0", frozenset({"quell"}))) == full
