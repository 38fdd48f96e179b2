"""Asking for JSON: ``response_format`` where the server supports it, lenient parsing always.

Our prompts that want JSON (relation triples, PathRAG entities and relations) say so in words, and
the answers are read leniently (:mod:`.json_repair`), which copes with small models' near-JSON. A
server that supports OpenAI's ``response_format`` (vLLM, llama.cpp, LM Studio, Ollama) can instead
*guarantee* JSON by constrained decoding; :func:`predict_json` asks for it when the LLM was built with
``build_llm(..., structured_output="json_schema" | "json_object")``:

* ``"json_schema"`` sends the answer's schema (the callers' ``*_SCHEMA`` constants below);
* ``"json_object"`` asks for any JSON object (for servers without schema support).

When the server refuses the field (HTTP 400, typical of servers that do not know it), the same
request is sent once without it, and if that works ``response_format`` is not sent to that LLM
again. An answer that is not JSON in spite of it is still read by the callers' lenient parser. Any
other LLM (no ``structured_output``, a completion-only model) is asked with plain ``predict``.
"""

from __future__ import annotations

import logging
from typing import Any

from llama_index.core.prompts.base import BasePromptTemplate

from .errors import LLMRequestError

__all__ = ["KEYWORDS_SCHEMA", "PATHRAG_EXTRACTION_SCHEMA", "TRIPLES_SCHEMA", "apredict_json", "predict_json", "response_format_for"]

logger = logging.getLogger(__name__)

# {"triples": [["subject", "predicate", "object"], ...]} (extractors/prompts.py, relation extraction)
TRIPLES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"triples": {"type": "array", "items": {
        "type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 3}}},
    "required": ["triples"],
}

# {"entities": [{name, type, description}], "relations": [{source, target, description, keywords, strength}]}
PATHRAG_EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "entities": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "type": {"type": "string"}, "description": {"type": "string"}},
            "required": ["name", "type", "description"]}},
        "relations": {"type": "array", "items": {"type": "object", "properties": {
            "source": {"type": "string"}, "target": {"type": "string"}, "description": {"type": "string"},
            "keywords": {"type": "string"}, "strength": {"type": "number"}},
            "required": ["source", "target", "description", "keywords"]}},
    },
    "required": ["entities", "relations"],
}

# {"high_level_keywords": [...], "low_level_keywords": [...]} (methods/pathrag/prompts.py, keywords)
KEYWORDS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"high_level_keywords": {"type": "array", "items": {"type": "string"}},
                   "low_level_keywords": {"type": "array", "items": {"type": "string"}}},
    "required": ["high_level_keywords", "low_level_keywords"],
}

# The HTTP statuses with which servers refuse a request field they do not know.
_REFUSED = (400, 422)


def response_format_for(llm: Any, schema: dict[str, Any] | None, name: str = "answer") -> dict[str, Any] | None:
    """The ``response_format`` to send to ``llm`` (None: ask without one)."""
    mode = getattr(llm, "structured_output", None)
    if mode is None or getattr(llm, "_response_format_refused", False) or not llm.metadata.is_chat_model:
        return None
    if mode == "json_schema" and schema is not None:
        return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}
    return {"type": "json_object"}


def predict_json(llm: Any, prompt: BasePromptTemplate, schema: dict[str, Any] | None = None, name: str = "answer",
                 **variables: Any) -> str:
    """``llm.predict(prompt, **variables)``, asking for JSON with ``response_format`` where it can."""
    response_format = response_format_for(llm, schema, name)
    if response_format is None:
        return llm.predict(prompt, **variables)
    messages = llm._get_messages(prompt, **variables)  # what predict() sends (system prompt included)
    try:
        return llm.chat(messages, response_format=response_format).message.content or ""
    except LLMRequestError as exc:
        if exc.status not in _REFUSED:
            raise
        answer = llm.predict(prompt, **variables)  # raises again if the request itself was the problem
        _remember_refusal(llm, exc)
        return answer


async def apredict_json(llm: Any, prompt: BasePromptTemplate, schema: dict[str, Any] | None = None,
                        name: str = "answer", **variables: Any) -> str:
    """The async :func:`predict_json`."""
    response_format = response_format_for(llm, schema, name)
    if response_format is None:
        return await llm.apredict(prompt, **variables)
    messages = llm._get_messages(prompt, **variables)
    try:
        return (await llm.achat(messages, response_format=response_format)).message.content or ""
    except LLMRequestError as exc:
        if exc.status not in _REFUSED:
            raise
        answer = await llm.apredict(prompt, **variables)
        _remember_refusal(llm, exc)
        return answer


def _remember_refusal(llm: Any, exc: LLMRequestError) -> None:
    if not getattr(llm, "_response_format_refused", False):
        logger.warning("the LLM server refused response_format (%s); asking without it from now on", exc)
    llm._response_format_refused = True  # a RobustLLM private attribute, read by response_format_for
