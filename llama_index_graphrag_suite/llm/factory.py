"""Build the project's LLM from one URL.

The project never picks an LLM by itself (no hidden OpenAI default): without a URL there is no LLM,
and the methods that need one say so. With a URL, the client is :class:`~.http_llm.HTTPCompletionLLM`
(hard per-request deadline, size cap, strict answer format) wrapped in :class:`RobustLLM`. Accepted forms:

* ``http(s)://host:port/v1`` or ``.../v1/chat/completions`` (a bare ``http://host:port`` means
  ``/v1``): any OpenAI-compatible server, such as ``vllm serve``, llama.cpp's ``llama-server``,
  LM Studio or Ollama. Without ``model`` the first id of ``GET /v1/models`` is used.
* ``vllm+http://host:port`` or a URL ending in ``/generate``: vLLM's legacy demo API server
  (``python -m vllm.entrypoints.api_server``). It echoes the prompt, which is stripped here, and
  applies no chat template.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from .errors import LLMRequestError, LLMUnavailableError
from .http_llm import HTTPCompletionLLM
from .robust import RobustLLM
from .transport import DEFAULT_MAX_BYTES, HTTPStatusError, ResponseFormatError, request_json
from .usage import LLMUsage

__all__ = ["build_llm", "parse_llm_url", "LLMEndpoint"]

_LEGACY_PREFIX = "vllm+"
_CHAT_PATH = "/chat/completions"


@dataclass(frozen=True)
class LLMEndpoint:
    """Where and how to talk to a server: ``kind`` is ``"openai"`` or ``"generate"``."""

    kind: str
    api_url: str  # the endpoint requests are posted to
    base_url: str  # for "openai": the .../v1 prefix; for "generate": scheme://host:port


def parse_llm_url(url: str) -> LLMEndpoint:
    """Classify ``url`` into one of the forms in the module docstring; ValueError otherwise."""
    raw = url.strip()
    legacy = raw.startswith(_LEGACY_PREFIX)
    if legacy:
        raw = raw[len(_LEGACY_PREFIX) :]
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(
            f"unsupported LLM URL {url!r}: use http(s)://host:port/v1 for an OpenAI-compatible server "
            "or vllm+http://host:port for vLLM's /generate server"
        )
    root = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if legacy or path.endswith("/generate"):
        if not path.endswith("/generate"):
            path += "/generate"
        return LLMEndpoint("generate", root + path, root)
    if path.endswith(_CHAT_PATH):
        path = path[: -len(_CHAT_PATH)]
    elif not path:
        path = "/v1"
    if not path.endswith("/v1"):
        raise ValueError(
            f"unsupported LLM URL {url!r}: an OpenAI-compatible URL must end in /v1 or /v1/chat/completions"
        )
    return LLMEndpoint("openai", root + path + _CHAT_PATH, root + path)


def _first_model_id(base_url: str, headers: dict[str, str], timeout: float) -> str:
    """Ask an OpenAI-compatible server which model it serves (``GET <base>/models``)."""
    models_url = base_url + "/models"
    try:
        listed = request_json("GET", models_url, headers=headers, deadline=time.monotonic() + timeout)
    except HTTPStatusError as exc:
        if exc.status_code in (401, 403):
            raise LLMRequestError(models_url, exc, exc.status_code) from exc
        raise LLMUnavailableError(models_url, exc) from exc
    except (OSError, ResponseFormatError) as exc:
        raise LLMUnavailableError(models_url, exc) from exc
    data = listed.get("data") if isinstance(listed, dict) else None
    ids = [m["id"] for m in data or [] if isinstance(m, dict) and m.get("id")]
    if not ids:
        raise LLMUnavailableError(models_url, ValueError("the server lists no models; pass model= explicitly"))
    return ids[0]


def build_llm(
    url: str | None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    temperature: float = 0.0,
    max_tokens: int = 1024,
    timeout: float = 60.0,
    max_retries: int = 3,
    cache_path: str | os.PathLike | None = None,
    context_window: int = 8192,
    usage: LLMUsage | None = None,
    retry_delay: float = 0.5,
    on_error: Literal["abort", "skip"] = "abort",
    max_consecutive_failures: int = 3,
    build_timeout: float | None = None,
    max_response_bytes: int = DEFAULT_MAX_BYTES,
    structured_output: Literal["json_schema", "json_object"] | None = None,
    function_calling: bool = True,
) -> RobustLLM | None:
    """The LLM for ``url`` (None without a URL).

    Temperature defaults to 0 because extraction should be repeatable (and cacheable).
    ``context_window`` is reported to LlamaIndex instead of VllmServer's hard-coded 3900, so prompt
    packing matches the served model. ``retry_delay`` is the first backoff, doubled per retry.
    ``timeout`` is the total seconds of one call (all retries included); ``build_timeout`` bounds all
    calls of one index build or A2RAG loop. ``on_error``/``max_consecutive_failures``: what a build
    does when the server refuses requests (401/403, 400/404, malformed answers): ``"abort"`` after
    that many in a row, or ``"skip"`` the chunks. ``cache_path=None`` disables the cache.

    An OpenAI-compatible server gives a chat model (``chat``, real streaming) with tool calling;
    ``function_calling=False`` says the server has none (vLLM without ``--enable-auto-tool-choice``).
    ``structured_output`` asks for JSON with ``response_format`` where our code wants JSON (see
    :mod:`.structured`; off by default: answers, and so cached ones, stay as they were).
    """
    if url is None or not url.strip():
        return None
    endpoint = parse_llm_url(url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    discovered = False
    if endpoint.kind == "openai" and not model:
        model, discovered = _first_model_id(endpoint.base_url, headers, timeout), True
    model = model or f"vllm-generate@{endpoint.base_url}"
    inner = HTTPCompletionLLM(
        model=model,
        api_url=endpoint.api_url,
        kind=endpoint.kind,
        temperature=temperature,
        max_tokens=max_tokens,
        timeout=timeout,
        max_response_bytes=max_response_bytes,
        context_window=context_window,
        api_headers=headers,
        function_calling=function_calling,
    )
    llm = RobustLLM(
        inner,
        cache=cache_path,
        usage=usage,
        max_retries=max_retries,
        base_delay=retry_delay,
        timeout=timeout,
        context_window=context_window,
        num_output=max_tokens,
        strip_prompt_echo=endpoint.kind == "generate",
        url=endpoint.base_url if endpoint.kind == "openai" else endpoint.api_url,
        cache_params={"temperature": temperature, "max_tokens": max_tokens},
        on_error=on_error,
        max_consecutive_failures=max_consecutive_failures,
        build_timeout=build_timeout,
        structured_output=structured_output,
    )
    if discovered:
        llm.mark_access_checked()  # the server accepted the key while listing its models
    return llm
