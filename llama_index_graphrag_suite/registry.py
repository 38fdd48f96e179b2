"""The methods a user, the CLI or the bench can name: name -> ``"module:Class"``, imported on first use.

    from llama_index_graphrag_suite.registry import get_retriever, register_method
    retriever = get_retriever(index, "agrag", top_k=5)             # or "agrag:no_mcmi" for a variant
    register_method("mine", "my_package.retriever:MyRetriever", "what it does")

Installed packages add methods through the entry-point group ``graphrag_suite.methods`` (name =
``"package.module:Class"``), read on the first lookup, so a pip-installed method shows up in
``graphrag-suite methods``, ``query``, ``bench``, the server and the MCP tool without code here::

    [project.entry-points."graphrag_suite.methods"]
    mine = "my_package.retriever:MyRetriever"

A method class is a :class:`~llama_index_graphrag_suite.methods.base.GraphIndexRetriever` subclass
(its ``config_class`` lists the settings ``--set key=value`` may change; its config's ``PRESETS`` are
the variants). This module imports no method at import time, so loading it costs nothing and nothing
in the package imports back through it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from dataclasses import dataclass
from typing import Any

from .request import MethodSpec, RequestError, resolve_method

__all__ = [
    "DEFAULT_METHOD",
    "ENTRY_POINT_GROUP",
    "MethodInfo",
    "MethodSpec",
    "RequestError",
    "UnknownMethodError",
    "as_query_engine",
    "as_retriever",
    "available_methods",
    "get_retriever",
    "method_info",
    "method_names",
    "method_settings",
    "parse_method",
    "register_method",
    "resolve_method",
    "unregister_method",
]

DEFAULT_METHOD = "agrag"
ENTRY_POINT_GROUP = "graphrag_suite.methods"
_M = "llama_index_graphrag_suite.methods"
log = logging.getLogger(__name__)


class UnknownMethodError(RequestError):
    """A method name (or variant) that is not registered."""


@dataclass
class MethodInfo:
    """One registered method: where its retriever class lives and what it does."""

    name: str
    target: str | type
    description: str
    source: str = "built-in"  # "python" (register_method) or the distribution an entry point came from

    def load(self) -> type:
        """The retriever class (imported on first use)."""
        if isinstance(self.target, str):
            module_name, _, attr = self.target.partition(":")
            try:
                self.target = getattr(importlib.import_module(module_name), attr)
            except (ImportError, AttributeError) as exc:
                raise UnknownMethodError(f"method {self.name!r} points at {self.target!r}, which cannot be imported: {exc}") from exc
        return self.target

    @property
    def config_class(self):
        """The method's typed config (a ``MethodConfig``), or None for a retriever class without one."""
        return getattr(self.load(), "config_class", None)

    @property
    def variants(self) -> list[str]:
        return list(getattr(self.config_class, "PRESETS", {}))

    def describe(self) -> str:
        """The one-line description; a plugin's comes from its class docstring (imported here, not at discovery)."""
        if not self.description and self.source not in ("built-in", "python"):
            try:
                self.description = (self.load().__doc__ or "").strip().split("\n")[0] or f"(from {self.source})"
            except UnknownMethodError as exc:
                return f"(cannot be imported: {exc.__cause__ or exc})"
        return self.description

    def check_variant(self, variant: str) -> None:
        """Raise :class:`UnknownMethodError` unless ``variant`` is one of this method's presets."""
        if not self.variants:
            raise UnknownMethodError(f"method {self.name!r} has no variants (asked for {self.name}:{variant})")
        if variant not in self.variants:
            raise UnknownMethodError(f"method {self.name!r} has no variant {variant!r}; variants: {', '.join(self.variants)}")


_BUILTIN = {
    "dense": (f"{_M}.baselines:DenseRetriever", "cosine similarity of chunk embeddings"),
    "bm25": (f"{_M}.baselines:BM25Retriever", "BM25 over chunk words"),
    "hybrid": (f"{_M}.baselines:HybridRetriever", "average of min-max dense and BM25 scores (AGRAG Eq. 21)"),
    "hipporag": (f"{_M}.baselines:HippoRAGRetriever",
                 "HippoRAG 2-style: fact mapping, PPR with passage nodes, passages by PPR"),
    "agrag": (f"{_M}.agrag.retriever:AGRAGRetriever",
              "AGRAG: MCMI reasoning subgraph (Steiner tree + greedy expansion) + hybrid chunks"),
    "pathrag": (f"{_M}.pathrag.retriever:PathRAGRetriever",
                "PathRAG: flow-pruned relational paths between query entities (Eq. 2-4), reliability-ordered path prompt"),
    "archrag": (f"{_M}.archrag.retriever:ArchRAGRetriever",
                "ArchRAG: attributed communities (KNN + weighted Leiden), C-HNSW search on every layer, chunks by best item score"),
    "a2rag": (f"{_M}.a2rag.retriever:A2RAGRetriever",
              "A2RAG: seeds -> 1-hop local -> K-hop bridges -> degree-normalised PPR, escalating until sufficient"),
}
_methods: dict[str, MethodInfo] = {name: MethodInfo(name, target, desc) for name, (target, desc) in _BUILTIN.items()}
_lock = threading.RLock()
_discovered = False


def _registered() -> dict[str, MethodInfo]:
    """The methods, after reading the installed packages' entry points once (not at import: it costs ~20 ms)."""
    global _discovered
    if not _discovered:
        with _lock:
            if not _discovered:
                _discover_plugins()
                _discovered = True
    return _methods


def _discover_plugins() -> None:
    """Add every ``graphrag_suite.methods`` entry point as a method; nothing is imported until it is used."""
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        source = f"{ep.dist.name} {ep.dist.version}" if getattr(ep, "dist", None) is not None else "a plugin"
        if ep.name in _methods:  # a built-in or a method registered in Python keeps its name
            log.warning("ignoring the method %r from %s: a method of that name is already registered", ep.name, source)
            continue
        if not ep.name or ":" in ep.name or "," in ep.name or ":" not in ep.value:
            log.warning("ignoring the entry point %r = %r from %s: expected name = 'package.module:Class'",
                        ep.name, ep.value, source)
            continue
        _methods[ep.name] = MethodInfo(ep.name, ep.value, "", source=source)


def register_method(name: str, target: str | type, description: str = "", *, replace: bool = False) -> None:
    """Make ``name`` usable everywhere a method is named (``get_retriever``, ``as_retriever``, CLI, bench).

    ``target`` is the retriever class or ``"package.module:Class"`` (imported when first used). The
    class takes ``(index, top_k=..., **settings)``; subclassing ``GraphIndexRetriever`` gives it a typed
    config, variants and prompts.
    """
    if not name or ":" in name or "," in name:
        raise ValueError(f"bad method name {name!r} (no ':' or ',')")
    if isinstance(target, str) and ":" not in target:
        raise ValueError(f"target must be 'package.module:Class', got {target!r}")
    with _lock:
        _registered()
        if name in _methods and not replace:
            raise ValueError(f"method {name!r} is already registered; pass replace=True to replace it")
        if not description and isinstance(target, type):  # a class describes itself; a path is not imported yet
            description = (target.__doc__ or "").strip().split("\n")[0]
        _methods[name] = MethodInfo(name, target, description, source="python")


def unregister_method(name: str) -> None:
    with _lock:
        _registered().pop(name, None)


def available_methods(index: Any = None) -> dict[str, str]:
    """Registered method names (built-in, registered in Python, installed plugins) and their one-line descriptions."""
    return {name: info.describe() for name, info in list(_registered().items())}


def method_names() -> list[str]:
    """The registered method names, sorted, without importing any method (for lists and error messages)."""
    return sorted(_registered())


def parse_method(spec: str) -> tuple[str, str | None]:
    """``"agrag:no_mcmi"`` -> ``("agrag", "no_mcmi")``; ``"hybrid"`` -> ``("hybrid", None)``."""
    name, _, variant = spec.strip().partition(":")
    return name, (variant or None)


def method_info(method: str) -> MethodInfo:
    """The registered method called ``method`` (a ``name:variant`` spec names its method)."""
    name, _ = parse_method(method)
    info = _registered().get(name)
    if info is None:
        raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(method_names())}")
    return info


def method_settings(pairs: list[str], methods: list[str]) -> dict[str, dict[str, Any]]:
    """Config overrides per method from ``--set`` pairs: ``key=value`` or ``method.key=value``.

    A plain ``key`` applies to every method in ``methods`` whose config has that field (at least one
    must); values are read as JSON when they are JSON and validated with the whole config.
    """
    names = list(dict.fromkeys(parse_method(m)[0] for m in methods))
    out: dict[str, dict[str, Any]] = {}
    for pair in pairs:
        key = pair.partition("=")[0].strip()
        target, dot, field = key.partition(".")
        targets = [target] if dot else [n for n in names if key in _fields(n)]
        if dot and target not in names:
            raise UnknownMethodError(f"--set {pair!r} names method {target!r}, which is not among {', '.join(names)}")
        if not targets:
            raise ValueError(f"no method among {', '.join(names)} has a setting {key!r}")
        for name in targets:
            config_class = method_info(name).config_class
            if config_class is None:
                raise ValueError(f"method {name!r} has no settings")
            k, value = config_class.parse_setting(pair[len(target) + 1:] if dot else pair)
            out.setdefault(name, {})[k] = value
    for name, values in out.items():
        method_info(name).config_class.resolve(**values)  # every value checked before any work starts
    return out


def _fields(name: str) -> dict[str, Any]:
    return getattr(method_info(name).config_class, "model_fields", {})


def get_retriever(index: Any, method: str | MethodSpec, **params: Any):
    """The named method's retriever over ``index`` (ours or a ``PropertyGraphIndex``); ``method`` may be ``name:variant``
    or a :class:`MethodSpec` already resolved (then ``params`` hold only ``top_k``, ``llm`` and the like)."""
    if isinstance(method, MethodSpec):
        return method.retriever(index, **params)
    info = method_info(method)
    _, variant = parse_method(method)
    if variant is not None:
        if params.get("variant") not in (None, variant):
            raise ValueError(f"two variants asked for: {method!r} and variant={params['variant']!r}")
        info.check_variant(variant)
        params["variant"] = variant
    return info.load()(index, **params)


def as_retriever(index: Any, method: str = DEFAULT_METHOD, **params: Any):
    """The named method's LlamaIndex ``BaseRetriever`` over ``index`` (see ``graphrag-suite methods``)."""
    return get_retriever(index, method, **params)


def as_query_engine(index: Any, method: str = DEFAULT_METHOD, llm: Any = None, streaming: bool = False,
                    retriever_params: dict[str, Any] | None = None, **engine_kwargs: Any):
    """A query engine over the named method, with the method's own answer prompt and evidence placement.

    ``engine_kwargs`` go to ``RetrieverQueryEngine.from_args`` (``response_mode``, ``callback_manager``,
    ``node_postprocessors``, ...). ``llm`` defaults to LlamaIndex's ``Settings.llm``.
    """
    retriever = get_retriever(index, method, **(retriever_params or {}))
    return retriever.as_query_engine(llm=llm, streaming=streaming, **engine_kwargs)
