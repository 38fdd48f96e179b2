"""Entity resolution for named-entity mentions: which mentions are one entity, which names are different things.

* Across documents, mentions merge when their canonical keys are equal (case, articles, possessives
  and punctuation do not matter: see :func:`~.gazetteer.canonical_key`).
* Within one document, a short form merges into a full name only when the document makes it safe:
  a surname ("Smith") that is the last word of exactly one person's full name in that document, or
  an acronym ("IBM") that spells the initials of exactly one multi-word name in it. Anything
  ambiguous stays its own entity; the index's synonym edges (name embeddings) may still join it.
  In a person's own article (titled with the name) the surname alone is that person even when a
  relative who shares it is named too ("Nolan" in *Christopher Nolan*, which names Jonathan Nolan),
  and full names that are variants of one name ("Chris Nolan", "Christopher Edward Nolan") count as one.
* Synonym edges (name embeddings, :func:`can_be_aliases`) never join two names that are told apart by
  their words: two people whose given names or surnames differ ("Christopher Nolan" and "Jonathan
  Nolan": close only because they share a surname), or two names carrying different numbers or codes
  ("SARS-CoV" and "SARS-CoV-2", "2010 census" and "2011 census", "hepatitis B" and "hepatitis C").
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Callable, Iterable, Sequence

import numpy as np

from ..text import HONORIFICS, STOP_WORDS
from .gazetteer import canonical_key
from .terms import TERM_TYPE

PERSON_TYPES = frozenset({"PERSON", "PER"})


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
    while len(tokens) > 1 and tokens[0] in HONORIFICS:
        tokens = tokens[1:]
    return " ".join(tokens)


def acronym_of(key: str) -> str:
    """Initials of a multi-word name, function words skipped: "international business machines" -> "ibm"."""
    return "".join(t[0] for t in key.split() if t not in STOP_WORDS and t[0].isalnum())


def resolve_document(mentions: list[EntityMention], title_key: str = "", title_type: str = "") -> dict[str, str]:
    """Aliases of one document: ``short key -> full key``; rewrites the mentions' keys in place.

    ``title_key`` (the document's title as a name) counts as a full name of the document, so "Smith"
    in the article titled "Lester Smith" resolves to it when no other Smith is named there, and to it
    still when another Smith is named but the title is a person's name (the article is about him).
    Two full names are never merged here, even variants of one name ("Chris Nolan"): each is a key other
    documents share, and the index's synonym edges join such variants (:func:`can_be_aliases`).
    """
    person_keys = {m.key for m in mentions if m.type in PERSON_TYPES}
    full_people: set[str] = {name for name in map(strip_honorific, person_keys) if " " in name}
    full_names: set[str] = {m.key for m in mentions if " " in m.key}
    title_person = ""
    if title_key and " " in title_key:
        full_names.add(title_key)
        if title_type in PERSON_TYPES or title_type in ("", "TITLE"):
            full_people.add(title_key)
        if title_type in PERSON_TYPES or title_key in person_keys:
            title_person = title_key

    by_surname: dict[str, set[str]] = {}
    for name in full_people:
        by_surname.setdefault(name.split()[-1], set()).add(name)
    by_acronym: dict[str, set[str]] = {}
    for name in full_names:
        if len(name.split()) >= 2:
            by_acronym.setdefault(acronym_of(name), set()).add(name)
    counts = Counter(strip_honorific(m.key) for m in mentions)

    aliases: dict[str, str] = {}
    for m in mentions:
        key = strip_honorific(m.key)
        if key != m.key and key in full_people:
            aliases[m.key] = key  # "Mr Lester Smith" -> "lester smith"
            continue
        if " " in key:
            continue
        if m.type in PERSON_TYPES and key in by_surname:
            person = _one_person(by_surname[key], title_person, counts)
            if person:
                aliases[m.key] = person
        elif _is_acronym(m.surface) and len(by_acronym.get(key, ())) == 1:
            aliases[m.key] = next(iter(by_acronym[key]))
    for m in mentions:
        m.key = aliases.get(m.key, m.key)
    return aliases


def _one_person(namesakes: set[str], title_person: str, counts: Counter) -> str:
    """Who a surname alone names among the document's full names ending with it, or "" when unsure.

    One full name: that one. Several: the article's own subject when it is one of them ("Nolan" in the
    article *Christopher Nolan*, which names his brother Jonathan Nolan); else, when they are all variants
    of one name (each abbreviates the most complete one: "chris nolan", "christopher nolan", "christopher
    edward nolan"), the variant the document writes most (ties: the shortest); else no one.
    """
    if len(namesakes) == 1:
        return next(iter(namesakes))
    if title_person in namesakes:
        return title_person
    tokens = {name: name.split() for name in namesakes}
    fullest = [n for n in namesakes if all(_given_abbreviate(tokens[o][:-1], tokens[n][:-1]) for o in namesakes)]
    if len(fullest) != 1:
        return ""
    return min(namesakes, key=lambda n: (-counts[n], len(n), n))


def _given_abbreviate(short: list[str], full: list[str]) -> bool:
    """Whether the given names ``short`` abbreviate ``full``: the first matches the first and each next one
    a later one, in order, where a match is the name itself, its initial, a shortening of it ("chris"), or
    the initials of a run of names ("jrr"): "c nolan", "chris nolan" and "christopher nolan" abbreviate
    "christopher edward nolan"; "scott howell" does not abbreviate "lida scott howell"."""
    if not short:
        return True
    if not full or not _initials_run(short[0], full, 0):
        return False
    j = _initials_run(short[0], full, 0)
    for token in short[1:]:
        while j < len(full):
            run = _initials_run(token, full, j)
            if run:
                j += run
                break
            j += 1
        else:
            return False
    return True


def _initials_run(token: str, names: list[str], at: int) -> int:
    """How many of ``names[at:]`` ``token`` stands for: 1 for the name itself, its initial or a shortening
    of it, ``len(token)`` for initials of that many consecutive names, 0 for none."""
    if names[at].startswith(token):
        return 1
    if 2 <= len(token) <= len(names) - at and all(names[at + i][0] == ch for i, ch in enumerate(token)):
        return len(token)
    return 0


def _is_acronym(surface: str) -> bool:
    letters = [ch for ch in surface if ch.isalpha()]
    return 2 <= len(letters) <= 8 and all(ch.isupper() for ch in letters)


def majority_type(types: list[str]) -> str:
    """The most common non-empty type of an entity's mentions (ties: the first seen)."""
    counts = Counter(t for t in types if t)
    return counts.most_common(1)[0][0] if counts else ""


def majority_types(mentions: Iterable[Iterable[EntityMention]]) -> dict[str, str]:
    """key -> :func:`majority_type` of its mentions (per chunk lists, in order). Not the last mention's type: NER
    labels one name differently here and there ("Holmes" a PERSON in nine sentences, an ORG in the tenth), and a
    rule that asks what a name is must not hang on where the corpus happens to end."""
    types: dict[str, list[str]] = {}
    for ms in mentions:
        for m in ms:
            types.setdefault(m.key, []).append(m.type)
    return {key: majority_type(ts) for key, ts in types.items()}


_POSSESSIVE_END = re.compile(r"(?:['’]s?)$")


def entity_lines(text: str, start: int) -> list[tuple[str, int]]:
    """``(surface, start)`` of each line of an entity span that starts at ``start``, stripped, possessive ending
    dropped. A name is one line, and NER now and then runs a span over a paragraph break: from a heading ("CHAPTER
    I.", a blank line, "Margaret Elwood") or a chunk's title line into the text's first name. Each line is judged
    as a mention of its own. A later line of one word, or opening with no letter, is none: a paragraph opening with
    "However", a heading "Seizures" or a numbered one ("2 Testing") is as likely as a name."""
    out = []
    for i, line in enumerate(text.split("\n")):
        surface = _POSSESSIVE_END.sub("", line.strip())
        if surface and (i == 0 or (" " in surface and surface[0].isalpha())):
            out.append((surface, start + len(line) - len(line.lstrip())))
        start += len(line) + 1
    return out


def mention_from(surface: str, type_: str, start: int, end: int) -> EntityMention | None:
    """A mention with its canonical key, or None when the name has no letters or digits left."""
    key = canonical_key(surface)
    return EntityMention(key, surface, type_, start, end) if key else None


# ---------------------------------------------------------------- synonym edges: aliases or different things

_NAME_PREFIXES = HONORIFICS | frozenset({"king", "queen", "prince", "princess", "saint", "pope", "lord", "lady",
                                          "president", "general", "captain", "rev", "reverend", "sen", "senator"})
_NAME_SUFFIXES = frozenset({"jr", "sr", "jnr", "snr"})
_ROMAN = re.compile(r"^x{0,3}(?:ix|iv|v?i{0,3})$")  # i-xxxix: "l" is left out, "li" is more often a name
_ROMAN_VALUES = {"i": 1, "v": 5, "x": 10}
_CODE_PART = re.compile(r"\d+|[^\W\d_]+")
_CITATION_INITIALS = re.compile(r"^(?:[a-z]|[b-df-hj-np-tv-xz]{2,3})$")  # "w", "jk", "xl": no vowel, no "y"
_DIMINUTIVE_END = re.compile(r"(?:ie|y)$")  # "johnnie" / "johnny", "bobbie" / "bobby"
# Two spellings of one given name or surname ("anthony"/"antony", "jonathan"/"johnathan") are this similar
# (difflib ratio) or more; two different names of one initial rarely are ("john"/"joan" 0.75, "mark"/"mary" 0.75).
SPELLING_RATIO = 0.8


def can_be_aliases(name_a: str, type_a: str, name_b: str, type_b: str) -> bool:
    """False when two names (canonical keys), however close their embeddings, are told apart by their words.

    * Different numbers or codes. A number names one member of a family: "sars cov" / "sars cov 2", "2010
      census" / "2011 census", "type 1" / "type 2 diabetes", "henry vii" / "henry viii". The numbers are the
      digit runs (a roman numeral counts as its value: "world war ii" = "world war 2"), compared as
      multisets, so word order does not matter ("1832 reform act" = "reform act 1832"); a number on one side
      only also tells two things apart, except for people ("edward stafford" may be the "edward stafford
      3rd baron stafford" of another passage). Letter codes (single letters joined to digits, "363a", and
      single-letter words of a non-person's name, "hepatitis b") tell two names apart when both have them
      and they differ ("hepatitis b" / "hepatitis c"; "iain banks" / "iain m banks" may be one man).
    * Two people: one of the names is a PERSON (NER type) and neither is a ``TERM`` (a noun phrase of the
      parse, never a span NER labelled: "influenza vaccine" typed PERSON by NER and the term "influenza
      vaccination" are left to the embedding), both have two or more words (honorifics and "jr" set aside;
      a citation's "Chen W" read as "W Chen"), and either no given name of one matches a given name of the
      other or their surnames do not match. Words match when equal, one is the other's initial or a shortening of it ("chris",
      "christopher"), they are two spellings of one name (:data:`SPELLING_RATIO`), or one is the initials of
      the other's given names ("jrr"). The surname may also be any non-first word of the other name
      (middle names, "christopher nolan" / "christopher nolan filmography"); the same words in another
      order or spaced differently are the same name ("senda aisa", "huang youdi" / "huang you di").
      A one-word name ("nolan", "tolkien") is never ruled out: it may be a surname used alone (what it
      resolves to is decided per document, :func:`resolve_document`).

    Names of other types sharing a word ("renal failure" / "kidney failure") are left to the embedding:
    substituted words are often synonyms there.
    """
    person_a, person_b = type_a in PERSON_TYPES, type_b in PERSON_TYPES
    (numbers_a, letters_a), (numbers_b, letters_b) = _identifiers(name_a, person_a), _identifiers(name_b, person_b)
    if numbers_a != numbers_b and (numbers_a and numbers_b or not (person_a or person_b)):
        return False
    if letters_a and letters_b and letters_a != letters_b:
        return False
    if not (person_a or person_b) or TERM_TYPE in (type_a, type_b):
        return True
    a, b = _person_tokens(name_a), _person_tokens(name_b)
    if len(a) < 2 or len(b) < 2 or sorted(a) == sorted(b) or "".join(a) == "".join(b):
        return True
    surname_ok = _same_name_word(a[-1], b[-1]) or a[-1] in b[1:] or b[-1] in a[1:]
    given_ok = any(_same_name_word(x, y) for x in a[:-1] for y in b[:-1])
    given_ok = given_ok or _initials_of(a[0], b[:-1]) or _initials_of(b[0], a[:-1])
    return surname_ok and given_ok


def keep_alias_pairs(names: Sequence[str], type_of: Callable[[str], str], src: np.ndarray, dst: np.ndarray,
                     sim: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The synonym pairs ``(src, dst, sim)`` (rows of ``names``) that :func:`can_be_aliases` allows.

    ``type_of(name)`` is the entity's NER type ("" if unknown). Only the pairs are checked, not all names.
    """
    keep = np.fromiter((can_be_aliases(names[i], type_of(names[i]), names[j], type_of(names[j]))
                        for i, j in zip(np.asarray(src).tolist(), np.asarray(dst).tolist())), bool, count=len(src))
    return src[keep], dst[keep], sim[keep]


def _person_tokens(name: str) -> list[str]:
    """A person's name as given names then surname: honorifics and "jr" dropped, and a reference list's
    "surname initials" ("taubenberger jk", "chen w") turned round ("j k taubenberger", "w chen")."""
    tokens = name.split()
    while len(tokens) > 1 and tokens[0] in _NAME_PREFIXES:
        tokens = tokens[1:]
    while len(tokens) > 1 and tokens[-1] in _NAME_SUFFIXES:
        tokens = tokens[:-1]
    if len(tokens) == 2 and _CITATION_INITIALS.match(tokens[1]) and len(tokens[0]) > len(tokens[1]):
        tokens = list(tokens[1]) + [tokens[0]]
    return tokens


def _same_name_word(x: str, y: str) -> bool:
    """Whether two words can name one given name or surname: equal, an initial, a shortening ("chris",
    "christopher"; "nolan", "nolans"), or two spellings of one name ("anthony", "antony"; "johnnie",
    "johnny")."""
    if x == y or _DIMINUTIVE_END.sub("", x) == _DIMINUTIVE_END.sub("", y):
        return True
    if x[0] != y[0]:
        return False
    short, long_ = (x, y) if len(x) <= len(y) else (y, x)
    if len(short) == 1 or (len(short) >= 2 and long_.startswith(short)):
        return True
    return SequenceMatcher(None, x, y).ratio() >= SPELLING_RATIO


def _initials_of(token: str, given: list[str]) -> bool:
    """"jrr" and the given names "john ronald reuel": the token is the initials of the first few."""
    return 2 <= len(token) <= len(given) and all(g[0] == ch for g, ch in zip(given, token))


def _identifiers(name: str, person: bool) -> tuple[list[int], list[str]]:
    """The numbers and letter codes a name carries, each sorted: digit runs and roman numerals' values
    (:func:`_counts_as_roman`); single letters joined to digits and single-letter words after the first of a
    non-person's name."""
    tokens = name.split()
    numbers: list[int] = []
    letters: list[str] = []
    for pos, token in enumerate(tokens):
        if any(ch.isdigit() for ch in token):
            for part in _CODE_PART.findall(token):
                if part.isdigit():
                    numbers.append(int(part))
                elif len(part) == 1:
                    letters.append(part)
        elif pos > 0 and _ROMAN.match(token) and _counts_as_roman(token, pos == len(tokens) - 1, len(tokens), person):
            numbers.append(_roman_value(token))
        elif len(token) == 1 and pos > 0 and token.isalpha() and not person:
            letters.append(token)
    return sorted(numbers), sorted(letters)


def _counts_as_roman(token: str, last: bool, n_tokens: int, person: bool) -> bool:
    """A roman numeral after a name's first word is a number ("henry viii", "stage ii melanoma") when it
    ends the name or, not in a person's name, has two letters or more ("v" may be "versus", "xi" a syllable
    of a name); "i" only ends a name of three words or more ("world war i", not "pi i")."""
    if last:
        return token != "i" or n_tokens >= 3
    return len(token) >= 2 and not person


def _roman_value(token: str) -> int:
    values = [_ROMAN_VALUES[ch] for ch in token]
    return sum(-v if i + 1 < len(values) and v < values[i + 1] else v for i, v in enumerate(values))
