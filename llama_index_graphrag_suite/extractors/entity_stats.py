"""Statistical entity recognition (AGRAG Eq. 2-3) and entity-mention matching. Pure Python.

ER(v, t) = count(v, t) / (|t| · log(N + 1)) × log((N + 1) / (df(v) + 1))

with N the number of chunks the statistics were fitted on and df(v) the number of those chunks that
contain the n-gram v. Both factors lie in (0, 1], so ER does too, as the paper requires.

What |t| means decides whether the paper's τ = 0.5 extracts anything:

* ``length_norm="max_count"`` (default): |t| is the count of the most frequent candidate n-gram of
  the chunk (classic max-TF normalisation). On hotpotqa_train100, τ = 0.5 then keeps 2.8
  entities per chunk on average, τ = 0.3 keeps 10.4 (``python benchmarks/entity_stats.py CORPUS``).
* ``length_norm="tokens"``: |t| is the chunk's length in word tokens, the literal reading. The
  median chunk's largest ER is then 0.036 on that corpus, so τ = 0.5 extracts nothing; use it with
  a small τ.

The authors' code instead thresholds sklearn's L2-normalised TF-IDF rows; see
``notes/reference-implementations.md`` §1.2. We keep the paper's formula and document the reading.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Literal, Mapping

from ..text import analyze, ngram_candidates, word_spans

LengthNorm = Literal["max_count", "tokens"]


@dataclass
class ScoredEntity:
    key: str  # normalised name, the entity's identity
    surface: str  # the most frequent surface form in the chunk
    score: float  # ER(v, t)
    count: int  # occurrences in the chunk


@dataclass
class EntityStatistics:
    """Document frequencies of candidate n-grams over the chunks of a corpus.

    ``fit`` adds chunks, ``forget`` removes chunks that were fitted before (used on delete), so the
    statistics always describe exactly the chunks currently in the corpus.
    """

    max_ngram: int = 3
    n_chunks: int = 0
    doc_freq: Mapping[str, int] = field(default_factory=Counter)
    """A Counter, or a loaded version's read-only columns (``index/ngram_columns.py``) until a change edits them."""
    changed: set[str] = field(default_factory=set, repr=False, compare=False)
    """n-grams whose frequency changed since the index last saved these statistics (it saves only those)."""
    saved: bool = field(default=False, repr=False, compare=False)
    """Whether these statistics were read from, or written as, a saved version (else a save writes them whole)."""

    def counts(self, text: str) -> tuple[Counter, dict[str, str], int]:
        """Candidate counts, most frequent surface form per key, and the number of word tokens."""
        counts: Counter = Counter()
        best: dict[str, str] = {}  # key -> its surface while only one surface form has been seen
        variants: dict[str, Counter] = {}  # keys written in two or more ways: surface counts
        for key, surface in ngram_candidates(text, self.max_ngram):
            first = best.setdefault(key, surface)
            if surface != first or key in variants:
                # Counted only when a key has a second form; until then every occurrence was ``first``.
                forms = variants.get(key)
                if forms is None:
                    forms = variants[key] = Counter({first: counts[key]})
                forms[surface] += 1
            counts[key] += 1
        for key, forms in variants.items():
            best[key] = forms.most_common(1)[0][0]  # ties: the form seen first, as Counter orders them
        return counts, best, len(word_spans(text))

    def _counts(self) -> Counter:
        """The frequencies as a Counter a change can edit (a loaded version's columns become one here)."""
        if not isinstance(self.doc_freq, Counter):
            self.doc_freq = self.doc_freq.to_counter() if hasattr(self.doc_freq, "to_counter") else Counter(self.doc_freq)
        return self.doc_freq

    def fit(self, texts: Iterable[str]) -> None:
        counts = self._counts()
        for text in texts:
            keys = self._keys(text)
            self.n_chunks += 1
            counts.update(keys)
            self.changed.update(keys)

    def add_counts(self, n_chunks: int, doc_freq: dict[str, int]) -> None:
        """Add statistics fitted elsewhere (a shard of a distributed build)."""
        self.n_chunks += n_chunks
        self._counts().update(doc_freq)
        self.changed.update(doc_freq)

    def forget(self, texts: Iterable[str]) -> None:
        counts = self._counts()
        for text in texts:
            keys = self._keys(text)
            self.n_chunks = max(0, self.n_chunks - 1)
            counts.subtract(keys)
            self.changed.update(keys)
        self.doc_freq = +counts  # drop zero and negative counts

    def _keys(self, text: str) -> set[str]:
        return {key for key, _ in ngram_candidates(text, self.max_ngram)}

    def score(self, text: str, length_norm: LengthNorm = "max_count") -> list[ScoredEntity]:
        """ER of every candidate n-gram of ``text`` (Eq. 2), highest first."""
        counts, surfaces, n_tokens = self.counts(text)
        if not counts:
            return []
        n = max(self.n_chunks, 1)
        log_n = math.log(n + 1)
        length = max(counts.values()) if length_norm == "max_count" else max(n_tokens, 1)
        scored = []
        for key, count in counts.items():
            # A chunk scored before it was fitted still contains its own n-grams: df >= 1.
            df = max(self.doc_freq.get(key, 0), 1)
            idf = math.log((n + 1) / (df + 1))
            scored.append(ScoredEntity(key, surfaces[key], count / (length * log_n) * idf, count))
        scored.sort(key=lambda e: (-e.score, e.key))
        return scored

    def extract(self, text: str, threshold: float, length_norm: LengthNorm = "max_count") -> list[ScoredEntity]:
        """The entity set V_t = {v | ER(v, t) > τ} (Eq. 3)."""
        return [e for e in self.score(text, length_norm) if e.score > threshold]

    def to_dict(self) -> dict:
        return {"max_ngram": self.max_ngram, "n_chunks": self.n_chunks, "doc_freq": dict(self.doc_freq.items())}

    @classmethod
    def from_dict(cls, data: dict) -> "EntityStatistics":
        return cls(int(data["max_ngram"]), int(data["n_chunks"]), Counter(data["doc_freq"]))


@dataclass(frozen=True)
class Mention:
    key: str
    start: int  # character offsets in the text that was matched
    end: int
    sentence: int  # index of the sentence the mention is in


@lru_cache(maxsize=4)
def _first_words(vocabulary: frozenset[str]) -> frozenset[str]:
    """The words names of ``vocabulary`` begin with. One build matches one vocabulary against every chunk,
    so this is computed once per vocabulary (a frozenset caches its hash)."""
    return frozenset(key.partition(" ")[0] for key in vocabulary)


def find_mentions(text: str, vocabulary: set[str] | frozenset[str], max_ngram: int) -> list[Mention]:
    """Occurrences of vocabulary entities in ``text``, longest match first, never overlapping.

    Matching works on normalised word sequences inside phrase segments, the same units the n-gram
    candidates come from, so an entity extracted anywhere in the corpus is found wherever it is
    written, whatever its case or punctuation ("Lester Smith's" finds "lester smith").
    """
    mentions: list[Mention] = []
    starts = _first_words(vocabulary) if isinstance(vocabulary, frozenset) else None
    for s_idx, _, spans, keys in analyze(text):
        i = 0
        while i < len(spans):
            matched = 0
            if starts is not None and keys[i] and keys[i].partition(" ")[0] not in starts:
                i += 1  # no name begins with this word: skip the n-gram joins (most words of a text)
                continue
            for n in range(min(max_ngram, len(spans) - i), 0, -1):
                key = " ".join(k for k in keys[i : i + n] if k)
                if key in vocabulary:
                    mentions.append(Mention(key, spans[i][0], spans[i + n - 1][1], s_idx))
                    matched = n
                    break
            i += matched or 1
    return mentions
