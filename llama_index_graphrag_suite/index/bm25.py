"""BM25 over chunks, kept as term counts that an insert extends and a save stores, never re-tokenised.

The statistics are a sparse chunk x term matrix of term counts (scipy.sparse) plus an append-only vocabulary.
Scores are computed per query from the query terms' columns, with the BM25 formula bm25s uses by default
(Lucene's IDF ``log(1 + (N - df + 0.5) / (df + 0.5))``, term frequency ``tf / (tf + k1 (1 - b + b |d| / avg|d|))``,
a query term counted as often as it occurs). Because nothing is precomputed from N or the average length, an
insert only appends the new chunks' rows (:meth:`BM25Table.updated`), a delete only drops rows, and the scores
are always those of a table built from scratch over the current chunks (``tests/index/test_bm25.py``).

Each chunk's row (term ids and counts) is saved with the chunk (``tables.py``) and the vocabulary as its own
append-only table, so a load assembles the matrix from arrays instead of tokenising every chunk again.
"""

from __future__ import annotations

from typing import Callable, Iterable, Sequence

import numpy as np
import scipy.sparse as sp

from ..text import STOP_WORDS, normalize_entity, words


def bm25_tokens(text: str) -> list[str]:
    """Lower-cased word tokens without stop words (no stemming: names must match as written)."""
    out = []
    for w in words(text):
        key = normalize_entity(w)
        for part in key.split():
            if part not in STOP_WORDS:
                out.append(part)
    return out


class Vocabulary:
    """Term -> id, ids given in order of first sight and never taken back (so saved chunk rows stay valid)."""

    def __init__(self, terms: Iterable[str] = ()) -> None:
        self.terms: list[str] = []
        self._id: dict[str, int] = {}
        self.saved: int | None = None
        """How many leading terms a saved version holds (``tables.py``); None: none known, a save writes all."""
        for t in terms:
            self.add(t)

    @classmethod
    def of(cls, terms: list[str]) -> "Vocabulary":
        """The vocabulary of ``terms`` in order (a saved one: each term once), built in one pass."""
        vocab = cls()
        vocab._id = dict(zip(terms, range(len(terms))))
        if len(vocab._id) != len(terms):  # a term twice: keep the first id of each, as add() would
            return cls(terms)
        vocab.terms = list(terms)
        return vocab

    def __len__(self) -> int:
        return len(self.terms)

    def get(self, term: str) -> int | None:
        return self._id.get(term)

    def add(self, term: str) -> int:
        tid = self._id.get(term)
        if tid is None:
            tid = self._id[term] = len(self.terms)
            self.terms.append(term)
        return tid


def term_row(vocab: Vocabulary, text: str) -> tuple[np.ndarray, np.ndarray]:
    """The chunk's BM25 row: sorted term ids and their counts (new terms are added to ``vocab``)."""
    ids = np.fromiter((vocab.add(t) for t in bm25_tokens(text)), np.int64)
    if not ids.size:
        return np.zeros(0, np.int32), np.zeros(0, np.int32)
    terms, counts = np.unique(ids, return_counts=True)
    return terms.astype(np.int32), counts.astype(np.int32)


def rows_matrix(rows: Sequence[tuple[np.ndarray, np.ndarray]], n_terms: int) -> sp.csr_matrix:
    """A CSR matrix (float32 counts) of chunk rows given as (term ids, counts)."""
    lengths = np.fromiter((len(t) for t, _ in rows), np.int64, len(rows))
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    indices = np.concatenate([t for t, _ in rows]) if rows else np.zeros(0, np.int32)
    data = np.concatenate([c for _, c in rows]) if rows else np.zeros(0, np.int32)
    return sp.csr_matrix((data.astype(np.float32), indices.astype(np.int32), indptr), shape=(len(rows), n_terms))


class BM25Table:
    """BM25 scores of a query against every chunk, in chunk order (see the module docstring).

    Immutable once made (a query in another thread may be reading it): :meth:`updated` returns a new table.
    ``BM25Table(texts)`` builds one from scratch.
    """

    def __init__(self, texts: Sequence[str] = (), k1: float = 1.5, b: float = 0.75, *,
                 ids: Sequence[str] | None = None, vocab: Vocabulary | None = None,
                 counts: sp.csr_matrix | None = None):
        self.k1, self.b = k1, b
        self.vocab = vocab if vocab is not None else Vocabulary()
        if counts is None:
            counts = rows_matrix([term_row(self.vocab, t) for t in texts], len(self.vocab))
        self.ids: list[str] = list(ids) if ids is not None else [str(i) for i in range(counts.shape[0])]
        if len(self.ids) != counts.shape[0]:
            raise ValueError(f"BM25 table has {counts.shape[0]} rows but {len(self.ids)} chunk ids")
        self.counts = counts.tocsr()  # chunk x term
        self.size = self.counts.shape[0]
        self._lengths = np.asarray(self.counts.sum(axis=1)).ravel().astype(np.float32)
        self._by_term: sp.csc_matrix | None = None  # the columns, made on the first query
        self._norm: np.ndarray | None = None  # each row's length term, made on the first query

    def row(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """Term ids and counts of the chunk at ``position`` (what ``tables.py`` saves with the chunk)."""
        lo, hi = self.counts.indptr[position], self.counts.indptr[position + 1]
        return self.counts.indices[lo:hi].astype(np.int32), self.counts.data[lo:hi].astype(np.int32)

    def updated(self, order: Sequence[str], text_of: Callable[[str], str]) -> "BM25Table":
        """The table for chunks ``order``: rows of chunks it holds are reused, new chunks are tokenised.

        The common case (an insert: ``order`` is this table's chunks then new ones) appends rows; a delete
        selects the surviving rows. The vocabulary is shared and only grows.
        """
        order = list(order)
        n_old = self.size
        if order == self.ids:
            return self
        if order[:n_old] == self.ids:
            new = [term_row(self.vocab, text_of(c)) for c in order[n_old:]]
            counts = sp.vstack([_widen(self.counts, len(self.vocab)), rows_matrix(new, len(self.vocab))], format="csr")
        else:
            position = {c: i for i, c in enumerate(self.ids)}
            rows = np.fromiter((position.get(c, -1) for c in order), np.int64, len(order))
            fresh = {int(i): term_row(self.vocab, text_of(order[i])) for i in np.flatnonzero(rows < 0)}
            kept = _widen(self.counts, len(self.vocab))[rows[rows >= 0]]
            if fresh:  # rebuilt in order: kept rows and new ones interleaved as ``order`` says
                parts, k = [], 0
                for i in range(len(order)):
                    if rows[i] >= 0:
                        parts.append((kept.indices[kept.indptr[k]:kept.indptr[k + 1]],
                                      kept.data[kept.indptr[k]:kept.indptr[k + 1]]))
                        k += 1
                    else:
                        parts.append(fresh[i])
                counts = rows_matrix(parts, len(self.vocab))
            else:
                counts = kept
        return BM25Table(k1=self.k1, b=self.b, ids=order, vocab=self.vocab, counts=counts)

    def rows_with_all(self, groups: Iterable[Iterable[str]]) -> np.ndarray:
        """Sorted positions of the chunks whose text has every term of at least one of ``groups`` (each a name's
        BM25 tokens): a name is written only where all its words are, so this is the smaller set of chunks an
        insert must read to find older mentions of new names (a word like "river" is in most chunks; "lasgel",
        "hollow" and "river" together in few)."""
        cols = self._columns()
        found = []
        for group in groups:
            terms = [self.vocab.get(w) for w in set(group)]
            if not terms or any(t is None or t >= cols.shape[1] for t in terms):
                continue  # a word no chunk has: no chunk writes the name
            postings = sorted((cols.indices[cols.indptr[t]:cols.indptr[t + 1]] for t in terms), key=len)
            rows = postings[0]
            for more in postings[1:]:  # sorted, like rows: look the few rows up in the longer list, not merge them
                if not rows.size or not more.size:
                    rows = rows[:0]
                    break
                at = np.minimum(np.searchsorted(more, rows), more.size - 1)
                rows = rows[more[at] == rows]
            found.append(rows)
        return np.unique(np.concatenate(found)).astype(np.int64) if found else np.zeros(0, np.int64)

    def _columns(self) -> sp.csc_matrix:
        if self._by_term is None:
            self._by_term = self.counts.tocsc()
            self._by_term.sort_indices()  # rows_with_all looks rows up in each term's rows (a no-op when sorted)
        return self._by_term

    def _length_norm(self) -> np.ndarray:
        """Each row's ``k1 · (1 - b + b · length / mean length)``: the same for every query, so made once (four
        passes over a million rows were 3-4 ms of every query at 1,000,000 passages)."""
        if self._norm is None:
            avg = float(self._lengths.mean()) if self.size else 0.0
            self._norm = self.k1 * ((1 - self.b) + self.b * self._lengths / max(avg, 1e-9))
        return self._norm

    def scores(self, query: str) -> np.ndarray:
        if not self.size:
            return np.zeros(0, np.float32)
        q = [t for t in (self.vocab.get(w) for w in bm25_tokens(query)) if t is not None and t < self.counts.shape[1]]
        out = np.zeros(self.size, np.float32)
        if not q:
            return out
        cols, norm = self._columns(), self._length_norm()
        n = self.size
        for t in q:
            lo, hi = cols.indptr[t], cols.indptr[t + 1]
            if lo == hi:
                continue
            rows, tf = cols.indices[lo:hi], cols.data[lo:hi]
            idf = np.float32(np.log(1 + (n - (hi - lo) + 0.5) / ((hi - lo) + 0.5)))
            out[rows] += idf * (tf / (tf + norm[rows]))
        return out


def _widen(counts: sp.csr_matrix, n_terms: int) -> sp.csr_matrix:
    """``counts`` with as many columns as the vocabulary has now (new terms have no counts in old rows)."""
    if counts.shape[1] == n_terms:
        return counts
    return sp.csr_matrix((counts.data, counts.indices, counts.indptr), shape=(counts.shape[0], n_terms))
