"""A2RAG seed extraction and alignment (Section III-C, "Seed extraction and alignment").

Entity seeds S_V:

1. Mentions. LLM-free, the query's n-gram candidates (the statistical extractor's: no stop word at
   either end, never across a comma or bracket), longest first. A candidate whose first and last words
   are capitalised in the query is a *named* mention (the LLM-free stand-in for NER); only named
   mentions become entity seeds, because lower-case content words of a question ("mother", "director",
   "born") name its relations, not its entities (they become relation phrases, below). With an LLM,
   the ``seed_extraction`` prompt lists entities and relation phrases instead.
2. Alignment to graph nodes, hybrid lexical + embedding: every node has names (an entity its key; a
   passage node its document title, since the snapshot holds passage nodes too), with or without accents (a
   question typed "Tekeze River" finds ``tekezé river`` exactly). A mention's lexical
   score against a name is rapidfuzz's ``ratio`` (1 for an exact normalised match); candidates are the
   names sharing a word with the mention (a word index, so no scan of every name). The semantic score
   is the cosine between the query and the node (entity-name or chunk embedding, both already stored).
   ``confidence = w * lexical + (1 - w) * semantic``; a match is kept only when the lexical score is at
   least ``min_lexical`` and the confidence at least ``min_confidence`` (high-confidence matches only).
   Longer mentions win: once a span aligns, its sub-spans are not tried.

Relation seeds S_R (optional): the query's relation phrases aligned to the index's relation labels
(``FactRecord.predicate``) by rapidfuzz ``token_set_ratio``, kept only when the label is one of a
relation the query names an end of (``anchors``: the entity seeds), at most ``MAX_RELATION_SEEDS``.
The LLM-free NER graph labels relations with words of their sentence ("was born in", "hat schwer is
film"), thousands of labels, so one question word ("film") matched about 90 of them on HotpotQA, most on
relations far from anything the question names. An index built with the statistical extractor has one
label ("co-occurs with"), so S_R is empty there and no edge is filtered.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...llm.json_repair import parse_json_lenient
from ...text import analyze, fold_accents, is_candidate_token, normalize_entity
from ...graph.snapshot import RELATION
from .config import A2RAGConfig
from .names import NameLookup, node_names, sorted_unique, strip_stop, word_index

log = logging.getLogger(__name__)


@dataclass
class Seed:
    """One aligned entity seed: the mention, the node it aligned to and why."""

    mention: str
    node: str  # snapshot node id (entity key or chunk id)
    row: int
    kind: str  # "entity" | "passage"
    lexical: float
    semantic: float
    confidence: float

    def to_json(self) -> dict:
        return {"mention": self.mention, "node": self.node, "kind": self.kind, "lexical": round(self.lexical, 4),
                "semantic": round(self.semantic, 4), "confidence": round(self.confidence, 4)}


@dataclass
class Mention:
    text: str  # surface form in the query
    key: str  # normalised
    start: int  # word positions [start, end) in the query's word sequence
    end: int
    named: bool


def query_mentions(query: str, max_words: int) -> tuple[list[Mention], list[str]]:
    """Candidate entity mentions (longest first) and relation phrases of a query, LLM-free."""
    mentions: list[Mention] = []
    relation_words: list[str] = []
    base = 0
    for _, _, spans, keys in analyze(query):
        ok = [bool(k) and is_candidate_token(k) for k in keys]
        caps = [query[a:b][:1].isupper() or query[a:b][:1].isdigit() for a, b in spans]
        for i in range(len(keys)):
            if not ok[i]:
                continue
            if not caps[i]:
                relation_words.append(keys[i])
            for j in range(i + 1, min(len(keys), i + max_words) + 1):
                if not ok[j - 1] or not keys[j - 1]:
                    continue
                mentions.append(Mention(query[spans[i][0]:spans[j - 1][1]], " ".join(keys[i:j]),
                                        base + i, base + j, caps[i] and caps[j - 1]))
        base += len(keys)
    mentions.sort(key=lambda m: (-(m.end - m.start), m.start))
    return mentions, relation_words


@dataclass
class SeedIndex:
    """Names of the graph's nodes, a word index over them, and relation labels (built once per snapshot)."""

    # Arrays, not dicts of every name (``names.py``): at 1,000,000 passages those held 0.5 GB
    names: Sequence[str]  # entity keys, then the titles no entity has
    name_rows: Sequence[list[int]]  # snapshot rows each name stands for (a RowLists: no list per name)
    exact: Mapping[str, int]  # name (or its accent-free form) -> position in names
    by_word: Mapping[str, list[int]]  # word -> sorted positions of names containing it
    predicates: list[str] = field(default_factory=list)
    predicates_by_word: dict[str, list[int]] = field(default_factory=dict)  # stemmed word -> predicate positions
    predicate_words: list[frozenset] = field(default_factory=list)  # stemmed words of each predicate
    # the snapshot rows at either end of each predicate's relations: predicate i's are
    # end_rows[end_bounds[i]:end_bounds[i + 1]], sorted (numbers, not a set of entity keys per label: at
    # 1,000,000 passages those sets held 0.97 GB)
    end_bounds: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    end_rows: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    snapshot: Any = None  # whose rows end_rows are (anchors are looked up in it)

    def anchor_rows(self, anchors) -> np.ndarray:
        """The snapshot rows of the node ids ``anchors`` (ids the snapshot does not hold are left out)."""
        snap = self.snapshot
        return np.asarray(sorted({snap.row(a) for a in anchors if snap.has(a)}), np.int64)

    def predicate_ends(self, label_pos: int) -> np.ndarray:
        """Sorted snapshot rows of the entities at either end of the relations labelled ``predicates[label_pos]``."""
        return self.end_rows[self.end_bounds[label_pos]:self.end_bounds[label_pos + 1]]

    @classmethod
    def build(cls, index, align_titles: bool = True, max_names_per_word: int = 200,
              entity_rows: np.ndarray | None = None) -> "SeedIndex":
        """``entity_rows``: the snapshot row of every entity in ``index.entities`` order, when the caller has them."""
        snap = index.snapshot
        names, name_rows = node_names(index, align_titles, entity_rows)
        arrow = names.arrow()
        # "tekeze" finds "tekezé river" too; a word in very many names ("film", "river") picks no particular node
        by_word = word_index(arrow, max_names_per_word)
        exact = NameLookup(names, arrow)  # names, and their accent-free forms (typed without accents)
        labels, codes = _fact_predicates(index)
        predicates = sorted(set(labels))
        end_bounds, end_rows = _predicate_end_rows(snap, codes, _positions(labels, predicates))
        predicates_by_word: dict[str, list[int]] = {}
        predicate_words = []
        for i, label in enumerate(predicates):
            words = normalize_entity(label).split()
            predicate_words.append(frozenset(stem(w) for w in words))
            for w in set(words):
                if is_candidate_token(w):
                    predicates_by_word.setdefault(stem(w), []).append(i)
        return cls(names, name_rows, exact, by_word, predicates, predicates_by_word, predicate_words, end_bounds,
                   end_rows, snap)


def _fact_predicates(index) -> tuple[list[str], np.ndarray]:
    """The distinct relation labels and, per fact row (``index.fact_ids`` order), its label's position among them."""
    facts = index.facts
    if hasattr(facts, "arrow_column"):  # a loaded version's columns: no record per fact
        import pyarrow as pa
        import pyarrow.compute as pc

        column = facts.arrow_column("predicate")
        encoded = pc.dictionary_encode(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
        return encoded.dictionary.to_pylist(), np.asarray(encoded.indices.to_numpy(zero_copy_only=False), np.int64)
    labels: dict[str, int] = {}
    codes = np.fromiter((labels.setdefault(f.predicate, len(labels)) for f in facts.values()), np.int64, len(facts))
    return list(labels), codes


def _positions(labels: list[str], predicates: list[str]) -> list[int]:
    where = {p: i for i, p in enumerate(predicates)}
    return [where[x] for x in labels]


def _predicate_end_rows(snap, codes: np.ndarray, position_of_code: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """(bounds, rows): per predicate position, the sorted distinct snapshot rows at either end of its relation edges
    (the snapshot's relation edge for fact row i joins its subject and object)."""
    n_pred = len(position_of_code)
    if not n_pred:
        return np.zeros(1, np.int64), np.zeros(0, np.int64)
    rel = np.flatnonzero(snap.edge_kind == RELATION)
    pred = np.asarray(position_of_code, np.int64)[codes[snap.edge_fact[rel]]]
    n = max(snap.num_nodes, 1)
    keys = sorted_unique(np.concatenate([pred * n + snap.edge_src[rel], pred * n + snap.edge_dst[rel]]))
    bounds = np.searchsorted(keys // n, np.arange(n_pred + 1))
    return bounds.astype(np.int64), (keys % n).astype(np.int32 if n < 2**31 else np.int64)


def align_mentions(seed_index: SeedIndex, mentions: list[Mention], node_similarity, config: A2RAGConfig,
                   node_ids: list[str], node_is_chunk) -> list[Seed]:
    """Align mentions (longest first) to nodes; returns high-confidence seeds, best first, one per node.

    ``node_similarity(rows) -> cosines with the query``; ``node_is_chunk(row) -> bool``. The thresholds
    are the config's ``seed_min_lexical``, ``seed_min_confidence``, ``seed_lexical_weight`` and ``max_seeds``.
    """
    from rapidfuzz import fuzz, process

    taken = np.zeros(max((m.end for m in mentions), default=0), dtype=bool)
    seeds: dict[int, Seed] = {}
    for m in mentions:
        if not m.named or taken[m.start:m.end].any():
            continue
        key = strip_stop(m.key)
        if not key:
            continue
        matches: list[tuple[int, float]] = []
        folded = fold_accents(key)  # "Malmö" in the question, "malmo" in the graph
        exact = seed_index.exact.get(key, seed_index.exact.get(folded))
        if exact is not None:
            matches.append((exact, 1.0))
        elif len(key) >= 4:
            pool = sorted({i for w in set(key.split()) | set(folded.split()) for i in seed_index.by_word.get(w, ())})
            if pool:
                found = process.extract(key, [seed_index.names[i] for i in pool], scorer=fuzz.ratio,
                                        score_cutoff=config.seed_min_lexical * 100, limit=3)
                matches.extend((pool[pos], score / 100.0) for _, score, pos in found)
        kept_any = False
        for name_pos, lexical in matches:
            rows = seed_index.name_rows[name_pos]
            sims = node_similarity(np.asarray(rows))
            for row, sim in zip(rows, sims.tolist()):
                semantic = max(0.0, float(sim))
                conf = config.seed_lexical_weight * lexical + (1 - config.seed_lexical_weight) * semantic
                if lexical < config.seed_min_lexical or conf < config.seed_min_confidence:
                    continue
                kept_any = True
                old = seeds.get(row)
                if old is None or conf > old.confidence:
                    seeds[row] = Seed(m.text, node_ids[row], int(row), "passage" if node_is_chunk(row) else "entity",
                                      lexical, semantic, conf)
        if kept_any:
            taken[m.start:m.end] = True
    ranked = sorted(seeds.values(), key=lambda s: (-s.confidence, s.row))
    return ranked[: config.max_seeds]


_SUFFIX = re.compile(r"(ing|ed|es|s|d)$")


def stem(word: str) -> str:
    """A crude suffix stripper ("died" -> "di", "dies" -> "di", "directors" -> "director"), enough to
    match a question's word to a relation label's inflected form."""
    return _SUFFIX.sub("", word) if len(word) > 4 else word


# Most relation seeds kept. Stage 1 keeps, of a seed's relation edges, those whose label is in S_R; a seed
# has at most ``local_max_neighbours`` (30) neighbours kept anyway, and the evidence text lists S_R, so a
# longer list only adds noise to the context.
MAX_RELATION_SEEDS = 12


def align_relations(seed_index: SeedIndex, phrases: list[str], min_score: float, anchors=None,
                    max_relations: int | None = None) -> list[dict]:
    """Relation seeds S_R: relation labels close to one of the query's relation phrases, best first.

    Candidates are the labels that share a (stemmed) content word with the phrase (a word index, so
    the thousands of sentence-derived labels of a co-occurrence graph are not scanned); a candidate
    matches when every content word of the phrase is in it (score 1) or, failing that, when rapidfuzz's
    ``token_set_ratio`` of phrase and label reaches ``min_score``.

    ``anchors`` (the graph nodes the query names: its entity seeds' node ids) keeps a matching label
    only when it names a relation of the graph that the query also names: one of the label's relations
    has an anchor at one end, or the label writes an anchor's name. Why: S_R is used to filter the
    relation edges *of the seeds* (stage 1), so a label on no seed's edge filters nothing and is noise
    in the evidence ("hat schwer is film" for a question about Christopher Nolan's films). Filtering by
    anchors therefore leaves stage 1's kept edges as they were, save for the cap. ``anchors=None``
    skips this filter and keeps every matching label (the behaviour before anchors existed).

    Ranked by score, then by the share of the label's words the query's phrases hold ("born in" before
    "born painter images of" for "born"), then alphabetically; at most ``max_relations`` are kept
    (default: ``MAX_RELATION_SEEDS`` with anchors, no cap without: a cap over labels that are not the
    seeds' would drop seed edges at random).
    """
    from rapidfuzz import fuzz

    anchor_set = None if anchors is None else {str(a) for a in anchors}
    anchor_rows = None if anchor_set is None else seed_index.anchor_rows(anchor_set)
    phrase_words = {stem(w) for phrase in phrases for w in normalize_entity(phrase).split()}
    out: dict[str, dict] = {}
    for phrase in phrases:
        p = normalize_entity(phrase)
        words = {stem(w) for w in p.split() if is_candidate_token(w)}
        if not words:
            continue
        pool = set.union(*(set(seed_index.predicates_by_word.get(w, ())) for w in words))
        for i in sorted(pool):
            label = seed_index.predicates[i]
            if anchor_set is not None and not _names_an_anchor(seed_index, i, anchor_set, anchor_rows):
                continue
            score = 1.0 if words <= seed_index.predicate_words[i] else fuzz.token_set_ratio(p, normalize_entity(label)) / 100.0
            if score >= min_score and score > out.get(label, {}).get("score", -1):
                label_words = seed_index.predicate_words[i]
                coverage = len(label_words & phrase_words) / max(1, len(label_words))
                out[label] = {"phrase": phrase, "label": label, "score": round(score, 4),
                              "coverage": round(coverage, 4)}
    ranked = sorted(out.values(), key=lambda r: (-r["score"], -r["coverage"], r["label"]))
    if max_relations is None:
        max_relations = MAX_RELATION_SEEDS if anchor_set is not None else len(ranked)
    return ranked[:max(0, max_relations)]


def _names_an_anchor(seed_index: SeedIndex, label_pos: int, anchors: set[str], anchor_rows: np.ndarray) -> bool:
    """Whether a relation with this label has an anchor at one end, or the label writes an anchor's name."""
    ends = seed_index.predicate_ends(label_pos)
    if anchor_rows.size and ends.size:  # ends are sorted: a binary search per anchor (np.isin sorts both, per label)
        at = np.minimum(np.searchsorted(ends, anchor_rows), ends.size - 1)
        if (ends[at] == anchor_rows).any():
            return True
    label = " " + normalize_entity(seed_index.predicates[label_pos]) + " "
    return any(len(a) >= 3 and f" {a} " in label for a in anchors)


def parse_llm_seeds(answer: str) -> tuple[list[str], list[str]] | None:
    """``(entities, relations)`` from the seed prompt's answer, or None when it cannot be read."""
    value = parse_json_lenient(answer).value
    if not isinstance(value, dict):
        return None
    ents, rels = value.get("entities"), value.get("relations", [])
    if not isinstance(ents, list) or not isinstance(rels, list):
        return None
    clean = lambda xs: [str(x).strip() for x in xs if isinstance(x, (str, int, float)) and str(x).strip()]  # noqa: E731
    return clean(ents), clean(rels)


def llm_mentions(entities: list[str]) -> list[Mention]:
    """Mentions from an LLM's entity list: each whole entity (and its sub-spans) is a named candidate."""
    out: list[Mention] = []
    base = 0
    for ent in entities:
        found, _ = query_mentions(ent, max_words=12)
        whole = normalize_entity(ent)
        n_words = len(whole.split())
        out.append(Mention(ent, whole, base, base + n_words, True))
        out.extend(Mention(m.text, m.key, base + m.start, base + m.end, True) for m in found
                   if m.end - m.start < n_words)
        base += n_words + 1
    out.sort(key=lambda m: (-(m.end - m.start), m.start))
    return out
