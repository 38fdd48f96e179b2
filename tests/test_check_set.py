"""The check sets in benchmarks/datasets (never used for tuning) load as bench datasets, and their gold is what their
evidence says: every evidence string is written in a gold passage, and every gold passage holds one."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from llama_index_graphrag_suite.eval.datasets import load_dataset

SETS = Path(__file__).resolve().parents[1] / "benchmarks" / "datasets"
# set -> (passages per book, questions per type)
EXPECTED = {
    "sherlock_holmes_check": ({"Novel-1661": 558}, {"Fact Retrieval": 36, "Complex Reasoning": 24}),
    "four_books_check": ({"Novel-1661": 558, "Novel-1342": 688, "Novel-84": 359, "Novel-Poirot": 289},
                         {"Fact Retrieval": 108, "Complex Reasoning": 72}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_check_set_loads_with_its_gold(name):
    dataset = load_dataset(SETS / name)
    books, kinds = EXPECTED[name]
    assert dataset.without_gold == 0
    assert Counter(d.metadata.get("title") for d in dataset.documents) == books
    assert Counter(q.type for q in dataset.questions) == kinds


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_gold_passage_holds_an_evidence_string_of_its_question(name):
    text = {row["id"]: row["text"] for row in map(json.loads, (SETS / name / "corpus.jsonl").open(encoding="utf-8"))}
    for row in map(json.loads, (SETS / name / "questions.jsonl").open(encoding="utf-8")):
        gold, evidence = row["supporting_ids"], row["evidence"]
        assert all(any(e in text[g] for g in gold) for e in evidence), row["id"]
        assert all(any(e in text[g] for e in evidence) for g in gold), row["id"]
        if row["type"] == "Complex Reasoning":
            assert len(gold) == 2, row["id"]


def test_the_four_books_hold_the_novel_check_set_passage_for_passage():
    def rows(name: str) -> dict:
        return {r["id"]: r for r in map(json.loads, (SETS / name / "corpus.jsonl").open(encoding="utf-8"))}

    novel, four = rows("sherlock_holmes_check"), rows("four_books_check")
    assert all(four[i] == row for i, row in novel.items())
    questions = {r["id"]: r for r in map(json.loads, (SETS / "four_books_check" / "questions.jsonl").open())}
    assert all(questions[r["id"]] == r for r in map(json.loads, (SETS / "sherlock_holmes_check" / "questions.jsonl")
                                                    .open(encoding="utf-8")))
