"""Errors of the LLM layer.

Callers need to tell three situations apart, because they react differently:

* the server cannot be reached or keeps failing (:class:`LLMUnavailableError`): stop the whole job,
  every further request would fail the same way;
* the server rejected *this* request (:class:`LLMRequestError`, an HTTP 4xx other than 429, e.g. a
  prompt longer than the context window): skip this item, the next one may work;
* the on-disk response cache is unusable (:class:`ResponseCacheError`): a configuration problem.
"""

from __future__ import annotations


class LLMError(RuntimeError):
    """Base class of the errors raised by this package's LLM layer."""


class LLMUnavailableError(LLMError):
    """The LLM server could not answer, even after retrying.

    ``url`` is the endpoint (or a description of the wrapped LLM), ``cause`` the last underlying error.
    """

    def __init__(self, url: str | None, cause: BaseException, attempts: int = 1) -> None:
        self.url = url
        self.cause = cause
        self.attempts = attempts
        where = url or "the configured LLM"
        tries = f" after {attempts} attempts" if attempts > 1 else ""
        super().__init__(f"LLM server at {where} is unavailable{tries}: {type(cause).__name__}: {cause}")


class LLMRequestError(LLMError):
    """The server answered but refused this request (HTTP 4xx other than 429); retrying cannot help."""

    def __init__(self, url: str | None, cause: BaseException, status: int | None = None) -> None:
        self.url = url
        self.cause = cause
        self.status = status
        where = url or "the configured LLM"
        code = f" with HTTP {status}" if status is not None else ""
        super().__init__(f"LLM server at {where} rejected the request{code}: {cause}")


class ResponseCacheError(LLMError):
    """The SQLite response cache cannot be opened or read (for example a corrupt file)."""
