"""Our lenient parser on the malformed-LLM-output fixture (see studies/perf/json_repair_compare.py)."""

import json
from pathlib import Path

from llama_index_graphrag_suite.llm.json_repair import parse_json_lenient, parse_tuple_records

FIXTURE = Path(__file__).parent / "fixtures" / "malformed_llm_outputs.jsonl"
MEASURED = 55  # `python studies/perf/json_repair_compare.py`: 55/55 (json_repair.loads: 40/55)


def test_fixture_accuracy_does_not_drop():
    cases = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(cases) >= 50 and len({c["category"] for c in cases}) >= 8
    missed = [c["id"] for c in cases if parse_json_lenient(c["raw"]).value != c["expected"]]
    assert len(cases) - len(missed) >= MEASURED, missed


def test_comments_are_skipped_and_reported():
    result = parse_json_lenient('{\n "a": 1, // one\n /* two */ "b": [2 # two\n ]}')
    assert result.value == {"a": 1, "b": [2]} and "removed comments" in result.repaired
    assert parse_json_lenient('{"url": "http://x.org/a#b"}').value == {"url": "http://x.org/a#b"}


def test_tuple_records_keep_finished_records_and_report_the_cut_one():
    text = '("entity"<|>"A (B)"<|>person<|>x)##\n("relationship"<|>"A"<|>"C"<|>d<|>k<|>0.5)##\n("entity"<|>"D'
    result = parse_tuple_records(text)
    assert result.value == [["entity", "A (B)", "person", "x"], ["relationship", "A", "C", "d", "k", 0.5]]
    assert len(result.dropped) == 1 and "unfinished record" in result.dropped[0]
    assert parse_json_lenient(text).value == result.value


def test_invalid_escape_keeps_the_backslash():
    assert parse_json_lenient(r'{"p": "C:\data"}').value == {"p": "C:\\data"}
