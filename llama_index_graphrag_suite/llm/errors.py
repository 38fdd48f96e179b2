"""Errors of the LLM layer.

Callers need to tell three situations apart, because they react differently:

* the server cannot be reached or keeps failing (:class:`LLMUnavailableError`): stop the whole job,
  every further request would fail the same way;
* the server rejected *this* request (:class:`LLMRequestError`, an HTTP 4xx other than 429, e.g. a
  prompt longer than the context window): skip this item, the next one may work;
* the on-disk response cache is unusable (:class:`ResponseCacheError`): a configuration problem.

Two refinements: :class:`LLMTimeoutError` (an unavailable server that did not answer before the
deadline of the call or of the job) and :class:`LLMUnusableError` (raised by a build after several
*consecutive* refusals: a wrong key, URL or protocol refuses every request, so skipping chunk after
chunk would only yield a "successful" build without LLM output).
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


class LLMTimeoutError(LLMUnavailableError):
    """No complete answer before the deadline of the call (``timeout``) or of the job's budget."""

    def __init__(self, url: str | None, cause: BaseException, attempts: int = 1, seconds: float | None = None) -> None:
        super().__init__(url, cause, attempts)
        self.seconds = seconds
        where = url or "the configured LLM"
        within = f" within {seconds:g}s" if seconds is not None else " before the deadline"
        self.args = (f"LLM server at {where} gave no complete answer{within} ({attempts} attempt(s)): {cause}",)


class LLMRequestError(LLMError):
    """The server answered but refused this request (HTTP 4xx other than 408/429, or a 2xx answer that
    breaks the protocol: HTML, invalid JSON, no choices, too large); retrying cannot help.

    ``kind`` is ``"auth"`` (401/403), ``"protocol"`` (400/404/405 or a malformed answer), or
    ``"request"`` (another 4xx, say 413, which concerns this request only).
    """

    def __init__(self, url: str | None, cause: BaseException, status: int | None = None) -> None:
        self.url = url
        self.cause = cause
        self.status = status
        where = url or "the configured LLM"
        if status is None:
            super().__init__(f"LLM server at {where} sent an unusable answer: {cause}")
        else:
            code = str(cause) if str(cause).startswith(str(status)) else f"HTTP {status}: {cause}"
            super().__init__(f"LLM server at {where} refused the request: {code}")

    @property
    def kind(self) -> str:
        if self.status in (401, 403):
            return "auth"
        if self.status is None or self.status in (400, 404, 405):
            return "protocol"
        return "request"


class LLMUnusableError(LLMUnavailableError):
    """Several consecutive requests were refused for auth or protocol reasons; the job stops."""

    def __init__(self, last: LLMRequestError, consecutive: int) -> None:
        super().__init__(last.url, last, consecutive)
        self.last = last
        self.consecutive = consecutive
        self.args = (
            f"{last} ({consecutive} consecutive failures); use --on-llm-error skip (on_llm_error='skip') "
            "to build without LLM relations",
        )


class ResponseCacheError(LLMError):
    """The SQLite response cache cannot be opened or read (for example a corrupt file)."""
