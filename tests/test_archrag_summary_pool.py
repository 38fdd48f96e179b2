"""ArchRAG's LLM community summaries: written by a bounded pool, made once, reused by later queries and
after the index is persisted and loaded again."""

from __future__ import annotations

import threading
import time

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.llm import ScriptedLLM, llm_budget
from llama_index_graphrag_suite.methods.archrag import ArchRAGConfig, ArchRAGHierarchy, ArchRAGRetriever

CONFIG = ArchRAGConfig(max_cluster_size=4, min_nodes=3, k_per_layer=3)
QUESTION = "Where was the painter Ada Lorne born?"


@pytest.fixture(scope="module")
def index():
    from conftest import CORPUS
    from llama_index_graphrag_suite.documents import make_document

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    return GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128),
                                        config=IndexConfig(entities="statistical", entity_threshold=0.1))


class Gauge:
    """A slow summary writer that records how many of its calls ran at once."""

    def __init__(self, delay: float = 0.05):
        self.delay, self.now, self.peak, self.calls = delay, 0, 0, 0
        self.lock = threading.Lock()

    def __call__(self, prompt: str) -> str:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.delay)
        with self.lock:
            self.now -= 1
        return '{"title": "A community", "summary": "People and places around Marlow."}'


@pytest.mark.parametrize("workers", [1, 3])
def test_summaries_are_written_with_at_most_n_calls_in_flight(index, workers):
    gauge = Gauge()
    h = ArchRAGHierarchy.build(index, CONFIG, llm=ScriptedLLM(responder=gauge), summary_workers=workers)
    communities = sum(len(s) for s in h.summaries)
    assert gauge.calls == communities >= 4 and h.summary_kind == "llm"
    assert gauge.peak == min(workers, max(len(s) for s in h.summaries))  # concurrent, never above the bound
    assert all(s == "People and places around Marlow." for layer in h.summaries for s in layer)


def test_the_pool_gives_the_same_hierarchy_as_one_worker(index):
    def writer(prompt: str) -> str:  # the answer depends on the prompt only, not on the call order
        return '{"title": "T", "summary": "%d members listed"}' % prompt.count("\n- ")

    one = ArchRAGHierarchy.build(index, CONFIG, llm=ScriptedLLM(responder=writer), summary_workers=1)
    many = ArchRAGHierarchy.build(index, CONFIG, llm=ScriptedLLM(responder=writer), summary_workers=4)
    assert one.summaries == many.summaries and one.titles == many.titles
    assert [m.tolist() for m in one.memberships] == [m.tolist() for m in many.memberships]


def test_the_callers_budget_reaches_the_pool_threads(index):
    seen = []

    def writer(prompt: str) -> str:
        from llama_index_graphrag_suite.llm.deadline import budget_deadline

        seen.append(budget_deadline())
        return '{"title": "T", "summary": "S"}'

    with llm_budget(60) as end:
        ArchRAGHierarchy.build(index, CONFIG, llm=ScriptedLLM(responder=writer), summary_workers=3)
    assert seen and all(d == end for d in seen)


def test_summaries_are_made_once_and_reused_after_reload(index, tmp_path):
    gauge = Gauge(delay=0.0)
    llm = ScriptedLLM(responder=gauge)
    retriever = ArchRAGRetriever(index, config=CONFIG.model_copy(update={"summary_workers": 2}), llm=llm)
    first = retriever.retrieve(QUESTION)
    made = gauge.calls
    assert made >= 4
    assert [n.node.node_id for n in retriever.retrieve(QUESTION)] == [n.node.node_id for n in first]
    assert ArchRAGRetriever(index, config=CONFIG, llm=llm).retrieve(QUESTION) and gauge.calls == made  # cached
    index.persist(tmp_path / "idx")
    loaded = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=128))
    again = ArchRAGRetriever(loaded, config=CONFIG, llm=llm)
    assert [n.node.node_id for n in again.retrieve(QUESTION)] == [n.node.node_id for n in first]
    assert gauge.calls == made and again.hierarchy.summary_kind == "llm"  # read from the folder, no LLM call
