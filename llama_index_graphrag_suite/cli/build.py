"""`graphrag-suite index SRC --out INDEX`: build an index, or with ``--update [--prune]`` bring a saved one up to date.

``--update`` re-reads the corpus and refreshes the index (``GraphRAGIndex.sync``): new documents are
inserted, changed ones re-indexed, unchanged ones left alone; ``--prune`` also deletes documents whose
files are gone. The result is saved as a new version of INDEX (``graphrag-suite rollback`` undoes it);
when nothing changed, nothing is saved.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from typing import Any, Sequence

from .common import CLIError, add_common, build_llm, check_embed, index_config

__all__ = ["add_commands", "cmd_index", "update_index"]

# Settings that decide how an index is built: an update keeps the ones the index was built with.
_BUILD_SETTINGS = ("chunk_size", "chunk_overlap", "entity_threshold", "entities", "ner_model", "ner_relations")


def _kept(args) -> int:
    from ..index.storage import KEEP_VERSIONS

    return KEEP_VERSIONS if args.keep_versions is None else args.keep_versions


def cmd_index(args) -> int:
    from ..documents import load_documents
    from ..index.storage import CURRENT

    check_embed(args)  # before reading the corpus
    if args.batch_size is not None:
        return build_batched(args)
    if args.resume:
        raise CLIError("--resume goes on with a build in batches: pass --batch-size N too")
    docs = load_documents(args.src, show_progress=not args.quiet)
    if args.ray and (args.update or args.prune):
        raise CLIError("--ray builds a new index; --update/--prune run in this process (in Python: with ray_build(...))")
    if args.update or args.prune:  # refresh the saved index
        return update_index(args, docs)
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CLIError(f"{out} exists and is not a folder")
    if (out / CURRENT).exists() and not args.overwrite:
        raise CLIError(f"{out} already holds an index; pass --overwrite to replace it")
    if args.ray and importlib.util.find_spec("ray") is None:  # one line naming the extra, before any work
        raise CLIError("--ray needs the 'ray' extra: from a clone, pip install -c constraints.txt -e '.[ray]'")
    llm = build_llm(args)
    start = time.perf_counter()
    from ..index import GraphRAGIndex

    index = GraphRAGIndex.from_documents(
        docs, embed_model=args.embed, config=index_config(args), llm=llm, show_progress=not args.quiet,
        ray_address=args.ray, store=args.store,  # opened before extraction: a bad --store fails at once
    )
    _prepare(index, args, llm)
    index.persist(out, keep_versions=_kept(args))
    stats = index.stats()
    if llm is not None:
        stats["llm_calls"] = index.build_info.get("llm_calls", 0)
        if getattr(llm, "skipped_items", 0):
            stats["chunks_without_llm_relations"] = llm.skipped_items
    line = ", ".join(f"{k}={v}" for k, v in stats.items())
    print(f"indexed {len(docs)} documents into {out} in {time.perf_counter() - start:.1f}s ({line})")
    if getattr(llm, "usage", None) is not None:  # calls, tokens (exact from the server, or estimated), time
        print(f"LLM: {llm.usage.cost()}")
    return 0


def build_batched(args) -> int:
    """``--batch-size N``: index N documents at a time, saving after each batch (``index/batched.py``); a .jsonl
    corpus is read as it goes, so neither the corpus nor the whole index is ever held at once. With ``--ray`` each
    batch's per-chunk work is sharded over the cluster."""
    from ..documents import iter_jsonl_documents, load_documents
    from ..index.batched import build_in_batches
    from ..index.storage import CURRENT

    if args.batch_size < 1:
        raise CLIError(f"--batch-size must be at least 1, not {args.batch_size}")
    if args.update or args.prune:
        raise CLIError("--batch-size builds a new index in batches; it does not combine with --update or --prune")
    if args.ray and importlib.util.find_spec("ray") is None:
        raise CLIError("--ray needs the 'ray' extra: from a clone, pip install -c constraints.txt -e '.[ray]'")
    out, src = Path(args.out), Path(args.src)
    if out.exists() and not out.is_dir():
        raise CLIError(f"{out} exists and is not a folder")
    if (out / CURRENT).exists() and not (args.overwrite or args.resume):
        raise CLIError(f"{out} already holds an index; pass --resume to go on with its build in batches, or "
                       "--overwrite to replace it")
    docs = (iter_jsonl_documents(src) if src.suffix.lower() == ".jsonl" and src.is_file()
            else load_documents(args.src, show_progress=not args.quiet))
    llm = build_llm(args)
    start = time.perf_counter()

    def report(number: int, held: int, seconds: float) -> None:
        if not args.quiet:
            print(f"batch {number}: {held} documents indexed and saved ({seconds:.1f}s)", flush=True)

    index = build_in_batches(docs, out, args.batch_size, resume=args.resume, keep_versions=args.keep_versions,
                             compact=not args.no_compact, on_batch=report, embed_model=args.embed, config=index_config(args), llm=llm,
                             show_progress=not args.quiet, store=args.store, ray_address=args.ray)
    _prepare(index, args, llm)
    index.persist(out, keep_versions=_kept(args))
    stats = index.stats()
    line = ", ".join(f"{k}={v}" for k, v in stats.items())
    print(f"indexed {stats['documents']} documents into {out} in batches of {args.batch_size} in "
          f"{time.perf_counter() - start:.1f}s ({line})")
    return 0


def update_index(args, docs: Sequence[Any]) -> int:
    """Refresh the index in ``args.out`` with ``docs`` (``--update``, ``--prune``)."""
    from ..index import GraphRAGIndex

    if not args.update:
        raise CLIError("--prune goes with --update (it deletes documents no longer in the corpus from an existing index)")
    if args.overwrite:
        raise CLIError("--update refreshes the index in --out and --overwrite replaces it; pass one of them")
    given = [f"--{name.replace('_', '-')}" for name in _BUILD_SETTINGS if getattr(args, name, None) is not None]
    if given:
        raise CLIError(f"--update keeps the settings the index was built with; drop {', '.join(given)} "
                       "(or rebuild with --overwrite)")
    out = Path(args.out)
    start = time.perf_counter()
    index = GraphRAGIndex.load(out, embed_model=args.embed, llm=build_llm(args), show_progress=not args.quiet)
    result = index.sync(docs, prune=args.prune)
    counts = ", ".join(f"{k}={v}" for k, v in result.counts().items())
    if not (result.inserted or result.updated or result.removed):
        print(f"{out} is up to date with {args.src} ({counts}); nothing saved")
        return 0
    _prepare(index, args, index.llm)
    index.persist(out, keep_versions=_kept(args))
    stats = ", ".join(f"{k}={v}" for k, v in index.stats().items())
    print(f"updated {out} from {args.src} in {time.perf_counter() - start:.1f}s: {counts} ({stats})")
    return 0


def _prepare(index, args, llm) -> None:
    """``--prepare``: build the methods' first-query artefacts now, so they are saved with the index."""
    from ..registry import UnknownMethodError

    import sys

    for method in [m.strip() for m in (args.prepare or "").split(",") if m.strip()]:
        try:
            seconds = index.prepare([method], llm=llm)[method]
        except UnknownMethodError as exc:
            raise CLIError(str(exc)) from None
        except ValueError as exc:  # the method cannot run on this index (no entities, say): its queries will say so
            print(f"warning: {method} not prepared: {exc}", file=sys.stderr)
            continue
        if not args.quiet:
            print(f"prepared {method} in {seconds:.1f}s")


def add_commands(sub) -> None:
    """Register ``index``."""
    p = sub.add_parser("index", help="build an index from a folder of documents (PDF, Word, PowerPoint, HTML, EPUB, "
                                     "Markdown, text), one such file, or a .jsonl corpus")
    p.add_argument("src", help="folder, document file or .jsonl file")
    p.add_argument("--out", required=True, help="index folder to write")
    p.add_argument("--overwrite", action="store_true", help="replace the index already in --out")
    p.add_argument("--keep-versions", type=int, default=None, metavar="N",
                   help="versions of --out kept for rollback, the new one included (default 3; a build in batches "
                        "into a new folder keeps only its compacted version and what --prepare adds)")
    p.add_argument("--ray", default=None, metavar="ADDRESS", help="shard chunking, extraction and embedding over "
                   "Ray: local (start one here), auto (join this machine's cluster) or ray://HOST:10001 (extra 'ray')")
    p.add_argument("--store", default="simple", help="graph store: simple (JSON; default), ladybug (embedded database, "
                   "extra 'stores'), falkordb://host:6379/graph (a FalkorDB server, extra 'stores'; loading reads "
                   "GRAPHRAG_FALKORDB_URL or FALKORDB_PASSWORD) or neo4j://user:password@host:7687 (extra 'neo4j'; no "
                   "APOC needed; loading reads GRAPHRAG_NEO4J_URL)")
    p.add_argument("--update", action="store_true",
                   help="refresh the index already in --out: insert new documents, re-index changed ones, keep unchanged ones")
    p.add_argument("--prune", action="store_true", help="with --update: also delete documents no longer in the corpus")
    p.add_argument("--batch-size", type=int, default=None, metavar="N",
                   help="index N documents at a time, saving after each batch: memory is bounded by a batch, not the "
                        "corpus (a .jsonl corpus is read as it goes); the result is the sequence of those inserts")
    p.add_argument("--no-compact", action="store_true",
                   help="with --batch-size: leave the batches' appended segments as they are instead of writing every "
                        "table whole at the end (queries then read the appended vectors one row at a time)")
    p.add_argument("--resume", action="store_true",
                   help="with --batch-size: go on with the build in --out, skipping the documents it already holds")
    p.add_argument("--prepare", default="archrag", metavar="METHODS",
                   help="build these methods' artefacts now, saved with the index, instead of on their first query "
                        "(comma-separated; default archrag: its community hierarchy; '' for none)")
    add_common(p, index_settings=True, llm=True)
    p.set_defaults(func=cmd_index)
