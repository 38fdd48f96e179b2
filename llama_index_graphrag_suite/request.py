"""A query request, resolved and checked once at the edge (CLI options, HTTP body, MCP call, bench list).

    spec = resolve_method("agrag:no_mcmi", {"fact_top_k": 3})   # MethodSpec: method, variant, settings, config
    request = Request.make("Who founded X?", spec, top_k=5)    # or Request.make(question, "agrag", 5, settings)

:func:`~llama_index_graphrag_suite.registry.resolve_method` parses ``name[:variant]`` once, finds the
method (built-in, registered in Python, or an installed plugin), checks the variant and validates the
settings with the method's config. Everything below the edge (``runner.run_request``,
``registry.get_retriever``, the bench) takes the :class:`MethodSpec` as it is and parses nothing again.
Problems a caller can fix raise :class:`RequestError` with a message saying what to change.

This module imports nothing heavy (no method, no LlamaIndex) so the CLI can check a request before
it pays for loading an index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .registry import MethodSpec, RequestError, resolve_method
from .text import clean_text, has_visible_text

__all__ = ["MethodSpec", "Request", "RequestError", "clean_question", "require_documents", "resolve_method"]


def clean_question(question: Any, max_chars: int | None = None) -> str:
    """The question as the index's text is cleaned (NFKC, no control or format characters) and on one line.

    :class:`RequestError` for what is not a question: not a string, not valid Unicode (a lone surrogate), nothing
    visible left (spaces, marks, variation selectors, braille blanks, Hangul fillers), or over ``max_chars``
    characters before or after normalising (NFKC can make one character eighteen: U+FDFA).
    """
    if not isinstance(question, str):
        raise RequestError(f"the question must be a string, got {type(question).__name__}")
    try:
        question.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RequestError(f"the question is not valid Unicode: a lone surrogate U+{ord(question[exc.start]):04X} "
                           f"at character {exc.start}") from None
    if max_chars is not None and len(question) > max_chars:
        raise RequestError(f"the question is {len(question):,} characters; at most {max_chars:,}")
    text = " ".join(clean_text(question).split())
    if not text:
        raise RequestError("the question is empty: send a non-empty 'question'")
    if not has_visible_text(text):
        raise RequestError("the question has no letters or digits (only spaces, marks or invisible characters)")
    if max_chars is not None and len(text) > max_chars:
        raise RequestError(f"the question is {len(text):,} characters once normalised (NFKC); at most {max_chars:,}")
    return text


def require_documents(index: Any) -> None:
    """:class:`RequestError` when ``index`` holds no chunks: there is nothing to retrieve from yet."""
    if not len(getattr(index, "chunks", ()) or ()):
        raise RequestError("the index holds no documents yet: add some first (graphrag-suite index FOLDER --update, "
                           "or POST /documents)")


@dataclass(frozen=True)
class Request:
    """One question for one method: what the runner runs (``runner.run_request(index, request)``)."""

    question: str
    spec: MethodSpec
    top_k: int = 5

    @classmethod
    def make(cls, question: str, method: str | MethodSpec, top_k: int = 5,
             settings: Mapping[str, Any] | None = None, max_top_k: int | None = None,
             max_chars: int | None = None, index: Any = None) -> "Request":
        """Check the question (:func:`clean_question`) and top_k and resolve the method; with ``index``, also that
        it holds documents. :class:`RequestError` says what is wrong."""
        question = clean_question(question, max_chars)
        if isinstance(top_k, bool) or not isinstance(top_k, int):
            raise RequestError(f"top_k must be a whole number, got {top_k!r}")
        if top_k < 1:
            raise RequestError(f"top_k must be at least 1, got {top_k}")
        if max_top_k is not None and top_k > max_top_k:
            raise RequestError(f"top_k must be between 1 and {max_top_k}, got {top_k}")
        if index is not None:
            require_documents(index)
        return cls(question, resolve_method(method, settings), top_k)
