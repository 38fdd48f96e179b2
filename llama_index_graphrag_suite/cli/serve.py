"""`graphrag-suite serve | ask | export | mcp`, and the answer of `query --llm` (kept out of cli.py).

``serve`` runs the HTTP API and page on 127.0.0.1 (another host needs ``--allow-remote`` and an API
key); ``ask`` keeps an index loaded and answers questions read from stdin; ``export`` writes the graph
as GraphML, JSON or one offline HTML page; ``mcp`` offers a ``retrieve`` tool over stdio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["UsageError", "add_subcommands", "query_and_answer"]

API_KEY_ENV = "GRAPHRAG_SUITE_API_KEY"


class UsageError(ValueError):
    """A command-line request that cannot run as asked (printed as one line by the CLI)."""


def _load(args, quiet_timing: bool = False):
    from .index import GraphRAGIndex

    start = time.perf_counter()
    index = GraphRAGIndex.load(args.index_dir, embed_model=args.embed, llm=None, version=getattr(args, "version", None))
    if not quiet_timing:
        print(f"loaded {args.index_dir} in {time.perf_counter() - start:.1f}s", file=sys.stderr)
    return index


def _retrieval(index, question: str, method: str, top_k: int, settings: dict | None = None):
    from .serve.runner import RequestError, retrieve

    try:
        return retrieve(index, question, method, top_k, settings)
    except RequestError as exc:
        raise UsageError(str(exc)) from None


def _print_answer(run, llm, stream: bool) -> str:
    from .serve.runner import answer, stream_answer

    print("answer: ", end="", flush=True)
    if not stream:
        text = answer(run, llm)
        print(text)
        return text
    parts = []
    for delta in stream_answer(run, llm):
        parts.append(delta)
        print(delta, end="", flush=True)
    print()
    return "".join(parts).strip()


def query_and_answer(args, index, settings: dict, load_ms: float, print_result: Callable[[dict], None]) -> int:
    """``query``: the evidence, then (with ``--llm``) the answer, streamed with ``--stream``."""
    from .cli_llm import build_llm_from_args

    run = _retrieval(index, args.question, args.method, args.top_k, settings)
    run.result["timing_ms"]["load"] = round(load_ms, 2)
    llm = build_llm_from_args(args) if hasattr(args, "llm") else None
    if args.json:
        if llm is not None:
            from .serve.runner import answer

            run.result["answer"] = answer(run, llm)
        print(json.dumps(run.result, ensure_ascii=False))
        return 0
    print_result(run.result)
    if llm is not None:
        _print_answer(run, llm, getattr(args, "stream", False))
    return 0


def cmd_ask(args) -> int:
    from .cli_llm import build_llm_from_args

    index = _load(args, quiet_timing=args.quiet)
    llm = build_llm_from_args(args)
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("question> ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            return 0
        question = line.strip()
        if not question:
            continue
        try:
            run = _retrieval(index, question, args.method, args.top_k)
        except UsageError as exc:
            print(f"error: {exc}", file=sys.stderr)
            continue
        r = run.result
        print(f"[{r['method']}] {question}  ({r['timing_ms']['retrieve']:.1f} ms)")
        for rank, item in enumerate((i for i in r["nodes"] if i["kind"] == "chunk"), 1):
            print(f"  {rank}. {item['score']:.3f}  {item['doc_id']}  {' '.join(item['text'].split())[:110]}")
        if llm is not None:
            _print_answer(run, llm, stream=True)
        sys.stdout.flush()


BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread() -> bool:
    """Limit BLAS to one thread in a serving process, unless the user set a thread count; True if limited.

    A query's matrix-vector products are small, and after each one OpenBLAS's other threads keep spinning on
    the cores the graph searches and PageRank need: at 100,000 passages AGRAG's p50 was 127 ms with OpenBLAS's
    default threads and 58 ms with one, HippoRAG's 84 and 49 (benchmarks/results/scale_one_blas_thread.md).
    """
    if any(os.environ.get(name) for name in BLAS_THREAD_VARIABLES):
        return False
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return False
    threadpool_limits(limits=1, user_api="blas")
    return True


def cmd_serve(args) -> int:
    from .serve.guards import is_loopback

    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise UsageError(f"--host {args.host} is not a loopback address: pass --allow-remote (and an API key) "
                             "to serve other machines")
        if not api_key:
            raise UsageError(f"serving on {args.host} needs an API key: set {API_KEY_ENV} (or --api-key)")
    if args.max_body < 1:
        raise UsageError("--max-body must be at least 1 byte")
    import uvicorn

    from .cli_llm import build_llm_from_args
    from .serve import create_app

    start = time.perf_counter()
    index = _load(args, quiet_timing=True)
    one_blas_thread()
    llm = build_llm_from_args(args)
    app = create_app(index, llm=llm, api_key=api_key, max_body=args.max_body, read_only=args.read_only,
                     persist_dir=None if args.no_persist or args.read_only else args.index_dir)
    print(f"serving {args.index_dir} ({len(index.chunks)} chunks, loaded in {time.perf_counter() - start:.1f}s) "
          f"at http://{args.host}:{args.port}/  (API docs: /docs; Ctrl-C stops)", file=sys.stderr, flush=True)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning" if args.quiet else "info")
    return 0


def cmd_export(args) -> int:
    from .export import write_export

    index = _load(args, quiet_timing=True)
    try:
        g = write_export(index, args.out, args.format, around=args.around, hops=args.hops, limit=args.limit)
    except KeyError as exc:
        raise UsageError(str(exc.args[0])) from None
    print(f"wrote {args.out}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges ({args.format})")
    return 0


def cmd_mcp(args) -> int:
    from .serve.mcp_server import build_mcp

    index = _load(args, quiet_timing=True)
    one_blas_thread()
    build_mcp(index, default_method=args.method, default_top_k=args.top_k).run("stdio")
    return 0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {value}")
    return value


def add_subcommands(sub, add_common: Callable[..., None]) -> None:
    """Register ``serve``, ``ask``, ``export`` and ``mcp`` on the CLI's subparsers."""
    from .export import FORMATS

    p = sub.add_parser("serve", help="HTTP API and web page over an index (http://127.0.0.1:8000/)")
    p.add_argument("index_dir")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (an API key is then required)")
    p.add_argument("--api-key", default=None, help=f"bearer token the API wants (better: set {API_KEY_ENV}, "
                   "a flag shows in `ps`)")
    p.add_argument("--max-body", type=int, default=1_000_000, metavar="BYTES", help="largest request body (default 1 MB)")
    p.add_argument("--read-only", action="store_true", help="refuse POST/DELETE /documents")
    p.add_argument("--no-persist", action="store_true", help="keep inserted/deleted documents in memory only")
    add_common(p, llm=True)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("ask", help="keep an index loaded and answer questions read from stdin (one a line)")
    p.add_argument("index_dir")
    p.add_argument("--method", default="hybrid", help="a name from `graphrag-suite methods`, or name:variant")
    p.add_argument("--top-k", type=int, default=5)
    add_common(p, llm=True)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("export", help="write the index's graph as GraphML, JSON or a self-contained HTML page")
    p.add_argument("index_dir")
    p.add_argument("--format", choices=FORMATS, default="graphml")
    p.add_argument("--out", required=True, help="file to write")
    p.add_argument("--around", default=None, metavar="ENTITY", help="only the neighbourhood of this entity")
    p.add_argument("--hops", type=int, default=2, help="neighbourhood radius for --around (default 2)")
    p.add_argument("--limit", type=int, default=500, help="most nodes around the entity (default 500)")
    add_common(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("mcp", help="serve a `retrieve` tool over stdio (Model Context Protocol)")
    p.add_argument("index_dir")
    p.add_argument("--method", default="hybrid", help="the tool's default method")
    p.add_argument("--top-k", type=int, default=5, help="the tool's default top_k")
    add_common(p)
    p.set_defaults(func=cmd_mcp)
