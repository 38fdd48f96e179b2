"""Triple-Check validators (A2RAG Eq. 2-5), the per-run LLM meter, and the control loop's readers of
retriever output, LLM replies and human reviews.

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
import json
from contextvars import ContextVar
from typing import Any, Iterator, Protocol, Sequence, runtime_checkable

from langgraph_agents.llm_adapter import TextLLM, as_text_llm
from llama_index_graphrag_suite.llm.usage import LLMUsage
# the one yes/no parser, shared with A2RAG's sufficiency check (re-exported: ``parse_yes_no`` is in __all__)
from llama_index_graphrag_suite.llm.verdicts import parse_yes_no
from llama_index_graphrag_suite.methods.a2rag.loop_prompts import VALIDATOR_PROMPTS

__all__ = [
    "CHECK_ORDER",
    "LLMValidator",
    "MeteredLLM",
    "Validator",
    "apply_review",
    "default_validators",
    "evidence_facts",
    "parse_rewrite",
    "parse_yes_no",
    "run_validator",
    "split_nodes",
]

MAX_FACTS = 20  # graph facts shown to the LLM and the reviewer per round; keeps prompts bounded

CHECK_ORDER = ("relevance", "grounding", "adequacy")  # Eq. 5; the first failure is the failure type


@runtime_checkable
class Validator(Protocol):
    def __call__(self, question: str, answer: str, evidence_texts: Sequence[str]) -> tuple[bool, str]: ...


# -- metering ---------------------------------------------------------------------------------------
# The cost of the node being run, so one compiled graph can serve concurrent runs and still give each
# its own cost record: a node opens a ledger, every metered call adds to the ledger of its context.
_LEDGER: ContextVar[LLMUsage | None] = ContextVar("a2rag_llm_ledger", default=None)


@contextlib.contextmanager
def ledger() -> Iterator[LLMUsage]:
    """Collect the cost of the metered LLM calls made inside the ``with`` block (this context only)."""
    cost = LLMUsage()
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
        call = TextLLM(self.text_llm.llm, _runnable=self.text_llm.runnable())  # its own cost record: this call
        try:
            return call.complete(prompt)
        finally:
            for total in (self.text_llm.cost, _LEDGER.get()):
                if total is not None:
                    total.merge(call.cost)


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


def run_validator(validator: Validator, question: str, answer: str,
                  evidence_texts: Sequence[str]) -> tuple[bool, str]:
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


# -- evidence, replies and reviews ------------------------------------------------------------------
_TRIPLE_KEYS = (("subject", "head"), ("predicate", "relation"), ("object", "tail"))
_SUBJECT_NAMES = frozenset(_TRIPLE_KEYS[0])
_TRIPLE_LISTS = ("triples", "facts")  # only under these keys is a 3-string list a triple (not a 3-node path)


def evidence_facts(evidence: Any, limit: int = MAX_FACTS) -> list[dict]:
    """The (subject, predicate, object) triples anywhere in a retriever's evidence metadata, deduplicated.

    Dicts with subject/predicate/object (or head/relation/tail) keys count, and 3-string lists under a
    ``triples`` or ``facts`` key. A fact keeps its source pointers (``chunks``, ``fact_id``).
    """
    found: dict[tuple[str, str, str], dict] = {}
    if not isinstance(evidence, (dict, list, tuple)):
        return []

    def first(d: dict, names: tuple[str, ...]) -> Any:
        return next((d[n] for n in names if isinstance(d.get(n), str) and d[n].strip()), None)

    def walk(x: Any, key: str) -> None:  # only containers are visited: evidence can hold thousands of scalars
        if len(found) >= limit:
            return
        if isinstance(x, dict):
            if not _SUBJECT_NAMES.isdisjoint(x):
                spo = tuple(first(x, names) for names in _TRIPLE_KEYS)
                if all(spo) and spo not in found:
                    found[spo] = {"subject": spo[0], "predicate": spo[1], "object": spo[2],
                                  **{k: x[k] for k in ("fact_id", "chunks", "chunk_id") if k in x}}
            for k, v in x.items():
                if isinstance(v, (dict, list, tuple)):
                    walk(v, str(k))
        elif key in _TRIPLE_LISTS and len(x) == 3 and all(isinstance(v, str) for v in x):
            found.setdefault(tuple(x), {"subject": x[0], "predicate": x[1], "object": x[2]})
        else:
            for v in x:
                if isinstance(v, (dict, list, tuple)):
                    walk(v, key)

    walk(evidence, "")
    return list(found.values())[:limit]


def split_nodes(nodes: list) -> tuple[list[dict], dict]:
    """Chunk nodes → plain dicts (checkpointable); the evidence node → its metadata (JSON-safe)."""
    documents, evidence = [], {}
    for n in nodes:
        meta = n.node.metadata or {}
        if meta.get("kind") == "evidence":
            if not evidence:  # the contract is one evidence node; a second one is ignored
                evidence = json.loads(json.dumps(meta.get("evidence", {}), default=str))
            continue
        documents.append({"id": meta.get("chunk_id", n.node.node_id), "doc_id": meta.get("doc_id"),
                          "title": meta.get("title") or "", "text": n.node.get_content(),
                          "score": None if n.score is None else float(n.score)})
    return documents, evidence


def apply_review(proposed: list[dict], decision: Any) -> tuple[list[dict], str]:
    """The reviewer's decision on the proposed facts (see HUMAN_REVIEW_TEXT); ValueError when malformed."""
    word = decision.strip().lower() if isinstance(decision, str) else None
    if decision is None or decision is True or word in ("accept", "approve"):
        return proposed, "accepted"
    if decision is False or word == "reject":
        return [], "rejected"
    if isinstance(decision, dict) and isinstance(decision.get("keep"), list):
        keep = decision["keep"]
        if not all(isinstance(i, int) and 0 <= i < len(proposed) for i in keep):
            raise ValueError(f"review 'keep' must list fact numbers from 0 to {len(proposed) - 1}, got {keep!r}")
        return [proposed[i] for i in keep], "subset"
    if isinstance(decision, list):
        edited = []
        for item in decision:
            if isinstance(item, dict) and all(isinstance(item.get(k), str) for k in ("subject", "predicate", "object")):
                edited.append({**item, "edited": True})
            elif isinstance(item, (list, tuple)) and len(item) == 3 and all(isinstance(v, str) for v in item):
                edited.append({"subject": item[0], "predicate": item[1], "object": item[2], "edited": True})
            else:
                raise ValueError(f"a reviewed fact must be [subject, relation, object] or a dict with those keys, "
                                 f"got {item!r}")
        return edited, "edited"
    raise ValueError(f"unrecognised review decision {decision!r}; see HUMAN_REVIEW_TEXT for the accepted forms")


def parse_rewrite(reply: str) -> str | None:
    """The rewritten query: the first non-empty line, without a 'New query:' label, quotes or markdown."""
    for line in (reply or "").splitlines():
        line = line.strip().strip("*`").strip()
        for label in ("new query:", "query:", "rewritten query:"):
            if line.lower().startswith(label):
                line = line[len(label):].strip()
        line = line.strip("\"'“”`* ")
        if line:
            return line if len(line) <= 1000 else None
    return None
