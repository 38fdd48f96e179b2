"""The LLM layer: one factory for self-hosted servers, a robust wrapper, usage counting, lenient JSON.

Nothing here talks to a hosted API by default: ``build_llm(None)`` is ``None``.
"""

from .cache import ResponseCache
from .deadline import llm_budget
from .errors import LLMError, LLMRequestError, LLMTimeoutError, LLMUnavailableError, LLMUnusableError, ResponseCacheError
from .factory import LLMEndpoint, build_llm, parse_llm_url
from .failure_policy import FailurePolicy
from .fake import ScriptedLLM
from .http_llm import HTTPCompletionLLM
from .json_repair import JsonParse, parse_json_lenient
from .triples import TripleParse, parse_triples
from .robust import RobustLLM, cache_only_if, is_transient_error
from .settings import settings_llm
from .structured import apredict_json, predict_json
from .usage import LLMCost, LLMUsage, count_tokens

__all__ = [
    "FailurePolicy",
    "HTTPCompletionLLM",
    "JsonParse",
    "LLMEndpoint",
    "LLMCost",
    "LLMError",
    "LLMRequestError",
    "LLMTimeoutError",
    "LLMUnavailableError",
    "LLMUnusableError",
    "LLMUsage",
    "ResponseCache",
    "ResponseCacheError",
    "RobustLLM",
    "ScriptedLLM",
    "TripleParse",
    "apredict_json",
    "build_llm",
    "cache_only_if",
    "count_tokens",
    "is_transient_error",
    "llm_budget",
    "parse_json_lenient",
    "parse_llm_url",
    "parse_triples",
    "predict_json",
    "settings_llm",
]
