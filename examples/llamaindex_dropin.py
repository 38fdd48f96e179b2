"""Drop a graph retriever into a LlamaIndex query engine you already have.

Before:  engine = RetrieverQueryEngine.from_args(vector_index.as_retriever(), llm=llm)
After:   engine = RetrieverQueryEngine.from_args(graph_index.as_retriever(method="agrag"), llm=llm)
   or:   engine = graph_index.as_query_engine(method="agrag", llm=llm)   # + the method's own answer prompt

    GRAPHRAG_LLM_URL=http://localhost:8000/v1 python examples/llamaindex_dropin.py
    python examples/llamaindex_dropin.py --embed hash      # no model download, instant (smoke test)

The LLM is any vLLM or OpenAI-compatible server (GRAPHRAG_LLM_URL, optional GRAPHRAG_LLM_API_KEY).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from llama_index.core.query_engine import RetrieverQueryEngine

from llama_index_graphrag_suite import GraphRAGIndex, load_documents
from llama_index_graphrag_suite.llm import build_llm

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
QUESTION = "Who designed the theatre where the opera 'The Salt Crown' premiered?"


def llm_from_env():
    url = os.environ.get("GRAPHRAG_LLM_URL")
    if not url:
        sys.exit("set GRAPHRAG_LLM_URL to a vLLM or OpenAI-compatible server, e.g. http://localhost:8000/v1")
    return build_llm(url, api_key=os.environ.get("GRAPHRAG_LLM_API_KEY"))


def main(llm=None, embed: str | None = None, question: str = QUESTION, method: str = "agrag"):
    llm = llm or llm_from_env()
    index = GraphRAGIndex.from_documents(load_documents(DATA), embed_model=embed)

    # 1. The retriever alone, in LlamaIndex's own query engine: one changed line in an existing app.
    #    retrieve() gives the top_k chunks; include_evidence=True adds the method's evidence node for the prompt.
    engine = RetrieverQueryEngine.from_args(index.as_retriever(method=method, top_k=4, include_evidence=True), llm=llm)
    response = engine.query(question)
    print("answer:", response)
    for n in response.source_nodes:
        print(f"  {n.node.metadata['kind']:8s} {n.node.metadata.get('title', ''):30s} {n.score or 0:.3f}")

    # 2. The method's own query engine (its answer prompt, evidence first), streaming token by token.
    streaming = index.as_query_engine(method=method, llm=llm, streaming=True, retriever_params={"top_k": 4})
    print("streamed: ", end="")
    pieces = []
    for piece in streaming.query(question).response_gen:
        pieces.append(piece)
        print(piece, end="", flush=True)
    print()
    return str(response), "".join(pieces)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None, help="embedding model (default: bundled all-MiniLM-L6-v2; 'hash' for a smoke test)")
    parser.add_argument("--method", default="agrag")
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    main(embed=args.embed, question=args.question, method=args.method)
