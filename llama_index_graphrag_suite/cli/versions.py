"""`graphrag-suite versions INDEX` and `graphrag-suite rollback INDEX N`: an index folder's kept versions.

Every save writes a new version and keeps the newest few (``--keep-versions`` on ``index``, default 3);
``--version N`` on ``query``, ``methods`` and ``bench --index-dir`` reads an older one without changing
anything, ``rollback`` makes it the current one (under the folder's writer lock).
"""

from __future__ import annotations

import json
from typing import Any

from .common import add_common

__all__ = ["add_commands", "cmd_rollback", "cmd_versions"]


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


def add_commands(sub) -> None:
    """Register ``versions`` and ``rollback`` on the CLI's subparsers."""
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
