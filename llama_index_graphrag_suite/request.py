"""A query request, resolved and checked once at the edge (CLI options, HTTP body, MCP call, bench list).

    spec = resolve_method("agrag:no_mcmi", {"fact_top_k": 3})   # MethodSpec: method, variant, settings, config
    request = Request.make("Who founded X?", spec, top_k=5)    # or Request.make(question, "agrag", 5, settings)

:func:`resolve_method` parses ``name[:variant]`` once, finds the method (built-in, registered in
Python, or an installed plugin), checks the variant and validates the settings with the method's
config. Everything below the edge (``runner.retrieve``, ``registry.get_retriever``, the bench) takes
the :class:`MethodSpec` as it is and parses nothing again. Problems a caller can fix raise
:class:`RequestError` with a message saying what to change.

This module imports nothing heavy (no method, no LlamaIndex) so the CLI can check a request before
it pays for loading an index.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MethodSpec", "Request", "RequestError", "resolve_method"]


class RequestError(ValueError):
    """A request that cannot run as asked (empty question, unknown method, variant or setting, bad top_k)."""


@dataclass(frozen=True)
class MethodSpec:
    """One method as a request names it: registry entry, variant and validated settings (config overrides).

    ``config`` is the method's resolved config (defaults, then the variant's preset, then ``settings``),
    or None for a plugin retriever without a ``config_class``.
    """

    name: str
    variant: str | None
    settings: Mapping[str, Any] = field(default_factory=dict)
    config: Any = field(default=None, compare=False, repr=False)
    info: Any = field(default=None, compare=False, repr=False)  # registry.MethodInfo

    @property
    def label(self) -> str:
        """``name`` or ``name:variant``: how results and reports name this method."""
        return f"{self.name}:{self.variant}" if self.variant else self.name

    @property
    def retriever_class(self) -> type:
        return self.info.load()

    @property
    def uses_llm(self) -> bool:
        """Whether an ``llm=`` changes what the method does (a retriever class declares it, or takes ``llm``)."""
        import inspect

        cls = self.retriever_class
        declared = getattr(cls, "uses_llm", None)
        return declared if declared is not None else "llm" in inspect.signature(cls).parameters

    def retriever(self, index: Any, top_k: int = 5, **extra: Any):
        """The method's retriever over ``index`` with this spec's variant and settings (``extra``: ``llm=`` ...)."""
        params: dict[str, Any] = dict(self.settings)
        if self.variant is not None:
            params["variant"] = self.variant
        return self.retriever_class(index, top_k=top_k, **params, **extra)


def resolve_method(method: str | MethodSpec, settings: Mapping[str, Any] | None = None) -> MethodSpec:
    """``"name"`` or ``"name:variant"`` and config overrides -> a checked :class:`MethodSpec`.

    Raises :class:`RequestError` (``registry.UnknownMethodError`` for an unknown name or variant) naming
    what is available. A :class:`MethodSpec` passes through (``settings`` must then be empty).
    """
    from .registry import method_info

    if isinstance(method, MethodSpec):
        if settings:
            raise RequestError(f"settings given twice: in the method spec {method.label!r} and as {dict(settings)!r}")
        return method
    if not isinstance(method, str) or not method.strip():
        raise RequestError("the method is empty: name one from `graphrag-suite methods` (name or name:variant)")
    name, _, variant = method.strip().partition(":")
    info = method_info(name)  # UnknownMethodError lists the registered names
    if variant:
        info.check_variant(variant)
    settings = dict(settings or {})
    config_class = info.config_class
    if config_class is None:  # a plugin retriever without a typed config takes no settings
        if settings:
            raise RequestError(f"method {name!r} has no settings (asked for {', '.join(map(repr, settings))})")
        return MethodSpec(name, variant or None, {}, None, info)
    fields = config_class.model_fields
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise RequestError(f"method {name!r} has no setting {', '.join(map(repr, unknown))}; "
                           f"settings: {', '.join(sorted(fields)) or '(none)'}")
    try:
        config = config_class.resolve(variant=variant or None, **settings)
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = exc.errors()[0] if hasattr(exc, "errors") else {"msg": str(exc), "loc": ()}
        where = ".".join(str(x) for x in first.get("loc", ())) or "settings"
        raise RequestError(f"bad setting for {name}: {where}: {first['msg']}") from None
    return MethodSpec(name, variant or None, settings, config, info)


@dataclass(frozen=True)
class Request:
    """One question for one method: what the runner runs (``runner.run_request(index, request)``)."""

    question: str
    spec: MethodSpec
    top_k: int = 5

    @classmethod
    def make(cls, question: str, method: str | MethodSpec, top_k: int = 5,
             settings: Mapping[str, Any] | None = None, max_top_k: int | None = None) -> "Request":
        """Check the question and top_k and resolve the method; :class:`RequestError` says what is wrong."""
        if not isinstance(question, str) or not question.strip():
            raise RequestError("the question is empty: send a non-empty 'question'")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise RequestError(f"top_k must be at least 1, got {top_k}")
        if max_top_k is not None and top_k > max_top_k:
            raise RequestError(f"top_k must be between 1 and {max_top_k}, got {top_k}")
        return cls(question, resolve_method(method, settings), top_k)
