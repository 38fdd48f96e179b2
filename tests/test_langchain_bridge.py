"""LangGraph conventions: the graphs' LLM calls are LangChain runs (callbacks and tracing see them), and
any LangChain chat model serves as the LLM of the graphs and, adapted, of the retrievers."""

from __future__ import annotations

import asyncio

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.prompts import PromptTemplate

from langgraph_agents.a2rag_loop import build_a2rag_graph
from langgraph_agents.archrag_filter import build_archrag_filter_graph
from llama_index_graphrag_suite.llm import ScriptedLLM
from llama_index_graphrag_suite.llm.langchain_bridge import LlamaIndexChatModel, as_llama_index_llm
from test_a2rag_loop import QUESTION, FakeA2RAGRetriever, script

ITEMS = [{"id": f"e{i}", "kind": "entity", "layer": 0, "title": f"Item {i}", "content": "Ada Lorne was born in Marlow."}
         for i in range(3)]


class Recorder(BaseCallbackHandler):
    def __init__(self):
        self.llm_starts, self.chat_starts, self.llm_ends, self.chains = [], [], 0, {}

    def on_llm_start(self, serialized, prompts, *, run_id, parent_run_id=None, **kwargs):
        self.llm_starts.append((prompts[0], parent_run_id))

    def on_chat_model_start(self, serialized, messages, *, run_id, parent_run_id=None, **kwargs):
        self.chat_starts.append((messages[0][-1].content, parent_run_id))

    def on_llm_end(self, response, **kwargs):
        self.llm_ends += 1

    def on_chain_start(self, serialized, inputs, *, run_id, parent_run_id=None, **kwargs):
        self.chains[run_id] = kwargs.get("name") or (serialized or {}).get("name")


def test_a2rag_llm_calls_reach_langchain_callbacks_under_their_node():
    recorder = Recorder()
    llm = script(fail={"grounding": ["no"]})  # a LlamaIndex LLM: two rounds, a rewrite between them
    result = build_a2rag_graph(FakeA2RAGRetriever(), llm).invoke({"question": QUESTION},
                                                                 {"callbacks": [recorder]})
    assert result["status"] == "answered"
    assert len(recorder.llm_starts) == result["cost"]["llm_calls"] == llm.call_count == 8
    assert recorder.llm_ends == 8
    assert [p for p, _ in recorder.llm_starts] == llm.prompts
    nodes = [recorder.chains[parent] for _, parent in recorder.llm_starts]  # each call nests under its node
    assert nodes == ["generate", "verify", "verify", "rewrite", "generate", "verify", "verify", "verify"]


def test_async_runs_and_function_llms_are_traced_too():
    recorder = Recorder()
    graph = build_a2rag_graph(FakeA2RAGRetriever(), lambda prompt: "Ada Lorne was born in Marlow [1]."
                              if prompt.startswith("Task: answer") else "yes")
    result = asyncio.run(graph.ainvoke({"question": QUESTION}, {"callbacks": [recorder]}))
    assert result["status"] == "answered" and len(recorder.llm_starts) == 4


def test_a_langchain_chat_model_drives_the_a2rag_loop_and_is_traced():
    chat = GenericFakeChatModel(messages=iter([AIMessage("Ada Lorne was born in Marlow [1]."), "yes", "yes", "yes"]))
    recorder = Recorder()
    result = build_a2rag_graph(FakeA2RAGRetriever(), chat).invoke({"question": QUESTION}, {"callbacks": [recorder]})
    assert result["status"] == "answered" and result["answer"] == "Ada Lorne was born in Marlow [1]."
    assert len(recorder.chat_starts) == 4 and not recorder.llm_starts
    assert {recorder.chains[parent] for _, parent in recorder.chat_starts} == {"generate", "verify"}


def test_archrag_filter_branches_are_traced():
    recorder = Recorder()
    chat = FakeListChatModel(responses=['{"report": "relevant", "score": 80}'] * 3 + ["Marlow."])
    out = build_archrag_filter_graph(ITEMS, chat, max_concurrency=2).invoke({"question": QUESTION},
                                                                            {"callbacks": [recorder]})
    assert out["answer"] == "Marlow." and len(out["reports"]) == 3
    assert len(recorder.chat_starts) == 4
    assert sorted(recorder.chains[p] for _, p in recorder.chat_starts) == ["analyse"] * 3 + ["answer"]
    recorder = Recorder()
    scripted = ScriptedLLM(responses=['{"report": "r", "score": 50}'] * 3 + ["Marlow."])
    build_archrag_filter_graph(ITEMS, scripted).invoke({"question": QUESTION}, {"callbacks": [recorder]})
    assert len(recorder.llm_starts) == 4


def test_a_chat_model_adapted_for_the_retrievers():
    chat = FakeListChatModel(responses=["Marlow"])
    llm = as_llama_index_llm(chat)
    assert isinstance(llm, LlamaIndexChatModel) and as_llama_index_llm(llm) is llm
    assert llm.complete("Where?").text == "Marlow"
    assert asyncio.run(llm.acomplete("Where?")).text == "Marlow"
    assert llm.predict(PromptTemplate("Where was {name} born?"), name="Ada") == "Marlow"
    assert llm.metadata.model_name == "FakeListChatModel"


def test_a2rag_retriever_with_a_langchain_chat_model():
    from conftest import CORPUS

    from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
    from llama_index_graphrag_suite.documents import make_document
    from llama_index_graphrag_suite.embeddings import HashEmbedding
    from llama_index_graphrag_suite.methods.a2rag import A2RAGRetriever

    docs = [make_document(i, text, title) for i, title, text in CORPUS]
    index = GraphRAGIndex.from_documents(docs, embed_model=HashEmbedding(dim=128),
                                         config=IndexConfig(entities="statistical", entity_threshold=0.1))
    chat = FakeListChatModel(responses=['{"entities": ["Ada Lorne"], "relations": ["born in"]}', "yes"])
    retriever = A2RAGRetriever(index, top_k=3, llm=as_llama_index_llm(chat))
    nodes, trace = retriever.retrieve_with_trace("Where was Ada Lorne born?")
    assert trace["seed_extraction"] == "llm" and trace["stage_reached"] == "local"
    assert len(nodes) == 4
