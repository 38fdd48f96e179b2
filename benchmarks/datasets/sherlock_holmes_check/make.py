"""Rebuild this check set: passages from the book's text, gold passages from the questions' evidence.

    python make.py --book sherlock.txt    # Project Gutenberg #1661, plain text (see README.md for the copy used)

* ``corpus.jsonl``: the twelve stories (the Gutenberg header and licence cut off), paragraphs joined and cut
  at sentence ends into passages of at most about 1,200 characters, one document ``Novel-1661`` (the layout of
  the GraphRAG-Bench novel and medical sets: one long document per book).
* ``questions.jsonl``: each question's ``supporting_ids`` are the passages that hold one of its ``evidence``
  strings word for word. The script stops when an evidence string is in no passage, or when a two-passage
  ("Complex Reasoning") question's evidence lands in one passage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = "Novel-1661"
MAX_CHARS = 1200
SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"']))\s+")


def passages(book: str) -> list[str]:
    """The twelve stories' passages."""
    return cut(book[book.index("ADVENTURE I. A SCANDAL IN BOHEMIA"):book.index("End of the Project Gutenberg EBook")])


def cut(body: str) -> list[str]:
    """Passages of at most about ``MAX_CHARS`` characters: paragraphs joined, a long paragraph cut at sentence ends."""
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", body):
        paragraph = re.sub(r"\s+", " ", paragraph).strip()
        if paragraph:  # a long paragraph is cut at its sentence ends, a short one kept whole
            sentences += SENTENCE_END.split(paragraph) if len(paragraph) > MAX_CHARS else [paragraph]
    out, current = [], ""
    for sentence in sentences:
        if current and len(current) + 1 + len(sentence) > MAX_CHARS:
            out.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}".strip()
    return out + [current] if current else out


def with_gold(questions: list[dict], corpus: list[dict]) -> list[dict]:
    problems = []
    for q in questions:
        per_evidence = [[p["id"] for p in corpus if e in p["text"]] for e in q["evidence"]]
        problems += [f"{q['id']}: evidence in no passage: {e!r}" for e, ids in zip(q["evidence"], per_evidence) if not ids]
        q["supporting_ids"] = list(dict.fromkeys(i for ids in per_evidence for i in ids))
        if q["type"] == "Complex Reasoning" and len(q["supporting_ids"]) < 2:
            problems.append(f"{q['id']}: a two-passage question whose evidence is in one passage")
    if problems:
        sys.exit("\n".join(problems))
    return questions


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", required=True, help="the book's plain text (UTF-8, with or without a BOM)")
    args = ap.parse_args()
    book = Path(args.book).read_text(encoding="utf-8-sig")
    corpus = [{"id": f"{DOC}-c{i:04d}", "title": DOC, "text": t} for i, t in enumerate(passages(book))]
    rows = [json.loads(line) for line in (HERE / "questions.jsonl").read_text(encoding="utf-8").splitlines() if line]
    write(HERE, corpus, with_gold(rows, corpus))


def write(folder: Path, corpus: list[dict], rows: list[dict]) -> None:
    """``corpus.jsonl`` and ``questions.jsonl`` of a check set, and a line saying what they hold."""
    (folder / "corpus.jsonl").write_text("".join(json.dumps(p) + "\n" for p in corpus), encoding="utf-8")
    (folder / "questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in rows),
                                            encoding="utf-8")
    print(f"{len(corpus)} passages, {len(rows)} questions, "
          f"{len({i for q in rows for i in q['supporting_ids']})} gold passages")


if __name__ == "__main__":
    main()
