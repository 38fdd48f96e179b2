"""`graphrag-suite methods INDEX`: what an index holds (counts, the most linked entities per type) and the
methods that can run on it, with their settings (``--settings``)."""

from __future__ import annotations

import json
from pathlib import Path

from .common import add_common, add_version_option

__all__ = ["add_commands", "cmd_methods"]


def _entity_overview(version: Path, per_type: int = 6) -> list[str]:
    """The most linked entities of each type, so a user can see what the graph is made of."""
    from ..index.audit import entity_rows

    by_type: dict[str, list[tuple[int, str]]] = {}
    for row in entity_rows(version):
        by_type.setdefault(str(row["type"] or "n-gram"), []).append((int(row["chunks"]), str(row["surface"])))
    lines = []
    for type_, items in sorted(by_type.items(), key=lambda kv: -len(kv[1])):
        items.sort(key=lambda x: (-x[0], x[1]))
        names = ", ".join(f"{name} ({n})" for n, name in items[:per_type])
        lines.append(f"  {len(items):6d} {type_:12s} e.g. {names}")
    return ["entities by type (chunks linked):"] + lines if lines else []


def cmd_methods(args) -> int:
    from ..index.storage import open_version
    from ..registry import UnknownMethodError, available_methods, method_info

    folder, manifest = open_version(args.index_dir, verify=False, version=args.version)
    counts = manifest.get("counts", {})
    extractor = manifest.get("config", {}).get("entities", "statistical")
    print(f"index {args.index_dir}: {counts.get('chunks', '?')} chunks, {counts.get('entities', '?')} entities, "
          f"{counts.get('relations', '?')} relations (extractor {extractor}, embed model {manifest.get('embed_model')})")
    for line in _entity_overview(folder):
        print(line)
    for name, desc in sorted(available_methods().items()):
        info = method_info(name)
        plugin = f"  [plugin: {info.source}]" if info.source not in ("built-in", "python") else ""
        print(f"  {name:10s} {desc}{plugin}")
        if args.settings:
            try:
                config_class = info.config_class
            except UnknownMethodError:  # a broken plugin: its line above says why; the others are still listed
                continue
            if config_class.PRESETS:
                print(f"  {'':10s}   variants: {', '.join(config_class.PRESETS)}")
            for field, default, description in info.settings_listing():  # the method's, then its guard's
                print(f"  {'':10s}   {field} = {json.dumps(default)}: {description}")
    return 0


def add_commands(sub) -> None:
    """Register ``methods``."""
    p = sub.add_parser("methods", help="list the methods available on an index (built-in and installed plugins)")
    p.add_argument("index_dir")
    p.add_argument("--settings", action="store_true", help="also list each method's variants and settings with defaults")
    add_version_option(p)
    add_common(p)
    p.set_defaults(func=cmd_methods)
