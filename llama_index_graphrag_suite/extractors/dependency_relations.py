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
co-occurrence relation with the nearest name of their sentence. Works on any object shaped like a
spaCy ``Doc`` (``sents``, ``char_span``, tokens with ``dep_``, ``head``, ``children``, ``i``).
"""

from __future__ import annotations

from dataclasses import dataclass

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


def _attachment(token):
    """Where a name attaches to the sentence: a conjunct hangs on its first conjunct's head."""
    while token.dep_ == "conj" and token.head.i != token.i:  # spaCy makes a new Token per access: compare .i
        token = token.head
    return token


def _ancestors(token) -> list:
    chain = [token]
    while chain[-1].head.i != chain[-1].i:
        chain.append(chain[-1].head)
    return chain


def dependency_path(a, b) -> tuple[list, list] | None:
    """Tokens from ``a`` up to the lowest common ancestor and from ``b`` up to it (both inclusive)."""
    up_a = _ancestors(a)
    pos = {t.i: n for n, t in enumerate(up_a)}
    up_b = []
    for t in _ancestors(b):
        up_b.append(t)
        if t.i in pos:
            return up_a[: pos[t.i] + 1], up_b
    return None  # different sentences


def classify(up_a: list, up_b: list) -> str:
    deps = {t.dep_ for t in up_a[:-1]} | {t.dep_ for t in up_b[:-1]}
    if "appos" in deps:
        return "appos"
    if deps & {"attr", "acomp", "oprd"}:
        return "copula"
    if deps & _SUBJECT and deps & _OBJECT:
        return "svo"
    if deps <= {"prep", "pobj", "compound", "amod", "nmod", "poss", "pcomp"}:
        return "prep"
    return "dependency"


def _predicate(up_a: list, up_b: list, a_root, b_root) -> tuple[str, int]:
    inner = {t.i: t for t in up_a[1:] + up_b[1:] if t.i not in (a_root.i, b_root.i)}
    for t in list(inner.values()):
        for child in t.children:
            if child.dep_ in _KEEP_CHILDREN:
                inner[child.i] = child
    words = [t for i, t in sorted(inner.items()) if t.dep_ not in _SKIP_ON_PATH]
    return " ".join(t.text.lower() for t in words), len(inner)


def parsed_relations(doc, mentions: list[EntityMention], max_path: int = 4,
                     max_pairs_per_sentence: int = 12, fallback: bool = True) -> list[ParsedRelation]:
    """Relations between the mentions of each sentence of ``doc`` (mention offsets index ``doc.text``)."""
    heads = []
    for m in mentions:
        span = doc.char_span(m.start, m.end, alignment_mode="expand")
        if span is not None and len(span):
            heads.append((m, span, _attachment(span.root)))
    out: list[ParsedRelation] = []
    for sent in doc.sents:
        inside = [h for h in heads if sent.start <= h[1].start < sent.end]
        if len(inside) < 2:
            continue
        bounds = (sent.start_char, sent.end_char)
        owner = {t.i: n for n, (_, span, _) in enumerate(inside) for t in span}
        related: set[int] = set()
        found: list[tuple[int, ParsedRelation]] = []
        for i in range(len(inside)):
            for j in range(i + 1, len(inside)):
                (ma, _, ra), (mb, _, rb) = inside[i], inside[j]
                if ma.key == mb.key or ra.i == rb.i:
                    continue
                path = dependency_path(ra, rb)
                if path is None:
                    continue
                up_a, up_b = path
                on_path = {t.i for t in up_a[1:-1] + up_b[1:-1]}
                if any(t.dep_ in _CLAUSE_LINKS for t in up_a[1:-1] + up_b[1:-1]):
                    continue  # "A starred X and was shot by Y": two clauses, not one relation
                if any(owner.get(t) not in (None, i, j) for t in on_path | {up_a[-1].i}):
                    continue  # another name sits between them: the nearer pair says it
                predicate, length = _predicate(up_a, up_b, ra, rb)
                if not predicate or length > max_path:
                    continue
                src, dst = (ma, mb)
                if {t.dep_ for t in up_b[:-1]} & _SUBJECT and not {t.dep_ for t in up_a[:-1]} & _SUBJECT:
                    src, dst = mb, ma  # the subject is the source, whatever the word order
                rel = ParsedRelation(src.key, predicate, dst.key, classify(up_a, up_b), bounds,
                                     min(ma.start, mb.start), max(ma.end, mb.end))
                found.append((length, rel))
                related.update((i, j))
        found.sort(key=lambda x: x[0])  # shortest paths first
        out.extend(rel for _, rel in found[:max_pairs_per_sentence])
        if fallback:
            out.extend(_nearest_pairs(inside, related, bounds, max_pairs_per_sentence))
    return out


def _nearest_pairs(inside: list, related: set[int], bounds: tuple[int, int], cap: int) -> list[ParsedRelation]:
    """Co-occurrence, as a fallback: each name no parsed relation reached, with its nearest other name."""
    out, seen = [], set()
    for i, (m, _, _) in enumerate(inside):
        if i in related:
            continue
        others = [(abs(o.start - m.start), o) for n, (o, _, _) in enumerate(inside) if n != i and o.key != m.key]
        if not others:
            continue
        _, o = min(others, key=lambda x: x[0])
        a, b = (m, o) if m.start < o.start else (o, m)
        if (a.key, b.key) in seen or len(out) >= cap:
            continue
        seen.add((a.key, b.key))
        out.append(ParsedRelation(a.key, CO_OCCURS, b.key, "cooccurrence", bounds, a.start, b.end))
    return out
