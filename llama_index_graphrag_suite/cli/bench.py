"""`graphrag-suite bench`: every named method on a dataset's questions, one JSON report (``eval/bench.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .common import CLIError, add_common, add_set, add_version_option, build_llm, index_config

__all__ = ["add_commands", "cmd_bench"]


def cmd_bench(args) -> int:
    from ..eval.bench import resolve_methods, run_bench
    from .query import method_settings

    methods = [m for m in args.methods.split(",") if m.strip()]
    if not methods:
        raise CLIError("--methods is empty")
    names = [spec.name for spec in resolve_methods(methods)]  # unknown names and variants fail here
    settings = method_settings(args, names) if args.set else {}
    llm = build_llm(args)
    report = run_bench(args.dataset, methods, limit=args.limit, index_dir=args.index_dir, embed=args.embed,
                       llm=llm, show_progress=not args.quiet, settings=settings,
                       config=index_config(args), index_version=args.version)
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


def add_commands(sub) -> None:
    """Register ``bench``."""
    p = sub.add_parser("bench", help="run methods on a dataset (corpus.jsonl + questions.jsonl) and write a JSON report")
    p.add_argument("--dataset", required=True, help="folder with corpus.jsonl and questions.jsonl")
    p.add_argument("--methods", default="all", help="comma-separated: dense,bm25,hybrid,... or all; name:variant for ablations")
    p.add_argument("--out", required=True, help="JSON report to write")
    p.add_argument("--limit", type=int, default=0, help="only the first N questions")
    p.add_argument("--index-dir", default=None, help="reuse the index here, or build and save it here")
    add_version_option(p)
    add_set(p)
    add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_bench)
