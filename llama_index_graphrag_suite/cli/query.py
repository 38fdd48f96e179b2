"""`graphrag-suite query | ask | demo`: questions through the one runner (``runner.run_request``).

The method, its variant, ``--set`` settings and ``--top-k`` are resolved into a ``Request`` once, before
the index is loaded, so a typo costs nothing; then the runner retrieves, and with ``--llm`` answers.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from .common import (CLIError, EmbedModelLoader, add_common, add_set, add_version_option, build_llm, index_config,
                     load_index)

__all__ = ["add_commands", "cmd_ask", "cmd_demo", "cmd_query", "method_settings", "print_result"]

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples" / "data"


def method_settings(args, methods: list[str]) -> dict[str, dict[str, Any]]:
    """``--set`` pairs as config overrides per method name (``key=value`` or ``method.key=value``)."""
    from pydantic import ValidationError

    from ..registry import method_settings as settings_of

    try:
        return settings_of(getattr(args, "set", None) or [], methods)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ())) or "settings"
        raise CLIError(f"bad --set: {where}: {err['msg']}") from None
    except ValueError as exc:
        raise CLIError(f"bad --set: {exc}") from None


def make_request(args, question: str):
    """The ``Request`` of ``--method``, ``--set`` and ``--top-k`` for ``question`` (checked, nothing loaded)."""
    from ..request import Request, resolve_method

    name = args.method.strip().partition(":")[0]
    settings = method_settings(args, [name]).get(name, {}) if getattr(args, "set", None) else {}
    return Request.make(question, resolve_method(args.method, settings), args.top_k)


def print_result(result: dict[str, Any], gold: set[str] | None = None) -> None:
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


def print_answer(run, llm, stream: bool) -> str:
    from ..runner import answer, stream_answer

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


@contextmanager
def _environment_default(name: str, value: str) -> Iterator[None]:
    """``name=value`` in the environment while the block runs, unless the user set it; restored after (``main``
    may run in a caller's process)."""
    if name in os.environ:
        yield
        return
    os.environ[name] = value
    try:
        yield
    finally:
        os.environ.pop(name, None)


def cmd_query(args) -> int:
    """The evidence, then (with ``--llm``) the answer, streamed with ``--stream``."""
    # one question: PageRank on scipy, not numba (graph.ppr_fast.NUMBA_ENV: same scores, 0.3-0.4 s less start-up)
    with _environment_default("GRAPHRAG_SUITE_NUMBA", "0"):
        return _query(args)


def _query(args) -> int:
    embed = EmbedModelLoader(args)  # made on a thread meanwhile
    request = make_request(args, args.question)  # fails before paying for loading the index
    llm = build_llm(args)  # a bad --llm fails before the load too
    start = time.perf_counter()
    index = load_index(args, embed=embed)
    load_ms = (time.perf_counter() - start) * 1000
    from ..request import require_documents
    from ..runner import answer, run_request

    require_documents(index)
    run = run_request(index, request)
    run.result["timing_ms"]["load"] = round(load_ms, 2)
    if args.json:
        if llm is not None:
            run.result["answer"] = answer(run, llm)
        print(json.dumps(run.result, ensure_ascii=False))
        return 0
    print_result(run.result)
    if llm is not None:
        print_answer(run, llm, getattr(args, "stream", False))
    return 0


def cmd_ask(args) -> int:
    import sys

    from ..request import Request, RequestError, require_documents
    from ..runner import run_request

    spec = make_request(args, "question").spec  # the method once; each line is a question for it
    index = load_index(args, timing=not args.quiet)
    require_documents(index)
    llm = build_llm(args)
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
            run = run_request(index, Request.make(question, spec, args.top_k))
        except RequestError as exc:
            print(f"error: {exc}", file=sys.stderr)
            continue
        r = run.result
        print(f"[{r['method']}] {question}  ({r['timing_ms']['retrieve']:.1f} ms)")
        for rank, item in enumerate((i for i in r["nodes"] if i["kind"] == "chunk"), 1):
            print(f"  {rank}. {item['score']:.3f}  {item['doc_id']}  {' '.join(item['text'].split())[:110]}")
        if llm is not None:
            print_answer(run, llm, stream=True)
        sys.stdout.flush()


def cmd_demo(args) -> int:
    """Index the sample corpus, then answer its questions with every method, printing the evidence."""
    from ..documents import load_documents
    from ..index import GraphRAGIndex
    from ..registry import method_names
    from ..request import Request, resolve_method
    from ..runner import answer, run_request

    corpus = Path(args.data) / "corpus.jsonl"
    questions_file = Path(args.data) / "questions.jsonl"
    docs = load_documents(corpus)
    questions = [json.loads(line) for line in questions_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    if args.limit:
        questions = questions[: args.limit]
    llm = build_llm(args)
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(docs, embed_model=args.embed, config=index_config(args), llm=llm,
                                         show_progress=not args.quiet)
    stats = index.stats()
    print(f"indexed {len(docs)} documents in {time.perf_counter() - start:.1f}s: "
          + ", ".join(f"{k}={v}" for k, v in stats.items()))
    specs = [resolve_method(name) for name in method_names()]
    cutoffs = sorted({2, args.top_k})
    found = {(s.name, k): 0.0 for s in specs for k in cutoffs}
    for q in questions:
        gold = set(q.get("supporting_ids", []))
        print(f"\nQ {q['id']}: {q['question']}   (gold answer: {', '.join(q.get('answers', [])) or '-'})")
        for spec in specs:
            run = run_request(index, Request.make(q["question"], spec, args.top_k))
            ranked = list(dict.fromkeys(i["doc_id"] for i in run.result["nodes"] if i["kind"] == "chunk"))
            for k in cutoffs:
                found[spec.name, k] += len(gold & set(ranked[:k])) / max(len(gold), 1)
            print_result(run.result, gold)
            if llm is not None:
                print(f"  answer: {answer(run, llm)}")
    print(f"\nrecall of gold passages over {len(questions)} questions (* marks a gold passage above):")
    print("  " + " " * 10 + "".join(f"{'@' + str(k):>8s}" for k in cutoffs))
    for spec in specs:
        print(f"  {spec.name:10s}" + "".join(f"{found[spec.name, k] / max(len(questions), 1):8.2f}" for k in cutoffs))
    if llm is None:
        print("\n(no LLM: set --llm URL or GRAPHRAG_LLM_URL to an OpenAI-compatible or vLLM server to generate answers)")
    return 0


def add_commands(sub) -> None:
    """Register ``query``, ``ask`` and ``demo``."""
    p = sub.add_parser("query", help="retrieve for one question")
    p.add_argument("index_dir")
    p.add_argument("question")
    p.add_argument("--method", default="hybrid", help="a name from `graphrag-suite methods`, or name:variant")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--stream", action="store_true", help="with --llm: print the answer as it is generated")
    add_version_option(p)
    add_set(p)
    add_common(p, llm=True)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("ask", help="keep an index loaded and answer questions read from stdin (one a line)")
    p.add_argument("index_dir")
    p.add_argument("--method", default="hybrid", help="a name from `graphrag-suite methods`, or name:variant")
    p.add_argument("--top-k", type=int, default=5)
    add_set(p)
    add_common(p, llm=True)
    p.set_defaults(func=cmd_ask)

    p = sub.add_parser("demo", help="index the sample corpus and answer its questions with every method")
    p.add_argument("--data", default=str(EXAMPLES), help="folder with corpus.jsonl and questions.jsonl")
    p.add_argument("--top-k", type=int, default=5)
    p.add_argument("--limit", type=int, default=0, help="only the first N questions")
    add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_demo)
