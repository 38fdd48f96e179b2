"""Derived artefacts of the current snapshot: a memo for per-snapshot structures, and methods' saved artefacts.

A mixin of :class:`~.graph_index.GraphRAGIndex`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

log = logging.getLogger(__name__)
_MISSING = object()


class ArtefactCache:
    """``cached`` (memo cleared with every new snapshot) and ``artefact`` (saved by persist, reused after load)."""

    def cached(self, name: str, build):
        """Memo for artefacts retrievers derive from the snapshot (transition matrices, cost layouts).

        Cleared whenever the snapshot is replaced (every insert and delete), so it never goes stale.
        """
        memo, snapshot = self._memo, self.snapshot
        if memo.get("__snapshot__") is not snapshot:
            # a new dict, not clear(): another thread's query may be reading the old one right now
            memo = self._memo = {"__snapshot__": snapshot}
        value = memo.get(name, _MISSING)
        if value is _MISSING:  # two threads may both build it: the same value, one kept
            value = memo.setdefault(name, build())
        return value

    def artefact(self, name: str, build: Callable[[], Any], load: Callable[[Path], Any] | None = None):
        """A method's derived artefact (ArchRAG's community hierarchy, A2RAG's document summaries).

        Like :meth:`cached` it belongs to the current snapshot. In addition, an artefact with a
        ``save(folder)`` method is written by :meth:`persist` (under ``artefacts/<name>/``, checksummed
        in the manifest like every file), and after :meth:`load` it is read back with ``load(folder)``
        instead of being rebuilt, so LLM summaries are paid for once. An insert or delete makes saved
        artefacts stale: they are then rebuilt on next use.
        """
        def build_or_load():
            folder = self._saved_artefacts.get(name)
            if folder is not None and load is not None and folder.is_dir():
                try:
                    return load(folder)
                except (OSError, ValueError, KeyError) as exc:  # damaged: rebuild rather than fail the query
                    log.warning("saved %s artefact at %s unreadable (%s); rebuilding it", name, folder, exc)
            return build()

        return self.cached(f"artefact:{name}", build_or_load)

    def _artefacts_to_save(self) -> dict[str, Any]:
        if self._memo.get("__snapshot__") is not self.snapshot:
            return {}
        items = list(self._memo.items())  # a copy: queries in other threads may add to the memo meanwhile
        return {key.split(":", 1)[1]: obj for key, obj in items
                if key.startswith("artefact:") and hasattr(obj, "save")}
