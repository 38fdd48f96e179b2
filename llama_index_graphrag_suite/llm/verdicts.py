"""Reading a yes/no verdict from an LLM reply: one parser for the retrievers and the LangGraph validators.

Used by A2RAG's sufficiency check (retriever) and by the Triple-Check validators (control loop), so a
reply means the same thing wherever it is read.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["Verdict", "parse_yes_no", "yes_no"]

_WORD = re.compile(r"[a-z]+")
YES_WORDS = frozenset({"yes", "true", "correct", "pass", "passed", "sufficient"})
NO_WORDS = frozenset({"no", "false", "incorrect", "fail", "failed", "insufficient"})
# words that may come before the verdict: "Answer: yes", "**Grounded:** no", "The evidence is sufficient",
# "Based on the evidence, yes"
_PREAMBLE = frozenset({"answer", "relevant", "grounded", "resolves", "the", "question", "verdict", "is", "my",
                       "evidence", "this", "it", "based", "on", "given", "passages", "are"})


class Verdict(NamedTuple):
    """``passed`` is True / False, or None when the reply is not a clear yes or no (then ``reason`` is "unparseable")."""

    passed: bool | None
    reason: str


def parse_yes_no(text: str | None) -> Verdict:
    """The verdict of a yes/no reply and the reason that follows it.

    The verdict is the first yes-like or no-like word of the first non-empty line, after at most a
    few preamble words (``"Answer: yes"``, ``"**Grounded:** no"``, ``"The evidence is sufficient"``).
    A first line holding both a bare "yes" and a bare "no" ("yes and no") is not a verdict, nor is a
    reply that starts with anything else ("Maybe yes", "I cannot tell", "{}"): those are
    ``Verdict(None, "unparseable")``, which callers treat as a "no".
    """
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return Verdict(None, "unparseable")
    first = lines[0]
    words = _WORD.findall(first.lower())
    if "yes" in words and "no" in words:
        return Verdict(None, "unparseable")
    for match in _WORD.finditer(first.lower()):
        word = match.group()
        if word in YES_WORDS or word in NO_WORDS:
            reason = " ".join([first[match.end():].strip(" .:,;-*)\"'}"), *lines[1:]]).strip()
            return Verdict(word in YES_WORDS, reason[:300])
        if word not in _PREAMBLE:
            break
    return Verdict(None, "unparseable")


def yes_no(text: str | None) -> bool | None:
    """Just the verdict of :func:`parse_yes_no` (True, False or None)."""
    return parse_yes_no(text).passed
