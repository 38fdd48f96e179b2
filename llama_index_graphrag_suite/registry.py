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
the variants). The graph methods are registered with a hybrid guard preset: ``"agrag"`` is AGRAG inside
:class:`~llama_index_graphrag_suite.methods.guard.HybridGuard` (whose ``guard_*`` settings ``--set`` may change
too), ``"agrag:paper"`` (A2RAG also ``"a2rag:unguarded"``) the method alone. This module imports no method at
import time, so loading it costs nothing and nothing in the package imports back through it.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

__all__ = [
    "DEFAULT_METHOD",
    "ENTRY_POINT_GROUP",
    "PLAIN_VARIANTS",
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
PLAIN_VARIANTS = ("paper", "unguarded")  # a guarded method's variants that run without the hybrid guard
_M = "llama_index_graphrag_suite.methods"
_GUARD, _GUARD_CONFIG = f"{_M}.guard.retriever:HybridGuard", f"{_M}.guard.config:GuardConfig"
log = logging.getLogger(__name__)


def _load(target: str) -> Any:
    """``"module:attr"`` imported on first use (as the methods are: this module imports none at import time)."""
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


class RequestError(ValueError):
    """A request that cannot run as asked (empty question, unknown method, variant or setting, bad top_k)."""


class UnknownMethodError(RequestError):
    """A method name (or variant) that is not registered."""


@dataclass
class MethodInfo:
    """One registered method: where its retriever class lives and what it does."""

    name: str
    target: str | type
    description: str
    source: str = "built-in"  # "python" (register_method) or the distribution an entry point came from
    guard: str | None = None  # the hybrid guard preset the method runs inside (methods/guard/config.py), or None

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
        """The method's typed config (a ``MethodConfig``: its settings and, in ``PRESETS``, its variants)."""
        cls = self.load()
        config_class = getattr(cls, "config_class", None)
        if config_class is None:
            raise UnknownMethodError(f"method {self.name!r} ({self.target!r}) is not a method class: it has no "
                                     "config_class (subclass methods.base.GraphIndexRetriever)")
        return config_class

    @property
    def variants(self) -> list[str]:
        return list(self.config_class.PRESETS)

    def guard_for(self, variant: str | None) -> str | None:
        """The guard preset this method runs inside with ``variant`` (None: the method alone)."""
        return None if variant in PLAIN_VARIANTS else self.guard

    def settings_classes(self, variant: str | None = None) -> list[type]:
        """The configs whose fields ``--set`` may change: the method's, then the guard's when it runs inside one."""
        if self.guard_for(variant) is None:
            return [self.config_class]
        return [self.config_class, _load(_GUARD_CONFIG)]

    def settings_listing(self, variant: str | None = None) -> list[tuple[str, Any, str]]:
        """``(setting, default, description)`` of every setting ``--set`` may change on ``name[:variant]``: the
        method's, then the guard's at the method's guard preset (A2RAG's differ from the others'). Defaults as JSON
        values (enums as their values)."""
        configs = [self.config_class.resolve(variant=variant)]
        preset = self.guard_for(variant)
        if preset is not None:
            configs.append(_load(_GUARD_CONFIG).resolve(variant=preset))
        out: list[tuple[str, Any, str]] = []
        for config in configs:
            values = config.model_dump(mode="json")
            out += [(f, values[f], spec.description or "") for f, spec in type(config).model_fields.items()]
        return out

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


_BUILTIN = {  # name: (class, description[, hybrid guard preset])
    "dense": (f"{_M}.baselines:DenseRetriever", "cosine similarity of chunk embeddings"),
    "bm25": (f"{_M}.baselines:BM25Retriever", "BM25 over chunk words"),
    "hybrid": (f"{_M}.baselines:HybridRetriever", "average of min-max dense and BM25 scores (AGRAG Eq. 21)"),
    "llamaindex_hybrid": (f"{_M}.llamaindex_hybrid:LlamaIndexHybridRetriever",
                          "LlamaIndex's own hybrid: QueryFusionRetriever (reciprocal rerank) over BM25Retriever and "
                          "the vector retriever, on the same chunks and embeddings"),
    "hipporag": (f"{_M}.baselines:HippoRAGRetriever",
                 "HippoRAG 2-style: fact mapping, PPR with passage nodes, passages by PPR", "default"),
    "agrag": (f"{_M}.agrag.retriever:AGRAGRetriever",
              "AGRAG: MCMI reasoning subgraph (Steiner tree + greedy expansion) + hybrid chunks", "default"),
    "pathrag": (f"{_M}.pathrag.retriever:PathRAGRetriever",
                "PathRAG: flow-pruned relational paths between query entities (Eq. 2-4), reliability-ordered path prompt",
                "default"),
    "archrag": (f"{_M}.archrag.retriever:ArchRAGRetriever",
                "ArchRAG: attributed communities (KNN + weighted Leiden), C-HNSW search on every layer, chunks by best "
                "item score", "default"),
    "a2rag": (f"{_M}.a2rag.retriever:A2RAGRetriever",
              "A2RAG: seeds -> 1-hop local -> K-hop bridges -> degree-normalised PPR, escalating until sufficient",
              "a2rag"),
}
_methods: dict[str, MethodInfo] = {name: MethodInfo(name, *entry[:2], guard=(entry[2:] or [None])[0])
                                   for name, entry in _BUILTIN.items()}
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


def register_method(name: str, target: str | type, description: str = "", *, replace: bool = False,
                    guard: str | None = None) -> None:
    """Make ``name`` usable everywhere a method is named (``get_retriever``, ``as_retriever``, CLI, bench).

    ``target`` is the retriever class or ``"package.module:Class"`` (imported when first used). The
    class takes ``(index, top_k=..., **settings)``; subclassing ``GraphIndexRetriever`` gives it a typed
    config, variants and prompts. ``guard``: a hybrid guard preset (``"default"``) to run the method inside;
    its config should then have a ``"paper"`` preset (the method alone).
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
        _methods[name] = MethodInfo(name, target, description, source="python", guard=guard)


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
    # A plugin never replaces a registered name, so one already known needs no scan of the installed packages.
    info = _methods.get(name) or _registered().get(name)
    if info is None:
        raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(method_names())}")
    return info


@dataclass(frozen=True)
class MethodSpec:
    """One method as a request names it: registry entry, variant and validated settings (config overrides).

    ``config`` is the method's resolved config (defaults, then the variant's preset, then ``settings``);
    every method class has one (``GraphIndexRetriever`` gives ``NoConfig``). ``guard`` is the hybrid guard's
    resolved config (its preset, then the ``guard_*`` settings), or None when the method runs alone.
    """

    name: str
    variant: str | None
    settings: Mapping[str, Any] = field(default_factory=dict)
    config: Any = field(default=None, compare=False, repr=False)
    info: Any = field(default=None, compare=False, repr=False)  # registry.MethodInfo
    guard: Any = field(default=None, compare=False, repr=False)  # methods.guard.GuardConfig or None

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
        """The method's retriever over ``index`` with this spec's variant and settings (``extra``: ``llm=`` ...),
        inside the hybrid guard when ``guard`` is set."""
        if self.config is None:  # a factory that is not registered (the bench's extra_methods): settings as given
            return self.retriever_class(index, top_k=top_k, **dict(self.settings), **extra)
        params = {"config": self.config, "variant": self.variant, **extra}
        if self.guard is None:
            return self.retriever_class(index, top_k=top_k, **params)
        include_evidence = params.pop("include_evidence", False)
        return _load(_GUARD).around(self.retriever_class, index, top_k, guard=self.guard,
                                  include_evidence=include_evidence, **params)


def resolve_method(method: str | MethodSpec, settings: Mapping[str, Any] | None = None) -> MethodSpec:
    """``"name"`` or ``"name:variant"`` and config overrides -> a checked :class:`MethodSpec`.

    Raises :class:`RequestError` (``registry.UnknownMethodError`` for an unknown name or variant) naming
    what is available. A :class:`MethodSpec` passes through (``settings`` must then be empty).
    """
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
    classes = info.settings_classes(variant or None)
    fields = [f for c in classes for f in c.model_fields]
    unknown = sorted(set(settings) - set(fields))
    if unknown:
        raise RequestError(f"method {label_of(name, variant)!r} has no setting {', '.join(map(repr, unknown))}; "
                           f"settings: {', '.join(sorted(fields)) or '(none)'}")
    guard_preset = info.guard_for(variant or None)
    try:
        config = info.config_class.resolve(
            variant=variant or None, **{k: v for k, v in settings.items() if k in info.config_class.model_fields})
        guard = None if guard_preset is None else classes[1].resolve(
            variant=guard_preset, **{k: v for k, v in settings.items() if k in classes[1].model_fields})
    except ValueError as exc:  # pydantic's ValidationError is a ValueError
        first = exc.errors()[0] if hasattr(exc, "errors") else {"msg": str(exc), "loc": ()}
        where = ".".join(str(x) for x in first.get("loc", ())) or "settings"
        raise RequestError(f"bad setting for {name}: {where}: {first['msg']}") from None
    return MethodSpec(name, variant or None, MappingProxyType(settings), config, info, guard)  # resolved once


def label_of(name: str, variant: str | None) -> str:
    return f"{name}:{variant}" if variant else name


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
        targets = [target] if dot else [
            n for n in names if any(key in c.model_fields for c in _classes_of(n, methods))]
        if dot and target not in names:
            raise UnknownMethodError(f"--set {pair!r} names method {target!r}, which is not among {', '.join(names)}")
        if not targets:
            raise ValueError(f"no method among {', '.join(names)} has a setting {key!r}")
        for name in targets:
            text = pair[len(target) + 1:] if dot else pair
            classes = _classes_of(name, methods)
            owner = next((c for c in classes if text.partition("=")[0].strip() in c.model_fields), classes[0])
            k, value = owner.parse_setting(text)  # an unknown key is refused here, naming the method's settings
            out.setdefault(name, {})[k] = value
    for name, values in out.items():
        for c in _classes_of(name, methods):  # every value checked before any work starts
            c.resolve(**{k: v for k, v in values.items() if k in c.model_fields})
    return out


def _classes_of(name: str, methods: list[str]) -> list[type]:
    """The settings classes of ``name`` as ``methods`` run it: with the guard's when any of its labels is guarded."""
    info = method_info(name)
    variants = [parse_method(m)[1] for m in methods if parse_method(m)[0] == name] or [None]
    return max((info.settings_classes(v) for v in variants), key=len)


def get_retriever(index: Any, method: str | MethodSpec, **params: Any):
    """The named method's retriever over ``index`` (ours or a ``PropertyGraphIndex``); ``method`` may be ``name:variant``
    or a :class:`MethodSpec` already resolved (then ``params`` hold only ``top_k``, ``llm`` and the like)."""
    if "top_k" in params:  # before any method or wrapper does arithmetic with it
        from .methods.scoring import check_top_k

        check_top_k(params["top_k"])
    if isinstance(method, MethodSpec):
        return method.retriever(index, **params)
    info = method_info(method)
    name, variant = parse_method(method)
    given = params.pop("variant", None)
    if variant is not None and given not in (None, variant):
        raise ValueError(f"two variants asked for: {method!r} and variant={given!r}")
    variant = variant or given
    if getattr(info.load(), "config_class", None) is None:  # not a GraphIndexRetriever: settings as given
        return info.load()(index, **params, **({"variant": variant} if variant else {}))
    fields = {f for c in info.settings_classes(variant) for f in c.model_fields}
    settings = {k: params.pop(k) for k in list(params) if k in fields}
    config = params.pop("config", None)
    spec = resolve_method(label_of(name, variant), settings)
    if config is not None:  # a config given whole: the variant and the settings apply on top of it
        spec = replace(spec, config=info.config_class.resolve(config, variant, **{
            k: v for k, v in settings.items() if k in info.config_class.model_fields}))
    return spec.retriever(index, **params)


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
