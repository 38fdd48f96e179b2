"""The LLM layer: one factory for self-hosted servers, a robust wrapper, usage counting, lenient JSON.

Nothing here talks to a hosted API by default: ``build_llm(None)`` is ``None``.
"""

from .cache import ResponseCache
from .errors import LLMError, LLMRequestError, LLMUnavailableError, ResponseCacheError
from .factory import LLMEndpoint, build_llm, parse_llm_url
from .fake import ScriptedLLM
from .json_repair import JsonParse, parse_json_lenient
from .triples import TripleParse, parse_triples
from .robust import RobustLLM, is_transient_error
from .usage import LLMUsage, count_tokens

__all__ = [
    "JsonParse",
    "LLMEndpoint",
    "LLMError",
    "LLMRequestError",
    "LLMUnavailableError",
    "LLMUsage",
    "ResponseCache",
    "ResponseCacheError",
    "RobustLLM",
    "ScriptedLLM",
    "TripleParse",
    "build_llm",
    "count_tokens",
    "is_transient_error",
    "parse_json_lenient",
    "parse_llm_url",
    "parse_triples",
]
