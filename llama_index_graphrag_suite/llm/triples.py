"""Triples (subject, predicate, object) from what an LLM returned: JSON in any common shape, or lines.

Used by the LLM relation extractor (AGRAG Eq. 4). JSON is read with :func:`.json_repair.parse_json_lenient`;
when no JSON is found, one triple per line (``a | b | c``, ``(a, b, c)``, LightRAG-style tuples) is tried.
Every dropped item is reported with a reason, so malformed output is counted, never silently lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .json_repair import parse_json_lenient, snippet

__all__ = ["TripleParse", "parse_triples"]


@dataclass
class TripleParse:
    """Result of :func:`parse_triples`: well-formed triples and one reason per dropped item."""

    triples: list[tuple[str, str, str]]
    dropped: list[str] = field(default_factory=list)


_SUBJECT_KEYS = ("subject", "head", "source", "subj", "s")
_PREDICATE_KEYS = ("predicate", "relation", "relationship", "rel", "pred", "p")
_OBJECT_KEYS = ("object", "tail", "target", "obj", "o")
_HEADER_WORDS = frozenset(_SUBJECT_KEYS + _PREDICATE_KEYS + _OBJECT_KEYS)
_LINE_PREFIX = re.compile(r"^\s*(?:[-*•]|\d+[.)])?\s*")
_BRACKETED = re.compile(r"^[(\[](.*)[)\]]\s*[,;.]?$")


def _part(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return " ".join(value.split())
    return None


def _triple_from_item(item: Any) -> tuple[tuple[str, str, str] | None, str | None]:
    """Return ``(triple, None)`` or ``(None, reason)`` for one JSON item."""
    if isinstance(item, dict):
        lowered = {str(k).strip().lower(): v for k, v in item.items()}
        picked = []
        for names in (_SUBJECT_KEYS, _PREDICATE_KEYS, _OBJECT_KEYS):
            picked.append(next((lowered[n] for n in names if n in lowered), None))
        if any(p is None for p in picked):
            return None, f"object without subject/predicate/object keys: {snippet(repr(item))}"
        parts: list[Any] = picked
    elif isinstance(item, (list, tuple)):
        if len(item) != 3:
            return None, f"expected 3 parts, got {len(item)}: {snippet(repr(item))}"
        parts = list(item)
    else:
        return None, f"not a triple: {snippet(repr(item))}"
    cleaned = [_part(p) for p in parts]
    if any(c is None for c in cleaned):
        return None, f"non-text part: {snippet(repr(item))}"
    if any(not c for c in cleaned):
        return None, f"empty part: {snippet(repr(item))}"
    return (cleaned[0], cleaned[1], cleaned[2]), None  # type: ignore[return-value]


def _items_from_value(value: Any, key: str) -> tuple[list | None, str | None]:
    """Find the list of triple candidates in a parsed JSON value."""
    if isinstance(value, list):
        if len(value) == 3 and all(isinstance(v, str) for v in value):
            return [value], None  # one bare triple
        return value, None
    if isinstance(value, dict):
        lowered = {str(k).lower(): v for k, v in value.items()}
        if isinstance(lowered.get(key.lower()), list):
            return lowered[key.lower()], None
        if _triple_from_item(value)[0] is not None:
            return [value], None  # one triple object
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1:
            return lists[0], None
        return None, f"JSON object has no {key!r} list: {snippet(repr(value))}"
    return None, f"JSON value is not a list or object: {snippet(repr(value))}"


def _triples_from_lines(text: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """Fallback for answers written as ``(s, p, o)`` or ``s | p | o`` lines; prose lines are ignored."""
    triples, dropped = [], []
    for raw in text.splitlines():
        line = _LINE_PREFIX.sub("", raw).strip()
        bracketed = _BRACKETED.match(line)
        if bracketed:
            parts = bracketed.group(1).split(",")
        elif line.count("|") >= 2:
            parts = line.strip("|").split("|")
        else:
            continue
        parts = [p.strip().strip("\"'`").strip() for p in parts]
        if set("".join(parts)) <= set("-: ") or {p.lower() for p in parts} <= _HEADER_WORDS:
            continue  # a markdown table rule (|---|---|) or header row (| subject | predicate | object |)
        triple, reason = _triple_from_item(parts)
        if triple:
            triples.append(triple)
        else:
            dropped.append(f"line {reason}")
    return triples, dropped


def parse_triples(text: str, key: str = "triples") -> TripleParse:
    """Extract ``(subject, predicate, object)`` triples from an LLM answer.

    Accepts ``{"triples": [[s, p, o], ...]}``, a bare list of lists, a list of objects with
    subject/head, predicate/relation and object/tail keys, and falls back to ``(s, p, o)`` or
    ``s | p | o`` lines. Every item that is not a well-formed triple is reported in ``dropped``.
    """
    parsed = parse_json_lenient(text)
    json_triples: list[tuple[str, str, str]] = []
    json_dropped = list(parsed.dropped)
    if parsed.value is not None:
        items, problem = _items_from_value(parsed.value, key)
        if problem:
            json_dropped.append(problem)
        for item in items or []:
            triple, reason = _triple_from_item(item)
            if triple:
                json_triples.append(triple)
            else:
                json_dropped.append(reason or "")
    if json_triples:
        return TripleParse(json_triples, json_dropped)
    line_triples, line_dropped = _triples_from_lines(text)
    if line_triples:
        return TripleParse(line_triples, line_dropped)
    if parsed.value is not None:
        return TripleParse([], json_dropped + line_dropped)
    return TripleParse([], line_dropped or json_dropped)
