"""The CLI's LLM options and the LLM they describe.

``--llm-timeout`` bounds one call (every retry included), ``--llm-build-timeout`` all calls of one
index build or A2RAG loop; ``--on-llm-error`` decides what a build does when the server refuses
requests (wrong key, URL or protocol); ``--no-cache`` runs without the SQLite response cache.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

__all__ = ["add_llm_arguments", "build_llm_from_args"]

DEFAULT_CACHE = Path(".cache") / "llm-responses.sqlite"


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def add_llm_arguments(p: argparse.ArgumentParser) -> None:
    """The options of commands that may talk to an LLM server."""
    p.add_argument("--llm", default=None, help="LLM server URL: http://host:port/v1 (OpenAI-compatible) or vllm+http://host:port")
    p.add_argument("--llm-model", default=None, help="model name on the server (default: the first it lists)")
    p.add_argument("--llm-cache", default=None, help=f"SQLite response cache (default {DEFAULT_CACHE})")
    p.add_argument("--no-cache", action="store_true", help="do not read or write the LLM response cache")
    p.add_argument("--llm-timeout", type=_seconds, default=60.0, metavar="SECONDS",
                   help="total seconds one LLM call may take, retries included (default 60)")
    p.add_argument("--llm-build-timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="total seconds of LLM calls per index build or A2RAG loop (default: no limit)")
    p.add_argument("--on-llm-error", choices=("abort", "skip"), default="abort",
                   help="when the server refuses requests (401/403, 400/404, malformed answers): abort the build "
                        "after --llm-max-failures in a row (default), or skip those chunks")
    p.add_argument("--llm-max-failures", type=_count, default=3, metavar="N",
                   help="consecutive refusals that abort a build (default 3)")
    p.add_argument("--structured-output", choices=("json_schema", "json_object"), default=None,
                   help="ask the server for JSON answers with response_format (dropped if it refuses the field)")


def build_llm_from_args(args: argparse.Namespace) -> Any:
    """The LLM the options ask for (None without --llm or GRAPHRAG_LLM_URL).

    The API key comes from GRAPHRAG_LLM_API_KEY only (never a flag: it would show in `ps`).
    """
    url = args.llm or os.environ.get("GRAPHRAG_LLM_URL")
    if not url:
        return None
    from ..llm import build_llm

    cache = None
    if not getattr(args, "no_cache", False):
        cache = Path(args.llm_cache) if getattr(args, "llm_cache", None) else DEFAULT_CACHE
        cache.parent.mkdir(parents=True, exist_ok=True)
    return build_llm(
        url,
        model=args.llm_model,
        api_key=os.environ.get("GRAPHRAG_LLM_API_KEY"),
        cache_path=cache,
        timeout=getattr(args, "llm_timeout", 60.0),
        build_timeout=getattr(args, "llm_build_timeout", None),
        on_error=getattr(args, "on_llm_error", "abort"),
        max_consecutive_failures=getattr(args, "llm_max_failures", 3),
        structured_output=getattr(args, "structured_output", None),
    )
