"""Which extractors build the index's graph, from ``IndexConfig.entities``.

* ``ner`` (default): :class:`~..extractors.ner.NEREntityExtractor`: named entities, document
  titles and headings, aliases, dependency relations (co-occurrence only as a fallback).
* ``statistical``: AGRAG's TF-IDF n-gram entities (Eq. 2-3) and co-occurrence relations, the
  paper-faithful extractor (``agrag``'s paper variant in the bench reads this graph).
* ``both``: the named entities and relations, plus the statistical entities and their co-occurrence
  relations.

It also says how entities first extracted by an insert are linked to chunks indexed before it:
names by the name matcher (capitalised mentions), n-grams by ``find_mentions``.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Callable, Sequence

from llama_index.core.schema import TransformComponent

from ..config import IndexConfig
from ..extractors.entity_stats import EntityStatistics, find_mentions
from ..extractors.gazetteer import NameMatcher
from ..extractors.name_words import NameWordCounts
from ..extractors.statistical import CooccurrenceRelationExtractor, StatisticalEntityExtractor
from ..extractors.terms import TERM_TYPE, find_terms, outside_spans
from .records import ChunkRecord
from .row_overlay import table_column


@dataclass
class Extraction:
    extractors: list[TransformComponent]
    # entity keys new to the index -> a finder of them in older chunks: (chunk text, keys the chunk links already)
    # -> the new keys the text mentions (made once per insert, called for every older chunk)
    known_finder: Callable[[frozenset[str]], Callable[[str, Sequence[str]], set[str]]]
    # recomputes the relations of an old chunk that gained entities (None: relations are not recomputed)
    cooccurrence: CooccurrenceRelationExtractor | None
    # after the extractors ran: known terms they kept -> how many older chunks write each (NER extractor)
    terms_written_before: Callable[[], dict[str, int]] = dict


def extraction_for(config: IndexConfig, stats: EntityStatistics, vocabulary: dict[str, tuple[str, str]],
                   show_progress: bool, indexed: Mapping[str, ChunkRecord] | None = None,
                   name_words: NameWordCounts | None = None) -> Extraction:
    """The extractors of one insert, seeded with the index's known entities (key -> (surface, type)), the chunks
    ``indexed`` before it and the index's word counts (this insert's chunks counted in): the NER extractor's
    corpus-wide rules count them too."""
    extractors: list[TransformComponent] = []
    if config.entities in ("ner", "both"):
        from ..extractors.ner import NEREntityExtractor  # imports spaCy only when asked for

        ner = NEREntityExtractor(model=config.ner_model, relations_from=config.ner_relations,
                                 max_pairs_per_sentence=config.max_pairs_per_sentence, show_progress=show_progress,
                                 terms=config.terms, term_hub_share=config.term_hub_share,
                                 title_link_max_chunks=config.title_link_max_chunks,
                                 lowercase_names=config.lowercase_names)
        ner.add_vocabulary(vocabulary)
        if indexed or name_words is not None:
            indexed = indexed if indexed is not None else {}
            ner.add_corpus(table_column(indexed, "text"), table_column(indexed, "title"), name_words)
        extractors.append(ner)
    cooc = None
    if config.entities in ("statistical", "both"):
        statistical = StatisticalEntityExtractor(
            stats=stats, max_ngram=config.max_ngram, threshold=config.entity_threshold,
            length_norm=config.entity_length_norm,
            fit_statistics=False,  # the index fits them itself, so a failed insert can take them back
            show_progress=show_progress,
        )
        statistical.add_vocabulary({k: s for k, (s, _) in vocabulary.items()})
        cooc = CooccurrenceRelationExtractor(max_ngram=config.max_ngram,
                                             max_pairs_per_sentence=config.max_pairs_per_sentence,
                                             show_progress=show_progress)
        extractors += [statistical, cooc]

    def known_finder(new_keys: frozenset[str]) -> Callable[[str, Sequence[str]], set[str]]:
        with_ner = config.entities in ("ner", "both")
        vocab = ner.vocabulary if with_ner else {}
        # names are matched where written as names; terms (TERM) wherever written, in any case
        terms = frozenset(k for k in new_keys if vocab.get(k, ("", ""))[1] == TERM_TYPE)
        names = new_keys - terms
        standalone = ner.standalone_names if with_ner else set()
        # only the NER graph matches names (the statistical finder reads n-grams): a batch's ~100,000 new names
        # make a matcher that is costly to build for nothing
        matcher = NameMatcher(names, standalone=standalone) if with_ner else None

        def find(text: str, linked: Sequence[str] = ()) -> set[str]:
            found: set[str] = set()
            if with_ner:
                named = bool(names) and bool(matcher.find(text))  # most older chunks write none of the new names
                written = find_terms(text, terms) if terms else []
                if named or written:
                    # The names the chunk already links are matched too, longest first, so that a new name is not
                    # found inside one of them ("United" inside "United States"), and a term is not found where one
                    # of them is written ("CT scan" where "CT" is a name): a build would not link them there.
                    own = {k for k in linked if vocab.get(k, ("", ""))[1] != TERM_TYPE}
                    if named:
                        found |= {key for key, _, _ in NameMatcher(names | own, standalone=standalone).find(text)
                                  if key in names}
                    if written:
                        taken = [(a, b) for _, a, b in NameMatcher(own, min_chars=2).find(text)]  # NER keeps "CT"
                        found |= {key for key, a, b in written if outside_spans([(a, b)], taken)}
            if config.entities in ("statistical", "both"):
                found |= {m.key for m in find_mentions(text, new_keys, config.max_ngram)}
            return found

        return find

    written = (lambda: ner.terms_written_before) if config.entities in ("ner", "both") else dict
    return Extraction(extractors, known_finder, cooc, written)
