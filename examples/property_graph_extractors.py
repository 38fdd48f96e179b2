"""Our extractors inside a plain LlamaIndex PropertyGraphIndex, persisted and reloaded the LlamaIndex way,
then every graph method over it, and one of ours combined with LlamaIndex's VectorContextRetriever.

    python examples/property_graph_extractors.py
    python examples/property_graph_extractors.py --embed hash     # instant smoke test

No LLM is needed: the extractors here are the LLM-free ones (an LLM relation extractor,
``LLMRelationExtractor``, can be added to ``kg_extractors`` the same way).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from llama_index.core import PropertyGraphIndex, StorageContext, load_index_from_storage
from llama_index.core.indices.property_graph import PGRetriever, VectorContextRetriever

from llama_index_graphrag_suite import load_documents
from llama_index_graphrag_suite.embeddings import resolve_embed_model
from llama_index_graphrag_suite.registry import as_retriever
from llama_index_graphrag_suite.extractors import (
    CooccurrenceRelationExtractor,
    StatisticalEntityExtractor,
    SynonymEdgeExtractor,
)
from llama_index_graphrag_suite.methods.pg_subretriever import GraphRAGSubRetriever

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"
QUESTION = "Which shipbuilding company founded the literary prize won by 'The Lantern Ferry'?"


def extractors(embed_model):
    # statistical entities (AGRAG Eq. 2-3), sentence co-occurrence relations, embedding synonym edges
    return [StatisticalEntityExtractor(), CooccurrenceRelationExtractor(), SynonymEdgeExtractor(embed_model=embed_model)]


def main(embed: str | None = None, question: str = QUESTION, methods=("agrag", "hipporag", "hybrid")):
    embed_model = resolve_embed_model(embed)
    documents = load_documents(DATA)
    pg_index = PropertyGraphIndex.from_documents(documents, kg_extractors=extractors(embed_model),
                                                 embed_model=embed_model, use_async=False)
    with tempfile.TemporaryDirectory() as tmp:  # what an app does between runs
        pg_index.storage_context.persist(persist_dir=tmp)
        pg_index = load_index_from_storage(StorageContext.from_defaults(persist_dir=tmp), embed_model=embed_model,
                                           kg_extractors=extractors(embed_model))

    top = {}
    for method in methods:  # the first call derives our artefacts from the store; later ones reuse them
        nodes = as_retriever(pg_index, method, top_k=3).retrieve(question)
        titles = [n.node.metadata["title"] for n in nodes if n.node.metadata["kind"] == "chunk"]
        top[method] = titles
        print(f"{method:9s}", titles)

    combined = PGRetriever(sub_retrievers=[
        GraphRAGSubRetriever.from_index(pg_index, method="agrag", top_k=3),
        VectorContextRetriever(pg_index.property_graph_store, vector_store=pg_index.vector_store,
                               embed_model=embed_model, similarity_top_k=2),
    ])
    nodes = combined.retrieve(question)
    print(f"PGRetriever (agrag + VectorContextRetriever): {len(nodes)} nodes")
    for n in nodes[:6]:
        print("  ", n.node.get_content()[:90].replace("\n", " "))
    return top, nodes


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None)
    parser.add_argument("--question", default=QUESTION)
    args = parser.parse_args()
    main(args.embed, args.question)
