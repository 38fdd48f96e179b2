"""A reader-writer lock for one in-memory index: many queries at once, or one insert/delete.

Readers (every retriever's ``retrieve`` / ``aretrieve`` and the other public retriever entry points,
and ``persist`` while it copies the tables to disk) share the lock; writers (``insert``, ``delete``)
hold it alone, so a query sees the index either before or after a mutation, never half of one.

* Re-entrant: a thread that holds the lock (to read or to write) may take it again to read, and the
  writer may take it again to write; nested retrievers and ``insert`` inside ``from_documents`` are fine.
* Writers are preferred: once a writer waits, new readers wait behind it, so a stream of queries
  cannot starve an insert (a thread already reading is let through, so nesting never deadlocks).
* A thread that is reading cannot start writing (that would wait for itself): it gets RuntimeError.

Cheap for readers: one uncontended ``threading.Condition`` acquire on entry and one on exit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["ReadWriteLock"]


class ReadWriteLock:
    """See the module docstring."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0  # threads holding the read side (each counted once)
        self._writer: int | None = None  # ident of the thread holding the write side
        self._writer_depth = 0
        self._writers_waiting = 0
        self._local = threading.local()  # this thread's read depth

    @contextmanager
    def reading(self) -> Iterator[None]:
        local, me = self._local, threading.get_ident()
        depth = getattr(local, "depth", 0)
        if depth or self._writer == me:  # nested, or the writer reading its own state
            local.depth = depth + 1
            try:
                yield
            finally:
                local.depth -= 1
            return
        with self._cond:
            while self._writer is not None or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        local.depth = 1
        try:
            yield
        finally:
            local.depth = 0
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def writing(self) -> Iterator[None]:
        me = threading.get_ident()
        if self._writer == me:
            self._writer_depth += 1
            try:
                yield
            finally:
                self._writer_depth -= 1
            return
        if getattr(self._local, "depth", 0):
            raise RuntimeError("cannot change the index from inside a query on it (this thread holds the read lock)")
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer is not None or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
                if self._writer is not None or self._readers:  # interrupted while waiting: let readers on
                    self._cond.notify_all()
            self._writer, self._writer_depth = me, 1
        try:
            yield
        finally:
            with self._cond:
                self._writer, self._writer_depth = None, 0
                self._cond.notify_all()
