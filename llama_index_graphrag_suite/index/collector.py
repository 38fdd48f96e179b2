"""The cyclic garbage collector paused while the index makes or reads millions of objects it keeps.

CPython's collector runs a full pass over every tracked object each time enough new containers have survived. An
insert makes millions of them (chunk nodes, extractor output, records) and keeps most, and a loaded index holds
more: the passes find little garbage and cost a quarter of a batched build's CPU
(studies/perf/results/batch_growth.md). Reference counting still frees everything acyclic while paused; what cycles
the paused work drops are collected by the next pass after it.

Paused: an insert (its steps and its commit), a save, a load, and a batched build from its first batch to its last
(``batched.py``), which collects once after each batch instead.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]

_lock = threading.Lock()
_depth = 0  # pauses open now (threads or nested calls)
_restore = False  # whether the collector was on when the first of them began


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside; the collector's state from before the first open pause is restored when the
    last one ends (pauses nest and may overlap across threads; a caller who turned it off keeps it off)."""
    global _depth, _restore
    with _lock:
        if _depth == 0:
            _restore = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _restore:
                gc.enable()
