"""Rebuild this check set: four books cut into passages, gold passages from the questions' evidence.

    python make.py --texts DIR    # DIR holds sherlock.txt, pride_and_prejudice.txt, frankenstein.txt and
                                  # poirot_investigates.txt (see README.md for the copies used)

* ``corpus.jsonl``: each book's text (the Project Gutenberg header, contents and licence cut off) cut as
  ``../sherlock_holmes_check/make.py`` cuts its book: paragraphs joined and cut at sentence ends into passages of
  at most about 1,200 characters, one document per book (``Novel-1661``, ``Novel-1342``, ``Novel-84``,
  ``Novel-Poirot``). The Sherlock Holmes passages are those of ``sherlock_holmes_check``, id for id.
* ``questions.jsonl``: the 60 questions of ``sherlock_holmes_check`` and the 40 of each other book (``questions/``).
  Each question's ``supporting_ids`` are the passages, of any book, that hold one of its ``evidence`` strings word
  for word. The script stops when an evidence string is in no passage, or when a two-passage ("Complex Reasoning")
  question's evidence lands in one passage.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHERLOCK = HERE.parent / "sherlock_holmes_check"
# document id -> (file, where the text starts, where it ends)
BOOKS = {
    "Novel-1661": ("sherlock.txt", "ADVENTURE I. A SCANDAL IN BOHEMIA", "End of the Project Gutenberg EBook"),
    "Novel-1342": ("pride_and_prejudice.txt", "It is a truth universally", "End of the Project Gutenberg"),
    "Novel-84": ("frankenstein.txt", "You will rejoice to hear", "*** END OF"),
    "Novel-Poirot": ("poirot_investigates.txt", "The Adventure of \u201cThe Western Star", "End of the Project Gutenberg"),
}


def _sherlock_make():
    """The novel check set's own script: one way of cutting a book into passages for both sets."""
    spec = importlib.util.spec_from_file_location("sherlock_make", SHERLOCK / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", required=True, help="folder of the four books' plain texts (UTF-8)")
    args = ap.parse_args()
    make = _sherlock_make()
    corpus: list[dict] = []
    for doc, (name, start, end) in BOOKS.items():
        text = (Path(args.texts) / name).read_text(encoding="utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
        body = text[text.index(start):text.index(end)]
        corpus += [{"id": f"{doc}-c{i:04d}", "title": doc, "text": t} for i, t in enumerate(make.cut(body))]
    rows = [json.loads(line) for line in (SHERLOCK / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if line]
    for path in sorted((HERE / "questions").glob("*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    make.write(HERE, corpus, make.with_gold(rows, corpus))


if __name__ == "__main__":
    main()
