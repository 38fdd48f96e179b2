"""Lenient JSON and triple parsing of LLM answers."""

from llama_index_graphrag_suite.llm.json_repair import parse_json_lenient
from llama_index_graphrag_suite.llm.triples import parse_triples


def test_clean_json_is_unchanged():
    result = parse_json_lenient('{"triples": [["a", "b", "c"]], "n": 1.5, "ok": true, "x": null}')
    assert result.value == {"triples": [["a", "b", "c"]], "n": 1.5, "ok": True, "x": None}
    assert result.dropped == [] and result.repaired == []


def test_code_fence_and_surrounding_prose():
    text = 'Sure! Here are the relations:\n```json\n{"triples": [["Alice", "knows", "Bob"]]}\n```\nAnything else?'
    result = parse_json_lenient(text)
    assert result.value == {"triples": [["Alice", "knows", "Bob"]]}
    assert "removed code fence" in result.repaired
    assert result.dropped == []


def test_prose_without_fence_and_stray_brackets_before_the_answer():
    text = 'As noted in [1], the answer is {"triples": [["x", "y", "z"]]} -- hope this helps.'
    result = parse_json_lenient(text)
    assert result.value == {"triples": [["x", "y", "z"]]}
    assert {"skipped leading text", "ignored trailing text"} <= set(result.repaired)


def test_single_quotes_python_literals_and_apostrophes():
    result = parse_json_lenient("{'name': 'Alice's cat', 'alive': True, 'owner': None, 'dead': False}")
    assert result.value == {"name": "Alice's cat", "alive": True, "owner": None, "dead": False}
    assert "single-quoted strings" in result.repaired
    assert "Python literals True/False/None" in result.repaired


def test_trailing_commas_missing_commas_and_unquoted_keys():
    result = parse_json_lenient('{triples: [["a", "b", "c"],\n ["d", "e", "f"]\n ["g", "h", "i"],],}')
    assert result.value == {"triples": [["a", "b", "c"], ["d", "e", "f"], ["g", "h", "i"]]}
    assert {"trailing commas", "missing commas", "unquoted keys"} <= set(result.repaired)


def test_escapes_and_unicode():
    result = parse_json_lenient(r'["line\nbreak", "quote \" inside", "\u00e9t\u00e9", "\ud83d\ude00"]')
    assert result.value == ["line\nbreak", 'quote " inside', "été", "\U0001f600"]


def test_truncated_list_keeps_complete_items_and_reports_partial_one():
    text = '{"triples": [["Alice", "knows", "Bob"], ["Bob", "works at", "Acme"], ["Carol", "lives'
    result = parse_json_lenient(text)
    assert result.value == {"triples": [["Alice", "knows", "Bob"], ["Bob", "works at", "Acme"]]}
    assert len(result.dropped) == 1
    assert result.dropped[0].startswith("truncated item") and '["Carol", "lives' in result.dropped[0]
    assert "closed truncated output" in result.repaired


def test_truncated_scalars():
    assert parse_json_lenient("[1, 2, 3").value == [1, 2]  # the 3 may have been 30
    obj = parse_json_lenient('{"a": 1, "b": "unfinish')
    assert obj.value == {"a": 1} and obj.dropped[0].startswith("truncated member")
    items = parse_json_lenient('[{"subject": "x", "predicate": "y", "obj')
    assert items.value == [] and len(items.dropped) == 1


def test_bad_item_in_the_middle_is_dropped_and_parsing_resumes():
    result = parse_json_lenient('[["a", "b", "c"], oops, ["d", "e", "f"]]')
    assert result.value == [["a", "b", "c"], ["d", "e", "f"]]
    assert len(result.dropped) == 1 and "oops" in result.dropped[0]


def test_garbage_gives_none_with_a_note():
    for text in ["I could not find any relations in this passage.", "", "   "]:
        result = parse_json_lenient(text)
        assert result.value is None
        assert len(result.dropped) == 1


def test_triples_accepted_shapes():
    expected = [("Alice", "knows", "Bob"), ("Bob", "works at", "Acme")]
    shapes = [
        '{"triples": [["Alice", "knows", "Bob"], ["Bob", "works at", "Acme"]]}',
        '[["Alice", "knows", "Bob"], ["Bob", "works at", "Acme"]]',
        '[{"subject": "Alice", "predicate": "knows", "object": "Bob"},'
        ' {"head": "Bob", "relation": "works at", "tail": "Acme"}]',
        "(Alice, knows, Bob)\n(Bob, works at, Acme)",
        "Here you go:\n- Alice | knows | Bob\n- Bob | works at | Acme",
        "| subject | predicate | object |\n|---|---|---|\n| Alice | knows | Bob |\n| Bob | works at | Acme |",
    ]
    for text in shapes:
        parsed = parse_triples(text)
        assert parsed.triples == expected, text
        assert parsed.dropped == [], text


def test_triples_custom_key_and_single_triple():
    assert parse_triples('{"relations": [["a", "b", "c"]]}', key="relations").triples == [("a", "b", "c")]
    assert parse_triples('["a", "b", "c"]').triples == [("a", "b", "c")]


def test_triples_bad_items_are_reported_with_reasons():
    text = (
        '{"triples": [["Alice", "knows", "Bob"], ["Alice", "knows"], ["", "is", "x"],'
        ' ["Apollo 11", "launched in", 1969], ["a", ["nested"], "c"], {"foo": "bar"}]}'
    )
    parsed = parse_triples(text)
    assert parsed.triples == [("Alice", "knows", "Bob"), ("Apollo 11", "launched in", "1969")]
    reasons = parsed.dropped
    assert len(reasons) == 4
    assert "expected 3 parts, got 2" in reasons[0]
    assert "empty part" in reasons[1]
    assert "non-text part" in reasons[2]
    assert "subject/predicate/object" in reasons[3]


def test_triples_lines_with_wrong_arity():
    parsed = parse_triples("(Alice, knows, Bob)\n(Acme, based in, Paris, France)\nsome prose")
    assert parsed.triples == [("Alice", "knows", "Bob")]
    assert len(parsed.dropped) == 1 and "got 4" in parsed.dropped[0]


def test_triples_truncated_and_empty_answers():
    parsed = parse_triples('{"triples": [["a", "b", "c"], ["d", "e')
    assert parsed.triples == [("a", "b", "c")] and len(parsed.dropped) == 1
    assert parse_triples('{"triples": []}').triples == []
    assert parse_triples('{"triples": []}').dropped == []
    nothing = parse_triples("No relations found.")
    assert nothing.triples == [] and len(nothing.dropped) == 1
