"""Which one-word names that NER found are not names, judged from how the whole corpus writes each word.

spaCy's small English model labels many capitalised words that are not names: a heading word (``Blood``
ORG in a clinical guideline), a figure label (``Fig`` PERSON), a title (``Duke`` in "Duke of York", ``King``
in "King George"). Left in, each becomes an entity linked to every chunk that writes it, joining things that
have nothing in common (every duke, every king). Three readings of the corpus, each counted over all the
texts of a build, drop such a word:

* **a common word**: written in lower case more often than capitalised (``blood``, ``types``), or, given
  ``MIN_WRITINGS`` lower-case writings, more often than capitalised where the capital is the writer's choice, not
  forced by the start of a sentence, a line or a quotation (a novel's ``Well``, ``Yes`` and ``Pray``, which open
  many lines of dialogue and are written in lower case inside them);
* **a label**: mostly followed by a number or by "of" (``Fig. 3``, ``Op. 27``; ``Duke of York``);
* **the head of longer names**: mostly followed by "of", a number or another capitalised word, and also
  written in lower case now and then (``King George``, ``Prince Frederick``, ``World War``, ``North
  Carolina``; "king", "prince", "world" are common nouns too). A place or a given name that heads longer
  names (``Ohio State``, ``William Henry``) is never written in lower case, and stays;
* **the head of a fixed phrase**: mostly followed by one and the same lower-case word (not a stop word), and
  also written in lower case now and then: a heading or a term cut short (``Key`` of the 156 "Key points" of a
  clinical guideline, ``Lumbar`` of "Lumbar puncture", ``Supportive`` of "Supportive care"). A name that opens
  a fixed phrase (``Hodgkin lymphoma``, ``Lynch syndrome``, ``Vero cells``) is never (or almost never) written
  in lower case, and stays.

A mention of more words is judged by its first word where a sentence, a line or a quotation opens with it: a common
word there is the sentence's, not the name's ("Sometimes Holmes", "'Perhaps you": :func:`cut_sentence_openers`).

Three more rules judge a mention whatever the corpus writes: a mention written in lower case that NER labelled in at
most half of its writings is a common noun (:func:`common_nouns_among`), one that opens with a subject pronoun is
a clause (:func:`opens_like_a_clause`), and one that points to a part of its own document ("Table 1", "Fig. 2b",
"CHAPTER IV") is a reference, not a name (:func:`names_a_part_of_a_document`).

Labels and heads are words written as one capital and lower-case letters (the regular expressions below), so a
code in capitals (``BRCA1``, ``MTCT of HIV``) is never one. The label and head readings need ``MIN_WRITINGS``
writings before they can drop a word.

A mention of one word behind an article (``The King``, a film) is judged by the two head readings only, since "The
Times" names a newspaper though "times" is a common word; one behind marks without letters (``• Flow``) by all four.
A document's title of one word that the head readings judge (the film ``Princess``) stays the document's entity,
and the gazetteer finds it only where the word stands alone (:func:`~.gazetteer.heads_a_longer_name`), not in
"Princess Anne".
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Iterable

from ..text import HONORIFICS, QUOTE_MARKS, STOP_WORDS, capital_is_forced, word_spans, words
from .entity_resolution import PERSON_TYPES, EntityMention, mention_from
from .gazetteer import HEADS_A_NAME

__all__ = ["BARE_ARTICLES", "MIN_WRITINGS", "NameWordCounts", "can_name_something", "common_nouns_among",
           "cut_sentence_openers", "names_a_part_of_a_document", "opens_like_a_clause", "the_word_it_names",
           "words_that_are_not_names", "written_in_lower_case"]

MIN_WRITINGS = 3  # writings of a kind a word needs before that kind can drop it
LOWER_SHARE = 0.1  # lower-case writings (a share of the capitalised ones) that make a word also a common noun
_LABEL = re.compile(r"\b([A-Z][a-z]+)\.?\s(?:\(?\d|of\b)")  # "Fig. 3", "Table 2"; "Duke of" (a title)
# the same, or followed on the same line by another capitalised word: "King George", "Princess Maria"
_HEAD = re.compile(rf"\b([A-Z][a-z]+){HEADS_A_NAME}")
# followed on the same line by a lower-case word: "Key points", "Lumbar puncture"
_PHRASE = re.compile(r"\b([A-Z][a-z]+)[ \t]+([a-z]+)\b")


def words_that_are_not_names(texts: Iterable[str], singles: Iterable[str]) -> set[str]:
    """The one-word names in ``singles`` (as written: ``"Blood"``) that ``texts`` show are not names."""
    return NameWordCounts(texts).not_names(singles)


class NameWordCounts:
    """How a corpus writes its words: every writing of each word form, and the writings of capitalised words as a
    label, as the head of a longer name, and before each lower-case word. An index keeps one for its chunks and
    adds or takes back texts as documents come and go, so an insert judges its names against the whole corpus
    without reading it again."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self.writings: Counter = Counter()
        # writings capitalised only where any word is (capital_is_forced); a word in capitals ("CNS", "SHE") or
        # with a capital inside ("McCarthy") chose its capitals, wherever it stands
        self.forced: Counter = Counter()
        self.labelled: Counter = Counter()
        self.heading: Counter = Counter()
        self.followers: dict[str, Counter] = {}  # capitalised word -> the lower-case words written after it
        self.add(texts)

    def add(self, texts: Iterable[str], sign: int = 1) -> None:
        """Count ``texts`` in (``sign`` 1) or out (-1, a delete or an undone insert)."""
        counters = (self.writings, self.forced, self.labelled, self.heading)
        for text in texts:
            spans = word_spans(text)  # one pass of the word pattern gives the words and where each stands
            tokens = [text[a:b] for a, b in spans]
            forced = [w for (a, _), w in zip(spans, tokens) if _one_capital(w) and capital_is_forced(text, a)]
            found = (tokens, forced, [m.group(1) for m in _LABEL.finditer(text)],
                     [m.group(1) for m in _HEAD.finditer(text)])
            for counter, items in zip(counters, found):
                if sign > 0:
                    counter.update(items)
                else:
                    counter.subtract(items)
            for m in _PHRASE.finditer(text):
                if m.group(2) not in STOP_WORDS:
                    self.followers.setdefault(m.group(1), Counter())[m.group(2)] += sign
        if sign < 0:
            for counter in (*counters, *self.followers.values()):
                for w in [w for w, n in counter.items() if n <= 0]:
                    del counter[w]
            for w in [w for w, after in self.followers.items() if not after]:
                del self.followers[w]

    def not_names(self, singles: Iterable[str]) -> set[str]:
        """The one-word names in ``singles`` that these counts show are not names (see the module doc)."""
        singles = {w for w in singles if w and " " not in w.strip()}
        common = {w for w in singles if self.is_a_common_word(w)}
        labels = {w for w in singles if self._mostly(self.labelled[w], w)}
        return common | labels | self.heads_of_longer_names(singles)

    def is_a_common_word(self, word: str) -> bool:
        """The capitalised ``word`` is a common word (the first reading of the module doc): written in lower case more
        often than capitalised, or, given ``MIN_WRITINGS`` lower-case writings, more often than capitalised where
        the capital was the writer's choice."""
        lower, capitalised = self.writings[word.lower()], self.writings[word]
        return word != word.lower() and (lower > capitalised or (
            lower >= MIN_WRITINGS and lower > capitalised - self.forced[word]))

    def heads_of_longer_names(self, singles: Iterable[str]) -> set[str]:
        """The words in ``singles`` that are common nouns too and mostly head a longer name or a fixed phrase (the
        last two readings of the module doc): ``King``, ``Princess``, ``Key``."""
        also_lower = {w for w in singles if w and self.writings[w.lower()] >= LOWER_SHARE * self.writings[w]}
        heads = {w for w in also_lower if self._mostly(self.heading[w], w)}
        phrase_heads = {w for w in also_lower
                        if w in self.followers and self._mostly(self.followers[w].most_common(1)[0][1], w)}
        return heads | phrase_heads

    def surfaces_not_names(self, surfaces: Iterable[str]) -> set[str]:
        """The mentions in ``surfaces`` (as written) that name one word these counts show is not a name, and the
        honorifics alone ("Miss"). A surface of one word is judged by every reading. So is one word behind marks
        without letters (``• Flow`` ORG, a bullet of a clinical list). One word behind an article (``The King``, a
        film, whose key ``king`` the gazetteer then found in every "King George" and "King of France": 156 chunks of
        2wiki) is judged only as the head of longer names: "The Times" and "The Sun" are names although "times" and
        "sun" are common words."""
        words = {s: the_word_it_names(s) for s in surfaces}
        plain = self.not_names(w for w, article in words.values() if not article)
        heads = self.heads_of_longer_names(w for w, article in words.values() if article)
        return {s for s, (w, article) in words.items() if w in (heads if article else plain)} | {
            s for s in surfaces if _is_an_honorific(s)}

    def _mostly(self, n: int, word: str) -> bool:
        """``n`` writings of a kind are most of the word's writings, and enough of them to judge."""
        return n >= MIN_WRITINGS and 2 * n > self.writings[word]


def _one_capital(word: str) -> bool:
    return word[0].isupper() and not any(ch.isupper() for ch in word[1:])


def _is_an_honorific(surface: str) -> bool:
    """An honorific alone names no one: "Miss" PERSON where a novel's line break cut "Miss\nHunter" (then found in
    56 chunks of a Sherlock Holmes book), "Dr."; a code in capitals ("DR", "MR" in research articles) is none."""
    letters = "".join(ch for ch in surface if ch.isalpha())
    return letters.lower() in HONORIFICS and not letters.isupper()


def the_word_it_names(surface: str) -> tuple[str, bool]:
    """The one word a mention names, as the counts tokenise it (:func:`~..text.words`), and whether an article stands
    before it: ``("King", True)`` for "The King", ``("Flow", False)`` for "• Flow", ``("How", False)`` for "'How" (a
    novel's dialogue in single quotes: 'How odd,' said he), ``("", False)`` for a name of more words or an
    abbreviation ("Mass."). A dot ends a quoted utterance, not an abbreviation, when the surface opens with a quote
    mark: ``("Yes", False)`` for "'Yes." (then found in 96 chunks of a Sherlock Holmes book)."""
    tokens = [t for t in surface.split() if any(ch.isalnum() for ch in t)]  # not bullets, dashes, quotes alone
    first = words(tokens[0]) if len(tokens) == 2 else []
    article = len(first) == 1 and first[0].lower() in BARE_ARTICLES
    found = words(tokens[-1]) if len(tokens) == 1 or article else []
    if len(found) != 1 or (tokens[-1].endswith(".") and surface.lstrip()[:1] not in QUOTE_MARKS):
        # an abbreviation ("Mass." a state, "mass" a common noun); "'Yes." is a line of dialogue
        return "", False
    return found[0], article


# ---------------------------------------------------------------- mentions, whatever the corpus writes

# a "name" opening with a subject pronoun is a clause NER misread ("|I am tired" PERSON in a novel's dialogue)
_PRONOUN_START = frozenset({"i", "he", "she", "we", "they", "you"})
_TITLED_TYPES = frozenset({"WORK_OF_ART", "EVENT", "LAW", "PRODUCT"})  # a title may be any clause ("I, Robot")
_FIRST_WORD = re.compile(r"[^\w]*(\w+)")


def written_in_lower_case(surface: str) -> bool:
    """Every cased letter is lower case (a script without capitals, Chinese, never is)."""
    letters = [ch for ch in surface if ch.isalpha()]
    return any(ch.islower() for ch in letters) and not any(ch.isupper() for ch in letters)


def opens_like_a_clause(surface: str, label: str) -> bool:
    """A mention of two or more words opening with a subject pronoun ("|I am tired", "She said"): a clause NER
    misread, not a name; titled kinds (works, events, laws, products) excepted, whose titles may be clauses."""
    first = _FIRST_WORD.match(surface)
    return (label not in _TITLED_TYPES and first is not None and len(surface.split()) > 1
            and first.group(1).lower() in _PRONOUN_START)


def cut_sentence_openers(mentions: list[list[EntityMention]], texts: list[str], counts: NameWordCounts,
                         known: dict[str, str]) -> list[list[EntityMention]]:
    """``mentions`` (per text) without the common words that open a sentence, a line or a quotation.

    spaCy runs such a word into the person named after it ("Sometimes Holmes" PERSON, "Tell Mary" in a novel's
    dialogue) or reads a line of dialogue as a name ("'Perhaps you" WORK_OF_ART, "For how long"). A mention of two
    words or more is judged when its first word is capitalised only because of where it stands
    (:func:`~..text.capital_is_forced`) and the corpus writes that word as a common word
    (:meth:`NameWordCounts.is_a_common_word`):

    * a person's mention becomes the person named after the opener when the corpus names that person on their own
      (``known``: key -> type): "Holmes", "Mary". (A "Will Smith" first in a sentence becomes "Smith", which the
      document's resolution joins to "Will Smith" again where it names one Smith.) Other kinds are not cut: an
      organisation's or a work's first word is often its own ("Scientific American", "Never Cry Wolf" first in a
      sentence, where "American" and "Cry Wolf" are names too);
    * any mention is dropped when the words after the opener hold a function word and no capital: a clause
      ("Perhaps you", "How on earth", "Dear me");
    * else it stays as NER found it ("New Zealand", "Black Swan Hotel" first in a sentence).

    ``known`` holds the names found elsewhere (mentions of the same texts, earlier inserts), each with the type most
    of its mentions have (:func:`~.entity_resolution.majority_types`). The same name written
    where its capital is the writer's choice ("met Sometimes Holmes") is never judged, nor is an article ("The
    Times"): the canonical key leaves it out already.
    """
    out = []
    for text, ms in zip(texts, mentions):
        kept = []
        for m in ms:
            spans = word_spans(m.surface)
            first = m.surface[spans[0][0]:spans[0][1]] if spans else ""
            if (len(spans) < 2 or not _one_capital(first) or first.lower() in BARE_ARTICLES
                    or not capital_is_forced(text, m.start + spans[0][0]) or not counts.is_a_common_word(first)):
                kept.append(m)
                continue
            after = [m.surface[a:b] for a, b in spans[1:]]
            if not any(w[0].isupper() for w in after) and any(w.lower() in STOP_WORDS for w in after):
                continue  # a clause: "Perhaps you"
            rest = mention_from(m.surface[spans[1][0]:], m.type, m.start + spans[1][0], m.end) \
                if m.type in PERSON_TYPES else None
            kept.append(rest if rest is not None and known.get(rest.key) in PERSON_TYPES else m)
        out.append(kept)
    return out


# The parts a document numbers for its reader: tables, figures, chapters, sections, appendices; of books and plays
# too (a novel's "BOOK II", a play's "ACT I"). A closed list: the words are few and the same in every domain.
_PART_WORDS = ("table|fig|figure|chapter|section|appendix|box|panel|part|page|plate|scheme|equation|eq|footnote"
               "|book|volume|vol|act|scene|canto")
_NUMBER_WORDS = ("one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen"
                 "|sixteen|seventeen|eighteen|nineteen|twenty")
_PART_NUMBER = rf"(?:s?\d+[a-z]?(?: \d+)*|[ivxlc]+|[a-z]|{_NUMBER_WORDS})"  # 1, 2b, s1, 3 2 (3.2), iv, b, one
_DOCUMENT_PART = re.compile(rf"(?:(?:supplementary|additional|extended data) )?(?:{_PART_WORDS})s? {_PART_NUMBER}"
                            rf"(?: (?:and|to|or) {_PART_NUMBER})*(?: [a-z])?")

BARE_ARTICLES = frozenset({"the", "a", "an"})
_DANGLING_ENDS = frozenset({"of", "the", "and", "for"})  # a name ending in one of these was cut off ("Duke of")


def can_name_something(key: str) -> bool:
    """Whether an entity key NER found can be a name at all. Not: an article alone (2wiki's `the"` ORG linked 1,717
    chunks via every "The"), a bare number (`2010` EVENT, 144 chunks of 2wiki), a name cut off before its head
    (`Duke of`, 118), a part of the document (`Table 1` LAW, 49 chunks of 44 COVID articles; a novel's
    `CHAPTER I`)."""
    return (sum(ch.isalnum() for ch in key) >= 2 and key not in BARE_ARTICLES and any(ch.isalpha() for ch in key)
            and key.rsplit(" ", 1)[-1] not in _DANGLING_ENDS and not names_a_part_of_a_document(key))


def names_a_part_of_a_document(key: str) -> bool:
    """The entity key (lower case, as :func:`~.gazetteer.canonical_key` writes it) points to a numbered part of its
    own document: ``table 1``, ``fig 2b``, ``supplementary table s1``, ``chapter iv``, ``appendix b``, ``figs 2 and
    3``. Every document has its own Table 1 and its own Chapter I, so such a key names a different thing in each:
    as an entity it would join the tables of unrelated articles (``table 1`` linked 49 chunks of 44 research
    articles in covidqa_dev) or the first chapters of every novel of a corpus. A document titled so ("Chapter One",
    an album) stays an entity by its title, which this rule does not judge."""
    return _DOCUMENT_PART.fullmatch(key) is not None


def common_nouns_among(mentions: Iterable[Iterable[EntityMention]], texts: list[str]) -> set[str]:
    """The surfaces of the mentions written in lower case that NER labelled in at most half of their writings in
    ``texts``: common nouns. English names are capitalised, and spaCy's small model labels a common noun now and
    then ("lymph node" PERSON and "vagina" GPE in clinical guidelines, "et al." GPE in research articles, "earl"
    PERSON, "the inn" GPE, a novel's "never--" ORG, counted as "never"); a name written in lower case (the band
    "f(x)") it labels nearly every time. The one-word rules above judge a word by its capitalised writings and never
    see these. Writings are counted as substrings (one pass of ``str.count`` per surface over the texts), so a short
    word written inside others counts more often, which only makes the rule stricter."""
    labelled = Counter(m.surface for ms in mentions for m in ms if written_in_lower_case(m.surface))
    if not labelled:
        return set()
    corpus = "\n".join(texts)
    return {surface for surface, n in labelled.items()
            if 2 * n <= corpus.count(surface.strip(_TRAILING_MARKS) or surface)}


# marks a span of NER may carry around a word, which the word's writings are counted without: a novel's broken-off
# "never--" (ORG) and "that--" are the words "never" and "that"
_TRAILING_MARKS = " -–—'\"‘’“”.,;:!?"
