"""``IndexConfig.ner_relations="cooccurrence"``: the NER extractor without the dependency parser.

Only ``ner`` (and what it listens to) and a sentence splitter run; entities are the parse mode's; relations are
the parse mode's co-occurrence fallback for every name; the setting is saved in the manifest and wired to the CLI.
"""

from __future__ import annotations

import json

import pytest
from llama_index.core import Document

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.dependency_relations import CO_OCCURS, cooccurrence_relations
from llama_index_graphrag_suite.extractors.entity_resolution import mention_from
from llama_index_graphrag_suite.extractors.spacy_pipeline import _listened_to, load_pipeline, parse

DOCS = [
    ("lester", "Lester Smith", "Lester Smith, a painter from Paris, directed The Glass Lantern. "
                               "Smith was born in Lyon. He married Anna Berg in Vienna."),
    ("lantern", "The Glass Lantern (film)", "The Glass Lantern is a silent film starring Anna Berg. It was shot "
                                            "in Berlin by Universum Film and shown in London in 1931."),
    ("berg", "Anna Berg", "Anna Berg was an Austrian actress. She was born in Vienna and worked for Max Reinhardt "
                          "at the Deutsches Theater in Berlin."),
    ("notes", "", "# Grey Harbour\n\nGrey Harbour is a port in Norway. Lester Smith painted it for the "
                  "National Gallery."),
]


def documents():
    return [Document(text=text, id_=doc_id, metadata={"title": title} if title else {}) for doc_id, title, text in DOCS]


def build(mode: str) -> GraphRAGIndex:
    return GraphRAGIndex.from_documents(documents(), embed_model=HashEmbedding(dim=64),
                                        config=IndexConfig(ner_relations=mode))


@pytest.fixture(scope="module")
def parsed():
    return build("parse")


@pytest.fixture(scope="module")
def cooc():
    return build("cooccurrence")


def test_cooccurrence_mode_runs_neither_parser_nor_shared_tok2vec():
    names = load_pipeline("auto", "cooccurrence").pipe_names
    assert "ner" in names and "parser" not in names
    assert not {"tagger", "attribute_ruler", "lemmatizer"} & set(names)
    assert "tok2vec" not in names  # en_core_web_sm's ner embeds the words itself (no Tok2VecListener)
    assert {"senter", "graphrag_sentencizer"} & set(names)  # sentences for co-occurrence
    assert names.index("ner") > max(names.index(p) for p in names if p in ("senter", "graphrag_sentencizer"))


def test_parse_mode_pipeline_is_unchanged():
    assert [p for p in load_pipeline("auto", "parse").pipe_names] == ["tok2vec", "parser", "ner", "graphrag_drop_tensor"]
    assert load_pipeline("auto") is load_pipeline("auto", "parse")  # one cached pipeline per mode


def test_a_ner_that_listens_to_a_shared_tok2vec_keeps_it():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("tok2vec")
    nlp.add_pipe("ner", config={"model": {
        "@architectures": "spacy.TransitionBasedParser.v2", "state_type": "ner", "extra_state_tokens": False,
        "hidden_width": 64, "maxout_pieces": 2, "use_upper": True, "nO": None,
        "tok2vec": {"@architectures": "spacy.Tok2VecListener.v1", "width": 96, "upstream": "*"}}})
    assert _listened_to(nlp, "ner") == {"tok2vec"}
    assert _listened_to(load_pipeline("auto", "parse"), "ner") == set()
    assert _listened_to(load_pipeline("auto", "parse"), "parser") == {"tok2vec"}


def test_cooccurrence_relations_pair_each_name_with_its_nearest_in_the_sentence():
    nlp = load_pipeline("auto", "cooccurrence")
    doc = nlp("Anna Berg met Max Reinhardt in Berlin. Vienna is far away from London.")
    mentions = [m for m in (mention_from(e.text, e.label_, e.start_char, e.end_char) for e in doc.ents) if m]
    got = {(r.source, r.predicate, r.target, r.pattern) for r in cooccurrence_relations(doc, mentions)}
    assert got == {("anna berg", CO_OCCURS, "max reinhardt", "cooccurrence"),
                   ("max reinhardt", CO_OCCURS, "berlin", "cooccurrence"),
                   ("vienna", CO_OCCURS, "london", "cooccurrence")}  # never across the sentence boundary


def test_entities_are_the_parse_modes_and_relations_are_cooccurrence(parsed, cooc):
    def table(index):
        return {k: (e.surface, e.type, sorted(e.chunks)) for k, e in index.entities.items()}

    assert table(cooc) == table(parsed)
    assert {c: x.entities for c, x in cooc.chunks.items()} == {c: x.entities for c, x in parsed.chunks.items()}
    assert cooc.facts and {f.kind for f in cooc.facts.values()} == {"cooccurrence"}
    assert {f.predicate for f in cooc.facts.values()} == {CO_OCCURS}
    assert "dependency" in {f.kind for f in parsed.facts.values()}
    assert "relations_dependency" not in cooc.stats() and cooc.stats()["relations_cooccurrence"] > 0


def test_setting_is_saved_in_the_manifest_and_reloaded(cooc, tmp_path):
    saved = cooc.persist(tmp_path / "idx")
    assert json.loads((saved / "manifest.json").read_text())["config"]["ner_relations"] == "cooccurrence"
    loaded = GraphRAGIndex.load(tmp_path / "idx")
    assert loaded.config.ner_relations == "cooccurrence"
    loaded.insert([Document(text="Anna Berg sang in Salzburg with Max Reinhardt.", id_="salzburg")])
    assert {f.kind for f in loaded.facts.values()} == {"cooccurrence"}  # an insert keeps the index's mode
    assert IndexConfig.from_manifest({"entities": "ner"}).ner_relations == "parse"  # older manifests


def test_cli_flag_sets_the_config(tmp_path, capsys):
    from llama_index_graphrag_suite.cli import _index_config, build_parser, main

    args = build_parser().parse_args(["index", "src", "--out", "o", "--ner-relations", "cooccurrence"])
    assert _index_config(args).ner_relations == "cooccurrence"
    assert _index_config(build_parser().parse_args(["index", "src", "--out", "o"])).ner_relations == "parse"
    src = tmp_path / "corpus"
    src.mkdir()
    for doc_id, title, text in DOCS[:3]:
        (src / f"{doc_id}.txt").write_text(f"{title}\n\n{text}", encoding="utf-8")
    assert main(["index", str(src), "--out", str(tmp_path / "idx"), "--embed", "hash", "--quiet",
                 "--ner-relations", "cooccurrence"]) == 0
    manifest = json.loads(next((tmp_path / "idx").rglob("manifest.json")).read_text())
    assert manifest["config"]["ner_relations"] == "cooccurrence"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["index", "src", "--out", "o", "--ner-relations", "fast"])


def test_ray_parse_shards_run_the_same_pipeline():
    """On Ray the parse runs in the workers (``_parse_shard``): the cooccurrence mode skips the parser there too."""
    from spacy.tokens import DocBin

    from llama_index_graphrag_suite.extractors.spacy_pipeline import resolve_model_name
    from llama_index_graphrag_suite.index.distributed import _parse_shard

    nlp = load_pipeline("auto", "cooccurrence")
    texts = ["Anna Berg met Max Reinhardt in Berlin. Vienna is far away."]
    blob = _parse_shard(texts, resolve_model_name("auto"), 8, "cooccurrence")
    (doc,) = DocBin().from_bytes(blob).get_docs(nlp.vocab)
    assert not doc.has_annotation("DEP") and doc.has_annotation("SENT_START") and doc.ents
    (parsed,) = DocBin().from_bytes(_parse_shard(texts, resolve_model_name("auto"), 8)).get_docs(nlp.vocab)
    assert parsed.has_annotation("DEP")
    # hard-wrapped lines are joined there as in spacy_pipeline.parse: a Ray build reads the same text
    wrapped = ["Anna Berg wrote to the board of the company in the autumn and asked\nfor Max Reinhardt, who lived "
               "in Berlin with his sister and her\nchildren, to come and see the new theatre that the town had\n"
               "built on the river bank below the old castle walls last year,\nand to bring the plans.\n"]
    (joined,) = DocBin().from_bytes(_parse_shard(wrapped, resolve_model_name("auto"), 8)).get_docs(nlp.vocab)
    (local,) = parse(load_pipeline("auto"), wrapped)
    assert "\n" not in joined.text.rstrip() and joined.text == local.text
    assert [e.text for e in joined.ents] == [e.text for e in local.ents]


def test_a_big_input_is_announced_with_its_cost_before_the_parse(caplog, monkeypatch):
    import logging

    from llama_index_graphrag_suite.extractors import spacy_pipeline

    with caplog.at_level(logging.INFO, logger=spacy_pipeline.__name__):
        build("parse")
    assert "MB of text" not in caplog.text  # a few hundred bytes: nothing to announce
    monkeypatch.setattr(spacy_pipeline, "BIG_INPUT_MB", 0.0001)
    for mode, per_mb in (("parse", 30.0), ("cooccurrence", 18.0)):
        caplog.clear()
        with caplog.at_level(logging.INFO, logger=spacy_pipeline.__name__):
            build(mode)
        line = next(r.getMessage() for r in caplog.records if "MB of text" in r.getMessage())
        megabytes = sum(len(text) for _, _, text in DOCS) / 1e6
        assert f"about {megabytes * per_mb:.0f} CPU s" in line and "--entities statistical" in line
