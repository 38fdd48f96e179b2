"""The novel check set in benchmarks/datasets (never used for tuning) loads as a bench dataset, and its gold is
what its evidence says: every evidence string is written in a gold passage, and every gold passage holds one."""

from __future__ import annotations

import json
from pathlib import Path

from llama_index_graphrag_suite.eval.datasets import load_dataset

CHECK = Path(__file__).resolve().parents[1] / "benchmarks" / "datasets" / "sherlock_holmes_check"


def test_the_novel_check_set_loads_with_its_gold():
    dataset = load_dataset(CHECK)
    assert len(dataset.documents) == 558 and len(dataset.questions) == 60 and dataset.without_gold == 0
    assert {d.metadata.get("title") for d in dataset.documents} == {"Novel-1661"}
    kinds = [q.type for q in dataset.questions]
    assert kinds.count("Fact Retrieval") == 36 and kinds.count("Complex Reasoning") == 24


def test_each_gold_passage_holds_an_evidence_string_of_its_question():
    text = {row["id"]: row["text"] for row in map(json.loads, (CHECK / "corpus.jsonl").open(encoding="utf-8"))}
    for row in map(json.loads, (CHECK / "questions.jsonl").open(encoding="utf-8")):
        gold, evidence = row["supporting_ids"], row["evidence"]
        assert all(any(e in text[g] for g in gold) for e in evidence), row["id"]
        assert all(any(e in text[g] for e in evidence) for g in gold), row["id"]
        if row["type"] == "Complex Reasoning":
            assert len(gold) == 2, row["id"]
