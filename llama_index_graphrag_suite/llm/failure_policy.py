"""What a job that asks the LLM once per item (an extractor over chunks) does when a request fails.

One policy for every such job (``LLMRelationExtractor``, ``PathRAGExtractor``), so they cannot drift:

* an unreachable server (:class:`LLMUnavailableError`, a missed deadline included, or a connection
  error of an LLM not wrapped in RobustLLM) stops the job: every further item would fail the same way;
* a server that *refuses* requests for auth or protocol reasons (401/403, 400/404, HTML or invalid
  JSON) stops it after ``max_consecutive_failures`` refusals in a row with :class:`LLMUnusableError`
  (``on_llm_error="abort"``, the default), or has its items skipped and counted (``"skip"``); an
  answer in between resets the count;
* any other failure (a 413 for one oversized chunk, a parse error) costs that item only.

The settings are read from the job at each use (``on_llm_error``, ``max_consecutive_failures``,
``build_timeout``), each falling back to the LLM's (``RobustLLM``: ``on_error``,
``max_consecutive_failures``, ``build_timeout``), then to abort / 3 / no limit.
"""

from __future__ import annotations

import logging
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, Iterator

from .cache import cache_only_if
from .deadline import llm_budget
from .errors import LLMRequestError, LLMUnavailableError, LLMUnusableError
from .retries import is_transient_error

__all__ = ["FailurePolicy"]


class FailurePolicy:
    """The failure state of one job (``job`` has ``llm``, ``raise_on_error`` and the three settings).

    Usage, around each request of the job (:meth:`guard` is :meth:`check`, then :meth:`failed` or
    :meth:`succeeded`)::

        answer = None
        with policy.guard(item_id):          # raises the abort of an earlier item
            answer = llm.predict(...)        # a failure raises, or leaves answer None, per the policy
    """

    def __init__(self, job: Any, what: str, log: logging.Logger) -> None:
        self._job = job
        self._what = what  # names the job in log lines, e.g. "relation extraction"
        self._log = log
        self._lock = threading.Lock()
        self._streak = 0  # auth/protocol refusals since the last answer
        self.aborted: LLMUnusableError | None = None
        self.last_refusal: str | None = None

    def settings(self) -> tuple[str, int, float | None]:
        """``(on_error, max_consecutive_failures, build_timeout)`` of the job, else of its LLM."""
        job, llm = self._job, self._job.llm
        on_error = job.on_llm_error or getattr(llm, "on_error", None) or "abort"
        limit = job.max_consecutive_failures or getattr(llm, "max_consecutive_failures", None) or 3
        budget = job.build_timeout if job.build_timeout is not None else getattr(llm, "build_timeout", None)
        return on_error, int(limit), budget

    def run_scope(self, cacheable: Callable[[str], bool]) -> ExitStack:
        """Enter for one run: the run's time budget, and caching of answers ``cacheable`` accepts only."""
        stack = ExitStack()
        stack.enter_context(llm_budget(self.settings()[2]))
        stack.enter_context(cache_only_if(cacheable))
        return stack

    @contextmanager
    def guard(self, item_id: str, on_failure: Callable[[], None] | None = None) -> Iterator[None]:
        """Around one request of an item (sync or awaited alike): :meth:`check` first; a failure calls
        ``on_failure`` then :meth:`failed`, whose verdict stands (raise, or end the block quietly);
        an answer calls :meth:`succeeded`."""
        self.check()
        try:
            yield
        except Exception as exc:
            if on_failure is not None:
                on_failure()
            self.failed(item_id, exc)
        else:
            self.succeeded()

    def check(self) -> None:
        """Once aborted, the job stays aborted: nothing more is sent."""
        if self.aborted is not None:
            raise self.aborted

    def succeeded(self) -> None:
        self._streak = 0

    def failed(self, item_id: str, exc: Exception) -> None:
        """React to the failed request of one item (see the module docstring); returns None or raises."""
        if isinstance(exc, LLMUnavailableError) or self._job.raise_on_error:
            raise exc
        if isinstance(exc, LLMRequestError) and exc.kind in ("auth", "protocol"):
            return self._refused(item_id, exc)
        if is_transient_error(exc):
            llm = self._job.llm
            raise LLMUnavailableError(getattr(llm, "api_url", None) or llm.class_name(), exc) from exc
        self._log.warning("%s failed for chunk %s: %s: %s", self._what, item_id, type(exc).__name__, exc)
        return None

    def _refused(self, item_id: str, exc: LLMRequestError) -> None:
        on_error, limit, _ = self.settings()
        with self._lock:
            self._streak += 1
            streak = self._streak
            first = self.last_refusal is None
            self.last_refusal = str(exc)
        if on_error == "abort" and streak >= limit:
            self.aborted = LLMUnusableError(exc, streak)
            raise self.aborted from exc
        if on_error == "skip" and hasattr(self._job.llm, "record_skipped"):
            self._job.llm.record_skipped()
        log = self._log.warning if first else self._log.debug  # one warning per job, not one per chunk
        log("%s failed for chunk %s: %s", self._what, item_id, exc)
        return None
