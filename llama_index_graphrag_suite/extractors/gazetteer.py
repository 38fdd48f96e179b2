"""Names as a gazetteer: canonical entity keys, document titles and headings, and finding known names in text.

Pure Python. A document's title (a JSONL ``title``, a file name from ``SimpleDirectoryReader``, a
markdown ``# heading``) names what the document is about, so it is an entity of that document, and
every other passage that writes the name is linked to it, which is what lets a question about
"Lester Smith" reach the passage titled "Lester Smith" from a passage that only mentions him.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import PurePath
from typing import Iterable, Mapping

from ..text import normalize_entity, word_spans

_ARTICLES = ("the ", "a ", "an ")
_PARENTHETICAL = re.compile(r"\s*[(\[][^)\]]*[)\]]\s*$")  # "Theodred II (Bishop of Elmham)"
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$", re.MULTILINE)
HEADS_A_NAME = r"\.?[ \t]+(?:\(?\d|of\b|[A-Z])"  # what follows a word that heads a longer name (name_words.py)
_FOLLOWED_AS_A_HEAD = re.compile(HEADS_A_NAME)


@lru_cache(maxsize=1 << 18)
def canonical_key(name: str) -> str:
    """The key an entity is stored under: :func:`~..text.normalize_entity` without a leading article.

    "The Glass Lantern", "the glass lantern's" and "Glass Lantern" are one entity.
    """
    key = normalize_entity(name)
    for article in _ARTICLES:
        if key.startswith(article) and len(key) > len(article):
            return key[len(article):]
    return key


def clean_title(title: str) -> str:
    """A title as a name: a trailing disambiguation in brackets and a file suffix are dropped."""
    title = " ".join(str(title).split())
    title = _PARENTHETICAL.sub("", title)
    return title.strip(" \t-–—:")


def title_from_metadata(metadata: Mapping) -> str:
    """The document title LlamaIndex readers leave in metadata: ``title``, else the file's stem."""
    title = str(metadata.get("title") or "").strip()
    if title:
        return clean_title(title)
    for field in ("file_name", "file_path", "filename"):
        value = metadata.get(field)
        if value:
            stem = PurePath(str(value)).stem
            return clean_title(re.sub(r"[_]+", " ", stem))
    return ""


def markdown_headings(text: str) -> list[tuple[int, str, int, int]]:
    """``(level, heading text, start, end)`` for each markdown ``#`` heading line of ``text``."""
    out = []
    for m in _HEADING.finditer(text):
        heading = clean_title(m.group(2).strip("*_` "))
        if heading:
            out.append((len(m.group(1)), heading, m.start(2), m.end(2)))
    return out


def heads_a_longer_name(text: str, end: int) -> bool:
    """The word of ``text`` that ends at ``end`` heads a longer name there: "Princess" in "Princess Anne", "Princess
    of Wales" or "Princess 2", not in "the film Princess won"."""
    return _FOLLOWED_AS_A_HEAD.match(text, end) is not None


def is_name_like(key: str, min_chars: int = 3) -> bool:
    """Whether a key can be matched as a name: enough letters or digits, not a bare short number."""
    alnum = sum(ch.isalnum() for ch in key)
    return alnum >= min_chars and not (key.isdigit() and len(key) < 4)


class NameMatcher:
    """Finds known entity names in text: longest match first over normalised word tokens.

    A match must be written as a name, its first word capitalised (or a number), so the title
    "Love" links "Love is a 1927 film" but not "the love of her life". Names of any length match;
    matching crosses punctuation (``Lambert, Margrave of Tuscany``) because names are specific.
    """

    def __init__(self, keys: Iterable[str] = (), min_chars: int = 3, standalone: Iterable[str] = ()) -> None:
        self.min_chars = min_chars
        # one-word names whose word mostly heads longer names (the film "Princess"): found only where the word stands
        # alone, not in "Princess Anne" or "Princess of Wales", which name someone else
        self.standalone: set[str] = set(standalone)
        self._lengths: dict[str, set[int]] = {}  # first token -> lengths of names starting with it
        self._keys: set[str] = set()
        self.add(keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: str) -> bool:
        return key in self._keys

    def add(self, keys: Iterable[str]) -> None:
        for key in keys:
            if key in self._keys or not is_name_like(key, self.min_chars):
                continue
            tokens = key.split()
            self._keys.add(key)
            self._lengths.setdefault(tokens[0], set()).add(len(tokens))

    def find(self, text: str, require_capital: bool = True) -> list[tuple[str, int, int]]:
        """``(key, start, end)`` of each non-overlapping name in ``text``."""
        spans = word_spans(text)
        toks = [_word_key(text[a:b]) for a, b in spans]
        out: list[tuple[str, int, int]] = []
        i = 0
        while i < len(toks):
            lengths = self._lengths.get(toks[i])
            matched = 0
            if lengths and (not require_capital or _looks_like_name(text[spans[i][0]])):
                for n in sorted(lengths, reverse=True):
                    if i + n <= len(toks):
                        key = " ".join(t for t in toks[i:i + n] if t)
                        if key in self._keys and not (key in self.standalone
                                                      and heads_a_longer_name(text, spans[i + n - 1][1])):
                            out.append((key, spans[i][0], spans[i + n - 1][1]))
                            matched = n
                            break
            i += matched or 1
        return out


@lru_cache(maxsize=1 << 17)
def _word_key(word: str) -> str:
    """:func:`normalize_entity` of one word, remembered: every word of every chunk is looked up, and
    words repeat (a 20 MB document has ~3.5 M words, a few hundred thousand distinct)."""
    return normalize_entity(word)


def _looks_like_name(first_char: str) -> bool:
    return not first_char.islower()  # upper case, a digit, or a script without case
