"""The synthetic encyclopedia (benchmarks/synth.py): deterministic, verifiable gold passages, loadable, streaming."""

from __future__ import annotations

import importlib.util
import json
import sys
import tracemalloc
from pathlib import Path

import pytest

from llama_index_graphrag_suite.eval.datasets import load_dataset

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "synth.py"
_spec = importlib.util.spec_from_file_location("synth", _PATH)
synth = importlib.util.module_from_spec(_spec)
sys.modules["synth"] = synth  # dataclasses look their module up by name
_spec.loader.exec_module(synth)


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_same_seed_writes_the_same_bytes_and_another_seed_does_not(tmp_path):
    a, b, c = (synth.write(tmp_path / name, 300, seed=seed, questions=40) for name, seed in (("a", 1), ("b", 1), ("c", 2)))
    for name in ("corpus.jsonl", "questions.jsonl"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
        assert (a / name).read_bytes() != (c / name).read_bytes()


def test_every_gold_passage_states_its_hop_and_the_last_one_the_answer(tmp_path):
    out = synth.write(tmp_path, 600, seed=3, questions=100)
    passages = {p["id"]: p for p in _read(out / "corpus.jsonl")}
    questions = _read(out / "questions.jsonl")
    assert len(questions) == 100
    assert {q["type"] for q in questions} == set(synth.Synth.QUESTION_TYPES)
    for q in questions:
        chain = q["chain"]
        assert [c["id"] for c in chain] == q["supporting_ids"]
        assert len(chain) == (3 if q["type"].startswith("3hop") else 2)
        assert len(set(q["supporting_ids"])) == len(chain)
        first = passages[chain[0]["id"]]
        assert first["title"] in q["question"]  # the question names the first hop's subject
        for hop, nxt in zip(chain, chain[1:] + [None]):
            text = passages[hop["id"]]["text"]
            assert hop["mentions"] in text  # the bridge entity (or the answer) is stated in this passage
            if nxt is not None:  # ... and it is the subject of the next gold passage
                assert hop["mentions"] in passages[nxt["id"]]["title"]
        assert q["answers"] == [chain[-1]["mentions"]]
        assert q["answers"][0] not in q["question"]


def test_names_are_unique_per_kind_and_titles_unique_overall():
    s = synth.Synth(4000, seed=5)
    titles = [s.name(*s.slot(t)) for t in range(s.n)]
    assert len(set(titles)) == len(titles)
    assert sum(s.count(k) for k in ("person", "work", "org", "place")) == s.n


def test_the_benchmark_loader_reads_the_output(tmp_path):
    out = synth.write(tmp_path, 200, questions=30)
    ds = load_dataset(out)
    assert len(ds.documents) == 200 and len(ds.questions) == 30
    assert ds.questions[0].supporting_ids and ds.questions[0].answers


def _peak_bytes(tmp: Path, n: int) -> int:
    tracemalloc.start()
    synth.write(tmp, n, questions=20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_writing_streams_memory_does_not_grow_with_n(tmp_path):
    # every passage is a pure function of (seed, kind, index): nothing accumulates, so 8x the passages
    # costs no more memory (a quadratic or table-building generator would show here)
    small, large = _peak_bytes(tmp_path / "s", 500), _peak_bytes(tmp_path / "l", 4000)
    assert large < 1.5 * small + 200_000


def test_every_fact_is_computed_in_constant_time(monkeypatch):
    # facts of one passage cost the same number of hash calls at any N (no scan over earlier passages)
    calls = []
    real = synth._hash
    monkeypatch.setattr(synth, "_hash", lambda *a: calls.append(1) or real(*a))

    def cost(n: int) -> int:
        calls.clear()
        s = synth.Synth(n)
        for t in range(0, 200):
            s.passage(*s.slot(t))
        s.question(7)
        return len(calls)

    assert cost(1_000) == cost(1_000_000)


def test_too_small_a_corpus_is_refused():
    with pytest.raises(ValueError):
        synth.Synth(10)
