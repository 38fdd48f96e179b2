"""LLM-free relations from a dependency parse: the words on the path between two names.

For two entity mentions in one sentence, the shortest path between their head words in the parse
tree carries the relation (the "shortest dependency path" of classic relation extraction):

* subject-verb-object   "Smith directed The Glass Lantern"      -> (smith, directed, glass lantern)
* prepositional         "Smith was born in Lyon"                -> (smith, was born in, lyon)
* appositive            "Smith, a painter from Paris, ..."      -> (smith, painter from, paris)
* copula                "Smith is the director of the Louvre"   -> (smith, is director of, louvre)

The predicate is the path's words in sentence order (auxiliaries of a passive and negations kept,
determiners dropped). A path through another name is skipped (the nearer pair states it), as is a
path longer than ``max_path`` words. Names that take part in no parsed relation fall back to a
co-occurrence relation with the nearest name of their sentence. Reads a spaCy ``Doc`` (``sents``,
``char_span``, ``to_array``, ``vocab.strings``, tokens' ``text``).

:func:`cooccurrence_relations` is that fallback alone, for every name of a sentence: what the NER extractor
builds when the parser does not run (``IndexConfig.ner_relations="cooccurrence"``; it reads only ``sents``,
which a rule sentencizer gives, and ``char_span``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy

from .entity_resolution import EntityMention

CO_OCCURS = "co-occurs with"
_SUBJECT = frozenset({"nsubj", "nsubjpass", "csubj", "expl"})
_OBJECT = frozenset({"dobj", "pobj", "attr", "dative", "oprd", "agent", "obj", "iobj", "obl"})
_KEEP_CHILDREN = frozenset({"auxpass", "neg", "prt"})  # "was born", "did not", "set up"
_SKIP_ON_PATH = frozenset({"det", "punct", "cc", "predet"})
# A path through one of these joins two clauses ("the town that the river passes"): not one relation.
_CLAUSE_LINKS = frozenset({"conj", "relcl", "advcl", "ccomp", "acl", "parataxis", "csubj"})


@dataclass(frozen=True)
class ParsedRelation:
    source: str  # entity keys
    predicate: str
    target: str
    pattern: str  # "svo" | "prep" | "appos" | "copula" | "dependency" | "cooccurrence"
    sentence: tuple[int, int]  # character span of the sentence
    start: int  # character span covering both mentions
    end: int
    text: str = ""  # the fact text, when the caller has it already (else the sentence)

    def sentence_text(self, text: str, max_chars: int) -> str:
        """The sentence of ``text`` that states the relation, cut to ``max_chars`` around the pair if longer."""
        start, end = self.sentence
        if end - start > max_chars:  # keep the window around the pair
            mid = (self.start + self.end) // 2
            start = max(start, mid - max_chars // 2)
            end = min(end, start + max_chars)
        return " ".join(text[start:end].split())


class _Tree:
    """A parse as plain lists (head index and dependency label per token), read once per chunk.

    Walking ``token.head`` makes a new spaCy ``Token`` object at every step; the relation search walks
    thousands of paths per megabyte, so it walks integers here and asks the ``Doc`` for a word's text only
    when the word goes into a predicate.
    """

    def __init__(self, doc):
        self.doc = doc
        # HEAD is each token's offset to its head (stored unsigned), DEP the label's hash
        cols = doc.to_array(["HEAD", "DEP"])
        self.heads = (numpy.arange(len(cols)) + cols[:, 0].astype(numpy.int64)).tolist()
        strings = doc.vocab.strings
        self.deps = [strings[h] for h in cols[:, 1].tolist()]
        self.kept_children: dict[int, list[int]] = {}  # head -> children kept on a path ("was born", "not")
        for i, (head, dep) in enumerate(zip(self.heads, self.deps)):
            if dep in _KEEP_CHILDREN and head != i:
                self.kept_children.setdefault(head, []).append(i)

    def attachment(self, i: int) -> int:
        """Where a name attaches to the sentence: a conjunct hangs on its first conjunct's head."""
        heads, deps = self.heads, self.deps
        while deps[i] == "conj" and heads[i] != i:
            i = heads[i]
        return i

    def ancestors(self, i: int) -> list[int]:
        heads = self.heads
        chain = [i]
        while heads[i] != i:
            i = heads[i]
            chain.append(i)
        return chain

    def path(self, a: int, b: int) -> tuple[list[int], list[int]] | None:
        """From ``a`` up to the lowest common ancestor and from ``b`` up to it (both inclusive)."""
        up_a = self.ancestors(a)
        pos = {t: n for n, t in enumerate(up_a)}
        up_b = []
        for t in self.ancestors(b):
            up_b.append(t)
            if t in pos:
                return up_a[: pos[t] + 1], up_b
        return None  # different sentences

    def classify(self, up_a: list[int], up_b: list[int]) -> str:
        deps = self.deps
        found = {deps[t] for t in up_a[:-1]} | {deps[t] for t in up_b[:-1]}
        if "appos" in found:
            return "appos"
        if found & {"attr", "acomp", "oprd"}:
            return "copula"
        if found & _SUBJECT and found & _OBJECT:
            return "svo"
        if found <= {"prep", "pobj", "compound", "amod", "nmod", "poss", "pcomp"}:
            return "prep"
        return "dependency"

    def predicate(self, up_a: list[int], up_b: list[int], a_root: int, b_root: int) -> tuple[str, int]:
        inner = {t for t in up_a[1:] + up_b[1:] if t not in (a_root, b_root)}
        for t in list(inner):
            inner.update(self.kept_children.get(t, ()))
        deps, doc = self.deps, self.doc
        words = [doc[t].text.lower() for t in sorted(inner) if deps[t] not in _SKIP_ON_PATH]
        return " ".join(words), len(inner)


def parsed_relations(doc, mentions: list[EntityMention], max_path: int = 4,
                     max_pairs_per_sentence: int = 12, fallback: bool = True) -> list[ParsedRelation]:
    """Relations between the mentions of each sentence of ``doc`` (mention offsets index ``doc.text``)."""
    heads = _token_spans(doc, mentions, roots=True)
    if len(heads) < 2:
        return []  # no sentence holds two names
    tree = _Tree(doc)
    deps = tree.deps
    heads = [(m, start, end, tree.attachment(root)) for m, start, end, root in heads]
    out: list[ParsedRelation] = []
    for sent in doc.sents:
        inside = [h for h in heads if sent.start <= h[1] < sent.end]
        if len(inside) < 2:
            continue
        bounds = (sent.start_char, sent.end_char)
        owner = {t: n for n, (_, start, end, _) in enumerate(inside) for t in range(start, end)}
        related: set[int] = set()
        found: list[tuple[int, ParsedRelation]] = []
        for i in range(len(inside)):
            for j in range(i + 1, len(inside)):
                (ma, _, _, ra), (mb, _, _, rb) = inside[i], inside[j]
                if ma.key == mb.key or ra == rb:
                    continue
                path = tree.path(ra, rb)
                if path is None:
                    continue
                up_a, up_b = path
                between = up_a[1:-1] + up_b[1:-1]
                if any(deps[t] in _CLAUSE_LINKS for t in between):
                    continue  # "A starred X and was shot by Y": two clauses, not one relation
                if any(owner.get(t) not in (None, i, j) for t in [*between, up_a[-1]]):
                    continue  # another name sits between them: the nearer pair says it
                predicate, length = tree.predicate(up_a, up_b, ra, rb)
                if not predicate or length > max_path:
                    continue
                src, dst = (ma, mb)
                if {deps[t] for t in up_b[:-1]} & _SUBJECT and not {deps[t] for t in up_a[:-1]} & _SUBJECT:
                    src, dst = mb, ma  # the subject is the source, whatever the word order
                rel = ParsedRelation(src.key, predicate, dst.key, tree.classify(up_a, up_b), bounds,
                                     min(ma.start, mb.start), max(ma.end, mb.end))
                found.append((length, rel))
                related.update((i, j))
        found.sort(key=lambda x: x[0])  # shortest paths first
        out.extend(rel for _, rel in found[:max_pairs_per_sentence])
        if fallback:
            out.extend(_nearest_pairs(inside, related, bounds, max_pairs_per_sentence))
    return out


def cooccurrence_relations(doc, mentions: list[EntityMention], max_pairs_per_sentence: int = 12) -> list[ParsedRelation]:
    """Co-occurrence only (no parse needed): in each sentence of ``doc``, each name with its nearest other name
    (:func:`parsed_relations`' fallback when no parsed relation reached any name), at most
    ``max_pairs_per_sentence`` pairs per sentence."""
    spans = _token_spans(doc, mentions, roots=False)
    if len(spans) < 2:
        return []
    out: list[ParsedRelation] = []
    for sent in doc.sents:
        inside = [h for h in spans if sent.start <= h[1] < sent.end]
        if len(inside) >= 2:
            out.extend(_nearest_pairs(inside, set(), (sent.start_char, sent.end_char), max_pairs_per_sentence))
    return out


def _token_spans(doc, mentions: list[EntityMention], roots: bool) -> list[tuple[EntityMention, int, int, int]]:
    """(mention, first token, end token, root token or -1) of each mention that covers a token."""
    out = []
    for m in mentions:
        span = doc.char_span(m.start, m.end, alignment_mode="expand")
        if span is not None and len(span):
            out.append((m, span.start, span.end, span.root.i if roots else -1))
    return out


def _nearest_pairs(inside: list, related: set[int], bounds: tuple[int, int], cap: int) -> list[ParsedRelation]:
    """Co-occurrence, as a fallback: each name no parsed relation reached, with its nearest other name."""
    out, seen = [], set()
    for i, (m, *_) in enumerate(inside):
        if i in related:
            continue
        others = [(abs(o.start - m.start), o) for n, (o, *_) in enumerate(inside) if n != i and o.key != m.key]
        if not others:
            continue
        _, o = min(others, key=lambda x: x[0])
        a, b = (m, o) if m.start < o.start else (o, m)
        if (a.key, b.key) in seen or len(out) >= cap:
            continue
        seen.add((a.key, b.key))
        out.append(ParsedRelation(a.key, CO_OCCURS, b.key, "cooccurrence", bounds, a.start, b.end))
    return out
