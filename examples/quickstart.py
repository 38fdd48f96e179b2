"""Build the shared graph index over the sample corpus and retrieve with the baselines.

    python examples/quickstart.py                # bundled all-MiniLM-L6-v2
    python examples/quickstart.py --embed hash   # instant, no model (for a smoke test)
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from llama_index_graphrag_suite import GraphRAGIndex, load_documents
from llama_index_graphrag_suite.registry import get_retriever

DATA = Path(__file__).resolve().parent / "data" / "corpus.jsonl"


def main(embed: str | None = None, question: str = "Who designed the Orrin Theatre?") -> list[str]:
    index = GraphRAGIndex.from_documents(load_documents(DATA), embed_model=embed)
    print("index:", index.stats())
    with tempfile.TemporaryDirectory() as tmp:  # persist and reload: what a real app does between runs
        index.persist(Path(tmp) / "index")
        index = GraphRAGIndex.load(Path(tmp) / "index", embed_model=embed)
    ranked = []
    for method in ("dense", "bm25", "hybrid"):
        nodes = get_retriever(index, method, top_k=3).retrieve(question)
        print(f"{method:7s}", [f"{n.node.metadata['title']} ({n.score:.2f})" for n in nodes])
        ranked.append(nodes[0].node.metadata["doc_id"])
    return ranked


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--embed", default=None)
    parser.add_argument("--question", default="Who designed the Orrin Theatre?")
    args = parser.parse_args()
    main(args.embed, args.question)
