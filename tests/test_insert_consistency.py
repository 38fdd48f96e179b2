"""An insert builds the graph a build of the whole corpus would: the NER graph's corpus-wide rules count the chunks
indexed before, and a name new to the index is linked to older chunks only where no longer name they link covers it."""

from __future__ import annotations

from llama_index.core import Document

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.terms import TERM_TYPE, hub_ceiling
from llama_index_graphrag_suite.index import build


def test_inserting_documents_one_by_one_keeps_term_hubs_out_like_a_build():
    topics = ["basal cell carcinoma", "viral load", "spike protein", "lymph nodes", "bone marrow"]
    docs = [Document(text=f"The treatment plan covers {topics[i % 5]} and {topics[(i + 2) % 5]} in visit {i}.",
                     doc_id=f"d{i}", metadata={"title": f"Note {i}"}) for i in range(30)]
    whole = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=32), config=IndexConfig(terms=True))
    assert "treatment plan" not in whole.entities  # in all 30 chunks: a hub (ceiling 20)
    one_by_one = GraphRAGIndex.from_documents(docs[:2], embed_model=HashEmbedding(dim=32),
                                              config=IndexConfig(terms=True))
    for doc in docs[2:]:
        one_by_one.insert([doc])
    ceiling = hub_ceiling(30)
    terms = {k: len(e.chunks) for k, e in one_by_one.entities.items() if e.type == TERM_TYPE}
    assert max(terms.values()) <= ceiling  # "treatment plan" stops being linked once the corpus writes it too often
    assert {t for t in topics if t in whole.entities} <= set(terms)
    for t in topics:  # a topic term is linked to every chunk that writes it, as in the build
        if t in whole.entities:
            assert one_by_one.entities[t].chunks == whole.entities[t].chunks


def test_a_new_name_is_not_linked_inside_a_longer_name_an_older_chunk_links():
    old = [Document(text="Terry Sanford was a United States politician from North Carolina.", doc_id="a",
                    metadata={"title": "Terry Sanford"}),
           Document(text="The airport lies in Jefferson County, New York, United States.", doc_id="b",
                    metadata={"title": "Watertown Airport"})]
    index = GraphRAGIndex.from_documents(old, embed_model=HashEmbedding(dim=32), config=IndexConfig())
    assert "united states" in index.entities
    index.insert([Document(text="United is the second album by Marian Gold.", doc_id="album",
                           metadata={"title": "United"})])
    whole = GraphRAGIndex.from_documents(old + [Document(text="United is the second album by Marian Gold.",
                                                         doc_id="album", metadata={"title": "United"})],
                                         embed_model=HashEmbedding(dim=32), config=IndexConfig())
    linked = {index.chunks[c].doc_id for c in index.entities["united"].chunks}
    assert linked == {whole.chunks[c].doc_id for c in whole.entities["united"].chunks} == {"album"}


def test_terms_are_decided_from_the_corpus_so_far_until_it_holds_enough_words(monkeypatch):
    from llama_index_graphrag_suite.extractors import terms as terms_module

    monkeypatch.setattr(terms_module, "TERMS_DECIDED_AFTER_WORDS", 120)
    # one document written in names first: alone it says "no terms", but it is too short to decide for good
    names = Document(text="Christopher Nolan directed Inception for Warner Bros. in London and Los Angeles.",
                     doc_id="film", metadata={"title": "Inception"})
    clinical = [Document(text=f"The viral load of patient {i} fell after rest, and the skin rash faded with the "
                              f"fever in the second week of care at home.", doc_id=f"p{i}",
                         metadata={"title": f"case {i}"}) for i in range(8)]
    index = GraphRAGIndex.from_documents([names], embed_model=HashEmbedding(dim=32), config=IndexConfig())
    assert index.config.terms == "auto" and index.build_info["capitalised_per_100_words"] > 12
    index.insert(clinical[:4])  # the corpus now reads as common nouns: this insert extracts terms
    assert index.config.terms == "auto" and index.build_info["capitalised_per_100_words"] < 12
    assert index.entities["viral load"].type == TERM_TYPE
    index.insert(clinical[4:])  # past the (patched) word count: the decision is final and saved with the config
    assert index.config.terms is True
    before = dict(index.build_info)
    index.delete("p7")  # a delete takes its words back out of the running count
    assert index.build_info["capitalised_words"][1] < before["capitalised_words"][1]
    index.insert(clinical[7:])
    assert index.build_info["capitalised_words"] == before["capitalised_words"]


def test_a_title_many_inserted_passages_share_is_not_a_hub():
    # a guideline split into passages, each a document titled "Medical", inserted one at a time: the passages
    # indexed before count, so from the ninth on the title line no longer links the title (title_link_max_chunks 8)
    docs = [Document(text=f"Passage {i} of the guideline is about aftercare.", doc_id=f"passage-{i}",
                     metadata={"title": "Medical"}) for i in range(12)]
    whole = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=32), config=IndexConfig(terms=False))
    assert len(whole.entities["medical"].chunks) == 1
    one_by_one = GraphRAGIndex.from_documents(docs[:1], embed_model=HashEmbedding(dim=32),
                                              config=IndexConfig(terms=False))
    for doc in docs[1:]:
        one_by_one.insert([doc])
    assert {one_by_one.chunks[c].doc_id for c in one_by_one.entities["medical"].chunks} == \
        {f"passage-{i}" for i in range(8)}  # before the ninth, a title heading 8 chunks is an article's


def test_an_extractor_kept_across_calls_counts_the_chunks_of_earlier_calls():
    # PropertyGraphIndex(kg_extractors=[NEREntityExtractor()]).insert(...) calls the same extractor again
    from llama_index.core.graph_stores.types import KG_NODES_KEY
    from llama_index.core.schema import TextNode

    from llama_index_graphrag_suite.extractors.ner import NEREntityExtractor

    def nodes(texts, first):
        return [TextNode(id_=f"c{first + i}", text=t, metadata={"doc_id": f"d{first + i}", "title": "Case"})
                for i, t in enumerate(texts)]

    def term_keys(batch):
        return {n.name for node in batch for n in node.metadata[KG_NODES_KEY] if n.properties.get("type") == TERM_TYPE}

    extractor = NEREntityExtractor(terms=True)
    first = extractor(nodes(["The spike protein binds the receptor.", "Masks cut the spread in clinics."], 0))
    assert "spike protein" not in term_keys(first)  # written in one chunk so far
    second = extractor(nodes(["A mutated spike protein was seen in the sample."], 2))
    assert "spike protein" in term_keys(second)  # written once before and once now
    assert extractor._title_keys["case"] == 3


def test_the_word_counts_follow_inserts_deletes_and_a_failed_insert(monkeypatch):
    from llama_index_graphrag_suite.extractors.name_words import NameWordCounts

    docs = [Document(text=f"King Harald {i} met the king of Norway in Oslo.", doc_id=f"k{i}", metadata={"title": f"K{i}"})
            for i in range(4)]
    index = GraphRAGIndex.from_documents(docs[:2], embed_model=HashEmbedding(dim=32), config=IndexConfig())

    def same_as_counted_afresh():
        fresh, kept = NameWordCounts(c.text for c in index.chunks.values()), index.state.name_words
        return (kept.writings, kept.forced, kept.labelled, kept.heading) == \
            (fresh.writings, fresh.forced, fresh.labelled, fresh.heading)

    index.insert(docs[2:3])
    assert same_as_counted_afresh()
    index.delete("k0")
    assert same_as_counted_afresh()

    def fail(*args, **kwargs):
        raise RuntimeError("embedding server down")

    monkeypatch.setattr(build, "embed_new", fail)
    try:
        index.insert(docs[3:])
    except RuntimeError:
        pass
    assert "k3" not in {c.doc_id for c in index.chunks.values()} and same_as_counted_afresh()


def test_an_extractor_kept_across_calls_decides_terms_on_every_chunk_it_has_read():
    from llama_index.core.graph_stores.types import KG_NODES_KEY
    from llama_index.core.schema import TextNode

    from llama_index_graphrag_suite.extractors.ner import NEREntityExtractor
    from llama_index_graphrag_suite.extractors.terms import terms_wanted

    extractor = NEREntityExtractor()  # terms="auto"
    extractor([TextNode(id_=f"c{i}", text=f"The viral load of patient {i} fell after rest, and the skin rash faded "
                        "with the fever in the second week of care.", metadata={"doc_id": f"d{i}", "title": "case"})
               for i in range(3)])
    names = [TextNode(id_="c9", text="Anna Berg of Oslo General Hospital in Norway measured the viral load.",
                      metadata={"doc_id": "d9", "title": "Berg"})]
    assert not terms_wanted([names[0].text])[0]  # alone, this chunk reads as names
    extractor(names)  # but the corpus so far is written in common nouns: terms, and this chunk writes one
    types = {n.name: n.properties.get("type") for n in names[0].metadata[KG_NODES_KEY]}
    assert types.get("viral load") == TERM_TYPE


def test_a_term_an_earlier_insert_left_unlinked_is_linked_once_the_corpus_accepts_it():
    # hub ceiling max(20, half the chunks): 25 chunks writing "viral load" are too many for a corpus of 25 chunks
    # and fine for one of 55. The insert that made it 25 of 25 did not link it; the one that makes the corpus 55
    # links those chunks too, as a build of all 55 does.
    def doc(i, text):
        return Document(text=text, doc_id=f"d{i}", metadata={"title": f"case {i}"})

    term = [doc(i, f"The viral load of patient {i} fell after a week of rest at home.") for i in range(25)]
    filler = [doc(100 + i, f"Visit {i} covered the diet plan and the walking routine of the week.") for i in range(30)]
    config = IndexConfig(terms=True, term_hub_share=0.5)
    whole = GraphRAGIndex.from_documents(term + filler, embed_model=HashEmbedding(dim=32), config=config)
    assert len(whole.entities["viral load"].chunks) == 25
    index = GraphRAGIndex.from_documents(term[:10], embed_model=HashEmbedding(dim=32), config=config)
    index.insert(term[10:])
    assert len(index.entities["viral load"].chunks) == 10  # 25 of 25 chunks: a hub for now
    index.insert(filler)
    assert len(index.entities["viral load"].chunks) == 25


def _relinking_corpus():
    """25 chunks writing "viral load" (hub ceiling max(20, half the chunks)) indexed as 10 then 15, so the term is a
    hub of the 25 and linked to the first 10 only; and 30 chunks that do not write it, whose insert relinks it."""
    term = [Document(text=f"The viral load of patient {i} fell after a week of rest at home.", doc_id=f"d{i}",
                     metadata={"title": f"case {i}"}) for i in range(25)]
    filler = [Document(text=f"Visit {i} covered the diet plan and the walking routine of the week.", doc_id=f"f{i}",
                       metadata={"title": f"visit {i}"}) for i in range(30)]
    index = GraphRAGIndex.from_documents(term[:10], embed_model=HashEmbedding(dim=32),
                                         config=IndexConfig(terms=True, term_hub_share=0.5))
    index.insert(term[10:])
    return index, filler


def _tables(index, folder):
    """The index's chunk, entity and fact rows as saved (sorted), to compare two states of it."""
    import json

    from llama_index_graphrag_suite.index.audit import version_rows

    rows = version_rows(index.persist(folder))
    return {t: sorted(json.dumps(r, sort_keys=True) for r in rows[t]) for t in ("chunks", "entities", "facts")}


def test_deleting_the_insert_that_linked_a_term_takes_those_links_back(tmp_path):
    import json

    index, filler = _relinking_corpus()

    def tables(name):
        store = json.loads(index.property_graph_store.graph.model_dump_json())  # the store mirror, filled here
        return _tables(index, tmp_path / name), sorted(map(tuple, store["triplets"]))

    before = tables("before")
    index.insert(filler)
    assert len(index.entities["viral load"].chunks) == 25 and index.state.provenance[-1]["relinked"] == ["viral load"]
    for doc in filler:
        index.delete(doc.id_)
    assert len(index.entities["viral load"].chunks) == 10
    assert tables("after") == before


def test_a_term_is_not_linked_to_an_older_chunk_where_a_name_it_links_is_written():
    from llama_index_graphrag_suite.extractors.entity_stats import EntityStatistics
    from llama_index_graphrag_suite.index.extraction import extraction_for

    vocabulary = {"ct": ("CT", "ORG"), "ct scan": ("CT scan", TERM_TYPE), "chest pain": ("chest pain", TERM_TYPE)}
    extraction = extraction_for(IndexConfig(terms=True), EntityStatistics(3), vocabulary, False)
    text = "A CT scan was done for the chest pain."
    # "CT" is a name of this chunk (NER read it so): the build kept "CT scan" out there, and so does the link step
    find = extraction.known_finder(frozenset({"ct scan", "chest pain"}))
    assert find(text, ["ct"]) == {"chest pain"}
    assert find(text, []) == {"ct scan", "chest pain"}


def test_deleting_the_insert_that_relinked_a_term_takes_back_the_relations_the_relinking_added(tmp_path, monkeypatch):
    # With a co-occurrence extractor (entities="statistical"|"both") the link step recomputes an older chunk's
    # relations when it gains an entity, so a relinked term can bring a relation to that chunk. The relation is
    # added here by the index's own support_fact after the real link step, as the co-occurrence extractor does.
    from llama_index.core.graph_stores.types import Relation

    from llama_index_graphrag_suite.index import rows

    real_link = rows.link_new_entities_to_old_chunks

    def link_with_relations(state, new_entities, new_chunks, extraction, new_facts):
        touched = real_link(state, new_entities, new_chunks, extraction, new_facts)
        for cid in touched:
            other = [k for k in state.chunks[cid].entities if k != "viral load"]
            if "viral load" in state.chunks[cid].entities and other:
                rows.support_fact(state, Relation(label="seen in", source_id="viral load", target_id=other[0],
                                                  properties={"text": "viral load seen in a case", "kind": "cooccurrence"}),
                                  cid, new_facts)
        return touched

    monkeypatch.setattr(rows, "link_new_entities_to_old_chunks", link_with_relations)
    index, filler = _relinking_corpus()
    before = _tables(index, tmp_path / "before")
    index.insert(filler)
    assert index.state.provenance[-1]["relinked"] == ["viral load"]
    assert sum(f.predicate == "seen in" for f in index.facts.values()) == 15  # one per relinked older chunk
    for doc in filler:
        index.delete(doc.id_)
    assert not any(f.predicate == "seen in" for f in index.facts.values())
    assert _tables(index, tmp_path / "after") == before
