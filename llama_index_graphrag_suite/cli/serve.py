"""`graphrag-suite serve | export | mcp`: an index behind HTTP, written out as a graph, or as an MCP tool.

``serve`` runs the HTTP API and page on 127.0.0.1 (another host needs ``--allow-remote`` and an API
key); ``export`` writes the graph as GraphML, JSON or one offline HTML page; ``mcp`` offers a
``retrieve`` tool over stdio. The server and the tool run requests through the same runner as ``query``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from .common import CLIError, add_common, build_llm, load_index

__all__ = ["add_commands", "cmd_export", "cmd_mcp", "cmd_serve", "one_blas_thread"]

API_KEY_ENV = "GRAPHRAG_SUITE_API_KEY"
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
    from ..serve.guards import is_loopback

    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if not is_loopback(args.host):
        if not args.allow_remote:
            raise CLIError(f"--host {args.host} is not a loopback address: pass --allow-remote (and an API key) "
                           "to serve other machines")
        if not api_key:
            raise CLIError(f"serving on {args.host} needs an API key: set {API_KEY_ENV} (or --api-key)")
    if args.max_body < 1 or args.max_upload < 1:
        raise CLIError("--max-body and --max-upload must be at least 1 byte")
    import uvicorn

    from ..serve import create_app

    sock = bind_port(args.host, args.port)  # a busy port fails now, before the load and before "serving at"
    try:
        start = time.perf_counter()
        index = load_index(args)
        one_blas_thread()
        llm = build_llm(args)
        app = create_app(index, llm=llm, api_key=api_key, max_body=args.max_body, max_upload=args.max_upload,
                         read_only=args.read_only,
                         persist_dir=None if args.no_persist or args.read_only else args.index_dir,
                         host=args.host, allowed_host=args.allowed_host,
                         mapped_mb=None if args.mapped_mb <= 0 else args.mapped_mb)
        port = sock.getsockname()[1]  # the real one when --port 0 asked for any free port
        print(f"serving {args.index_dir} ({len(index.chunks)} chunks, loaded in {time.perf_counter() - start:.1f}s) "
              f"at http://{args.host}:{port}/  (API docs: /docs; Ctrl-C stops)", file=sys.stderr, flush=True)
        config = uvicorn.Config(app, log_level="warning" if args.quiet else "info")
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def bind_port(host: str, port: int):
    """A listening socket on ``host:port``, or a one-line CLIError saying the port is taken (and what to do)."""
    import errno
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a restart can rebind at once
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CLIError(f"port {port} on {host} is already in use (another server?): stop it, or pass "
                           "--port N (--port 0 takes any free port)") from None
        raise CLIError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.set_inheritable(True)
    return sock


def cmd_export(args) -> int:
    from ..export import check_export_target, write_export

    if args.hops < 0 or args.hops > MAX_HOPS:
        raise CLIError(f"--hops must be between 0 and {MAX_HOPS}, got {args.hops}")
    if args.limit < 1:
        raise CLIError(f"--limit must be at least 1, got {args.limit}")
    check_export_target(args.out, args.index_dir)  # before the load: a path inside the index would break it
    index = load_index(args)
    try:
        g = write_export(index, args.out, args.format, around=args.around, hops=args.hops, limit=args.limit,
                         index_dir=args.index_dir)
    except KeyError as exc:
        raise CLIError(str(exc.args[0])) from None
    print(f"wrote {args.out}: {g.number_of_nodes()} nodes, {g.number_of_edges()} edges ({args.format})")
    return 0


def cmd_mcp(args) -> int:
    from ..request import resolve_method
    from ..serve.mcp_server import build_mcp

    from ..serve.mcp_server import run_stdio

    if not 1 <= args.top_k <= MAX_TOP_K:
        raise CLIError(f"--top-k must be between 1 and {MAX_TOP_K}, got {args.top_k}")
    resolve_method(args.method)  # an unknown default method fails before the load
    index = load_index(args)
    one_blas_thread()
    run_stdio(build_mcp(index, default_method=args.method, default_top_k=args.top_k))
    return 0


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, got {value}")
    return value


EXPORT_FORMATS = ("graphml", "json", "html")  # export.FORMATS, named here so `--help` imports no export code
MAX_HOPS = 10  # a neighbourhood wider than this is the whole graph: export without --around
MAX_TOP_K = 100  # serve.runner.MAX_TOP_K


def add_commands(sub) -> None:
    """Register ``serve``, ``export`` and ``mcp``."""

    p = sub.add_parser("serve", help="HTTP API and web page over an index (http://127.0.0.1:8000/)")
    p.add_argument("index_dir")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; others need --allow-remote)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any free port)")
    p.add_argument("--allow-remote", action="store_true", help="allow a non-loopback --host (an API key is then required)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a host name requests may use besides loopback names and --host (repeatable; '*': any); "
                        "other Host headers get 400 (DNS rebinding)")
    p.add_argument("--api-key", default=None, help=f"bearer token the API wants (better: set {API_KEY_ENV}, "
                   "a flag shows in `ps`)")
    p.add_argument("--max-body", type=int, default=1_000_000, metavar="BYTES", help="largest request body (default 1 MB)")
    p.add_argument("--max-upload", type=int, default=50_000_000, metavar="BYTES",
                   help="largest file upload, POST /documents/files (default 50 MB)")
    p.add_argument("--read-only", action="store_true", help="refuse POST/DELETE /documents")
    p.add_argument("--mapped-mb", type=float, default=1024, metavar="MB",
                   help="after a question, unmap the index file pages queries read once the process maps more than "
                        "this (they stay in the OS page cache; default 1024; 0: never)")
    p.add_argument("--no-persist", action="store_true", help="keep inserted/deleted documents in memory only")
    add_common(p, llm=True)
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("export", help="write the index's graph as GraphML, JSON or a self-contained HTML page")
    p.add_argument("index_dir")
    p.add_argument("--format", choices=EXPORT_FORMATS, default="graphml")
    p.add_argument("--out", required=True, help="file to write (not inside an index folder; an existing file is "
                   "replaced only if it is a regular file)")
    p.add_argument("--around", default=None, metavar="ENTITY", help="only the neighbourhood of this entity")
    p.add_argument("--hops", type=int, default=2, help=f"neighbourhood radius for --around (0-{MAX_HOPS}, default 2)")
    p.add_argument("--limit", type=int, default=500, help="most nodes around the entity (default 500)")
    add_common(p)
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("mcp", help="serve a `retrieve` tool over stdio (Model Context Protocol)")
    p.add_argument("index_dir")
    p.add_argument("--method", default="hybrid", help="the tool's default method")
    p.add_argument("--top-k", type=int, default=5, help="the tool's default top_k")
    add_common(p)
    p.set_defaults(func=cmd_mcp)
