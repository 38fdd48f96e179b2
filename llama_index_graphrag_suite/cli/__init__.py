"""`graphrag-suite`: build an index, query it with any method, list methods, serve it, run the demo.

One module per group of commands, each with ``add_commands(sub)`` and its ``cmd_*`` functions:
``build`` (index, --update), ``query`` (query, ask, demo), ``bench``, ``methods``, ``versions``
(versions, rollback), ``serve`` (serve, export, mcp); ``common`` holds the one error type and the
shared options, ``llm`` the LLM options. Parsers import nothing heavy, so ``--help`` is quick.

Bad input (missing folder, empty corpus, unknown method, corrupt index, an index changed by another
writer, unreachable LLM) exits with status 2 and one line on stderr, no traceback (``--debug`` shows it).
"""

from __future__ import annotations

import argparse
import atexit
import gc
import logging
import os
import sys
import threading

from . import bench, build, methods, query, serve, versions
from .common import CLIError, index_config

__all__ = ["CLIError", "build_parser", "main"]

_index_config = index_config  # the name older tests and scripts import
COMMAND_MODULES = (build, query, methods, bench, versions, serve)


def build_parser() -> argparse.ArgumentParser:
    from .._version import __version__

    parser = argparse.ArgumentParser(prog="graphrag-suite", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in COMMAND_MODULES:
        module.add_commands(sub)
    return parser


NOISY_LOGGERS = ("httpx", "sentence_transformers", "faiss", "bm25s")


def _below_warning_from_noisy(record: logging.LogRecord) -> bool:
    """A handler filter, not a logger level: bm25s sets its logger to DEBUG when imported, which is after main()
    now that libraries are imported on first use."""
    return record.levelno >= logging.WARNING or record.name.split(".", 1)[0] not in NOISY_LOGGERS


def _quiet_logs(quiet: bool) -> None:
    logging.basicConfig(level=logging.WARNING if quiet else logging.INFO, format="%(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:
        if _below_warning_from_noisy not in handler.filters:
            handler.addFilter(_below_warning_from_noisy)
    if quiet:
        for var in ("TQDM_DISABLE", "HF_HUB_DISABLE_PROGRESS_BARS"):
            os.environ.setdefault(var, "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def error_line(exc: BaseException) -> str:
    """The one line the user sees: the message alone for errors they can fix, else prefixed with the type."""
    from .common import user_errors

    from ..text import hide_credentials

    if isinstance(exc, OSError) and exc.strerror and exc.filename:  # "Is a directory: IDX/.lock", no errno or type
        return f"error: {exc.strerror}: {exc.filename}"
    if isinstance(exc, MemoryError):
        return "error: out of memory (a setting or a saved manifest asks for more than this machine has)"
    kind = "error" if isinstance(exc, user_errors()) else f"error ({type(exc).__name__})"
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{kind}: {hide_credentials(msg)}"  # a URL's password (--llm, --store) never reaches the terminal


#: Commands that only read and print: run as the program, they leave without the interpreter's teardown.
ONE_SHOT_COMMANDS = frozenset({"query"})


def exit_without_teardown(code: int) -> None:
    """End the process now with ``code``, skipping the interpreter's teardown, which frees every object of a loaded
    index one by one (about 0.3 s of CPU after one query on a 6,820-passage index) only for the OS to drop the
    whole heap a moment later. The exit handlers still run (log handlers flushed, file locks released) and the
    output is flushed first. Returns, leaving the ordinary exit to do its work, while another thread still runs
    (the ordinary exit waits for it), under a profiler, tracer or coverage (which write their data at exit), or when
    flushing fails (a closed pipe: the ordinary exit reports it)."""
    if threading.active_count() > 1 or sys.getprofile() is not None or sys.gettrace() is not None:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def main(argv: list[str] | None = None) -> int:
    """Run the command ``argv`` asks for (default: the program's arguments) and return its exit status.

    Run as the program (``argv`` None), a one-shot command (:data:`ONE_SHOT_COMMANDS`) runs without the cyclic
    garbage collector, which would walk every object that importing LlamaIndex and loading the index create, again
    and again, to find the little cyclic garbage of a process that ends moments later (peak memory within 2 %);
    and it ends the process itself when it is done (:func:`exit_without_teardown`). Called with ``argv`` (tests,
    scripts) it changes neither and always returns."""
    args = build_parser().parse_args(argv)
    one_shot = argv is None and args.command in ONE_SHOT_COMMANDS
    if one_shot:
        gc.disable()
    code = _run(args)
    if one_shot:
        exit_without_teardown(code)
    return code


def _run(args: argparse.Namespace) -> int:
    _quiet_logs(args.quiet)
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
        print(error_line(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
