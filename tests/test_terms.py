"""The corpus's own terms in the LLM-free graph, and the two junk rules (common words taken for
names, titles of long documents as hubs), on hand-written clinical, biomedical and encyclopaedic text."""

from __future__ import annotations

from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
from llama_index.core.schema import TextNode

from llama_index_graphrag_suite import IndexConfig
from llama_index_graphrag_suite.extractors.ner import NEREntityExtractor
from llama_index_graphrag_suite.extractors.spacy_pipeline import load_pipeline
from llama_index_graphrag_suite.extractors.terms import (
    TERM_TYPE,
    hub_ceiling,
    noun_phrases,
    salient_terms,
    terms_wanted,
    word_ceiling,
)

CLINICAL = [
    "Basal cell carcinoma is the most common type of skin cancer. It grows slowly.",
    "Blood tests check the liver before treatment. Basal cell carcinoma rarely spreads.",
    "Imaging of the chest shows whether skin cancer has spread. The blood supply is checked too.",
    "A dermatologist removes basal cell carcinoma with Mohs surgery.",
]


def _nodes(texts, doc_of=None, title="Guide"):
    return [TextNode(id_=f"c{i}", text=t, metadata={"doc_id": (doc_of or (lambda i: f"d{i}"))(i), "title": title})
            for i, t in enumerate(texts)]


def _graph(nodes):
    """entity key -> (type, set of chunk ids linked to it) from the extractor's output."""
    out: dict[str, tuple[str, set[str]]] = {}
    for node in nodes:
        for entity in node.metadata[KG_NODES_KEY]:
            out.setdefault(entity.name, (entity.properties["type"], set()))
        for rel in node.metadata[KG_RELATIONS_KEY]:
            if rel.label == "contains":
                out[rel.target_id][1].add(node.node_id)
    return out


def test_noun_phrases_keep_compounds_and_drop_determiners_and_verbs():
    nlp = load_pipeline()
    text = "Basal cell carcinoma is the most common type of skin cancer. Keep reading the guide."
    doc = nlp(text)
    phrases = {text[a:b] for a, b in noun_phrases(doc)}
    assert "Basal cell carcinoma" in phrases and "skin cancer" in phrases
    assert "type" in phrases  # "the most common" is not part of the term
    assert not any(p.lower().startswith(("the ", "keep")) for p in phrases)


def test_salient_terms_need_two_chunks_and_are_not_hubs():
    chunks = [["viral load", "cough"], ["viral load"], ["cough", "spike protein"], ["cough"]]
    assert salient_terms(chunks, 2, 2) == {"viral load"}  # cough is in 3 chunks: a hub at ceiling 2
    assert salient_terms(chunks, 2, 3) == {"viral load", "cough"}
    assert hub_ceiling(100) == 20 and hub_ceiling(10_000) == 500  # floor 20, else 5 % of the chunks
    assert word_ceiling(100) == 10 and word_ceiling(10_000) == 100  # one word: floor 10, else √chunks
    assert salient_terms([["cough", "viral load"]] * 3, 2, 3, 2) == {"viral load"}  # a word is held to less


def test_clinical_terms_become_entities_linked_wherever_written():
    nodes = NEREntityExtractor(term_hub_floor=3)(_nodes(CLINICAL))
    graph = _graph(nodes)
    # written in three chunks, found by the parse in some and by the case-insensitive matcher in all
    assert graph["basal cell carcinoma"] == (TERM_TYPE, {"c0", "c1", "c3"})
    assert graph["skin cancer"][1] == {"c0", "c2"}
    assert "chest" not in graph  # written once: it joins nothing
    # relations between terms of one sentence come from the parse like those between names
    rels = {(r.source_id, r.target_id) for n in nodes for r in n.metadata[KG_RELATIONS_KEY] if r.label != "contains"}
    assert any("basal cell carcinoma" in pair for pair in rels)


def test_common_words_are_not_names():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    texts = ["Blood\n\nThe blood count is low.", "Blood cells and blood plasma differ.", "Red blood cells carry oxygen.",
             "Mohs surgery was done by Dr Mohs."]
    mentions = [[EntityMention("blood", "Blood", "ORG", 0, 5)], [EntityMention("blood", "Blood", "ORG", 0, 5)], [],
                [EntityMention("mohs", "Mohs", "PERSON", 0, 4)]]
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    # "blood" is written in lower case 4 times against 2 capitalised: not a name; "Mohs" only capitalised: a name
    assert [[m.key for m in ms] for ms in kept] == [[], [], [], ["mohs"]]


def test_labels_followed_by_numbers_are_not_names():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    texts = ["Viral load peaked on day 5 (Fig. 2) and fell by day 9 (Fig 3).", "As Fig. 4 shows, Fig. 5 agrees.",
             "BRCA1 and BRCA2 carriers; BRCA testing (BRCA1) is advised.", "BRCA2 is rarer than BRCA1 in this cohort.",
             "Fig trees grow in Turkey; the Fig was sold in 1920."]
    fig = [EntityMention("fig", "Fig", "PERSON", 0, 3)]
    brca = [EntityMention("brca", "BRCA", "ORG", 0, 4)]
    mentions = [fig, fig, brca, brca, fig]
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    # "Fig" is followed by a number in 4 of its 6 writings: a figure label; BRCA1 is a code (no space): kept
    assert [[m.key for m in ms] for ms in kept] == [[], [], ["brca"], ["brca"], []]
    # a name that is followed by a number only now and then stays a name
    texts[1] = "As the figure shows, the results agree."
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    assert [m.key for m in kept[0]] == ["fig"]


def test_heads_of_fixed_phrases_are_not_names_but_names_that_open_a_phrase_are():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    texts = ["Biopsy 12 Key points Treatment planning starts with testing. Hodgkin lymphoma is rare.",
             "Imaging 14 Key points 15 Questions to ask. The key test is a biopsy. Hodgkin lymphoma responds well.",
             "Staging 8 Key points Lymph nodes are checked. Hodgkin lymphoma in adults; Hodgkin described it.",
             "Surgery 9 Key points Ask about side effects. Key points are listed at the end of each chapter."]
    key = [EntityMention("key", "Key", "ORG", 0, 3)]
    hodgkin = [EntityMention("hodgkin", "Hodgkin", "PERSON", 0, 7)]
    mentions = [key + hodgkin, key + hodgkin, key + hodgkin, key]
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    # "Key" is followed by "points" in 5 of its 5 writings and written "key" too: a heading's first word, not a
    # name; "Hodgkin" mostly opens "Hodgkin lymphoma" but is never written in lower case: a name
    assert [[m.key for m in ms] for ms in kept] == [["hodgkin"], ["hodgkin"], ["hodgkin"], []]


def test_title_heads_followed_by_of_are_not_names():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    # NER reads the title alone as a person ("Duke" PERSON linked 157 chunks of 2wiki, every duke of anything)
    texts = ["Henry was Duke of York.", "The Duke of Kent died in 1942.", "She married the Duke of Fife.",
             "Duke Ellington played jazz.", "MTCT of HIV fell; MTCT of HBV too. MTCT of syphilis was rare.",
             "Anna Duke wrote it."]
    duke = [EntityMention("duke", "Duke", "PERSON", 0, 4)]
    mtct = [EntityMention("mtct", "MTCT", "ORG", 0, 4)]
    mentions = [duke, duke, duke, duke, mtct, duke]
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    # "Duke" is followed by "of" in 3 of its 5 writings: a title; "MTCT" is all capitals (a code): kept
    assert [[m.key for m in ms] for ms in kept] == [[], [], [], [], ["mtct"], []]
    # a name followed by "of" in under half of its writings stays a name (3 of 7 here)
    texts += ["Duke Ellington toured.", "Duke Ellington recorded it."]
    mentions += [duke, duke]
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, mentions)
    assert [m.key for m in kept[0]] == ["duke"]


def test_title_heads_of_longer_names_are_not_names_but_places_and_given_names_are():
    from llama_index_graphrag_suite.extractors.name_words import words_that_are_not_names

    # "King" heads longer names ("King George", "King Xerxes", "King of Scotland") and is a common noun too ("the
    # king"): NER's lone "King" linked 155 2wiki chunks of different kings. "Ohio" heads longer names as often but
    # is never written in lower case (a place); "William" likewise (a given name); "Stephen King" writes the
    # surname after a name, which is not heading one.
    texts = ["King George ruled; the king was old.", "King Xerxes met King Darius.", "Robert I, King of Scotland.",
             "He served the King, as the king asked.", "Ohio State won; Ohio River floods.", "Ohio Valley is wide.",
             "Ohio is a state.", "William Henry met William Pitt.", "William Wallace fought.", "William came.",
             "Stephen King wrote it. King lives in Maine."]
    assert words_that_are_not_names(texts, {"King", "Ohio", "William"}) == {"King"}
    # a word that heads longer names in fewer than half of its writings stays a name
    texts += ["King lives in Maine.", "King writes daily.", "King was born in 1947.", "King spoke.", "King sang."]
    assert words_that_are_not_names(texts, {"King"}) == set()
    # codes in capitals are never judged; a name of two words is not a one-word name
    assert words_that_are_not_names(["CNS Lymphoma", "CNS Lymphoma", "CNS Lymphoma", "the cns"], {"CNS"}) == set()
    assert words_that_are_not_names(texts, {"King George"}) == set()


def test_long_document_title_is_not_a_hub_but_an_article_title_is():
    # chunks of a long document begin with its title line, as the index's chunker writes them
    texts = [f"Medical\n\nParagraph {i} of the guideline discusses follow-up visits after surgery." for i in range(10)]
    long_doc = _graph(NEREntityExtractor(terms=False, title_link_max_chunks=8)(
        _nodes(texts, doc_of=lambda i: "guide", title="Medical")))
    assert long_doc["medical"][1] == {"c0"}  # only the first chunk (the title is written nowhere else)
    article = _graph(NEREntityExtractor(terms=False)(
        _nodes(texts[:3], doc_of=lambda i: "article", title="Ada Lorne")))
    assert article["ada lorne"][1] == {"c0", "c1", "c2"}


def test_old_manifests_keep_extracting_as_they_were_built():
    old = IndexConfig.from_manifest({"entities": "ner"})
    assert (old.terms, old.lowercase_names) == (False, True) and old.title_link_max_chunks >= 10**6
    assert IndexConfig().terms == "auto" and IndexConfig.from_manifest(IndexConfig().model_dump()).terms == "auto"


ENCYCLOPAEDIC = [
    "Christopher Nolan directed Inception for Warner Bros. in London and Los Angeles.",
    "The film starred Leonardo DiCaprio, Elliot Page and Tom Hardy, with music by Hans Zimmer.",
]


def test_terms_are_added_where_a_corpus_is_not_written_in_names():
    assert terms_wanted(CLINICAL)[0] and not terms_wanted(ENCYCLOPAEDIC)[0]
    assert terms_wanted(ENCYCLOPAEDIC)[1] > 12 > terms_wanted(CLINICAL)[1]


def test_the_index_decides_terms_once_and_saves_the_decision(tmp_path, monkeypatch):
    from llama_index.core import Document

    from llama_index_graphrag_suite import GraphRAGIndex
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.extractors import terms as terms_module

    docs = [Document(text=t, doc_id=f"d{i}", metadata={"title": f"Note {i}"}) for i, t in enumerate(CLINICAL)]
    few_words = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=IndexConfig())
    # 60 words are too few to decide for good (TERMS_DECIDED_AFTER_WORDS), but this build extracts terms
    assert few_words.config.terms == "auto" and few_words.entities["basal cell carcinoma"].type == TERM_TYPE
    monkeypatch.setattr(terms_module, "TERMS_DECIDED_AFTER_WORDS", 20)
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=64), config=IndexConfig())
    assert index.config.terms is True and index.build_info["capitalised_per_100_words"] < 12
    assert index.entities["basal cell carcinoma"].type == TERM_TYPE
    index.persist(tmp_path / "idx")
    assert GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64)).config.terms is True
    names = [Document(text=t, doc_id=f"w{i}", metadata={"title": f"Film {i}"}) for i, t in enumerate(ENCYCLOPAEDIC)]
    wiki = GraphRAGIndex.from_documents(names, embed_model=HashEmbedding(dim=64), config=IndexConfig())
    assert wiki.config.terms is False and not any(e.type == TERM_TYPE for e in wiki.entities.values())


def test_a_term_new_to_the_index_is_linked_to_old_chunks_that_write_it():
    from llama_index.core import Document

    from llama_index_graphrag_suite import GraphRAGIndex
    from llama_index_graphrag_suite.embeddings import HashEmbedding

    old = [Document(text="Their viral load fell after a week of rest.", doc_id="old", metadata={"title": "Case one"}),
           Document(text="Masks cut the spread in clinics.", doc_id="other", metadata={"title": "Case two"})]
    index = GraphRAGIndex.from_documents(old, embed_model=HashEmbedding(dim=64), config=IndexConfig())
    assert "viral load" not in index.entities  # written once: not yet a term
    index.insert([Document(text="Fever came first. The viral load peaks early in the infection.", doc_id="n1",
                           metadata={"title": "A"}),
                  Document(text="Cough is common. A high viral load predicts a longer illness.", doc_id="n2",
                           metadata={"title": "B"})])
    entity = index.entities["viral load"]
    assert entity.type == TERM_TYPE
    assert {index.chunks[c].doc_id for c in entity.chunks} == {"old", "n1", "n2"}


def test_a_title_shared_by_many_documents_is_not_a_hub():
    texts = [f"Medical\n\nPassage {i} of the guideline is about aftercare." for i in range(12)]
    graph = _graph(NEREntityExtractor(terms=False)(_nodes(texts, doc_of=lambda i: f"passage-{i}", title="Medical")))
    assert graph["medical"][1] == {"c0"}


def test_an_article_alone_is_no_name():
    from llama_index_graphrag_suite.extractors.name_words import BARE_ARTICLES

    extractor = NEREntityExtractor(terms=False)
    doc = load_pipeline()('The "The" Band played at the Apollo Theater in New York.')
    assert all(m.key not in BARE_ARTICLES for m in extractor._ner_mentions(doc))


def test_a_bare_number_is_no_name():
    from spacy.tokens import Span

    doc = load_pipeline().make_doc("In 2010 the Apollo Theater hosted 500 shows.")
    # spaCy's small model types years as EVENT, PRODUCT or PERSON now and then (2wiki: `2010` EVENT, 144 chunks)
    doc.ents = [Span(doc, 1, 2, label="EVENT"), Span(doc, 3, 5, label="FAC"), Span(doc, 6, 7, label="PRODUCT")]
    keys = [m.key for m in NEREntityExtractor(terms=False)._ner_mentions(doc)]
    assert keys == ["apollo theater"]


def test_a_name_cut_off_before_its_head_is_no_name():
    from spacy.tokens import Span

    doc = load_pipeline().make_doc("Prince Henry, Duke of Gloucester, saw the Carry On films in the Tower of London.")
    # NER sometimes stops a title at its preposition and labels the rest apart
    doc.ents = [Span(doc, 0, 2, label="PERSON"), Span(doc, 3, 5, label="PERSON"), Span(doc, 5, 6, label="GPE"),
                Span(doc, 9, 11, label="WORK_OF_ART"), Span(doc, 14, 17, label="FAC")]
    keys = [m.key for m in NEREntityExtractor(terms=False)._ner_mentions(doc)]
    assert keys == ["prince henry", "gloucester", "carry on", "tower of london"]


def test_an_insert_judges_known_names_by_the_whole_corpus():
    # "King" was learned as a name from a first small build; the grown corpus shows it heads longer names and is
    # a common noun too, so an insert stops linking it. A place and a document's one-word title stay linked.
    indexed = ["King George ruled; the king was old.", "King Xerxes met King Darius.", "Robert I, King of Scotland.",
               "He served the King, as the king asked.", "Ohio State won; Ohio River floods.", "Ohio Valley is wide."]
    new = "King Darius and the Ohio Valley. Princess waved."
    extractor = NEREntityExtractor(terms=False)
    extractor.add_vocabulary({"king": ("King", "PERSON"), "ohio": ("Ohio", "GPE"), "princess": ("Princess", "PERSON")})
    assert {k for k, _, _ in extractor._matcher.find(new)} >= {"king", "ohio", "princess"}
    extractor._drop_words_that_are_not_names([new], [[]])  # a first build judges only what NER found in it
    assert extractor._not_names == set()
    extractor.add_corpus(indexed, titles=["Princess", "Ohio Valley"])
    extractor._drop_words_that_are_not_names([new], [[]])
    assert extractor._not_names == {"king"}  # "Princess" is a title, found where it stands alone ("Princess waved")
    assert {m.key for m in extractor._known_names(new, [], {})} == {"ohio", "princess"}


def test_an_insert_counts_terms_over_the_whole_corpus():
    indexed = [f"Patient {i} had a high viral load in the clinic." for i in range(4)] + \
              ["The spike protein binds the receptor."]
    new = ["A lower viral load and a mutated spike protein were seen."]
    nlp = load_pipeline()

    def terms_of(extractor):
        out = extractor._term_mentions([nlp(t) for t in new], new, [[]])
        return {m.key for m in out[0]}

    def seeded(**kw):
        extractor = NEREntityExtractor(term_hub_floor=3, **kw)
        extractor.add_vocabulary({"viral load": ("viral load", TERM_TYPE)})
        return extractor

    # counted over this insert alone (as before): the known term is linked though 5 chunks write it (ceiling 3),
    # and "spike protein", written once before and once now, is no term
    assert terms_of(seeded()) == {"viral load"}
    with_corpus = seeded()
    with_corpus.add_corpus(indexed)
    assert terms_of(with_corpus) == {"spike protein"}
    assert with_corpus.vocabulary["spike protein"][1] == TERM_TYPE



def test_one_word_behind_an_article_or_a_bullet_is_judged_as_one_word():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention
    from llama_index_graphrag_suite.extractors.name_words import the_word_it_names

    assert the_word_it_names("The King") == ("King", True)
    assert the_word_it_names('a" Star') == ("Star", True)
    assert the_word_it_names("• Flow") == ("Flow", False)
    assert the_word_it_names("Blood") == ("Blood", False)
    assert the_word_it_names("'How") == ("How", False)  # a novel's dialogue in single quotes
    assert the_word_it_names("Mass.") == ("", False)  # an abbreviation: Massachusetts, not the common noun "mass"
    assert the_word_it_names("'Yes.") == ("Yes", False)  # behind a quote, the dot ends a line of dialogue
    assert the_word_it_names("The Glass Lantern") == ("", False)
    # "King" heads longer names and is a common noun too, so the film "The King" (WORK_OF_ART, key "king") is judged
    # as "King": as a gazetteer name it linked 156 2wiki chunks of every "King George" and "King of France". "The
    # Times" is judged only as a head: "times" is a common word, yet "The Times" names a newspaper. "• Flow" (an ORG
    # NER read in a clinical list) is the common word "flow" behind a bullet.
    texts = ["King George ruled; the king was old.", "King Xerxes met King Darius.", "Robert I, King of Scotland.",
             "The King is a 2019 film. The Times praised it.", "Three times a day; times change.",
             "• Flow of urine is measured. The flow rate falls.", "Low flow means a blockage; flow improves."]
    king = EntityMention("king", "The King", "WORK_OF_ART", 0, 8)
    times = EntityMention("times", "The Times", "ORG", 0, 9)
    flow = EntityMention("flow", "• Flow", "ORG", 0, 6)
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, [[king, times], [flow]])
    assert [[m.key for m in ms] for ms in kept] == [["times"], []]


def test_a_word_behind_an_opening_quote_is_judged_as_the_word():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    # A novel printed with single quotes: NER labelled "'How" (WORK_OF_ART, 47 chunks of a Sherlock Holmes book) and
    # "'Miss" (PERSON, 56 chunks), each then found by the gazetteer in every chunk writing "How" or "Miss"; as
    # written, with the quote, the counts of the corpus never saw them. "'Holmes" is a name however it is quoted.
    texts = ["'How very odd,' said Miss Hunter. 'Miss Hunter, how do you do?'", "'Holmes!' cried Miss Stoner.",
             "I did not know how to answer Miss Turner. 'How is Holmes?' I asked Miss Morstan.",
             "'Do not miss the train,' said Holmes, and we did not miss it. I saw how wet it was and how long."]
    how = EntityMention("how", "'How", "WORK_OF_ART", 0, 4)
    miss = EntityMention("miss", "'Miss", "PERSON", 0, 5)
    holmes = EntityMention("holmes", "'Holmes", "PERSON", 0, 7)
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, [[how, miss], [holmes], [], []])
    # "how" is mostly written in lower case; "Miss" heads a name in 5 of its 6 writings and "miss" is a verb too
    assert [[m.key for m in ms] for ms in kept] == [[], ["holmes"], [], []]


def test_a_word_capitalised_only_where_a_line_or_a_quotation_opens_is_a_common_word():
    from llama_index_graphrag_suite.extractors.entity_resolution import EntityMention

    # A novel's dialogue opens many lines with "Well", "Yes" and "Pray", and NER labels them now and then (`'Well`
    # WORK_OF_ART, 92 chunks of a Sherlock Holmes book; `Pray` PERSON, 39). Counted over all writings they are
    # mostly capitalised; inside a sentence they are written in lower case. "Holmes", first in many sentences too,
    # is capitalised inside them as well, and never written in lower case.
    texts = ['"Well, Watson," said he. "Yes. Pray sit down." Holmes laughed.',
             '"Well?" "Yes," said Holmes, "I know it well, and you may well ask."',
             "Holmes nodded. 'Pray do not,' said I, and Holmes said yes. We pray for him; all is well.",
             "'Yes.' Well, well, said Mr. Holmes, as I had heard Holmes say. Oh yes, I pray you, yes, I pray."]
    well = EntityMention("well", "'Well", "WORK_OF_ART", 0, 5)
    yes = EntityMention("yes", "'Yes.", "WORK_OF_ART", 0, 5)  # a dot that ends a line of dialogue, no abbreviation
    pray = EntityMention("pray", "Pray", "PERSON", 0, 4)
    holmes = EntityMention("holmes", "Holmes", "PERSON", 0, 6)
    watson = EntityMention("watson", "Watson", "PERSON", 0, 6)
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts, [[well, watson], [yes], [pray],
                                                                                   [holmes]])
    assert [[m.key for m in ms] for ms in kept] == [["watson"], [], [], ["holmes"]]
    # written in lower case once or twice, a word capitalised first in its lines is not judged: too few writings
    kept = NEREntityExtractor(terms=False)._drop_words_that_are_not_names(texts[:3], [[pray]])
    assert [[m.key for m in ms] for ms in kept] == [["pray"]]


def test_an_honorific_alone_names_no_one_but_a_code_in_capitals_may():
    from llama_index_graphrag_suite.extractors.name_words import NameWordCounts

    # where a line break cut "Miss\nHunter", NER labelled "Miss" alone a PERSON; as a known name the gazetteer then
    # found it in every "Miss Stoner" and "Miss Turner" of the book. "DR" and "MR" in research articles are codes.
    surfaces = {"Miss", "'Miss", "Dr.", "Sir", "DR", "MR", "Miss Hunter", "Missy"}
    assert NameWordCounts(["Miss Hunter met Missy."]).surfaces_not_names(surfaces) == {"Miss", "'Miss", "Dr.", "Sir"}
