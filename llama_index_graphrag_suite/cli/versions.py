"""`graphrag-suite versions INDEX`, `rollback INDEX N` and `compact INDEX`: an index folder's kept versions.

Every save writes a new version and keeps the newest few (``--keep-versions`` on ``index``, default 3);
``--version N`` on ``query``, ``methods`` and ``bench --index-dir`` reads an older one without changing
anything, ``rollback`` makes it the current one (under the folder's writer lock). ``compact`` saves the current
version again with every table written whole (``GraphRAGIndex.persist(compact=True)``): after many inserts.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .common import add_common

__all__ = ["add_commands", "cmd_compact", "cmd_rollback", "cmd_versions"]


def _counts(row: dict[str, Any]) -> str:
    c = row["counts"]
    return ", ".join(f"{c[k]} {k}" for k in ("documents", "chunks", "entities", "relations") if k in c)


def cmd_versions(args) -> int:
    from ..index.storage import list_versions

    rows = list_versions(args.index_dir)
    if args.json:
        print(json.dumps(rows, ensure_ascii=False))
        return 0
    print(f"index {args.index_dir}: {len(rows)} version(s) kept ('*' = current; roll back with "
          f"`graphrag-suite rollback {args.index_dir} N`)")
    for row in rows:
        mark = "*" if row["current"] else " "
        what = f"unreadable: {row['error']}" if row["error"] else f"{row['created'] or '?'}  {_counts(row)}"
        print(f"  {mark} {row['version']:4d}  {what}")
    return 0


def cmd_rollback(args) -> int:
    from ..index.storage import rollback

    folder = rollback(args.index_dir, args.version_number)
    print(f"{args.index_dir} now reads version {args.version_number} ({folder.name}); later versions are kept")
    return 0


def cmd_compact(args) -> int:
    from ..index.storage import KEEP_VERSIONS
    from .common import CLIError, load_index

    keep = KEEP_VERSIONS if args.keep_versions is None else args.keep_versions
    if keep < 1:
        raise CLIError(f"--keep-versions must be at least 1, not {keep}")
    index = load_index(args)
    start = time.perf_counter()
    folder = index.persist(args.index_dir, keep_versions=keep, compact=True)
    print(f"{args.index_dir}: every table written whole as {folder.name} in {time.perf_counter() - start:.1f}s "
          f"({keep} version(s) kept)")
    return 0


def add_commands(sub) -> None:
    """Register ``versions``, ``rollback`` and ``compact`` on the CLI's subparsers."""
    p = sub.add_parser("versions", help="list the kept versions of an index (number, time, counts)")
    p.add_argument("index_dir")
    p.add_argument("--json", action="store_true", help="print one JSON list")
    add_common(p)
    p.set_defaults(func=cmd_versions)

    p = sub.add_parser("rollback", help="make a kept version of an index the current one")
    p.add_argument("index_dir")
    p.add_argument("version_number", type=int, metavar="N", help="a version number from `graphrag-suite versions`")
    add_common(p)
    p.set_defaults(func=cmd_rollback)

    p = sub.add_parser("compact", help="save an index again with every table whole: after many inserts, "
                                       "queries read the appended vectors list by list again")
    p.add_argument("index_dir")
    p.add_argument("--keep-versions", type=int, default=None,
                   help="versions kept, the compacted one included (default 3; 1 frees the older files)")
    add_common(p)
    p.set_defaults(func=cmd_compact)
