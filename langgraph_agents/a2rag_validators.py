"""Triple-Check validators (A2RAG Eq. 2-5) and the per-run LLM meter of the control loop.

A validator is anything callable as ``validator(question, answer, evidence_texts) -> (passed, reason)``
(:class:`Validator`). Each takes the arguments it needs: relevance V_rel(q, E) ignores the answer,
grounding V_grd(a, E) ignores the question, adequacy V_ans(q, a) ignores the evidence. The defaults
are :class:`LLMValidator` s, one yes/no prompt each; an NLI model or a rule fits the same protocol.

An LLM answer that is neither a clear yes nor a clear no fails the check with reason
``"unparseable"``: the loop treats it like a "no", so a model that rambles costs a retry, never a
crash and never an unverified answer.
"""

from __future__ import annotations

import contextlib
import re
from contextvars import ContextVar
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from langgraph_agents.llm_adapter import LLMCost, TextLLM, as_text_llm
from llama_index_graphrag_suite.prompts.a2rag_loop import VALIDATOR_PROMPTS

__all__ = [
    "CHECK_ORDER",
    "LLMValidator",
    "MeteredLLM",
    "Validator",
    "default_validators",
    "parse_yes_no",
    "run_validator",
]

CHECK_ORDER = ("relevance", "grounding", "adequacy")  # Eq. 5; the first failure is the failure type


@runtime_checkable
class Validator(Protocol):
    def __call__(self, question: str, answer: str, evidence_texts: Sequence[str]) -> tuple[bool, str]: ...


# -- yes/no parsing ---------------------------------------------------------------------------------
_WORD = re.compile(r"[a-z]+")
_YES = frozenset({"yes", "true", "correct", "pass", "passed"})
_NO = frozenset({"no", "false", "incorrect", "fail", "failed"})
_PREAMBLE = frozenset({"answer", "relevant", "grounded", "resolves", "the", "question", "verdict", "is", "my"})


def parse_yes_no(text: str) -> tuple[bool | None, str]:
    """``(True|False, reason)`` from a yes/no reply, ``(None, "unparseable")`` when it is not one.

    The verdict is the first yes-like or no-like word of the first non-empty line, after at most a
    few preamble words (``"Answer: yes"``, ``"**Grounded:** no"``). The reason is what follows.
    """
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        return None, "unparseable"
    first = lines[0]
    for match in _WORD.finditer(first.lower()):
        word = match.group()
        if word in _YES or word in _NO:
            reason = " ".join([first[match.end():].strip(" .:,;-*)\"'}"), *lines[1:]]).strip()
            return word in _YES, reason[:300]
        if word not in _PREAMBLE:
            break
    return None, "unparseable"


# -- metering ---------------------------------------------------------------------------------------
# The cost of the node being run, so one compiled graph can serve concurrent runs and still give each
# its own cost record: a node opens a ledger, every metered call adds to the ledger of its context.
_LEDGER: ContextVar[LLMCost | None] = ContextVar("a2rag_llm_ledger", default=None)


@contextlib.contextmanager
def ledger() -> Iterator[LLMCost]:
    """Collect the cost of the metered LLM calls made inside the ``with`` block (this context only)."""
    cost = LLMCost()
    token = _LEDGER.set(cost)
    try:
        yield cost
    finally:
        _LEDGER.reset(token)


class MeteredLLM:
    """``complete(prompt) -> str`` over :func:`as_text_llm`, adding each call to the open ledger.

    ``text_llm.cost`` keeps the running total over every run, as ``as_text_llm`` promises.
    """

    def __init__(self, llm: Any):
        self.text_llm: TextLLM = as_text_llm(llm)

    def complete(self, prompt: str) -> str:
        call = TextLLM(self.text_llm.llm)  # its own cost record: exactly this call
        try:
            return call.complete(prompt)
        finally:
            for total in (self.text_llm.cost, _LEDGER.get()):
                if total is not None:
                    with self.text_llm._lock:
                        _add_cost(total, call.cost)


def _add_cost(total: LLMCost, part: LLMCost) -> None:
    total.calls += part.calls
    total.prompt_tokens += part.prompt_tokens
    total.completion_tokens += part.completion_tokens
    total.failures += part.failures


# -- validators -------------------------------------------------------------------------------------
def _evidence_block(evidence_texts: Sequence[str]) -> str:
    return "\n".join(f"[{i}] {t}" for i, t in enumerate(evidence_texts, 1)) or "(no evidence)"


class LLMValidator:
    """One Triple-Check validator as a prompted yes/no classifier (the paper's LLM instantiation)."""

    def __init__(self, check: str, llm: Any, prompt=None):
        if check not in VALIDATOR_PROMPTS:
            raise ValueError(f"unknown check {check!r}; expected one of {list(CHECK_ORDER)}")
        self.check = check
        self.llm = llm if isinstance(llm, MeteredLLM) else MeteredLLM(llm)
        self.prompt = prompt or VALIDATOR_PROMPTS[check]

    def __call__(self, question: str, answer: str, evidence_texts: Sequence[str]) -> tuple[bool, str]:
        reply = self.llm.complete(self.prompt.format(
            question=question, answer=answer or "(no answer)", evidence=_evidence_block(evidence_texts)))
        passed, reason = parse_yes_no(reply)
        return bool(passed), reason  # None (unparseable) fails the check

    def __repr__(self) -> str:
        return f"LLMValidator({self.check!r})"


def default_validators(llm: Any) -> dict[str, Validator]:
    """The three LLM validators in Triple-Check order."""
    metered = llm if isinstance(llm, MeteredLLM) else MeteredLLM(llm)
    return {check: LLMValidator(check, metered) for check in CHECK_ORDER}


def run_validator(validator: Validator, question: str, answer: str, evidence_texts: Sequence[str]) -> tuple[bool, str]:
    """Call a validator and normalise what it returns: ``(bool, reason)``; a bare bool is accepted.

    Anything else fails the check as ``"unparseable"`` (a plug-in that returns junk must not pass).
    Exceptions propagate: the loop turns them into FAIL with the error in the trace.
    """
    result = validator(question, answer, list(evidence_texts))
    if isinstance(result, bool):
        return result, ""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], bool):
        return result[0], str(result[1])
    return False, "unparseable"
