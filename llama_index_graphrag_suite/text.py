"""Plain-text helpers shared by the extractors and retrievers.

Pure functions, no framework imports: tokenising into words, splitting sentences, n-gram candidates,
joining hard-wrapped lines, and the one entity-name normalisation every part of the project agrees on.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any, Callable, Iterable, Iterator

# Words written before a person's name that name no one alone: "Mr Lester Smith", "Miss Hunter".
HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "dr", "prof", "professor", "sir", "dame", "madame", "monsieur"})

# A compact English stop-word list (function words, pronouns, auxiliaries, a few reporting verbs).
# Written for this project; n-gram candidates may not start or end with one of these.
STOP_WORDS = frozenset(
    """
    a about above across after afterwards again against all almost alone along already also although
    always am among amongst an and another any anyhow anyone anything anyway anywhere are around as at
    be became because become becomes becoming been before beforehand behind being below beside besides
    between beyond both but by can cannot could did do does doing done down due during each eg either
    else elsewhere enough etc even ever every everyone everything everywhere except few first for former
    formerly from further had has have having he hence her here hereafter hereby herein hers herself him
    himself his how however i ie if in indeed into is it its itself just last latter latterly least less
    many may me meanwhile might mine more moreover most mostly much must my myself namely neither never
    nevertheless next no nobody none noone nor not nothing now nowhere of off often on once one only onto
    or other others otherwise our ours ourselves out over own per perhaps please rather same second
    several she should since so some somehow someone something sometime sometimes somewhere still such
    than that the their theirs them themselves then thence there thereafter thereby therefore therein
    thereupon these they this those though through throughout thru thus to together too toward towards
    under until up upon us very via was we well were what whatever when whence whenever where whereafter
    whereas whereby wherein whereupon wherever whether which while whither who whoever whole whom whose
    why will with within without would yet you your yours yourself yourselves
    s t d ll m re ve nt
    """.split()
)

_WORD = re.compile(r"[^\W_](?:[\w'’\-.]*[^\W_])?", re.UNICODE)
# Sentence ends: . ! ? followed by space and an upper-case letter, digit or quote, or a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])|\n\s*\n|\n(?=\s*[-*•#])")
# Inside a sentence, these break n-grams (a phrase never spans a comma, bracket or quote).
_PHRASE_BREAK = re.compile(r"[,;:()\[\]{}\"“”«»|/\\]|\s[-–—]\s")


def clean_text(text: str) -> str:
    """Unicode-normalise (NFKC) and drop control characters, keeping newlines and tabs."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if ch in "\n\t" or unicodedata.category(ch)[0] != "C")


# Characters that draw nothing though Unicode files them as letters or symbols: the braille blank, Hangul and
# halfwidth fillers, Khmer's inherent vowels; with marks alone (combining, variation selectors) they make no word.
INVISIBLE_LETTERS = frozenset("\u2800\u3164\u115f\u1160\uffa0\u17b4\u17b5")


def has_visible_text(text: str) -> bool:
    """Whether ``text`` holds at least one letter or digit that draws something (not a blank or filler)."""
    return any(unicodedata.category(ch)[0] in "LN" and ch not in INVISIBLE_LETTERS for ch in text)


_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/@:]*(?::[^\s/@]*)?@")


def hide_credentials(text: str) -> str:
    """``text`` with the user and password of any URL in it replaced by ``***`` (for error messages and logs)."""
    return _URL_CREDENTIALS.sub(r"\1***@", text)


_POSSESSIVE = re.compile(r"['’]s\b")
_JOINERS = re.compile(r"[.'’]")
_OTHER_PUNCT = re.compile(r"[^\w\s]|_")


@lru_cache(maxsize=1 << 18)
def normalize_entity(name: str) -> str:
    """The canonical key of an entity name: case-folded, punctuation to spaces, possessives dropped.

    "Lester Smith's", "lester  smith" and "Lester-Smith" all become "lester smith", so the same
    entity merges across chunks whatever its surface form.
    """
    name = unicodedata.normalize("NFKC", name).casefold()
    name = _POSSESSIVE.sub("", name)
    name = _JOINERS.sub("", name)  # U.S. -> us, O'Neil -> oneil: these marks join, they do not split
    name = _OTHER_PUNCT.sub(" ", name)
    return " ".join(name.split())


def fold_accents(key: str) -> str:
    """``key`` without its diacritics ("tekezé river" -> "tekeze river", "malmö" -> "malmo"): how a question
    typed on an English keyboard writes a name. Letters that are not an accented base letter ("ø", "ß") stay."""
    if key.isascii():
        return key
    return "".join(c for c in unicodedata.normalize("NFKD", key) if not unicodedata.combining(c))


def accent_aliases(keys) -> dict[str, str]:
    """Entity keys by their accent-folded form, for look-ups of a question's words: ``{folded: key}``, for every
    key whose folded form names no other key (an exact key always wins; two keys folding alike are left out)."""
    exact = set(keys)
    return folded_aliases(((k, k) for k in exact), exact.__contains__)


def folded_aliases(named: Iterable[tuple[str, Any]], is_key: Callable[[str], bool]) -> dict[str, Any]:
    """``{folded name: what it names}`` over ``(name, what)`` pairs, for every name whose accent-folded form differs
    from it, is no key itself (``is_key``) and is the folded form of no other name."""
    out: dict[str, Any] = {}
    ambiguous: set[str] = set()
    for name, what in named:
        f = fold_accents(name)
        if f == name or is_key(f):
            continue
        if f in out:
            ambiguous.add(f)
        out[f] = what
    for f in ambiguous:
        del out[f]
    return out


def words(text: str) -> list[str]:
    """Word tokens of ``text`` in order, with their original case (keeps inner ' - . as in O'Neil, U.S.)."""
    return _WORD.findall(text)


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the tokens :func:`words` returns."""
    return [m.span() for m in _WORD.finditer(text)]


QUOTE_MARKS = "\"'“‘«"  # marks that open a quotation
_OPENING_MARKS = QUOTE_MARKS + "([*"  # ... and an aside or a list item
_FORCING_MARKS = ".!?:•|—–"  # after these (and after a line break or "--") a word is capitalised whatever it is
# what stands before an abbreviation's dot, not a sentence's: an initial ("J."), an initialism ("U.S."), a title
_ABBREVIATED = re.compile(r"(?:^|[^\w.])(?:[A-Z]|[A-Z]\.[A-Z]|Mrs?|Ms|Dr|Prof|St|Jr|Sr|Mt|Ft|Gen|Col|Capt|Lt|Rev|Sen|Gov"
                          r"|Rep|No|Nos|Vol|Fig|Figs|Co|Inc|Ltd|Bros|vs|cf|al|e\.g|i\.e)$")


def capital_is_forced(text: str, start: int) -> bool:
    """Whether a word starting at ``text[start]`` would be capitalised whatever it is: first in the text or in its
    line, after a sentence's end, a colon, a dash or a bullet, or behind an opening quote or bracket ("said he,
    'Well'"; a closing quote, '"Yes," Holmes said', forces nothing). A dot after an initial or a title ("J. Watson",
    "Mr. Holmes", "U.S. Army") is an abbreviation's, not a sentence's end. A capital where it is not forced
    is the writer's choice: that is what tells a name from a common word written first in a sentence."""
    i = start - 1
    while i >= 0 and text[i] in " \t":
        i -= 1
    if i < 0 or text[i] == "\n":
        return True
    mark = text[i]
    if mark in _OPENING_MARKS:  # an opening mark stands after a space, a line break or another opening mark
        j = i - 1
        while j >= 0 and text[j] in _OPENING_MARKS:
            j -= 1
        return j < 0 or text[j].isspace() or text[j] in _FORCING_MARKS or text[j] == "-"
    if mark == ".":
        return _ABBREVIATED.search(text[max(0, i - 6):i]) is None
    return mark in _FORCING_MARKS or (mark == "-" and i > 0 and text[i - 1] == "-")


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (a light rule-based splitter)."""
    spans, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        end = m.start()
        if text[start:end].strip():
            spans.append(_strip_span(text, start, end))
        start = m.end()
    if text[start:].strip():
        spans.append(_strip_span(text, start, len(text)))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def phrase_segments(sentence: str) -> list[str]:
    """Pieces of a sentence that a multi-word phrase may not cross (split at commas, brackets, dashes)."""
    return [p for p in _PHRASE_BREAK.split(sentence) if p.strip()]


@lru_cache(maxsize=4096)
def analyze(text: str) -> tuple[tuple[int, int, tuple[tuple[int, int], ...], tuple[str, ...]], ...]:
    """Phrase segments of ``text`` as ``(sentence index, segment start, word spans, word keys)``.

    Spans are character offsets into ``text``; keys are :func:`normalize_entity` of each word.
    Cached: the extractors of one build look at every chunk several times.
    """
    out = []
    for s_idx, (s_start, s_end) in enumerate(split_sentences(text)):
        sentence = text[s_start:s_end]
        offset = 0
        for segment in phrase_segments(sentence):
            seg_start = s_start + sentence.index(segment, offset)
            offset = seg_start - s_start + len(segment)
            # the segment's words found in ``text`` itself (the pattern has no anchor or look-around, so bounds
            # give the matches the segment would): their spans need no shift, their words no slice
            found = list(_WORD.finditer(text, seg_start, seg_start + len(segment)))
            out.append((s_idx, seg_start, tuple([m.span() for m in found]),
                        tuple([normalize_entity(m.group()) for m in found])))
    return tuple(out)


@lru_cache(maxsize=1 << 16)
def is_candidate_token(token_key: str) -> bool:
    """Whether a normalised single token may be (part of) an entity: not a stop word, not 1 character,
    and not a short bare number (years of 4+ digits stay)."""
    if len(token_key) < 2 or token_key in STOP_WORDS:
        return False
    if token_key.isdigit() and len(token_key) < 4:
        return False
    return True


def ngram_candidates(text: str, max_n: int) -> Iterator[tuple[str, str]]:
    """Yield ``(key, surface)`` for every n-gram (1..max_n words) of ``text`` that may name an entity.

    An n-gram never crosses a sentence or phrase boundary, and may not start or end with a stop word
    (inner stop words are fine: "University of Oxford"). ``key`` is :func:`normalize_entity` of it.
    """
    for _, _, spans, keys in analyze(text):
        ok = [bool(k) and is_candidate_token(k) for k in keys]
        for i in range(len(keys)):
            if not ok[i]:
                continue
            for n in range(1, max_n + 1):
                j = i + n
                if j > len(keys) or not keys[j - 1]:
                    break
                if not ok[j - 1]:
                    continue
                yield " ".join(keys[i:j]), text[spans[i][0] : spans[j - 1][1]]


WRAP_WIDTH_MAX = 120  # hard-wrapped text (plain-text books, e-mail, text taken out of PDFs) is wrapped narrower
WRAP_MIN_LINES = 5  # fewer lines tell a wrap from line breaks written on purpose too poorly
WRAP_FILL = 0.6  # a line filled to 60 % of the text's width or more ended where the wrap did, not the sentence
_NOT_PROSE = ("#", "|", "-", "*", "•", ">", "```")  # headings, table rows, list items, quotes, code fences


def join_wrapped_lines(text: str) -> str:
    """``text`` with each line break that a hard wrap put inside a paragraph made a space.

    spaCy reads a line break as a boundary: a name wrapped across two lines ("Captain" ending one, "Harrow"
    opening the next) is no entity, and a sentence so cut parses as two fragments. A break is a wrap when the
    text is wrapped (``WRAP_MIN_LINES`` lines or more, the longer fifth of them at most ``WRAP_WIDTH_MAX``
    characters), the line before it is filled to ``WRAP_FILL`` of that width, and neither line is empty or
    starts a heading, table row, list item, quote or code fence. Blank lines (paragraphs) and short lines
    (titles, verse, the end of a paragraph) stay. Same length as ``text``.
    """
    if "\n" not in text:
        return text
    lines = text.split("\n")
    lengths = sorted(len(line) for line in lines if line.strip())
    if len(lengths) < WRAP_MIN_LINES:
        return text
    width = lengths[(len(lengths) * 4) // 5]  # the 80th percentile: a wrapped text's lines are mostly full
    if width > WRAP_WIDTH_MAX:
        return text
    out = []
    for line, after in zip(lines, lines[1:]):
        wrapped = len(line) >= WRAP_FILL * width and after.strip() and \
            not line.lstrip().startswith(_NOT_PROSE) and not after.lstrip().startswith(_NOT_PROSE)
        out.append(line + (" " if wrapped else "\n"))
    out.append(lines[-1])
    return "".join(out)
