"""The node names A2RAG aligns a question's mentions to (``seeds.py``), held as arrays, built with whole-array steps.

A name is an entity key (its node is the entity) or a document title (its nodes are the title's chunks). A dict
of every name, a dict of accent-free aliases and a dict of every word to the names holding it cost about 500 MB at
1,000,000 passages and a minute of Python loops to build; here:

* names: entity names are snapshot rows (their string is the snapshot's node id, already held), the other titles
  one Arrow string array;
* finding a name or a word: a sorted array of their Python ``hash`` values (``searchsorted``), each hit checked
  against the string itself, so a hash collision never returns a wrong position;
* the word index: (word, name) pairs from Arrow's string kernels, deduplicated and grouped as a CSR (bounds and
  name positions), for the names written in plain ASCII with single spaces; the few others (accents, odd
  white space) are split by Python exactly as before.

The mappings answer as the dicts did (:class:`NameLookup` for ``exact``, :class:`WordLookup` for ``by_word``),
position for position: the tests compare them with the plain dicts on small indexes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...text import STOP_WORDS, fold_accents, folded_aliases, is_candidate_token, normalize_entity
from ..shared_graph import entity_rows as snapshot_entity_rows, node_rows as snapshot_rows, table_keys

__all__ = ["HashedStrings", "NameLookup", "Names", "RowLists", "WordLookup", "node_names", "strip_stop", "word_index"]

# Python's str.split() splits an ASCII string at these too; a name holding one (or a run of spaces, or one at
# either end) is split by Python, not by the Arrow kernel that splits at single spaces
_ODD_SPACE = r"[\t\n\r\x0b\x0c\x1c-\x1f]|^ | $|  |^$"


class HashedStrings:
    """Positions of distinct strings by their Python hash: ``find(s)`` is the position whose string is ``s``, or -1.
    ``string_at(p)`` gives position ``p``'s string (to check a hit: two strings may share a hash)."""

    def __init__(self, hashes: np.ndarray, string_at) -> None:
        order = np.argsort(hashes, kind="stable")
        self._hashes = np.ascontiguousarray(hashes[order])
        self._positions = order.astype(np.int32 if hashes.size < 2**31 else np.int64)
        self._string_at = string_at

    def find(self, s: str) -> int:
        h = hash(s)
        lo = int(np.searchsorted(self._hashes, h, "left"))
        hi = int(np.searchsorted(self._hashes, h, "right"))
        for k in range(lo, hi):
            p = int(self._positions[k])
            if self._string_at(p) == s:
                return p
        return -1


def _hashes(strings) -> np.ndarray:
    return np.fromiter(map(hash, strings), np.int64)


def strip_stop(key: str) -> str:
    """``key`` without stop words at either end."""
    words = key.split()
    while words and words[0] in STOP_WORDS:
        words.pop(0)
    while words and words[-1] in STOP_WORDS:
        words.pop()
    return " ".join(words)


class RowLists(Sequence):
    """Lists of node rows as one array and bounds (a list of lists costs about 120 bytes per name; this, 12):
    ``rows[i]`` is the i-th list again, as Python ints."""

    def __init__(self, bounds: np.ndarray, rows: np.ndarray) -> None:
        self._bounds = np.asarray(bounds, np.int64)
        rows = np.asarray(rows, np.int64)
        self._rows = rows.astype(np.int32) if rows.size and rows.max() < 2**31 else rows

    @classmethod
    def of(cls, lists: list[list[int]]) -> "RowLists":
        """From a list of lists."""
        sizes = np.fromiter((len(x) for x in lists), np.int64, len(lists))
        bounds = np.zeros(sizes.size + 1, np.int64)
        np.cumsum(sizes, out=bounds[1:])
        return cls(bounds, np.fromiter((r for x in lists for r in x), np.int64, int(bounds[-1])))

    def __len__(self) -> int:
        return self._bounds.size - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._rows[self._bounds[i]:self._bounds[i + 1]].tolist()


class Names(Sequence):
    """Name strings by position: positions ``0..len(entity_rows)-1`` are entity keys (``node_ids[entity_rows[p]]``),
    the rest the ``titles`` (an Arrow string array) in order."""

    def __init__(self, node_ids: Sequence[str], entity_rows: np.ndarray, titles: pa.Array) -> None:
        self._node_ids, self._entity_rows, self._titles = node_ids, entity_rows, titles
        self._n_entities = int(entity_rows.size)

    def __len__(self) -> int:
        return self._n_entities + len(self._titles)

    def __getitem__(self, p):  # type: ignore[override]
        if isinstance(p, slice):
            return [self[i] for i in range(*p.indices(len(self)))]
        if p < 0:
            p += len(self)
        if not 0 <= p < len(self):
            raise IndexError(p)
        if p < self._n_entities:
            return self._node_ids[self._entity_rows[p]]
        return self._titles[p - self._n_entities].as_py()

    def __iter__(self) -> Iterator[str]:
        yield from (self._node_ids[r] for r in self._entity_rows.tolist())
        yield from self._titles.to_pylist()

    def arrow(self) -> pa.Array:
        """Every name as one Arrow string array, in position order."""
        entity_names = pa.array([self._node_ids[r] for r in self._entity_rows.tolist()], pa.string())
        return pa.concat_arrays([entity_names, self._titles.cast(pa.string())])


class NameLookup(Mapping):
    """name -> position, and accent-free alias -> its name's position (``seeds.SeedIndex.exact``): what
    ``{name: position}`` updated with :func:`~...text.accent_aliases` of the names gave. ``arrow``: the names as
    one Arrow array (:meth:`Names.arrow`), to find the few that are not plain ASCII."""

    def __init__(self, names: Names, arrow: pa.Array) -> None:
        self._names = names
        self._found = HashedStrings(_hashes(names), names.__getitem__)
        # an alias is the folded form of a name that is no name itself and that no other name folds to
        accented = np.asarray(pc.invert(pc.string_is_ascii(arrow)).to_numpy(zero_copy_only=False), bool)
        self._aliases = folded_aliases(((names[p], p) for p in np.flatnonzero(accented).tolist()),
                                       lambda folded: self._found.find(folded) >= 0)

    def get(self, key, default=None):
        if not isinstance(key, str):
            return default
        p = self._found.find(key)
        if p >= 0:
            return p
        return self._aliases.get(key, default)

    def __getitem__(self, key: str) -> int:
        p = self.get(key)
        if p is None:
            raise KeyError(key)
        return p

    def __contains__(self, key: object) -> bool:
        return self.get(key) is not None

    def __len__(self) -> int:
        return len(self._names) + len(self._aliases)

    def __iter__(self) -> Iterator[str]:
        yield from self._names
        yield from self._aliases


class WordLookup(Mapping):
    """word -> sorted positions of the names holding it (``seeds.SeedIndex.by_word``): one CSR over the words kept."""

    def __init__(self, words: pa.Array, bounds: np.ndarray, positions: np.ndarray) -> None:
        self._words, self._bounds, self._positions = words, bounds, positions
        self._found = HashedStrings(_hashes(words.to_pylist()), lambda i: self._words[i].as_py())

    def get(self, word, default=None):
        i = self._found.find(word) if isinstance(word, str) else -1
        if i < 0:
            return default
        return self._positions[self._bounds[i]:self._bounds[i + 1]].tolist()

    def __getitem__(self, word: str) -> list[int]:
        found = self.get(word)
        if found is None:
            raise KeyError(word)
        return found

    def __contains__(self, word: object) -> bool:
        return self.get(word) is not None

    def __len__(self) -> int:
        return len(self._words)

    def __iter__(self) -> Iterator[str]:
        return iter(self._words.to_pylist())


def word_index(names: pa.Array, max_names_per_word: int) -> WordLookup:
    """Per candidate word (``is_candidate_token``) of the names, as written and without accents, the sorted positions
    of the names holding it; a word in more than ``max_names_per_word`` names is left out (it picks no node)."""
    n = len(names)
    plain = pc.and_(pc.string_is_ascii(names), pc.invert(pc.match_substring_regex(names, _ODD_SPACE)))
    plain = np.asarray(plain.fill_null(False).to_numpy(zero_copy_only=False), bool)
    at = np.flatnonzero(plain)
    split = pc.split_pattern(names.take(pa.array(at)), " ")
    owners = [at[np.asarray(pc.list_parent_indices(split).to_numpy(zero_copy_only=False), np.int64)]]
    words = [pc.list_flatten(split)]
    other = np.flatnonzero(~plain).tolist()  # accents or odd spaces: as the plain loop did it
    if other:
        extra_owner, extra_words = [], []
        for p in other:
            name = names[p].as_py()
            for w in set(name.split()) | set(fold_accents(name).split()):
                extra_owner.append(p)
                extra_words.append(w)
        owners.append(np.asarray(extra_owner, np.int64))
        words.append(pa.array(extra_words, pa.string()))
    owner = np.concatenate(owners)
    encoded = pc.dictionary_encode(pa.concat_arrays([w.cast(pa.string()) for w in words]))
    vocab = encoded.dictionary
    code = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
    pairs = sorted_unique(code * max(n, 1) + owner)  # one per (word, name), sorted by word then name
    code, owner = pairs // max(n, 1), pairs % max(n, 1)
    counts = np.bincount(code, minlength=len(vocab))
    candidate = np.fromiter(map(is_candidate_token, vocab.to_pylist()), bool, len(vocab))
    keep = candidate & (counts > 0) & (counts <= max_names_per_word)
    take = keep[code]
    code, owner = code[take], owner[take]
    new_code = np.cumsum(keep) - 1
    kept = np.flatnonzero(keep)
    bounds = np.zeros(kept.size + 1, np.int64)
    np.cumsum(np.bincount(new_code[code], minlength=kept.size), out=bounds[1:])
    positions = owner.astype(np.int32 if n < 2**31 else np.int64)
    return WordLookup(vocab.take(pa.array(kept)), bounds, positions)


def sorted_unique(x: np.ndarray) -> np.ndarray:
    """``np.unique(x)`` of a 1-D array by one sort (numpy's hashing ``unique`` took 100 times longer on millions)."""
    x = np.sort(x)
    keep = np.ones(x.size, bool)
    np.not_equal(x[1:], x[:-1], out=keep[1:])
    return x[keep]


def _chunk_titles(index) -> tuple[list, pa.Array]:
    """Chunk ids and titles in the order of ``index.chunks``: a loaded version's columns, else its records."""
    from ...index.chunk_columns import ChunkColumns

    chunks = index.chunks
    if isinstance(chunks, ChunkColumns):
        return chunks.key_list(), pa.array(chunks.column("title"), pa.string())
    pairs = [(cid, rec.title) for cid, rec in chunks.items()]
    return [c for c, _ in pairs], pa.array([t for _, t in pairs], pa.string())


# a title of plain letters and digits, single spaces: normalize_entity lower-cases it and does nothing else
_PLAIN_TITLE = r"^[A-Za-z0-9]+( [A-Za-z0-9]+)*$"


def title_names(titles: pa.Array) -> list[str]:
    """``strip_stop(normalize_entity(title))`` of each title ("" for none), in order: a plain title (letters,
    digits, single spaces) lower-cased and stripped of its end stop words by Arrow, the rest in Python."""
    plain = np.asarray(pc.fill_null(pc.match_substring_regex(titles, _PLAIN_TITLE), False).to_numpy(
        zero_copy_only=False), bool)
    text = pc.ascii_lower(titles)
    stops = pa.array(sorted(STOP_WORDS), pa.string())
    # as strip_stop: stop words off the front while there are, then off the back
    for end_word, without_it in ((r" .*$", r"^[^ ]* ?"), (r"^.* ", r" ?[^ ]*$")):
        while True:
            strip = pc.and_(pa.array(plain), pc.fill_null(pc.is_in(pc.replace_substring_regex(text, end_word, ""),
                                                                   value_set=stops), False))
            if not pc.any(strip).as_py():
                break
            text = pc.if_else(strip, pc.replace_substring_regex(text, without_it, "", max_replacements=1), text)
    out = text.to_pylist()
    raw = titles.to_pylist()
    for i in np.flatnonzero(~plain).tolist():
        out[i] = strip_stop(normalize_entity(raw[i])) if raw[i] else ""
    return out


def _first_seen(codes: np.ndarray) -> np.ndarray:
    """The distinct values of ``codes`` in the order of their first occurrence."""
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    first = np.ones(ordered.size, bool)
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return codes[np.sort(order[first])]


def node_names(index, align_titles: bool, entity_rows: np.ndarray | None = None) -> tuple[Names, RowLists]:
    """Every name and the snapshot rows it stands for: the entity keys in ``index.entities`` order (each its own row),
    then the titles (``strip_stop(normalize_entity(title))``) no entity has, in the order of their first chunk,
    with the rows of the chunks so titled appended to the name's rows in ``index.chunks`` order.
    ``entity_rows``: :func:`~..shared_graph.entity_rows`, when the caller has it."""
    snap = index.snapshot
    rows = snapshot_entity_rows(index) if entity_rows is None else np.asarray(entity_rows, np.int64)
    present = rows >= 0
    ent = rows[present].astype(np.int32 if snap.num_nodes < 2**31 else np.int64)
    n_ent = ent.size
    titled_pos, titled_rows, new_titles = np.zeros(0, np.int64), np.zeros(0, np.int64), []
    if align_titles:
        ids, titles = _chunk_titles(index)
        encoded = pc.dictionary_encode(titles.cast(pa.string()))  # titles repeat (a document's chunks)
        name_of_title = title_names(encoded.dictionary)
        distinct = list(dict.fromkeys(name_of_title))  # two titles may make one name
        code_of_name = {name: i for i, name in enumerate(distinct)}
        name_code = np.fromiter((code_of_name[n] for n in name_of_title), np.int64, len(name_of_title))
        # a name that is an entity's key is that entity's name (its position among the entities in the snapshot)
        key_index = pc.index_in(pa.array(distinct, pa.string()), value_set=table_keys(index.entities)[1])
        key_index = np.asarray(key_index.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
        position_of_key = np.where(present, np.cumsum(present) - 1, -1)
        position = np.where(key_index >= 0, position_of_key[np.maximum(key_index, 0)], -1)
        chunk_rows = snapshot_rows(index, ids, len(index.entities))
        title_code = np.asarray(encoded.indices.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
        code = np.where(title_code >= 0, name_code[np.maximum(title_code, 0)], -1)
        valid = (code >= 0) & (code != code_of_name.get("", -1)) & (chunk_rows >= 0)  # a title, its chunk a node
        code, titled_rows = code[valid], chunk_rows[valid]
        new = _first_seen(code[position[code] < 0])  # titles no entity has, by their first chunk
        position[new] = n_ent + np.arange(new.size)
        new_titles = [distinct[c] for c in new.tolist()]
        titled_pos = position[code]
    pos = np.concatenate([np.arange(n_ent, dtype=np.int64), titled_pos])
    order = np.argsort(pos, kind="stable")  # an entity's own row first, then its titled chunks in order
    node_rows = np.concatenate([ent.astype(np.int64), titled_rows])[order]
    bounds = np.searchsorted(pos[order], np.arange(n_ent + len(new_titles) + 1))
    return Names(snap.node_ids, ent, pa.array(new_titles, pa.string())), RowLists(bounds, node_rows)
