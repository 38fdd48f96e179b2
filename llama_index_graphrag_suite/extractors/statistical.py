"""LLM-free extractors as LlamaIndex TransformComponents (usable in ``PropertyGraphIndex(kg_extractors=[...])``).

* :class:`StatisticalEntityExtractor`: AGRAG's TF-IDF entity recognition (Eq. 2-3) plus passage
  edges: every chunk is linked (``contains``) to every known entity whose name occurs in it.
* :class:`CooccurrenceRelationExtractor`: relations between entities mentioned in one sentence, each
  carrying the sentence as its text, so the relation can be embedded as a fact.
* :class:`SynonymEdgeExtractor`: synonym edges between entities whose name embeddings are close (Eq. 5).

They follow LlamaIndex's extractor contract: pop ``metadata["nodes"]`` / ``metadata["relations"]``,
extend them, write both back.
"""

from __future__ import annotations

from typing import Any, Sequence

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent
from llama_index.core.utils import get_tqdm_iterable
from pydantic import Field, PrivateAttr

from ..text import split_sentences, words
from .entity_stats import EntityStatistics, LengthNorm, find_mentions

ENTITY_LABEL = "entity"
CONTAINS = "contains"
SYNONYM = "synonym"
CO_OCCURS = "co-occurs with"


def _take_kg(node: BaseNode) -> tuple[list, list]:
    return node.metadata.pop(KG_NODES_KEY, []), node.metadata.pop(KG_RELATIONS_KEY, [])


def _put_kg(node: BaseNode, kg_nodes: list, kg_relations: list) -> None:
    node.metadata[KG_NODES_KEY] = kg_nodes
    node.metadata[KG_RELATIONS_KEY] = kg_relations


def entity_nodes_of(node: BaseNode) -> list[EntityNode]:
    """The entity nodes an earlier extractor put on a chunk."""
    return [n for n in node.metadata.get(KG_NODES_KEY, []) if isinstance(n, EntityNode) and n.label == ENTITY_LABEL]


class StatisticalEntityExtractor(TransformComponent):
    """AGRAG's statistics-based entity extraction (Eq. 2-3), no LLM.

    Corpus statistics (document frequencies of n-grams) are fitted over all chunks passed to a call
    before any chunk is scored, so ``PropertyGraphIndex.from_documents(..., kg_extractors=[this])``
    scores each chunk against the whole corpus being indexed. Later calls (``index.insert``) add
    their chunks to the statistics first; chunks extracted earlier are not re-scored.

    With ``link_passages`` (default), each chunk also gets a ``contains`` relation to every entity
    of the vocabulary (entities extracted from any chunk so far) whose name occurs in its text,
    not only to the entities extracted from it: a person extracted from their own page is linked
    from every page that mentions them, which is what lets paths cross chunks (Eq. 6).
    """

    max_ngram: int = Field(default=3, ge=1, le=7, description="b: the longest n-gram an entity may be.")
    threshold: float = Field(default=0.5, ge=0.0, lt=1.0, description="τ: keep n-grams with ER > τ.")
    length_norm: LengthNorm = Field(default="max_count", description="What |t| in Eq. 2 is; see entity_stats.")
    link_passages: bool = Field(default=True, description="Add chunk -contains-> entity relations.")
    fit_statistics: bool = Field(default=True, description="Add each call's chunks to the statistics first "
                                 "(off when the caller keeps the statistics itself, as GraphRAGIndex does).")
    show_progress: bool = False

    _stats: EntityStatistics = PrivateAttr()
    _vocabulary: dict[str, str] = PrivateAttr(default_factory=dict)  # key -> surface form
    _fitted: set[str] = PrivateAttr(default_factory=set)

    def __init__(self, stats: EntityStatistics | None = None, **data: Any) -> None:
        super().__init__(**data)
        self._stats = stats if stats is not None else EntityStatistics(max_ngram=self.max_ngram)

    @classmethod
    def class_name(cls) -> str:
        return "StatisticalEntityExtractor"

    @property
    def statistics(self) -> EntityStatistics:
        return self._stats

    @property
    def vocabulary(self) -> dict[str, str]:
        """Every entity extracted so far: normalised key -> surface form."""
        return self._vocabulary

    def add_vocabulary(self, vocabulary: dict[str, str]) -> None:
        """Seed the vocabulary (e.g. from an existing index) so new chunks link to known entities."""
        for key, surface in vocabulary.items():
            self._vocabulary.setdefault(key, surface)

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        texts = [n.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        if self.fit_statistics:
            new = [(n.node_id, t) for n, t in zip(nodes, texts) if n.node_id not in self._fitted]
            self._stats.fit(t for _, t in new)
            self._fitted.update(i for i, _ in new)

        scoring = get_tqdm_iterable(texts, self.show_progress, "Scoring entities (TF-IDF)")
        extracted = [self._stats.extract(t, self.threshold, self.length_norm) for t in scoring]
        for ents in extracted:
            for e in ents:
                self._vocabulary.setdefault(e.key, e.surface)
        keys = frozenset(self._vocabulary)
        for node, text, ents in zip(nodes, texts, extracted):
            found = {e.key: e.surface for e in ents}
            if self.link_passages:
                for m in find_mentions(text, keys, self.max_ngram):
                    found.setdefault(m.key, text[m.start : m.end])
            kg_nodes, kg_relations = _take_kg(node)
            known = {n.id for n in kg_nodes}
            for key, surface in found.items():
                if key not in known:
                    kg_nodes.append(EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": surface}))
                if self.link_passages:
                    kg_relations.append(
                        Relation(label=CONTAINS, source_id=node.node_id, target_id=key, properties={"kind": CONTAINS})
                    )
            _put_kg(node, kg_nodes, kg_relations)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.__call__(nodes, **kwargs)


class CooccurrenceRelationExtractor(TransformComponent):
    """LLM-free relations: two entities mentioned in one sentence are related.

    Runs after an entity extractor and uses the entities it put on each chunk. The predicate is the
    short run of words between the two mentions when there is one ("was born in"), else
    ``"co-occurs with"``. Each relation keeps its sentence as ``properties["text"]``, the fact text
    retrievers embed. Pairs are taken nearest-first, at most ``max_pairs_per_sentence`` per sentence,
    so a long list of names does not produce a quadratic clique.
    """

    max_ngram: int = Field(default=3, ge=1, le=7)
    max_pairs_per_sentence: int = Field(default=12, ge=1)
    max_predicate_words: int = Field(default=4, ge=0)
    max_text_chars: int = Field(default=400, ge=40, description="Longer sentences are cut around the pair.")
    show_progress: bool = False

    @classmethod
    def class_name(cls) -> str:
        return "CooccurrenceRelationExtractor"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for node in get_tqdm_iterable(nodes, self.show_progress, "Co-occurrence relations"):
            text = node.get_content(metadata_mode=MetadataMode.NONE)
            keys = frozenset(e.name for e in entity_nodes_of(node))
            kg_nodes, kg_relations = _take_kg(node)
            kg_relations.extend(self.relations(text, keys, node.node_id))
            _put_kg(node, kg_nodes, kg_relations)
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.__call__(nodes, **kwargs)

    def relations(self, text: str, keys: frozenset[str], chunk_id: str, added: frozenset[str] | None = None
                  ) -> list[Relation]:
        """The relations of ``text`` between mentions of ``keys``. ``added``: keys the chunk links now, the others it
        linked when its relations were last made (an insert's link step, ``index/rows.py``): only the sentences that
        mention one of them are paired. The other sentences' mentions are as they were, so are their pairs, unless a
        sentence has more pairs than the cap (which pairs it keeps then follows the pairs before it): then every
        sentence is paired, as without ``added``."""
        by_sentence: dict[int, list] = {}
        for m in find_mentions(text, keys, self.max_ngram):
            by_sentence.setdefault(m.sentence, []).append(m)
        cap = self.max_pairs_per_sentence
        if added is not None and all(len(ms) * (len(ms) - 1) // 2 <= cap for ms in by_sentence.values()):
            by_sentence = {s: ms for s, ms in by_sentence.items() if any(m.key in added for m in ms)}
        if not by_sentence:
            return []
        sentences = split_sentences(text)
        out, seen = [], set()
        for mentions in by_sentence.values():
            pairs = [
                (j - i, a, b)
                for i, a in enumerate(mentions)
                for j, b in enumerate(mentions)
                if i < j and a.key != b.key
            ]
            pairs.sort(key=lambda p: p[0])
            kept = 0
            for _, a, b in pairs:
                if kept >= self.max_pairs_per_sentence:
                    break
                predicate = self._predicate(text[a.end : b.start])
                if (a.key, predicate, b.key) in seen:
                    continue
                seen.add((a.key, predicate, b.key))
                kept += 1
                out.append(
                    Relation(
                        label=predicate,
                        source_id=a.key,
                        target_id=b.key,
                        properties={"text": self._sentence(text, sentences[a.sentence], a, b), "kind": "cooccurrence", "chunk_id": chunk_id},
                    )
                )
        return out

    def _predicate(self, between: str) -> str:
        toks = words(between)
        if 0 < len(toks) <= self.max_predicate_words and not any(ch in between for ch in ",;:()[]\"\n"):
            return " ".join(t.lower() for t in toks)
        return CO_OCCURS

    def _sentence(self, text: str, span: tuple[int, int], a, b) -> str:
        start, end = span
        if end - start > self.max_text_chars:  # keep the window around the pair
            mid = (a.start + b.end) // 2
            start = max(start, mid - self.max_text_chars // 2)
            end = min(end, start + self.max_text_chars)
        return " ".join(text[start:end].split())


class SynonymEdgeExtractor(TransformComponent):
    """Synonym edges (AGRAG Eq. 5) between the entities of the chunks passed in one call.

    Embeds each distinct entity name once (batched), finds neighbours with cosine > ``threshold``
    (at most ``max_per_entity`` each) with faiss, and attaches each ``synonym`` relation to the first
    chunk that mentions its source entity. Names with fewer than ``min_chars`` letters or digits are
    skipped: short strings embed close to everything. Pairs that the resolution rules tell apart by their words
    (two different people sharing a surname, names with different numbers or codes: ``can_be_aliases``) get no
    edge, as in the shared index's synonym step.
    """

    embed_model: BaseEmbedding
    threshold: float = Field(default=0.8, gt=0.0, lt=1.0, description="φ")
    max_per_entity: int = Field(default=100, ge=1)
    min_chars: int = Field(default=3, ge=0)
    show_progress: bool = False

    @classmethod
    def class_name(cls) -> str:
        return "SynonymEdgeExtractor"

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        import numpy as np

        from ..graph.synonyms import synonym_pairs
        from .entity_resolution import keep_alias_pairs

        first_chunk: dict[str, int] = {}
        surface: dict[str, str] = {}
        type_of: dict[str, str] = {}
        for pos, node in enumerate(nodes):
            for e in entity_nodes_of(node):
                first_chunk.setdefault(e.name, pos)
                surface.setdefault(e.name, e.properties.get("surface", e.name))
                type_of.setdefault(e.name, str(e.properties.get("type") or e.properties.get("entity_type") or ""))
        keys = list(first_chunk)
        if len(keys) >= 2:
            vecs = np.asarray(
                self.embed_model.get_text_embedding_batch([surface[k] for k in keys], show_progress=self.show_progress),
                dtype=np.float32,
            )
            vecs /= np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
            eligible = np.array([sum(ch.isalnum() for ch in k) >= self.min_chars for k in keys])
            src, dst, sim = synonym_pairs(vecs, self.threshold, self.max_per_entity, eligible=eligible)
            src, dst, sim = keep_alias_pairs(keys, lambda k: type_of.get(k, ""), src, dst, sim)
            for i, j, s in zip(src.tolist(), dst.tolist(), sim.tolist()):
                node = nodes[first_chunk[keys[i]]]
                kg_nodes, kg_relations = _take_kg(node)
                kg_relations.append(
                    Relation(label=SYNONYM, source_id=keys[i], target_id=keys[j], properties={"kind": SYNONYM, "score": float(s)})
                )
                _put_kg(node, kg_nodes, kg_relations)
        for node in nodes:  # every chunk must carry both keys for PropertyGraphIndex
            _put_kg(node, *_take_kg(node))
        return nodes

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.__call__(nodes, **kwargs)
