"""The NER extractor with its spaCy parse on Ray (see ``distributed.py``); everything after the parse is unchanged.

Only the parse is sharded: the rest of :class:`~..extractors.ner.NEREntityExtractor` reads every chunk's names
at once (aliases per document, a name's type by majority over the corpus, linking each chunk to every known
name), so it runs on the driver over the parsed docs, exactly as locally.
"""

from __future__ import annotations

from typing import Any, Iterator

from llama_index.core.utils import get_tqdm_iterable
from pydantic import PrivateAttr

from ..extractors.ner import NEREntityExtractor
from ..extractors.spacy_pipeline import resolve_model_name


class RayParsedNER(NEREntityExtractor):
    """:class:`NEREntityExtractor` whose ``_parse`` asks a :class:`~.distributed.RayRunner`."""

    _runner: Any = PrivateAttr(default=None)

    @classmethod
    def wrapping(cls, ner: NEREntityExtractor, runner) -> "RayParsedNER":
        """A copy of ``ner`` with the same settings, sharing its vocabulary and name matcher (so what it learns
        stays in ``ner``, as when ``ner`` runs itself)."""
        fields = ner.model_dump()
        fields.pop("class_name", None)
        clone = cls(**fields)
        clone.__pydantic_private__.update(ner.__pydantic_private__)
        clone._runner = runner
        return clone

    def _parse(self, nlp, texts: list[str]) -> Iterator:
        # The resolved name, not "auto": a worker with other models installed must load the driver's model.
        docs = self._runner.parse(nlp, resolve_model_name(self.model), texts, self.batch_size, self.relations_from)
        return iter(get_tqdm_iterable(docs, self.show_progress, f"Named entities ({len(texts)} chunks, Ray)"))
