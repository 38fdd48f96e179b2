"""`graphrag-suite index FOLDER --out INDEX --update [--prune]`: bring a saved index up to date with its corpus.

Re-reads the corpus and refreshes the index (``GraphRAGIndex.sync``): new documents are inserted,
changed ones re-indexed, unchanged ones left alone; ``--prune`` also deletes documents whose files are
gone. The result is saved as a new version of INDEX (``graphrag-suite rollback`` undoes it); when
nothing changed, nothing is saved.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Sequence

__all__ = ["add_update_options", "update_index"]

# Settings that decide how an index is built: an update keeps the ones the index was built with.
_BUILD_SETTINGS = ("chunk_size", "chunk_overlap", "entity_threshold", "entities", "ner_model", "ner_relations")


def add_update_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--update", action="store_true",
                   help="refresh the index already in --out: insert new documents, re-index changed ones, keep unchanged ones")
    p.add_argument("--prune", action="store_true", help="with --update: also delete documents no longer in the corpus")


def update_index(args, docs: Sequence[Any], build_llm: Callable[[Any], Any], error: type[Exception]) -> int:
    """Refresh the index in ``args.out`` with ``docs``; ``error`` is the CLI's one-line error type."""
    from .index import GraphRAGIndex

    if not args.update:
        raise error("--prune goes with --update (it deletes documents no longer in the corpus from an existing index)")
    if args.overwrite:
        raise error("--update refreshes the index in --out and --overwrite replaces it; pass one of them")
    given = [f"--{name.replace('_', '-')}" for name in _BUILD_SETTINGS if getattr(args, name, None) is not None]
    if given:
        raise error(f"--update keeps the settings the index was built with; drop {', '.join(given)} "
                    "(or rebuild with --overwrite)")
    out = Path(args.out)
    start = time.perf_counter()
    index = GraphRAGIndex.load(out, embed_model=args.embed, llm=build_llm(args), show_progress=not args.quiet)
    result = index.sync(docs, prune=args.prune)
    counts = ", ".join(f"{k}={v}" for k, v in result.counts().items())
    if not (result.inserted or result.updated or result.removed):
        print(f"{out} is up to date with {args.src} ({counts}); nothing saved")
        return 0
    index.persist(out, keep_versions=args.keep_versions)
    stats = ", ".join(f"{k}={v}" for k, v in index.stats().items())
    print(f"updated {out} from {args.src} in {time.perf_counter() - start:.1f}s: {counts} ({stats})")
    return 0
