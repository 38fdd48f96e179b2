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
import logging
import os
import sys

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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
