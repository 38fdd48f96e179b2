"""The bench runner: one index, every named method on every question, one JSON report.

Methods are resolved once into ``MethodSpec`` s (``request.resolve_method``) before the index is built, and every
question runs through the one runner (``runner.run_request``), as in the CLI and the server.
Latency is the wall time of ``retriever.retrieve(question)`` (query embedding included: the index's
query-embedding cache is cleared before each method), measured after one untimed warm-up query per method so lazy set-up (model warm-up, cached matrices) is not
charged to the first question. Context tokens count what the method would hand an LLM: the text of
its evidence node plus its chunk nodes, with LlamaIndex's tokenizer.
"""

from __future__ import annotations

import os
import platform
import resource
import time
from pathlib import Path
from typing import Any, Callable

from ..index import GraphRAGIndex
from ..index.storage import CURRENT
from ..llm.usage import count_tokens
from ..registry import MethodInfo, UnknownMethodError, method_names
from ..request import MethodSpec, Request, resolve_method
from ..runner import run_request
from .datasets import BenchDataset, load_dataset
from .metrics import all_gold_at, percentile, recall_at

TOP_K = 5


def machine_description() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    try:
        mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
        mem = f", {mem_gib:.0f} GiB"
    except (ValueError, OSError, AttributeError):
        mem = ""
    return f"{cpu}, {os.cpu_count()} CPUs{mem}, {platform.system()} {platform.machine()}, Python {platform.python_version()}"


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build_or_load_index(dataset: BenchDataset, index_dir: str | Path | None, embed, llm, show_progress: bool,
                        config=None, version: int | None = None):
    """Reuse the index in ``index_dir`` when there is one (kept version ``version`` when given); otherwise
    build it with ``config`` (and save it there)."""
    if version is not None and index_dir is None:
        raise ValueError("an index version needs an index folder (--index-dir)")
    if index_dir is not None and (version is not None or (Path(index_dir) / CURRENT).exists()):
        index = GraphRAGIndex.load(index_dir, embed_model=embed, llm=llm, show_progress=show_progress, version=version)
        return index, {**index.build_info, "reused": True}
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(dataset.documents, embed_model=embed, llm=llm, config=config,
                                         show_progress=show_progress)
    index.note_build(seconds=time.perf_counter() - start, peak_rss_mb=peak_rss_mb())
    if index_dir is not None:
        index.persist(index_dir)
    return index, {**index.build_info, "reused": False}


def resolve_methods(methods: list[str], extra_methods: dict[str, Callable[..., Any]] | None = None,
                    settings: dict[str, dict[str, Any]] | None = None) -> list[MethodSpec]:
    """``methods`` (names, ``name:variant``, ``all``) as checked specs, each once, before any work starts.

    ``all`` expands in place (``"all,agrag:no_mcmi"`` is every method plus an ablation); ``extra_methods``
    are retriever factories by name that are not registered; ``settings`` maps a method name to its overrides.
    """
    extra_methods = dict(extra_methods or {})
    settings = dict(settings or {})
    names: list[str] = []
    for m in methods:
        names += method_names() + list(extra_methods) if m.strip() == "all" else [m.strip()]
    names = list(dict.fromkeys(names))
    specs: list[MethodSpec] = []
    for label in names:
        name, _, variant = label.partition(":")
        if name in extra_methods:  # not registered: the factory takes the settings as given
            info = MethodInfo(name, extra_methods[name], "", source="extra_methods")
            specs.append(MethodSpec(name, variant or None, settings.get(name, {}), None, info))
            continue
        try:
            specs.append(resolve_method(label, settings.get(name)))
        except UnknownMethodError as exc:
            if name in method_names():
                raise
            known = sorted(set(method_names()) | set(extra_methods))
            raise UnknownMethodError(f"unknown method {name!r}; available: {', '.join(known)}") from exc
    unknown = sorted(set(settings) - {s.name for s in specs})
    if unknown:
        raise UnknownMethodError(f"settings given for {unknown[0]!r}, which is not among the methods run")
    return specs


def run_method(index, dataset: BenchDataset, spec: MethodSpec, llm=None, show_progress: bool = True) -> dict[str, float]:
    """Recall, latency and context size of one method (with its variant and settings) over the dataset's questions."""
    from tqdm.auto import tqdm

    extra: dict[str, Any] = {"llm": llm} if llm is not None and spec.uses_llm else {}  # LLM steps use the bench's LLM
    retriever = spec.retriever(index, top_k=TOP_K, **extra)
    retriever.retrieve(dataset.questions[0].question)  # warm-up, untimed
    index.clear_query_cache()  # every method pays for its own query embeddings
    usage = getattr(llm, "usage", None)
    r2, r5, g5, times, tokens, calls = [], [], [], [], [], []
    for q in tqdm(dataset.questions, desc=spec.label, disable=not show_progress):
        before = usage.calls if usage is not None else 0
        run = run_request(index, Request(q.question, spec, TOP_K), retriever=retriever)
        nodes = run.nodes  # context tokens count the evidence the prompt gets
        times.append(run.result["timing_ms"]["retrieve"])
        calls.append((usage.calls - before) if usage is not None else 0)
        chunks = [n for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]
        ranked = [str(n.node.metadata.get("doc_id") or n.node.ref_doc_id or n.node.node_id) for n in chunks]
        r2.append(recall_at(ranked, q.supporting_ids, 2))
        r5.append(recall_at(ranked, q.supporting_ids, 5))
        g5.append(all_gold_at(ranked, q.supporting_ids, 5))
        tokens.append(sum(count_tokens(n.node.get_content()) for n in nodes))
    n = len(dataset.questions)
    return {
        "recall@2": sum(r2) / n,
        "recall@5": sum(r5) / n,
        "all_gold@5": sum(g5) / n,
        "query_ms_p50": percentile(times, 50),
        "query_ms_p95": percentile(times, 95),
        "context_tokens_mean": sum(tokens) / n,
        "llm_calls_mean": sum(calls) / n,
    }


def run_bench(
    dataset_dir: str | Path,
    methods: list[str],
    *,
    limit: int = 0,
    index_dir: str | Path | None = None,
    embed=None,
    llm=None,
    show_progress: bool = True,
    extra_methods: dict[str, Callable[..., Any]] | None = None,
    settings: dict[str, dict[str, Any]] | None = None,
    config=None,
    index_version: int | None = None,
) -> dict[str, Any]:
    """Run the bench and return the report (see issue #7 for the schema).

    ``config`` (an ``IndexConfig``) is how a new index is built; a reused one keeps its own.
    ``settings`` maps a method name to config overrides for it (see :func:`method_settings`).
    """
    specs = resolve_methods(methods, extra_methods, settings)  # before the (possibly long) index build
    dataset = load_dataset(dataset_dir, limit)
    index, build = build_or_load_index(dataset, index_dir, embed, llm, show_progress, config, index_version)
    stats = index.stats()
    report: dict[str, Any] = {
        "dataset": dataset.name,
        "passages": len(dataset.documents),
        "questions": len(dataset.questions),
        "questions_without_gold": dataset.without_gold,
        "embed_model": _embed_name(index),
        "machine": machine_description(),
        "index": {
            "seconds": round(float(build.get("seconds", 0.0)), 2),
            "peak_rss_mb": round(float(build.get("peak_rss_mb", 0.0)), 1),
            "entities": stats["entities"],
            "relations": stats["relations"],
            "llm_calls": int(build.get("llm_calls", 0)),
            "chunks": stats["chunks"],
            "extractor": index.config.entities,
            "stage_seconds": build.get("stage_seconds", {}),
            "reused": build["reused"],
        },
        "methods": {},
    }
    if settings:
        report["settings"] = settings
    for spec in specs:
        result = run_method(index, dataset, spec, llm, show_progress)
        report["methods"][spec.label] = {k: round(v, 4) for k, v in result.items()}
    return report


def _embed_name(index) -> str:
    from ..embeddings import embed_model_name

    return embed_model_name(index.embed_model)
