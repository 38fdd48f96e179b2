from llama_index_graphrag_suite.text import ngram_candidates, normalize_entity, split_sentences


def test_normalize_entity_merges_surface_forms():
    assert normalize_entity("Lester Smith's") == "lester smith"
    assert normalize_entity("  LESTER   smith ") == "lester smith"
    assert normalize_entity("Lester-Smith") == "lester smith"
    assert normalize_entity("U.S.") == "us"


def test_sentences_and_ngrams_respect_boundaries():
    text = "Ada Lorne, a painter, lived in Marlow. She painted The Grey Harbour!"
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == ["Ada Lorne, a painter, lived in Marlow.", "She painted The Grey Harbour!"]
    keys = {k for k, _ in ngram_candidates(text, 3)}
    assert {"ada lorne", "painter", "marlow", "grey harbour"} <= keys
    assert "lorne painter" not in keys  # never across a comma
    assert "marlow painted" not in keys  # never across a sentence end
    assert not any(k.startswith("the ") or k.endswith(" the") for k in keys)  # no stop word at an edge


def test_a_capital_is_forced_first_in_a_line_a_sentence_or_a_quotation_only():
    from llama_index_graphrag_suite.text import capital_is_forced, word_spans

    text = ('"Yes," Holmes said. "Well, Mr. Holmes, J. Watson of the U.S. Army is here." (See Table 1)\n'
            "Note: Blood tests. • Flow rates; 'Pray sit,' said he, and Lestrade came.")
    forced = {text[a:b] for a, b in word_spans(text) if text[a].isupper() and capital_is_forced(text, a)}
    assert forced == {"Yes", "Well", "See", "Note", "Blood", "Flow", "Pray"}
