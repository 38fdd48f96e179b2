"""ArchRAG community summaries (Algorithm 1 line 7): LLM-written, or extractive without an LLM.

* **With an LLM**: the ``community_summary`` prompt (``prompts.py``, or the template the caller passes)
  lists the members' names and descriptions (entity sentences, or the sub-communities' summaries) and the
  relations among them; the answer is read as JSON ``{"title", "summary"}`` (plain prose is kept as the
  summary). Unreadable answers or failed calls fall back to the extractive summary for that community
  (counted in ``state["fallbacks"]``). The communities of one layer are independent, so their prompts
  are sent by a pool of ``workers`` threads (at most that many calls in flight; the caller's context,
  e.g. an ``llm_budget``, reaches every call); the next layer waits for this one's summaries.
* **LLM-free: "extractive"**: the title is the names of the three most central members, the text their
  names and first sentences, most central first (centrality = weighted degree inside the community on
  the clustered graph).
"""

from __future__ import annotations

import contextvars
import logging
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ...graph.communities import internal_strength
from ...llm.json_repair import parse_json_lenient
from .config import ArchRAGConfig

log = logging.getLogger(__name__)

__all__ = ["FactLookup", "summarise_layer"]


class FactLookup:
    """Facts between two sets of entity rows (for the LLM summary prompt)."""

    def __init__(self, index, entity_ids: list[str]):
        self.index = index
        row = {k: i for i, k in enumerate(entity_ids)}
        self.by_row: dict[int, list[str]] = {}
        for f in index.facts.values():
            a, b = row.get(f.subject), row.get(f.object)
            if a is not None and b is not None:
                self.by_row.setdefault(a, []).append(f.id)
                self.by_row.setdefault(b, []).append(f.id)
        self.row = row

    def among(self, members: np.ndarray, groups: np.ndarray | None, limit: int) -> list[str]:
        """Relation lines among ``members`` (entity rows); with ``groups`` only those crossing groups."""
        group_of = dict(zip(members.tolist(), (groups if groups is not None else np.zeros(members.size, int)).tolist()))
        lines: dict[str, None] = {}
        for r in members.tolist():
            for fid in self.by_row.get(r, ()):
                f = self.index.facts[fid]
                a, b = self.row[f.subject], self.row[f.object]
                if a in group_of and b in group_of and (groups is None or group_of[a] != group_of[b]):
                    lines[f"{f.subject} | {f.predicate} | {f.object}"] = None
                    if len(lines) >= limit:
                        return list(lines)
        return list(lines)


def summarise_layer(layer, membership, graph, state, config: ArchRAGConfig, llm, usage, facts: FactLookup | None,
                    entity_ids, memberships_so_far, prompt, workers: int = 1) -> tuple[list[str], list[str]]:
    """Titles and summaries of one community layer (LLM or extractive, see the module docstring).

    ``prompt``: the summary template (a LlamaIndex ``PromptTemplate`` with ``{members}`` and ``{relations}``);
    ``workers``: LLM calls in flight at most.
    """
    strength = internal_strength(membership, graph)
    count = int(membership.max()) + 1
    # Members of each community, most central first (ties: lower row first).
    order = np.lexsort((np.arange(membership.size), -strength, membership))
    bounds = np.searchsorted(membership[order], np.arange(count + 1))
    names, texts = state["names"], state["texts"]
    titles, summaries = [], []
    entity_community = np.arange(len(entity_ids))
    for m in memberships_so_far:
        entity_community = m[entity_community]  # community of each entity on layer - 1
    groups = [order[bounds[c]:bounds[c + 1]] for c in range(count)]
    llm_out: list[tuple[str, str] | None] = [None] * count
    if llm is not None:
        def one(members):
            return _llm_summary(members, names, texts, layer, entity_community, facts, config, llm, usage, prompt)

        with ThreadPoolExecutor(max_workers=max(1, min(workers, count)), thread_name_prefix="archrag-summary") as pool:
            # copied here, in the caller's thread, once per call (a Context cannot be entered twice at once)
            contexts = [contextvars.copy_context() for _ in groups]
            llm_out = list(pool.map(lambda ctx, members: ctx.run(one, members), contexts, groups))
    for members, written in zip(groups, llm_out):
        title, summary = _extractive(members, names, texts, config)
        if llm is not None:
            if written is None:
                state["fallbacks"] += 1
            else:
                title, summary = written
        titles.append(title)
        summaries.append(summary)
    return titles, summaries


def _extractive(members: np.ndarray, names: list[str], texts: list[str], config: ArchRAGConfig) -> tuple[str, str]:
    central = members[: config.summary_members].tolist()
    title = ", ".join(names[i] for i in central[:3]) + (f" and {members.size - 3} more" if members.size > 3 else "")
    parts, length = [], 0
    for i in central:
        piece = f"{names[i]}: {texts[i]}" if texts[i] else names[i]
        if parts and length + len(piece) > config.summary_chars:
            break
        parts.append(piece[: config.summary_chars])
        length += len(piece) + 1
    return title, " | ".join(parts)


def _llm_summary(members, names, texts, layer, entity_community, facts, config, llm, usage, template
                 ) -> tuple[str, str] | None:
    shown = members[: config.llm_members].tolist()
    member_lines = "\n".join(f"- {names[i]}: {texts[i][:400]}" for i in shown)
    if members.size > len(shown):
        member_lines += f"\n- ... and {members.size - len(shown)} more members"
    if layer == 1:
        rel = facts.among(members.astype(np.int64), None, config.llm_relations)
    else:  # the KG relations that link the sub-communities of this community
        ents = np.flatnonzero(np.isin(entity_community, members))
        rel = facts.among(ents, entity_community[ents], config.llm_relations)
    prompt = template.format(members=member_lines, relations="\n".join(rel) or "(none recorded)")
    t0 = time.perf_counter()
    try:
        answer = llm.complete(prompt).text
    except Exception as exc:  # a failed call must not lose the whole build
        usage.record_call(prompt, None, seconds=time.perf_counter() - t0)
        log.warning("ArchRAG summary: LLM call failed (%s); using the extractive summary", exc)
        return None
    usage.record_call(prompt, answer, seconds=time.perf_counter() - t0)
    parsed = parse_json_lenient(answer).value
    if isinstance(parsed, dict) and isinstance(parsed.get("summary"), str) and parsed["summary"].strip():
        title = parsed.get("title") if isinstance(parsed.get("title"), str) and parsed["title"].strip() else names[shown[0]]
        return title.strip(), parsed["summary"].strip()
    text = answer.strip()
    if text and not text.startswith(("{", "[")):  # plain prose is still a summary
        return names[shown[0]], text[:2000]
    log.warning("ArchRAG summary: unreadable LLM answer %r; using the extractive summary", answer[:200])
    return None
