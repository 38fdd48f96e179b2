"""A2RAG's agentic retriever (Section III-C) and summarised-KB gate (Section III-B-1) over the shared index.

Per query: entity seeds S_V and relation seeds S_R (``seeds.py``), then a monotonic escalation
Local -> Bridge -> Global (``stages.py``: Eq. 7, Eq. 8, Eq. 9-12), each stage run at most once, its
evidence added to one carried state, and a sufficiency check after each stage deciding whether to go
on. The config's ``stages`` says which stages run (the variants ``no_global`` and ``global_only`` are
presets of it); the last one is never checked.

Evidence chunks (``evidence.py``): stages 1-2 give graph evidence (edges, paths); its provenance chunks
are the chunks that state its relation edges and the passage nodes it touches. Stage 3 gives π(top-L).

Sufficiency: with an LLM, the ``sufficiency`` prompt (yes/no, read by ``llm.verdicts``; anything
unreadable counts as "not sufficient" and is counted in the trace). LLM-free, the documented heuristic
:meth:`A2RAGRetriever.heuristic_sufficient`.

Time (``config.time_budget``, else the LLM's ``build_timeout``): ``retrieve`` runs inside
``llm_budget``; its LLM calls end by the deadline, and once it has passed no stage is checked or started
any more: the evidence so far is ranked and returned, with ``time_budget_exhausted`` in the trace.

Chunk ranking (what ``retrieve`` returns, best first): see :meth:`A2RAGRetriever.rank_chunks`; top_k
chunks are always returned (the hybrid ranking fills what the stages did not give), and the top
``hybrid_anchors`` hybrid chunks always among them, then the pages the question names by title and the page each
of them leads to that best matches the rest of the question (``title_anchors``, ``hop_anchors``).

Every default, with the measurement behind it (recall@5 with all-MiniLM-L6-v2 on 2wiki_retrieval101 /
musique_train100, ``benchmarks/tuning.py``), is in ``config.py``.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import Any

from llama_index.core.schema import NodeWithScore, QueryBundle

from ...graph.snapshot import CHUNK
from ...llm.deadline import budget_deadline, call_within_budget, llm_budget
from ...llm.usage import LLMUsage
from ...llm.verdicts import yes_no
from ...tracing import traced
from ..base import GraphIndexRetriever, chunk_node, evidence_node
from ..query_scores import dense_scores, hybrid_scores, shared_query_scores
from . import evidence
from .config import A2RAGConfig
from .prompts import DEFAULT_PROMPTS, DOC_SUMMARY_TEMPLATE
from .seeds import Seed, align_mentions, align_relations, llm_mentions, parse_llm_seeds, query_mentions
from .stages import STAGE_RUNNERS, A2RAGGraph, NodeSimilarity, RetrievalState, build_graph
from .summaries import DocumentSummaries, build_summaries

__all__ = ["A2RAGRetriever"]

log = logging.getLogger(__name__)


class A2RAGRetriever(GraphIndexRetriever):
    """A2RAG agentic retriever; see the module docstring. ``retrieve_with_trace`` also returns the trace.

    ``summaries_dir``: a folder where the gate's document summaries are saved and reloaded (they are
    also an index artefact, saved by ``index.persist()``); ``llm_summaries``: write them with the LLM
    (the ``doc_summary`` prompt) instead of extractively.
    Score: the chunk's raw score (PPR / seed support, then hybrid fill) divided by the top chunk's
    (top = 1.0), never above the chunk ranked before it.
    """

    method = "a2rag"
    config_class = A2RAGConfig
    default_prompts = DEFAULT_PROMPTS
    uses_llm = True  # an LLM extracts the seeds and judges sufficiency between stages
    score_meaning = "evidence (PPR / seed support) then hybrid-fill score relative to the top chunk's (top = 1.0)"

    def __init__(self, index, top_k: int = 5, llm=None, variant: str | None = None,
                 config: A2RAGConfig | None = None, summaries_dir: str | None = None,
                 llm_summaries: bool = False, callback_manager=None, verbose: bool = False, **overrides: Any):
        self.summaries_dir, self.llm_summaries = summaries_dir, llm_summaries
        super().__init__(index, top_k=top_k, config=config, variant=variant, llm=llm,
                         callback_manager=callback_manager, verbose=verbose, **overrides)

    # ------------------------------------------------------------------ offline artefacts

    def _graph(self) -> A2RAGGraph:
        cfg = self.config
        return self.index.cached(f"a2rag.graph.{cfg.hub_degree}.{cfg.align_titles}", lambda: build_graph(self.index, cfg))

    def summaries(self) -> DocumentSummaries:
        """Document summaries for the gate: loaded from ``summaries_dir`` when they match the index, else built."""
        llm = self.llm if self.llm_summaries else None
        prompt = self.prompt("doc_summary")

        def build() -> DocumentSummaries:
            if self.summaries_dir is not None:
                try:
                    saved = DocumentSummaries.load(self.summaries_dir)
                    if saved.matches(self.index) and (llm is None or saved.kind != "extractive"):
                        return saved
                except FileNotFoundError:
                    pass
            built = build_summaries(self.index, llm, self.config.summary_max_chars, prompt=prompt)
            if self.summaries_dir is not None:
                built.save(self.summaries_dir)
            return built

        def load(folder) -> DocumentSummaries:
            saved = DocumentSummaries.load(folder)
            if not saved.matches(self.index):
                raise ValueError("the saved A2RAG summaries describe other documents")
            return saved

        # an index artefact: index.persist() saves the summaries beside the index, so an LLM pass runs once
        name = f"a2rag-summaries-{'llm' if llm else 'extractive'}-{self.config.summary_max_chars}"
        template = prompt.get_template()
        if llm is not None and template != DOC_SUMMARY_TEMPLATE:  # summaries of a replaced prompt are others
            name += "-" + hashlib.sha1(template.encode()).hexdigest()[:8]
        return self.index.artefact(name, build, load=load)

    # ------------------------------------------------------------------ gate (Eq. 1)

    @traced("a2rag.gate")
    def gate_score(self, query: str) -> float:
        """``max_j clip(cos(q, s_j), 0, 1)`` over the document summaries."""
        with self.reading():  # an entry point of its own (the LangGraph loop's gate calls it)
            return self.summaries().gate_score(self.index.embed_query(query))

    def gate(self, query: str) -> bool:
        """Eq. 1: retrieve only when the best summary similarity reaches ``tau_g``."""
        return self.gate_score(query) >= self.config.tau_g

    # ------------------------------------------------------------------ seeds

    @traced("a2rag.seeds")
    def extract_seeds(self, query: str, node_sim: NodeSimilarity, trace: dict,
                      usage: LLMUsage | None = None) -> tuple[list[Seed], list[dict], list[str]]:
        """``(S_V, S_R, relation phrases)``; see ``seeds.py``. S_R stays empty unless ``relation_seeds``."""
        cfg, g = self.config, self._graph()
        mentions, relation_words = query_mentions(query, cfg.seed_max_words)
        trace["seed_extraction"] = "statistical"
        if self.llm is not None:
            parsed = None
            try:
                answer = self._ask("seed_extraction", usage, question=query)
                parsed = parse_llm_seeds(answer)
            except Exception as exc:  # a failing LLM must not stop retrieval
                log.warning("A2RAG seed extraction failed (%s); using the statistical extractor", exc)
            if parsed is None:
                trace["seed_extraction"] = "statistical (LLM answer unreadable)"
            else:
                mentions, relation_words = llm_mentions(parsed[0]), parsed[1]
                trace["seed_extraction"] = "llm"
        snap = self.index.snapshot
        seeds = align_mentions(g.seeds, mentions, lambda rows: node_sim[rows], cfg, snap.node_ids,
                               lambda r: snap.node_kind[r] == CHUNK)
        # relation seeds only where they touch what the query names (its entity seeds): seeds.py
        relations = (align_relations(g.seeds, relation_words, cfg.relation_min_score, anchors=[s.node for s in seeds])
                     if cfg.relation_seeds else [])
        return seeds, relations, relation_words

    # ------------------------------------------------------------------ evidence chunks and sufficiency

    def evidence_chunks(self, st: RetrievalState) -> dict[int, int]:
        """Provenance of the graph evidence: chunk position -> number of seeds whose evidence it supports."""
        return evidence.evidence_chunks(self.index, self._graph(), st)

    @traced("a2rag.chunk_ranking")
    def rank_chunks(self, st: RetrievalState) -> list[tuple[int, float, str]]:
        """Chunks best first: ``(chunk position, score, source)``; see :func:`.evidence.rank_chunks`."""
        return evidence.rank_chunks(self.index, self._graph(), self.config, self.top_k, st)

    @traced("a2rag.sufficiency")
    def heuristic_sufficient(self, st: RetrievalState, stage: str) -> tuple[bool, str]:
        """LLM-free sufficiency after ``stage``: seeds aligned, covered, connected, relation words present
        (see :func:`.evidence.heuristic_sufficient`)."""
        return evidence.heuristic_sufficient(self.index, self._graph(), self.config, self.top_k, st)

    def _ask(self, prompt_name: str, usage: LLMUsage | None, **variables: Any) -> str:
        """One LLM call with the named prompt, recorded in ``usage`` (failed calls too)."""
        template = self.prompt(prompt_name)
        prompt_text = template.format(**variables) if usage is not None else ""
        start = time.perf_counter()
        answer = None
        try:
            answer = str(call_within_budget(lambda: self.llm.predict(template, **variables), f"{prompt_name} call"))
            return answer
        finally:
            if usage is not None:  # failed calls are recorded too (answer None)
                usage.record_call(prompt_text, answer, time.perf_counter() - start)

    @traced("a2rag.sufficiency")
    def llm_sufficient(self, st: RetrievalState) -> tuple[bool, str]:
        """The yes/no prompt on the evidence; unreadable or failed answers count as "not sufficient"."""
        try:
            answer = self._ask("sufficiency", st.usage, question=st.query, evidence=self.serialise(st))
        except Exception as exc:
            st.unparseable += 1
            return False, f"LLM call failed ({type(exc).__name__}); treated as not sufficient"
        verdict = yes_no(answer)
        if verdict is None:
            st.unparseable += 1
            return False, f"unreadable LLM answer {answer[:60]!r}; treated as not sufficient"
        return verdict, f"LLM said {'yes' if verdict else 'no'}"

    # ------------------------------------------------------------------ retrieval

    def retrieve_with_trace(self, query: str | QueryBundle) -> tuple[list[NodeWithScore], dict]:
        """``(chunk nodes + one evidence node, trace)``.

        The trace is the evidence node's metadata plus ``timings_ms`` (total and per stage), which the
        evidence node leaves out so that its id (a content hash) is the same on every run.
        """
        bundle = query if isinstance(query, QueryBundle) else QueryBundle(query)
        with self.reading(), shared_query_scores():
            nodes, trace = self._run(bundle)
        chunks, evidence = self._split(nodes)  # scores in [0, 1], as retrieve() gives them
        return chunks + [evidence], trace

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self._run(query_bundle)[0]

    def time_budget(self) -> float | None:
        """Seconds of one retrieval: ``config.time_budget``, else the LLM's ``build_timeout``, else None."""
        return self.config.time_budget if self.config.time_budget is not None else getattr(self.llm, "build_timeout", None)

    def _run(self, query_bundle: QueryBundle) -> tuple[list[NodeWithScore], dict]:
        with llm_budget(self.time_budget()):
            return self._run_within_budget(query_bundle)

    def _run_within_budget(self, query_bundle: QueryBundle) -> tuple[list[NodeWithScore], dict]:
        start = time.perf_counter()
        timings: dict[str, float] = {}
        index, g = self.index, self._graph()
        question = query_bundle.query_str
        q = self.query_vector(query_bundle)
        dense = dense_scores(index, question)
        hyb = hybrid_scores(index, question)
        node_sim = NodeSimilarity(g, q, dense)
        trace: dict[str, Any] = {"variant": self.variant or "full"}
        usage = LLMUsage()
        seeds, relations, relation_words = self.extract_seeds(question, node_sim, trace, usage)
        st = RetrievalState(question, seeds, relations, relation_words, node_sim, hyb, usage=usage)
        stages = self.config.stages  # in escalation order (validated), each run at most once
        reached = stages[-1].value
        for i, stage in enumerate(stages):
            name = stage.value
            if i and (end := budget_deadline()) is not None and time.monotonic() >= end:
                trace["time_budget_exhausted"] = True  # keep what the stages so far found
                reached = stages[i - 1].value
                break
            t0 = time.perf_counter()
            st.stages.append({"stage": name})
            STAGE_RUNNERS[stage](index, g, self.config, st)
            if i == len(stages) - 1:
                ok, why = True, "last stage"
            elif (end := budget_deadline()) is not None and time.monotonic() >= end:
                ok, why = True, "time budget exhausted"
                trace["time_budget_exhausted"] = True
            elif self.llm is not None:
                ok, why = self.llm_sufficient(st)
            else:
                ok, why = self.heuristic_sufficient(st, name)
            st.stages[-1].update(sufficient=ok, reason=why, nodes=len(st.nodes), edges=len(st.edges))
            timings[name] = round((time.perf_counter() - t0) * 1000, 3)
            if ok:
                reached = name
                break
        ranked = self.rank_chunks(st)
        order = index.chunk_order
        nodes = [chunk_node(index, order[c], score, self.method, a2rag_source=src, a2rag_stage=reached)
                 for c, score, src in ranked]
        trace.update(evidence.trace_of(index, self.config, st, reached, ranked))
        ev_node = evidence_node(self.method, self.serialise(st, ranked=ranked), trace)
        timings["total"] = round((time.perf_counter() - start) * 1000, 3)
        return nodes + [ev_node], {**ev_node.node.metadata["evidence"], "timings_ms": timings}

    def serialise(self, st: RetrievalState, max_lines: int = 40, ranked=None) -> str:
        """Readable evidence: seeds, graph facts, paths, then the top chunks' titles and text (for the LLM check)."""
        ranked = ranked if ranked is not None else self.rank_chunks(st)
        return evidence.serialise(self.index, self.config, st, ranked, max_lines=max_lines)
