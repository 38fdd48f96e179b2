"""A corpus's own terms, LLM-free: noun phrases read off spaCy's dependency parse, kept when salient.

Named entities make a good graph of Wikipedia, and a nearly empty one of clinical guidelines or research
articles, whose subjects are terms ("basal cell carcinoma", "viral load", "spike protein") that no NER
model labels. The NER extractor therefore also reads noun phrases from the parse it already runs (no
tagger: the parser's labels say which words head a nominal and which modify it), and keeps a phrase as a
``TERM`` entity only when the corpus says it is one:

* **form** (:func:`noun_phrases`): a nominal head (subject, object, object of a preposition, attribute,
  apposition, or a conjunct of one) with its compound and simple adjectival modifiers; leading stop words,
  numbers and punctuation dropped; at least one word of three letters; at most ``MAX_TERM_WORDS`` words;
* **salience** (:func:`salient_terms`): written in at least ``min_chunks`` chunks (a phrase seen once joins
  nothing) and in at most ``max_chunks`` (a phrase such as "side effects" in a clinical guideline is in so
  many chunks that it is a hub, not a topic). The ceilings are computed from the corpus at build time:
  :func:`hub_ceiling` (a share of the chunks, with a floor) for phrases, the lower :func:`word_ceiling`
  (√chunks) for single words;
* **not a name's or a number's**: no part of a span spaCy's NER labelled (dates, quantities, and the names
  themselves, which are entities of their own).

A one-word term is not required to be a noun wherever written. A rule that dropped a word the parse uses as a noun
(a nominal head or compound) in fewer than a third of the chunks writing it ("lived", "wait", "amiable", each a term
of 52 of the 2,711 chunks of benchmarks/datasets/four_books_check; "subsequent", "asymptomatic", "pancreatic" in the
domain sets) was measured at 9909b39 (``benchmarks/domain_tuning.py build rank check``): every graph method's
shipped recall@5 fell, by 0.1-0.2 on graphrag_bench_medical and 0.1-0.7 on covidqa_dev (A2RAG 79.2 -> 78.8, below
hybrid + 1), while their own rankings moved by at most 0.5: the guard reads how much of a question links to the
graph, and questions are written in the adjectives and verbs of their passages.

A term is linked to every chunk that writes it (case-insensitively; :class:`~.gazetteer.NameMatcher` with
``require_capital=False``), not only to the chunks whose parse marked it.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Iterable

from ..text import STOP_WORDS, join_wrapped_lines, normalize_entity, word_spans
from .gazetteer import _word_key

TERM_TYPE = "TERM"
MAX_TERM_WORDS = 4
_WORD_OR_STOP = re.compile(r"[^\W\d_][\w'’-]*|\d[\w.]*|[.!?]")
# dependency labels of a token that heads a nominal phrase, and of the modifiers kept in front of it
NOMINAL_HEADS = frozenset({"nsubj", "nsubjpass", "dobj", "pobj", "attr", "appos", "dative", "oprd", "ROOT"})
MODIFIERS = frozenset({"compound", "amod", "nmod"})
HUB_SHARE = 0.05  # a term in more than 5 % of the chunks ...
HUB_FLOOR = 20  # ... and in more than 20 chunks is a hub


def hub_ceiling(n_chunks: int, share: float = HUB_SHARE, floor: int = HUB_FLOOR) -> int:
    """Most chunks a salient term of two or more words may be written in: ``max(floor, share · n_chunks)``."""
    return max(floor, int(share * n_chunks))


def word_ceiling(n_chunks: int, floor: int = HUB_FLOOR // 2) -> int:
    """Most chunks a one-word term may be written in: ``max(floor, √n_chunks)``. A single word is a term only
    when it is about as rare as a name ("epidermis", "melanin"); "song", "actor" or "cases", written in a few
    percent of the chunks, describe many things and would join unrelated passages."""
    return max(floor, int(math.sqrt(n_chunks)))


NAME_RICH = 12.0  # capitalised mid-sentence words per 100 words above which a corpus is written in names


def capitalised_per_100_words(texts: Iterable[str]) -> float:
    """Words written with a capital inside a sentence (not first in it, not all capitals), per 100 words.

    A cheap, model-free reading of how much a corpus is written in names: 24-28 on the three Wikipedia
    multi-hop sets, 3.1 on clinical guidelines (graphrag_bench_medical), 8.1 on COVID research articles
    (measured on the indexes' chunks, each headed by its title line).
    """
    capitalised, total = capitalised_word_counts(texts)
    return 100.0 * capitalised / total if total else 0.0


def capitalised_word_counts(texts: Iterable[str]) -> tuple[int, int]:
    """``(capitalised words inside a sentence, words)``: :func:`capitalised_per_100_words` as counts, which an index
    adds up insert by insert (and takes back on delete)."""
    capitalised = total = 0
    for text in texts:
        for line in join_wrapped_lines(text).split("\n"):  # a wrapped line's first word starts no sentence
            sentence_start = True
            for word in _WORD_OR_STOP.findall(line):
                if word in ".!?":
                    sentence_start = True
                    continue
                if word[0].isalpha():
                    total += 1
                    capitalised += word[0].isupper() and not sentence_start and not word.isupper()
                sentence_start = False
    return capitalised, total


# Words an index must hold before its "auto" decision on terms is final. Read off fewer, the density of a few
# documents can fall on the wrong side of NAME_RICH: of 1,000 random draws of documents up to 200 words, 18 % of
# covidqa_dev's and 4 % of musique_train100's decided otherwise than the whole corpus; from 10,000 words none of
# the five shared sets did (benchmarks/name_density_sample.py).
TERMS_DECIDED_AFTER_WORDS = 10_000


def terms_wanted(texts: Iterable[str], threshold: float = NAME_RICH) -> tuple[bool, float]:
    """``entities``' ``terms="auto"``: ``(add terms?, capitalised words per 100)``. A corpus written in names
    (Wikipedia: people, places, works) has its graph in them, and common-noun phrases there only join
    passages that share a topic word (measured with benchmarks/domain_tuning.py, ``--index-config
    '{"terms": true}'`` against ``'{"terms": false}'``: A2RAG's own ranking to depth 20 on hotpotqa_train100,
    recall@5 85.0 with terms, 89.0 without); a corpus written in common nouns (guidelines, papers, manuals) has few names, and its
    subjects are its terms."""
    density = capitalised_per_100_words(texts)
    return density < threshold, density


def _content_word(token) -> bool:
    return token.is_alpha and token.lower_ not in STOP_WORDS and not token.like_num


def _is_head(token) -> bool:
    dep = token.dep_
    if dep == "conj":  # "fever and cough": cough is a conjunct of a nominal head
        return token.head.dep_ in NOMINAL_HEADS and token.head.dep_ != "ROOT"
    if dep == "ROOT":  # a heading or fragment ("Skin lesions"), not an imperative ("Keep reading"): the
        # root must carry a nominal modifier, since without a tagger a bare root is as likely a verb
        return any(c.dep_ in ("det", "compound", "amod") and c.i < token.i for c in token.children) and \
            not any(c.dep_ in ("nsubj", "nsubjpass", "aux", "auxpass", "dobj", "xcomp") for c in token.children)
    return dep in NOMINAL_HEADS


def noun_phrases(doc) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the noun phrases of a parsed spaCy ``Doc`` (see the module doc)."""
    spans = []
    for token in doc:
        if not _is_head(token) or not _content_word(token) or len(token) < 3:
            continue
        # the contiguous run of modifiers directly left of the head, each without children of its own
        # except further compounds (so "most common type" gives "type", "basal cell carcinoma" stays whole)
        left = token.i
        while left > token.sent.start:
            prev = doc[left - 1]
            if prev.head.i < left or prev.head.i > token.i or prev.dep_ not in MODIFIERS:
                break
            if prev.dep_ == "amod" and any(c.dep_ != "compound" for c in prev.children):
                break
            left -= 1
        while left < token.i and not _content_word(doc[left]):  # no leading stop word or number
            left += 1
        if token.i - left + 1 > MAX_TERM_WORDS:
            left = token.i - MAX_TERM_WORDS + 1
        if any(not (t.is_alpha or t.text in "-/") for t in doc[left:token.i + 1]):
            continue  # "covid-19"-like tokens are left to the NER and n-gram extractors
        spans.append((doc[left].idx, token.idx + len(token)))
    return spans


def outside_entities(spans: list[tuple[int, int]], doc) -> list[tuple[int, int]]:
    """The spans that overlap no entity spaCy's NER marked, of any label (dates and numbers are no terms;
    names are entities already)."""
    return outside_spans(spans, [(e.start_char, e.end_char) for e in doc.ents])


def outside_spans(spans: list[tuple[int, int]], taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The character spans of ``spans`` that overlap none of ``taken``."""
    return [(a, b) for a, b in spans if not any(a < e and s < b for s, e in taken)]


def phrase_keys(text: str, span: tuple[int, int]) -> list[str]:
    """Keys of a noun phrase and of its parts of two or more words ("high viral load" -> also "viral load";
    a misparsed "viral load peaks" -> also "viral load"): the corpus's counts decide which are terms."""
    words_ = text[span[0]:span[1]].split()
    if len(words_) == 1:
        return [k for k in (term_key(words_[0]),) if k]
    parts = {" ".join(words_[i:j]) for i in range(len(words_)) for j in range(i + 2, len(words_) + 1)}
    return [k for k in map(term_key, parts) if k]


def find_terms(text: str, keys: set[str]) -> list[tuple[str, int, int]]:
    """``(key, start, end)`` of every written occurrence of a known term key, in any case; nested ones
    too ("viral load" inside "high viral load"), since each is a term of its own."""
    spans = word_spans(text)
    toks = [_word_key(text[a:b]) for a, b in spans]  # the name matcher's memoised per-word key
    out = []
    for i in range(len(toks)):
        for n in range(1, min(MAX_TERM_WORDS, len(toks) - i) + 1):
            key = " ".join(t for t in toks[i:i + n] if t)
            if key in keys:
                out.append((key, spans[i][0], spans[i + n - 1][1]))
    return out


def terms_in(texts: Iterable[str], keys: set[str]) -> Iterable[set[str]]:
    """For each text, the term keys of ``keys`` it writes (an insert counts the chunks indexed before it)."""
    return ({key for key, _, _ in find_terms(text, keys)} for text in texts)


def term_key(surface: str) -> str:
    """The entity key of a term (the same normalisation as every other entity key)."""
    return normalize_entity(surface)


def salient_terms(chunk_terms: Iterable[Iterable[str]], min_chunks: int, max_chunks: int,
                  max_chunks_one_word: int | None = None) -> set[str]:
    """Term keys written in ``min_chunks``..``max_chunks`` of the chunks (each chunk's keys counted once); one-word
    keys at most in ``max_chunks_one_word`` (default: ``max_chunks``)."""
    df: Counter = Counter()
    for keys in chunk_terms:
        df.update(set(keys))
    one_word = max_chunks if max_chunks_one_word is None else max_chunks_one_word
    return {k for k, n in df.items() if min_chunks <= n <= (max_chunks if " " in k else one_word)}
