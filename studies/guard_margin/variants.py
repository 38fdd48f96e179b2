"""A method's own ranking under other settings of its own, per question, on the best-sentence base (what the guard
reads), to replay with ``replay.py`` beside ``dump.py``'s records.

    python studies/guard_margin/variants.py --index IDX/covidqa_dev --dataset DATASETS/covidqa_dev \
        --out D/covidqa_dev.a2rag_variants.json --variant k20:top_k=20 --variant sum:global_order=sum

Each ``--variant NAME:key=value,...`` (``top_k`` is the depth the method ranks to, 5 by default; values are read as
JSON, else as text). Writes ``{NAME: [[chunk positions] per question]}``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, rest = text.partition(":")
    settings: dict = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition("=")
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:
            settings[key] = value
    return name, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--method", default="a2rag:unguarded")
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--limit", type=int)
    args = parser.parse_args()

    from llama_index_graphrag_suite.eval.datasets import load_dataset
    from llama_index_graphrag_suite.index import GraphRAGIndex
    from llama_index_graphrag_suite.methods import query_scores as qs
    from llama_index_graphrag_suite.methods.shared_graph import ChunkPositions
    from llama_index_graphrag_suite.registry import get_retriever

    index = GraphRAGIndex.load(Path(args.index), show_progress=False)
    questions = [q for q in load_dataset(Path(args.dataset)).questions if q.supporting_ids][: args.limit]
    position = ChunkPositions(index)
    out_path = Path(args.out)
    out = json.loads(out_path.read_text()) if out_path.exists() else {}
    for spec in args.variant:
        name, settings = parse_variant(spec)
        top_k = int(settings.pop("top_k", 5))
        retriever = get_retriever(index, args.method, top_k=top_k, **settings)
        ranks = []
        for q in questions:
            with qs.shared_query_scores(), qs.sentence_base(True):
                nodes = retriever.retrieve(q.question)
            ranks.append([int(position[n.node.node_id]) for n in nodes
                          if n.node.metadata.get("kind", "chunk") == "chunk" and n.node.node_id in position])
        out[name] = ranks
        out_path.write_text(json.dumps(out))
        print(name, "done", flush=True)


if __name__ == "__main__":
    main()
