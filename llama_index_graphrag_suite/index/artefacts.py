"""Derived artefacts of a snapshot: a memo for per-snapshot structures, and methods' saved artefacts.

An :class:`ArtefactMemo` belongs to one snapshot: the index's state holds one (``IndexState.artefacts``, replaced
whenever the snapshot is), and each read-only view its own. :func:`keep_artefact` adds a just-built artefact to
the saved version the index's state is exactly (only the index does; a view never writes to disk).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Any, Callable

from .storage import IndexError_, current_token, folder_writer

log = logging.getLogger(__name__)
_MISSING = object()
ARTEFACTS = "artefacts"  # sub-folder of a version holding methods' derived artefacts (see ArtefactMemo.artefact)
ARTEFACT_LOCK_TIMEOUT = 10.0  # seconds to wait for another writer before keeping a new artefact in memory only


class ArtefactMemo:
    """``cached`` (structures built once per snapshot) and ``artefact`` (saved by persist, reused after load)."""

    def __init__(self, saved: dict[str, Path] | None = None) -> None:
        self._values: dict[str, Any] = {}
        self.saved: dict[str, Path] = dict(saved or {})
        """Artefact name -> its folder in the version this memo's snapshot was loaded from or saved as
        (set by load and persist, added to by :func:`keep_artefact`)."""

    def cached(self, snapshot: Any, name: str, build: Callable[[], Any]) -> Any:
        """Memo for artefacts retrievers derive from ``snapshot`` (transition matrices, cost layouts).

        Starts afresh when asked about another snapshot than the one it holds values for, so it never goes stale.
        """
        values = self._values
        if values.get("__snapshot__") is not snapshot:
            # a new dict, not clear(): another thread's query may be reading the old one right now
            values = self._values = {"__snapshot__": snapshot}
        value = values.get(name, _MISSING)
        if value is _MISSING:  # two threads may both build it: the same value, one kept
            value = values.setdefault(name, build())
        return value

    def artefact(self, snapshot: Any, name: str, build: Callable[[], Any], load: Callable[[Path], Any] | None,
                 keep: Callable[[str, Any], None] | None) -> Any:
        """A method's derived artefact (ArchRAG's community hierarchy, A2RAG's document summaries).

        Like :meth:`cached` it belongs to ``snapshot``. In addition, an artefact with a ``save(folder)`` method
        is written by ``persist`` (under ``artefacts/<name>/``, checksummed in the manifest like every file), and
        after ``load`` it is read back with ``load(folder)`` instead of being rebuilt, so LLM summaries are paid
        for once. An insert or delete makes saved artefacts stale: they are then rebuilt on next use. ``keep``
        (the index's :func:`keep_artefact`; None for a view) is handed a just-built artefact that can be saved.
        """
        def build_or_load():
            folder = self.saved.get(name)
            if folder is not None and load is not None and folder.is_dir():
                try:
                    return load(folder)
                except (OSError, ValueError, KeyError) as exc:  # damaged: rebuild rather than fail the query
                    log.warning("saved %s artefact at %s unreadable (%s); rebuilding it", name, folder, exc)
            value = build()
            if keep is not None and load is not None and hasattr(value, "save"):
                keep(name, value)
            return value

        return self.cached(snapshot, f"artefact:{name}", build_or_load)

    def to_save(self, snapshot: Any) -> dict[str, Any]:
        """The artefacts built for ``snapshot`` that can be saved: name -> object with ``save(folder)``."""
        if self._values.get("__snapshot__") is not snapshot:
            return {}
        items = list(self._values.items())  # a copy: queries in other threads may add to the memo meanwhile
        return {key.split(":", 1)[1]: obj for key, obj in items
                if key.startswith("artefact:") and hasattr(obj, "save")}


def keep_artefact(state: Any, name: str, value: Any) -> None:
    """Add a just-built artefact to the saved version ``state`` (an ``IndexState``) is, under the folder's writer lock.

    Only when the state is that version exactly (loaded or saved there, no unsaved changes, no newer version
    since). Written to a temporary sibling and renamed, so a reader sees all of it or none; a read-only folder
    or a busy lock leaves it in memory (saved by the next ``persist``).
    """
    origin = state.origin
    if origin is None or state.pending:
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
            state.artefacts.saved[name] = target
    except (OSError, IndexError_) as exc:
        log.warning("could not save the %s artefact beside the index in %s (%s); it is kept in memory", name, root, exc)
