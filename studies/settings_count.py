"""How many settings each graph method has, by where their defaults come from: the paper (an equation, a section,
the authors' code) or ours, and of ours those of the hybrid guard. Reads the typed configs through the registry,
so it runs on any commit since the registry had ``method_info`` (issue 50 item 3: the count before and after):

    python studies/settings_count.py            # this tree
    git worktree add /tmp/before REV && (cd /tmp/before && PYTHONPATH=. python /path/to/studies/settings_count.py)
"""

from __future__ import annotations

import json

METHODS = ("hipporag", "agrag", "pathrag", "archrag", "a2rag")


def counts(config_class) -> dict[str, int]:
    """Fields of ``config_class`` by the source of their default."""
    out = {"paper": 0, "ours": 0, "guard": 0}
    for name, field in config_class.model_fields.items():
        source = str((field.json_schema_extra or {}).get("paper", ""))
        if name.startswith("guard_"):
            out["guard"] += 1
        elif source.lower().startswith("ours"):
            out["ours"] += 1
        else:
            out["paper"] += 1
    return out


def main() -> None:
    from llama_index_graphrag_suite import registry

    rows = {}
    for name in METHODS:
        info = registry.method_info(name)
        row = counts(info.config_class)
        guard_preset = getattr(info, "guard", None)
        if guard_preset:  # composed: the guard's settings live in its own config, applied by the registry
            from llama_index_graphrag_suite.methods.guard.config import GuardConfig

            row["guard"] += len(GuardConfig.model_fields)
        row["total"] = sum(row.values())
        rows[name] = row
    print(json.dumps(rows))
    print("| method | paper | ours (method) | guard | total |")
    print("|---|---:|---:|---:|---:|")
    for name, row in rows.items():
        print(f"| {name} | {row['paper']} | {row['ours']} | {row['guard']} | {row['total']} |")


if __name__ == "__main__":
    main()
