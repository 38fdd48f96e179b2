"""On-disk cache of LLM completions.

Index builds call the LLM once per chunk; with temperature 0 the answer to the same prompt is the
same, so re-running a build (after a crash, or while tuning a later stage) should not pay for the
LLM again. SQLite gives a single file that several threads and processes can share safely.

Cached prompts and answers can hold private documents, so the file and its ``-wal``/``-shm``
companions are readable by their owner only (mode 0600).
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from .errors import ResponseCacheError

__all__ = ["ResponseCache", "cache_only_if"]

_PRIVATE = 0o600


def _make_private(path: Path) -> None:
    """Create ``path`` with mode 0600 if missing, and tighten it (and its WAL files) otherwise."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, _PRIVATE)
    os.close(fd)
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm"), Path(f"{path}-journal")):
        try:
            if name.exists() and (name.stat().st_mode & 0o777) != _PRIVATE:
                os.chmod(name, _PRIVATE)
        except OSError:
            pass  # not ours to change (another user's file): SQLite decides whether it can be used

_SCHEMA = "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL, created REAL NOT NULL)"


class ResponseCache:
    """SQLite cache ``key -> completion text``; build keys with :meth:`make_key`.

    One connection is shared by all threads behind a lock (SQLite serialises writers anyway, and this
    avoids leaking a connection per worker thread). WAL mode lets other processes read while one
    writes, and the busy timeout makes concurrent writers wait instead of failing.
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _make_private(self.path)  # SQLite gives the -wal/-shm files the mode of the database
            self._conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise ResponseCacheError(f"cannot open the LLM response cache at {self.path}: {exc}") from exc
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()
            _make_private(self.path)
        except sqlite3.DatabaseError as exc:
            self._conn.close()
            raise ResponseCacheError(
                f"the LLM response cache at {self.path} is not a usable SQLite database ({exc}); "
                "delete the file or pass another cache path"
            ) from exc

    @staticmethod
    def make_key(model: str, prompt: str, params: Mapping[str, Any] | None = None) -> str:
        """sha256 of the canonical JSON of ``{model, prompt, params}``.

        ``params`` holds everything else that changes the answer (temperature, max tokens, ...);
        values JSON cannot encode are keyed by their ``str``.
        """
        payload = json.dumps(
            {"model": model, "prompt": prompt, "params": dict(params or {})},
            sort_keys=True,
            ensure_ascii=False,
            default=str,
        )
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()

    def get(self, key: str) -> str | None:
        """The cached text for ``key``, or None."""
        row = self._run("SELECT text FROM responses WHERE key = ?", (key,))
        return None if row is None else row[0]

    def put(self, key: str, text: str) -> None:
        """Store (or replace) the text for ``key``."""
        self._run("INSERT OR REPLACE INTO responses (key, text, created) VALUES (?, ?, ?)", (key, text, time.time()))

    def delete(self, key: str) -> None:
        """Forget the text for ``key`` (no error when there is none)."""
        self._run("DELETE FROM responses WHERE key = ?", (key,))

    def __len__(self) -> int:
        row = self._run("SELECT COUNT(*) FROM responses", ())
        return int(row[0]) if row else 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "ResponseCache":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _run(self, sql: str, args: tuple) -> tuple | None:
        """Execute one statement under the lock; return the first row of a SELECT (fetched under the
        lock too, because the connection is shared between threads)."""
        with self._lock:
            try:
                cursor = self._conn.execute(sql, args)
                if sql.startswith("SELECT"):
                    return cursor.fetchone()
                self._conn.commit()
                return None
            except sqlite3.DatabaseError as exc:
                raise ResponseCacheError(f"LLM response cache at {self.path} failed: {exc}") from exc

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


# A check an answer must pass to be cached (set by callers that parse answers, e.g. extractors).
_CACHE_CHECK: ContextVar[Callable[[str], bool] | None] = ContextVar("llm_cache_check", default=None)


@contextmanager
def cache_only_if(check: Callable[[str], bool] | None) -> Iterator[None]:
    """Within the block, RobustLLM caches (and replays from its cache) only answers ``check`` accepts."""
    token = _CACHE_CHECK.set(check)
    try:
        yield
    finally:
        _CACHE_CHECK.reset(token)


def _cacheable(text: str | None) -> bool:
    if not text or not text.strip():
        return False
    check = _CACHE_CHECK.get()
    try:
        return check is None or bool(check(text))
    except Exception:  # noqa: BLE001 - a check that cannot read the answer rejects it
        return False
