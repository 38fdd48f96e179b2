"""Derived artefacts of the current snapshot: a memo for per-snapshot structures, and methods' saved artefacts.

A mixin of :class:`~.graph_index.GraphRAGIndex`.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable

from .persistence import ARTEFACTS
from .storage import IndexError_, current_token, folder_writer

log = logging.getLogger(__name__)
_MISSING = object()
ARTEFACT_LOCK_TIMEOUT = 10.0  # seconds to wait for another writer before keeping a new artefact in memory only


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
        artefacts stale: they are then rebuilt on next use. An artefact built for the version this index
        was loaded from is added to that version's folder at once (:meth:`_keep_artefact`), so the next
        process loads it instead of building it again.
        """
        def build_or_load():
            folder = self._saved_artefacts.get(name)
            if folder is not None and load is not None and folder.is_dir():
                try:
                    return load(folder)
                except (OSError, ValueError, KeyError) as exc:  # damaged: rebuild rather than fail the query
                    log.warning("saved %s artefact at %s unreadable (%s); rebuilding it", name, folder, exc)
            value = build()
            if load is not None and hasattr(value, "save"):
                self._keep_artefact(name, value)
            return value

        return self.cached(f"artefact:{name}", build_or_load)

    def _keep_artefact(self, name: str, value: Any) -> None:
        """Add a just-built artefact to the saved version it belongs to, under the folder's writer lock.

        Only when this index is that version exactly (loaded or saved there, no unsaved changes, no newer
        version since). Written to a temporary sibling and renamed, so a reader sees all of it or none; a
        read-only folder or a busy lock leaves it in memory (saved by the next ``persist``).
        """
        origin = self._origin
        if origin is None or self.pending_documents():
            return
        root, token = origin
        try:
            with folder_writer(root, timeout=ARTEFACT_LOCK_TIMEOUT):
                if current_token(root) != token:  # another writer saved since: not our version any more
                    return
                target = root / token.split("#", 1)[0] / ARTEFACTS / name
                if not target.exists():
                    partial = target.with_name(f".{name}.{uuid.uuid4().hex}.partial")
                    try:
                        value.save(partial)
                        os.rename(partial, target)
                    finally:
                        shutil.rmtree(partial, ignore_errors=True)
                self._saved_artefacts[name] = target
        except (OSError, IndexError_) as exc:
            log.warning("could not save the %s artefact beside the index in %s (%s); it is kept in memory", name, root, exc)

    def _artefacts_to_save(self) -> dict[str, Any]:
        if self._memo.get("__snapshot__") is not self.snapshot:
            return {}
        items = list(self._memo.items())  # a copy: queries in other threads may add to the memo meanwhile
        return {key.split(":", 1)[1]: obj for key, obj in items
                if key.startswith("artefact:") and hasattr(obj, "save")}
