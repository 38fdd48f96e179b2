"""Entity resolution for named-entity mentions: which mentions are one entity. Pure Python.

* Across documents, mentions merge when their canonical keys are equal (case, articles, possessives
  and punctuation do not matter: see :func:`~.gazetteer.canonical_key`).
* Within one document, a short form merges into a full name only when the document makes it safe:
  a surname ("Smith") that is the last word of exactly one person's full name in that document, or
  an acronym ("IBM") that spells the initials of exactly one multi-word name in it. Anything
  ambiguous stays its own entity; the index's synonym edges (name embeddings) may still join it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from ..text import STOP_WORDS
from .gazetteer import canonical_key

PERSON_TYPES = frozenset({"PERSON", "PER"})
_HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "dame", "madame", "monsieur"})


@dataclass
class EntityMention:
    """One mention of a name in a chunk: where it is and what it resolves to."""

    key: str  # canonical key; rewritten by resolution to the full name's key
    surface: str  # as written
    type: str  # NER label ("PERSON", "GPE", ...), "TITLE" for a document title, "" if unknown
    start: int  # character offsets in the chunk text
    end: int


def strip_honorific(key: str) -> str:
    tokens = key.split()
    while len(tokens) > 1 and tokens[0] in _HONORIFICS:
        tokens = tokens[1:]
    return " ".join(tokens)


def acronym_of(key: str) -> str:
    """Initials of a multi-word name, function words skipped: "international business machines" -> "ibm"."""
    return "".join(t[0] for t in key.split() if t not in STOP_WORDS and t[0].isalnum())


def resolve_document(mentions: list[EntityMention], title_key: str = "", title_type: str = "") -> dict[str, str]:
    """Aliases of one document: ``short key -> full key``; rewrites the mentions' keys in place.

    ``title_key`` (the document's title as a name) counts as a full name of the document, so "Smith"
    in the article titled "Lester Smith" resolves to it when no other Smith is named there.
    """
    full_people: set[str] = {strip_honorific(m.key) for m in mentions if m.type in PERSON_TYPES and " " in m.key}
    full_names: set[str] = {m.key for m in mentions if " " in m.key}
    if title_key and " " in title_key:
        full_names.add(title_key)
        if title_type in PERSON_TYPES or title_type in ("", "TITLE"):
            full_people.add(title_key)

    by_surname: dict[str, set[str]] = {}
    for name in full_people:
        by_surname.setdefault(name.split()[-1], set()).add(name)
    by_acronym: dict[str, set[str]] = {}
    for name in full_names:
        if len(name.split()) >= 2:
            by_acronym.setdefault(acronym_of(name), set()).add(name)

    aliases: dict[str, str] = {}
    for m in mentions:
        key = strip_honorific(m.key)
        if key != m.key and key in full_people:
            aliases[m.key] = key  # "Mr Lester Smith" -> "lester smith"
            continue
        if " " in key:
            continue
        if m.type in PERSON_TYPES and len(by_surname.get(key, ())) == 1:
            aliases[m.key] = next(iter(by_surname[key]))
        elif _is_acronym(m.surface) and len(by_acronym.get(key, ())) == 1:
            aliases[m.key] = next(iter(by_acronym[key]))
    for m in mentions:
        m.key = aliases.get(m.key, m.key)
    return aliases


def _is_acronym(surface: str) -> bool:
    letters = [ch for ch in surface if ch.isalpha()]
    return 2 <= len(letters) <= 8 and all(ch.isupper() for ch in letters)


def majority_type(types: list[str]) -> str:
    """The most common non-empty type of an entity's mentions (ties: the first seen)."""
    counts = Counter(t for t in types if t)
    return counts.most_common(1)[0][0] if counts else ""


def mention_from(surface: str, type_: str, start: int, end: int) -> EntityMention | None:
    """A mention with its canonical key, or None when the name has no letters or digits left."""
    key = canonical_key(surface)
    return EntityMention(key, surface, type_, start, end) if key else None
