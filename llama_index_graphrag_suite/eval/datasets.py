"""Benchmark datasets: a folder with corpus.jsonl ({"id","title","text"}) and questions.jsonl
({"id","question","answers","supporting_ids",...}), the format of the project's shared datasets."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from llama_index.core import Document

from ..documents import CorpusError, iter_jsonl, load_jsonl


@dataclass
class Question:
    id: str
    question: str
    supporting_ids: list[str]
    answers: list[str] = field(default_factory=list)
    type: str = ""


@dataclass
class BenchDataset:
    name: str
    documents: list[Document]
    questions: list[Question]
    without_gold: int = 0  # questions skipped because the dataset gives them no gold passage


def load_questions(path: Path, corpus_ids: set[str] | None = None) -> tuple[list[Question], int]:
    """Questions with at least one gold passage, and how many had none (skipped: nothing to score)."""
    questions, seen, without_gold = [], set(), 0
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not row["question"].strip():
            raise CorpusError(f'{path}:{lineno}: expected an object with a non-empty "question" string')
        gold = row.get("supporting_ids")
        if not isinstance(gold, list) or not all(isinstance(g, str) for g in gold):
            raise CorpusError(f'{path}:{lineno}: "supporting_ids" must be a list of passage ids')
        if not gold:
            without_gold += 1
            continue
        if corpus_ids is not None and not set(gold) <= corpus_ids:
            missing = sorted(set(gold) - corpus_ids)
            raise CorpusError(f"{path}:{lineno}: supporting id {missing[0]!r} is not in the corpus")
        qid = str(row.get("id", lineno))
        if qid in seen:
            raise CorpusError(f"{path}:{lineno}: duplicate question id {qid!r}")
        seen.add(qid)
        answers = row.get("answers") or []
        questions.append(Question(qid, row["question"], list(dict.fromkeys(gold)),
                                  [str(a) for a in answers] if isinstance(answers, list) else [str(answers)],
                                  str(row.get("type", ""))))
    if not questions:
        raise CorpusError(f"{path}: no questions with supporting_ids")
    return questions, without_gold


def load_dataset(folder: str | Path, limit: int = 0) -> BenchDataset:
    """The dataset in ``folder``; ``limit`` keeps the first N questions (the corpus stays whole)."""
    folder = Path(folder)
    corpus, questions = folder / "corpus.jsonl", folder / "questions.jsonl"
    for path in (corpus, questions):
        if not path.is_file():
            raise CorpusError(f"{folder}: missing {path.name}")
    docs = load_jsonl(corpus)
    if not docs:
        raise CorpusError(f"{corpus}: no passages")
    qs, without_gold = load_questions(questions, {d.id_ for d in docs})
    return BenchDataset(folder.name, docs, qs[:limit] if limit else qs, without_gold)
