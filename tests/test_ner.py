"""The NER entity graph: relation patterns, alias merges, title linking, the extractor inside a plain
PropertyGraphIndex, the shared index built with it (insert/delete), and the non-English fallback."""

from __future__ import annotations

import json
import logging
import textwrap

import pytest
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.graph_stores import SimplePropertyGraphStore

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.dependency_relations import parsed_relations
from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention, mention_from, resolve_document
from llama_index_graphrag_suite.extractors.gazetteer import (
    NameMatcher,
    canonical_key,
    markdown_headings,
    title_from_metadata,
)
from llama_index_graphrag_suite.extractors.ner import NEREntityExtractor
from llama_index_graphrag_suite.extractors.spacy_pipeline import load_pipeline


@pytest.fixture(scope="module")
def nlp():
    return load_pipeline()


def relations(nlp, text: str) -> set[tuple[str, str, str, str]]:
    doc = nlp(text)
    mentions = [mention_from(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents if e.label_ != "DATE"]
    return {(r.source, r.predicate, r.target, r.pattern) for r in parsed_relations(doc, [m for m in mentions if m])}


# ---------------------------------------------------------------- relation patterns on hand-written sentences

def test_subject_verb_object(nlp):
    assert ("lester smith", "directed", "glass lantern", "svo") in relations(
        nlp, "Lester Smith directed The Glass Lantern in 1879.")


def test_prepositional_attachment_keeps_passive_auxiliary(nlp):
    assert ("lester smith", "was born in", "lyon", "svo") in relations(nlp, "Lester Smith was born in Lyon.")


def test_appositive(nlp):
    assert ("lester smith", "painter from", "paris", "appos") in relations(
        nlp, "Lester Smith, a painter from Paris, moved away.")


def test_copula(nlp):
    assert ("marie curie", "is director of", "radium institute", "copula") in relations(
        nlp, "Marie Curie is the director of the Radium Institute.")


def test_subject_is_the_source_whatever_the_word_order(nlp):
    found = relations(nlp, "International Business Machines was founded by Charles Flint.")
    assert ("international business machines", "was founded by", "charles flint", "svo") in found


def test_names_no_relation_reaches_fall_back_to_cooccurrence(nlp):
    found = relations(nlp, "The film was directed by Halit Refig and produced by Memduh Un.")
    assert all(pattern == "cooccurrence" for *_, pattern in found) and len(found) == 1


def test_no_relation_across_two_clauses(nlp):
    found = relations(nlp, "Anna Berg starred in it and Lester Smith shot it in Lyon.")
    assert ("lester smith", "shot in", "lyon", "svo") in found
    assert not any({s, o} == {"anna berg", "lyon"} and p != "cooccurrence" for s, _, o, p in found)


# ---------------------------------------------------------------- names, aliases, titles

def test_canonical_key_drops_case_articles_possessives_punctuation():
    assert canonical_key("The Glass Lantern's") == canonical_key("glass  lantern") == "glass lantern"
    assert canonical_key("Dunmore-Reyes") == "dunmore reyes"


def m(surface: str, type_: str = "PERSON") -> EntityMention:
    return mention_from(surface, type_, 0, len(surface))


def test_surname_merges_into_the_one_full_name_of_the_document():
    mentions = [m("Lester Smith"), m("Smith"), m("Paris", "GPE")]
    assert resolve_document(mentions) == {"smith": "lester smith"}
    assert [x.key for x in mentions] == ["lester smith", "lester smith", "paris"]


def test_ambiguous_surname_stays_its_own_entity():
    mentions = [m("Marie Curie"), m("Pierre Curie"), m("Curie")]
    assert resolve_document(mentions) == {}
    assert mentions[2].key == "curie"


def test_acronym_merges_into_the_name_it_spells():
    mentions = [m("International Business Machines", "ORG"), m("IBM", "ORG")]
    assert resolve_document(mentions) == {"ibm": "international business machines"}


def test_surname_resolves_to_the_document_title():
    mentions = [m("Smith")]
    assert resolve_document(mentions, title_key="lester smith", title_type="PERSON") == {"smith": "lester smith"}


def test_titles_from_jsonl_file_names_and_markdown():
    assert title_from_metadata({"title": "Theodred II (Bishop of Elmham)"}) == "Theodred II"
    assert title_from_metadata({"file_name": "grey_harbour.md", "file_path": "/x/grey_harbour.md"}) == "grey harbour"
    assert [h for _, h, _, _ in markdown_headings("# Grey Harbour\n\ntext\n\n## Old Town ##\n")] == ["Grey Harbour", "Old Town"]


def test_name_matcher_needs_a_capital_and_takes_the_longest_name():
    matcher = NameMatcher(["love", "grey harbour", "grey"])
    assert [k for k, _, _ in matcher.find("Love is a film shot in Grey Harbour.")] == ["love", "grey harbour"]
    assert matcher.find("the love of her life") == []


# ---------------------------------------------------------------- the extractor

DOCS = [
    ("lester", "Lester Smith", "Lester Smith, a painter from Paris, directed The Glass Lantern. "
                               "Smith was born in Lyon. He married Anna Berg."),
    ("lantern", "The Glass Lantern (film)", "The Glass Lantern is a silent film starring Anna Berg."),
    ("berg", "Anna Berg", "Anna Berg was an actress. She was born in Vienna."),
    ("notes", "", "# Grey Harbour\n\nGrey Harbour is a port. Lester Smith painted it."),
]


def documents():
    return [Document(text=text, id_=doc_id, metadata={"title": title} if title else {}) for doc_id, title, text in DOCS]


@pytest.fixture(scope="module")
def pg_index():
    return PropertyGraphIndex.from_documents(documents(), kg_extractors=[NEREntityExtractor()],
                                             embed_model=HashEmbedding(dim=32),
                                             property_graph_store=SimplePropertyGraphStore(), embed_kg_nodes=False)


def triplets(pg):
    return [(s.id, r.label, o.id) for s, r, o in pg.property_graph_store.graph.get_triplets()]


def test_extractor_inside_a_plain_property_graph_index(pg_index):
    found = triplets(pg_index)
    rels = {(s, p, o) for s, p, o in found if p != "contains"}
    assert ("lester smith", "directed", "glass lantern") in rels
    assert ("lester smith", "was born in", "lyon") in rels  # "Smith" resolved to the title's full name
    assert ("lester smith", "married", "anna berg") in rels  # "He" in Lester Smith's article
    assert ("anna berg", "was born in", "vienna") in rels


def test_titles_link_every_chunk_that_names_them(pg_index):
    contains = {(s, o) for s, p, o in triplets(pg_index) if p == "contains"}
    nodes = pg_index.property_graph_store.get()
    by_doc = {n.properties.get("ref_doc_id"): n.id for n in nodes if n.label == "text_chunk"}
    assert len(by_doc) == len(DOCS)
    assert (by_doc["lantern"], "glass lantern") in contains  # the title, written with "The"
    assert (by_doc["lantern"], "anna berg") in contains
    assert (by_doc["notes"], "grey harbour") in contains  # a markdown # title
    assert (by_doc["notes"], "lester smith") in contains  # another document's title, named here


def test_entity_types_are_properties(pg_index):
    nodes = {n.id: n for n in pg_index.property_graph_store.get() if n.label == "entity"}
    assert nodes["anna berg"].properties["type"] == "PERSON"
    assert nodes["lyon"].properties["surface"] == "Lyon"


def test_text_in_a_script_the_pipeline_cannot_read_uses_the_statistical_extractor(caplog):
    docs = [Document(text="北京 是 中国 的 首都 。 北京 很 大 。", id_="zh", metadata={"title": "北京"}),
            Document(text="Lester Smith was born in Lyon.", id_="en")]
    extractor = NEREntityExtractor()
    with caplog.at_level(logging.WARNING):
        pg = PropertyGraphIndex.from_documents(docs, kg_extractors=[extractor], embed_model=HashEmbedding(dim=32),
                                               property_graph_store=SimplePropertyGraphStore(), embed_kg_nodes=False)
    assert "CJK script" in caplog.text and "statistical extractor" in caplog.text
    names = {n.id for n in pg.property_graph_store.get() if n.label == "entity"}
    assert "lester smith" in names and "北京" in names
    assert all(" " not in n or n.isascii() for n in names)  # no word cut inside the Chinese text


# ---------------------------------------------------------------- the shared index on the NER graph

@pytest.fixture(scope="module")
def index():
    return GraphRAGIndex.from_documents(documents(), embed_model=HashEmbedding(dim=64))


def test_shared_index_defaults_to_ner_and_keeps_types(index):
    assert index.config.entities == "ner"
    assert index.entities["anna berg"].type == "PERSON"
    assert index.stats()["relations_dependency"] > 0


def test_insert_links_new_names_to_old_chunks_and_delete_takes_them_back(index, tmp_path):
    before = {k: set(e.chunks) for k, e in index.entities.items()}
    facts_before = set(index.facts)
    index.insert([Document(text="Vienna Opera staged works by Anna Berg.", id_="opera",
                           metadata={"title": "Vienna Opera"})])
    assert "opera#0" in index.entities["anna berg"].chunks
    index.delete("opera")
    assert {k: set(e.chunks) for k, e in index.entities.items()} == before
    assert set(index.facts) == facts_before


def test_persisted_index_records_its_extractor_and_old_indexes_load_as_statistical(index, tmp_path):
    saved = index.persist(tmp_path / "idx")
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["config"]["entities"] == "ner"
    assert IndexConfig.from_manifest({k: v for k, v in manifest["config"].items() if k != "entities"}).entities == "statistical"
    assert GraphRAGIndex.load(tmp_path / "idx").config.entities == "ner"


def test_both_extractors_add_ngrams_and_cooccurrence_to_the_names():
    both = GraphRAGIndex.from_documents(documents(), embed_model=HashEmbedding(dim=64),
                                        config=IndexConfig(entities="both", entity_threshold=0.3))
    ner_only = GraphRAGIndex.from_documents(documents(), embed_model=HashEmbedding(dim=64))
    assert set(ner_only.entities) < set(both.entities)
    assert any(not e.type for e in both.entities.values())  # statistical n-grams carry no NER type
    kinds = {f.kind for f in both.facts.values()}
    assert {"dependency", "cooccurrence"} <= kinds


def test_a_folder_of_markdown_files_links_by_file_name_and_heading(tmp_path):
    from llama_index.core import SimpleDirectoryReader

    (tmp_path / "Grey_Harbour.md").write_text("Grey Harbour is a port town on the Sevrin coast. Its lighthouse was "
                                               "designed by Ada Lorne.\n", encoding="utf-8")
    (tmp_path / "ada-lorne.md").write_text("# Ada Lorne\n\nAda Lorne was an engineer. She built the lighthouse of "
                                            "Grey Harbour in 1881.\n", encoding="utf-8")
    (tmp_path / "sevrin.md").write_text("# The Sevrin Coast\n\nThe coast runs north from Grey Harbour.\n",
                                        encoding="utf-8")
    docs = SimpleDirectoryReader(str(tmp_path), filename_as_id=True).load_data()
    pg = PropertyGraphIndex.from_documents(docs, kg_extractors=[NEREntityExtractor()], embed_model=HashEmbedding(dim=32),
                                           property_graph_store=SimplePropertyGraphStore(), embed_kg_nodes=False)
    chunks = {n.properties["file_name"]: n.id for n in pg.property_graph_store.get() if n.label == "text_chunk"}
    contains = {(s, o) for s, p, o in triplets(pg) if p == "contains"}
    assert (chunks["Grey_Harbour.md"], "grey harbour") in contains  # the file name is the title
    assert (chunks["sevrin.md"], "grey harbour") in contains  # another file names it
    assert (chunks["ada-lorne.md"], "ada lorne") in contains and (chunks["Grey_Harbour.md"], "ada lorne") in contains
    assert (chunks["sevrin.md"], "sevrin coast") in contains  # the markdown # title


# ---------------------------------------------------------------- mentions NER labels that are not names

NOVEL = {  # hand-written in the manner of a nineteenth-century novel: dialogue, dashes, a stray table rule
    "the lighthouse keeper": (
        "CHAPTER I.\n\nMargaret Elwood had lived at Gull Point since she was a girl. \"I shall not go,\" said she, "
        "\"not while\nFather is ill.\" Her brother Thomas laughed at that--he always laughed--and went down to the "
        "harbour.\nSHE would not go; that was all. |I am tired of the sea, Thomas wrote to Captain Harrow in London.\n"
        "Mrs. Penrose, the widow at the inn, kept Margaret's letters in a tin box. \"Miss Elwood,\" she said,\n"
        "\"you must write to Mr. Harrow yourself.\" Margaret said nothing. Thomas came back at dusk."),
    "the harbour": (
        "CHAPTER II.\n\nCaptain Harrow came to Gull Point in the spring. He had known Father at sea--long ago--and he "
        "brought\na letter from London. \"Miss Elwood,\" he said, \"your brother asked me to come.\" Margaret looked "
        "at him.\nSHE had not expected him. Mrs. Penrose gave him the room above the inn. Thomas and the Captain "
        "walked to\nthe lighthouse together, and Margaret watched them from the window. |I am glad you came, she "
        "thought."),
}


def test_a_mention_opening_with_a_pronoun_is_no_name_and_common_nouns_ner_labels_now_and_then_are_none():
    from llama_index_graphrag_suite.extractors.name_words import common_nouns_among, opens_like_a_clause

    assert opens_like_a_clause("|I am tired", "PERSON") and opens_like_a_clause("She said", "ORG")
    assert not any(opens_like_a_clause(s, label) for s, label in [("I, Robot", "WORK_OF_ART"), ("Iain Banks", "PERSON"),
                                                                    ("Hemingway", "PERSON"), ("He", "PERSON")])
    texts = ["A lymph node was removed. The lymph node was small.", "Each lymph node drains a region.",
             "The band f(x) was formed in 2009.", "f(x) released an album; 北京 is a city."]
    mentions = [[EntityMention("lymph node", "lymph node", "PERSON", 2, 12)], [],
                [EntityMention("f x", "f(x)", "ORG", 9, 13)], [EntityMention("北京", "北京", "GPE", 35, 37)]]
    # "lymph node": labelled once in three writings, a common noun; "f(x)" labelled in one of two: at most half,
    # dropped too; labelled in both it is a name; Chinese has no capitals and is never judged
    assert common_nouns_among(mentions, texts) == {"lymph node", "f(x)"}
    mentions[3].append(EntityMention("f x", "f(x)", "ORG", 0, 4))
    assert common_nouns_among(mentions, texts) == {"lymph node"}
    # a broken-off word of dialogue, "never--" (ORG; then found by the gazetteer in 14 chunks of a Sherlock Holmes
    # book), is counted as the word it is: "never" is written far more often than NER labels it
    texts = ['"I never--" he began. I have never seen it.', "He never came, and never will."]
    assert common_nouns_among([[EntityMention("never", "never--", "ORG", 3, 10)], []], texts) == {"never--"}


def test_an_entity_span_over_a_paragraph_break_is_one_mention_per_line_of_two_words_or_more():
    from llama_index_graphrag_suite.extractors.entity_resolution import entity_lines

    assert entity_lines("CHAPTER I.\n\nMargaret Elwood's", 10) == [("CHAPTER I.", 10), ("Margaret Elwood", 22)]
    # a later line of one word or a numbered heading: "However" or "2 Testing" after a chunk's title line is no name
    assert entity_lines("Medical\n\nHowever", 0) == entity_lines("Medical\n\n2 Testing", 0) == [("Medical", 0)]
    assert entity_lines("Raoul Walsh\n\n  Raoul A. Walsh", 0) == [("Raoul Walsh", 0), ("Raoul A. Walsh", 15)]


def test_a_novels_dialogue_and_common_nouns_do_not_become_names():
    from conftest import index_of_texts

    keys = set(index_of_texts(NOVEL).entities)
    assert {"margaret", "thomas", "harrow", "penrose", "gull point", "london"} <= keys
    # spaCy runs "CHAPTER I.", a blank line and "Margaret Elwood" into one PERSON: each line is judged alone
    assert "margaret elwood" in keys
    # spaCy labels "|I am tired" a PERSON and "the inn" a GPE; neither is a name
    assert "i am tired" not in keys and "inn" not in keys
    kept = set(index_of_texts(NOVEL, IndexConfig(lowercase_names=True)).entities)  # the switch keeps them
    assert {"i am tired", "inn"} <= kept


DIALOGUE = {  # hand-written in the manner of a detective story: lines of dialogue open with common words
    "the client": (
        "\"Sometimes Holmes would sit for hours without a word,\" said I. My friend Holmes sometimes slept by day, and "
        "sometimes he played the violin; sometimes he did neither. \"This John Openshaw is a client,\" he said. I had "
        "met John Openshaw once. In this letter, as in this one and this, he wrote from Horsham. \"Perhaps you are "
        "right,\" said Watson, perhaps to please him, or perhaps not. New Zealand is far. He sailed to New Zealand "
        "in a new ship with new sails, new men and a new flag, and a new captain."),
}


def test_a_common_word_opening_a_line_of_dialogue_is_cut_from_the_name_after_it():
    from conftest import index_of_texts

    keys = set(index_of_texts(DIALOGUE).entities)
    # spaCy reads "Sometimes Holmes" a PERSON: it opens a line, the text writes "sometimes" in lower case, and
    # "Holmes" is a person named on his own
    assert "holmes" in keys and "sometimes holmes" not in keys
    # "This John Openshaw" it reads a WORK_OF_ART: a work's first word may be its own, and is not cut
    assert {"john openshaw", "this john openshaw"} <= keys
    # "New" opens a sentence too and "new" is a common word, but New Zealand is a place
    assert "new zealand" in keys and "zealand" not in keys
    kept = set(index_of_texts(DIALOGUE, IndexConfig(lowercase_names=True)).entities)  # the switch keeps NER's spans
    assert "sometimes holmes" in kept


def test_whether_the_name_after_an_opener_is_a_person_is_the_majority_of_its_labels_not_the_last(monkeypatch):
    import re

    from conftest import index_of_texts

    from llama_index_graphrag_suite.extractors.entity_resolution import majority_types

    text = ('"Sometimes Holmes would sit for hours," said I. Holmes sometimes slept, and sometimes he read. Holmes '
            'smoked a pipe. Later I wrote to Holmes.')
    # NER as scripted: "Sometimes Holmes" a person; "Holmes" a person twice, then (last in the corpus) an
    # organisation, as spaCy's small model now and then labels him
    labels = iter(["PERSON", "PERSON", "PERSON", "ORG"])

    def scripted_ner(self, doc):
        spans = [m.span(1) for m in re.finditer(r'"?((?:Sometimes )?Holmes)', doc.text)]
        return [mention_from(doc.text[a:b], next(labels), a, b) for a, b in spans]

    monkeypatch.setattr(NEREntityExtractor, "_ner_mentions", scripted_ner)
    keys = set(index_of_texts({"the pipe": text}).entities)
    # two of Holmes's three labels say person: "Sometimes Holmes" is the person after the opener
    assert "holmes" in keys and "sometimes holmes" not in keys
    mentions = [[mention_from("Holmes", t, 0, 6) for t in ("PERSON", "PERSON", "ORG")],
                [mention_from("Ely", "GPE", 0, 3)]]
    assert majority_types(mentions) == {"holmes": "PERSON", "ely": "GPE"}


def test_a_sentence_opener_is_judged_where_it_stands_and_by_what_follows_it():
    from llama_index_graphrag_suite.extractors.entity_resolution import mention_from
    from llama_index_graphrag_suite.extractors.name_words import NameWordCounts, cut_sentence_openers

    texts = ["'Sometimes Holmes sang.' He sometimes slept, sometimes read, and sometimes not. 'Perhaps you know,' said "
             "Mary. Perhaps so, perhaps not, perhaps never, perhaps once. 'Black Swan Hotel,' said he; black tea and a "
             "black cat. They met Sometimes Holmes.",
             "Tell Mary to come. Tell Lord Robert, tell Mary, tell them all, tell everyone."]

    def at(t: int, surface: str, label: str = "PERSON", nth: int = 0):
        start = -1
        for _ in range(nth + 1):
            start = texts[t].index(surface, start + 1)
        return mention_from(surface, label, start, start + len(surface))

    mentions = [[at(0, "'Sometimes Holmes"), at(0, "'Perhaps you", "WORK_OF_ART"), at(0, "Mary"),
                 at(0, "'Black Swan Hotel", "FAC"), at(0, "Sometimes Holmes", nth=1)],
                [at(1, "Tell Mary"), at(1, "Tell Lord Robert"), at(1, "Mary", nth=1)]]
    known = {"mary": "PERSON", "holmes": "PERSON", "swan hotel": "FAC"}
    cut = cut_sentence_openers(mentions, texts, NameWordCounts(texts), known)
    # opened a quotation, "sometimes" a common word, "Holmes" known: the name after the opener
    assert (cut[0][0].surface, cut[0][0].key) == ("Holmes", "holmes")
    assert texts[0][cut[0][0].start:cut[0][0].end] == "Holmes"
    # a clause ("Perhaps you") is dropped; "Black Swan Hotel" stays whole: only a person's mention is cut (a place's
    # or a work's first word may be its own: "Scientific American"); where a capital is the writer's choice ("met
    # Sometimes Holmes") the words stay a name
    assert [m.surface for m in cut[0][1:]] == ["Mary", "'Black Swan Hotel", "Sometimes Holmes"]
    # "Tell" opens sentences only; "Lord Robert" is named nowhere on his own, so that mention stays whole
    assert [m.surface for m in cut[1]] == ["Mary", "Tell Lord Robert", "Mary"]
    # the person after the opener must be known as a person
    assert cut_sentence_openers([[at(1, "Tell Mary")]], texts[1:], NameWordCounts(texts), {"mary": "ORG"})[0][0] \
        .surface == "Tell Mary"
    # a word the corpus does not write in lower case is the name's own, first in a sentence or not
    no_lower_tell = NameWordCounts([texts[1].split(" tell ")[0]])
    assert cut_sentence_openers([[at(1, "Tell Mary")]], texts[1:], no_lower_tell, known)[0][0].surface == "Tell Mary"


WRAPPED_STORY = [  # hand-written; wrapped below at widths where a line break falls inside a name
    "Margaret Elwood had lived at Gull Point since she was a girl, and she had never once wished to leave it. "
    "Her brother wrote every spring from London, where he kept the accounts of the Northern Shipping Company, "
    "and every spring he asked her to come. In the autumn of that year a letter came instead from Captain Harrow, "
    "who had sailed with their father on the Mary Penrose, and who now asked leave to call at the lighthouse.",
    "She showed the letter to Mrs. Penrose at the inn. The widow read it twice and said that Captain Harrow was an "
    "honest man, whatever the people of Saint Ives might say of him, and that Margaret Elwood could do worse than "
    "hear what he had come to tell her about her brother and the Northern Shipping Company.",
]


def test_hard_wrapped_lines_are_joined_before_the_parse_and_nothing_else_is():
    from llama_index_graphrag_suite.extractors.terms import capitalised_per_100_words
    from llama_index_graphrag_suite.text import join_wrapped_lines

    wrapped = "\n\n".join(textwrap.fill(p, 50) for p in WRAPPED_STORY)
    joined = join_wrapped_lines(wrapped)
    assert len(joined) == len(wrapped) and joined == "\n\n".join(WRAPPED_STORY)  # paragraphs stay apart
    # not wrapped: a markdown list and table, short lines (verse, titles), a text of long lines, a short text
    kept = ["# Dosing\n\n- Adults take 500 mg of the drug twice a day with food and water\n"
            "- Children take 250 mg of the drug twice a day with food and water\n- Nobody takes more than that\n"
            "| drug | dose for adults and children alike, twice a day |\n| --- | --- |\n| a | b |",
            "The sea is calm tonight.\nThe tide is full, the moon lies fair\nUpon the straits; on the French "
            "coast the light\nGleams and is gone; the cliffs of England stand,\nGlimmering and vast, out in "
            "the tranquil bay.\nCome to the window, sweet is the night air!\nOnly, from the long line of spray",
            "\n".join(WRAPPED_STORY * 3), "Title\n\nOne line of text that is long enough to be wrapped."]
    assert [join_wrapped_lines(t) for t in kept[:1] + kept[2:]] == kept[:1] + kept[2:]
    verse = join_wrapped_lines(kept[1]).split("\n")  # full lines of verse are joined (harmless), short ones not
    assert verse[0] == "The sea is calm tonight." and len(verse) > 1
    # the name density reads a wrapped text as the unwrapped one (a wrapped line's first word starts no sentence)
    assert capitalised_per_100_words([wrapped]) == capitalised_per_100_words(["\n\n".join(WRAPPED_STORY)])


def test_a_name_a_hard_wrap_cuts_in_two_is_found_whole():
    from conftest import index_of_texts

    flat = set(index_of_texts({"story": "\n\n".join(WRAPPED_STORY)}).entities)
    assert {"mary penrose", "northern shipping company", "margaret elwood", "harrow"} <= flat
    for width in (50, 62, 65):  # "Margaret\nElwood", "the Northern\nShipping Company", a missed "Mary Penrose"
        wrapped = "\n\n".join(textwrap.fill(p, width) for p in WRAPPED_STORY)
        assert set(index_of_texts({"story": wrapped}).entities) == flat


# ---------------------------------------------------------------- references to a part of the document

def test_a_reference_to_a_numbered_part_of_a_document_is_no_name():
    from llama_index_graphrag_suite.extractors.gazetteer import canonical_key
    from llama_index_graphrag_suite.extractors.name_words import names_a_part_of_a_document

    parts = ["Table 1", "Fig. 1F", "Figs. 2 and 3", "Supplementary Table S1", "Figure 1(a)", "Section 3.2",
             "Appendix B", "CHAPTER I.", "Chapter One", "BOOK II", "Act V", "Part 2"]
    names = ["Apollo 11", "Article 356", "World War II", "Table Mountain", "Book of Kells", "Chapter One Records",
             "Volume", "Section 8 Housing", "Boeing 747"]
    assert [p for p in parts if not names_a_part_of_a_document(canonical_key(p))] == []
    assert [n for n in names if names_a_part_of_a_document(canonical_key(n))] == []


PARTS_OF_DOCUMENTS = {  # hand-written: two research articles, two novels, an album and its singer
    "bat coronavirus survey": (
        "Bat Coronavirus Survey\n\nWe sampled 412 bats in Yunnan Province between 2012 and 2015. Table 1 lists the "
        "species sampled at each cave. As shown in Table 1, Rhinolophus sinicus carried most of the SARS-related "
        "coronaviruses. Fig. 2 shows the phylogeny of the RdRp gene; the Yunnan strains cluster with SARS-CoV."),
    "influenza vaccine trial": (
        "Influenza Vaccine Trial\n\nWe enrolled 1,200 adults in Ontario during the 2017 season. Table 1 gives the "
        "baseline characteristics of the two arms. Serum antibody titres rose fourfold in 68% of the vaccinated arm "
        "(Table 1). Fig. 2 shows the titres over time; the Ontario cohort matched the trial in Quebec."),
    "the lighthouse keeper": (
        "CHAPTER I.\n\nMargaret Elwood had lived at Gull Point since she was a girl. Her brother Thomas wrote to "
        "Captain Harrow in London every spring.\n\n## Chapter 2\n\nThomas came home."),
    "the silver mine": (
        "CHAPTER I.\n\nJohn Carver came to Leadville in the winter of 1879. The Silver Queen mine stood above the "
        "town, and Carver took a room at the Clarendon Hotel.\n\n## Chapter 2\n\nCarver found silver."),
    "chapter one": "Chapter One is the debut album of the singer Ella Mae Rowe, released in 1998 by Blue Note Records.",
    "ella mae rowe": "Ella Mae Rowe is an American jazz singer. Her debut album, Chapter One, was recorded in Chicago.",
}


def test_tables_and_chapters_of_different_documents_are_not_joined_but_a_document_titled_so_is_linked():
    from conftest import index_of_texts

    entities = index_of_texts(PARTS_OF_DOCUMENTS).entities
    # spaCy labels "Table 1" (LAW) and "CHAPTER I." in both documents of each pair, and the markdown heading
    # "## Chapter 2" would be a heading entity of both novels: each would join two documents with nothing in common
    assert not {"table 1", "chapter i", "chapter 2"} & set(entities)
    assert {"yunnan province", "ontario", "margaret elwood", "john carver", "ella mae rowe"} <= set(entities)
    # the album titled "Chapter One" is an entity by its title, linked from the singer's page
    assert sorted(entities["chapter one"].chunks) == ["chapter one#0", "ella mae rowe#0"]


# ---------------------------------------------------------------- one-word titles and article forms that head names

ROYAL_PAGES = {  # hand-written: a film titled with a word that heads the names of people on the other pages
    "princess": "Princess is a 2006 Danish animated film directed by Anders Morgenthaler.",
    "anders morgenthaler": "Anders Morgenthaler is a Danish film director. His film Princess won praise at Cannes.",
    "diana spencer": "Diana Spencer became Princess of Wales in 1981. As a princess she worked for charities.",
    "anne windsor": "Princess Anne is the daughter of Elizabeth II. Princess Anne rides horses at Gatcombe Park.",
    "grace kelly": "Grace Kelly became Princess Grace of Monaco in 1956 when she married Rainier III.",
}


def test_a_one_word_title_that_heads_names_is_found_only_where_it_stands_alone():
    from conftest import index_of_texts

    entities = index_of_texts(ROYAL_PAGES).entities
    # "Princess" heads a longer name in 4 of its 6 writings ("Princess of Wales", "Princess Anne" twice, "Princess
    # Grace") and is written "princess" too: those writings name other people, and linking them made the title
    # `princess` a hub of 127 chunks on 2wiki. Where the word stands alone ("His film Princess won"), it is the film.
    assert sorted(entities["princess"].chunks) == ["anders morgenthaler#0", "princess#0"]
    assert {"anders morgenthaler", "diana spencer", "grace kelly", "monaco"} <= set(entities)


def test_a_standalone_name_is_found_alone_but_not_heading_a_longer_name():
    matcher = NameMatcher(["princess", "ohio"], standalone=["princess"])
    text = "Princess Anne met Princess of Wales. Princess 2 was a sequel. His film Princess won. Ohio State lost."
    assert [(k, text[a:b]) for k, a, b in matcher.find(text)] == [("princess", "Princess"), ("ohio", "Ohio")]
    assert text[matcher.find(text)[0][1] - 9:].startswith("His film Princess")
    # without the rule every capitalised writing of the word is the name
    assert len(NameMatcher(["princess"]).find(text)) == 4


def test_an_insert_finds_a_new_one_word_title_in_older_chunks_only_where_it_stands_alone(tmp_path):
    from conftest import index_of_texts

    older = {k: v for k, v in ROYAL_PAGES.items() if k != "princess"}
    index = index_of_texts(older)
    assert "princess" not in index.entities
    index.insert([Document(text=ROYAL_PAGES["princess"], doc_id="princess", metadata={"title": "Princess"})])
    assert sorted(index.entities["princess"].chunks) == ["anders morgenthaler#0", "princess#0"]
