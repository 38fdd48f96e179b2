"""What the graph is for, shown on real multi-hop questions: where a graph method finds the second passage that
hybrid retrieval misses, and where it does not help.

    python -m llama_index_graphrag_suite.demo                     # the HotpotQA slice in examples/hotpotqa_slice
    python -m llama_index_graphrag_suite.demo --method hipporag --all

A two-hop question names the first passage ("the film shot in Leland, North Carolina in 1986"); the second one
("its director") shares few words with the question, so word and vector matching often miss it. A graph links the
two through the names they share. For each question this prints which gold passages hybrid's top k and the graph
method's top k hold, sorts the questions into "the graph found a passage hybrid missed", "no difference" and "the
graph lost one hybrid had", and for the first kind names the entities that join the found passage to the other
gold passage in the index's graph. The questions are the first of the set, not chosen; the totals say how often
each case happens.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

SLICE = Path(__file__).resolve().parent.parent / "examples" / "hotpotqa_slice"
FOUND, SAME, LOST = "found", "same", "lost"
HUB_SHARE = 0.05  # names linked to more than this share of the chunks are hubs, not links worth showing
TITLES = {FOUND: "The graph found a gold passage hybrid missed",
          SAME: "No difference: as many gold passages in both top k",
          LOST: "The graph lost a gold passage hybrid had"}


@dataclass
class Row:
    """One question: its gold passages and which of them each ranking's top k holds."""

    question: str
    qtype: str
    gold: list[str]  # document ids, in hop order
    baseline: list[str]  # document ids of the baseline's top k, in rank order
    graph: list[str]  # the same for the graph method
    bridges: dict[str, list[str]] = field(default_factory=dict)  # gold id the graph alone found -> linking names

    @property
    def outcome(self) -> str:
        """More gold passages in the graph's top k (found), fewer (lost), or as many (same, a swap included)."""
        b, g = len(set(self.gold) & set(self.baseline)), len(set(self.gold) & set(self.graph))
        return FOUND if g > b else LOST if g < b else SAME


def load_questions(folder: Path, limit: int = 0) -> list[dict]:
    """``questions.jsonl`` of a benchmark folder, questions with gold passages only."""
    rows = [json.loads(line) for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    rows = [r for r in rows if r.get("supporting_ids")]
    return rows[:limit] if limit else rows


def ranked_docs(retriever, question: str) -> list[str]:
    """The document ids of a retriever's chunk nodes, in rank order, each once."""
    nodes = retriever.retrieve(question)
    docs = [n.node.metadata.get("doc_id") for n in nodes if n.node.metadata.get("kind", "chunk") == "chunk"]
    return list(dict.fromkeys(d for d in docs if d))


def linking_names(index, found: str, others: list[str], limit: int = 4) -> list[str]:
    """The entities the index links to both the passage the graph found and another gold passage: the path the
    graph could follow and words could not (display names, fewest-linked first: the specific ones; no hubs)."""
    def names(doc: str) -> set[str]:
        return {k for c in index.chunks.values() if c.doc_id == doc for k in c.entities}

    shared = names(found) & set().union(*(names(o) for o in others)) if others else set()
    hub = max(3, HUB_SHARE * len(index.chunks))  # a name in this many chunks joins everything ("American")
    ranked = sorted((k for k in shared if len(index.entities[k].chunks) <= hub),
                    key=lambda k: (len(index.entities[k].chunks), k))
    return [index.entities[k].surface for k in ranked[:limit]]


def explain(names: list[str], title: str) -> str:
    """In words, how the found passage hangs on the other gold passage."""
    own = [n for n in names if n.casefold() == title.casefold()]
    rest = [n for n in names if n not in own]
    said = ([f"the other gold passage names its title, {own[0]}"] if own else []) + (
        [f"both name {', '.join(rest)}"] if rest else [])
    return "; ".join(said) or "no name in common: reached through the walk's wider neighbourhood"


def compare(index, questions: list[dict], method: str = "a2rag", baseline: str = "hybrid",
            top_k: int = 5) -> list[Row]:
    """Each question through the baseline and the graph method; the rows say which gold passages each found."""
    from .registry import get_retriever

    base, graph = get_retriever(index, baseline, top_k=top_k), get_retriever(index, method, top_k=top_k)
    rows = []
    for q in questions:
        row = Row(q["question"], q.get("type", ""), list(q["supporting_ids"]), ranked_docs(base, q["question"]),
                  ranked_docs(graph, q["question"]))
        if row.outcome == FOUND:
            for doc in (set(row.gold) & set(row.graph)) - set(row.baseline):
                row.bridges[doc] = linking_names(index, doc, [g for g in row.gold if g != doc])
        rows.append(row)
    return rows


def recall(rows: list[Row], which: str) -> float:
    """Mean share of each question's gold passages in the ranking's top k (recall@k, in %)."""
    return 100 * sum(len(set(r.gold) & set(getattr(r, which))) / len(r.gold) for r in rows) / max(len(rows), 1)


def report(rows: list[Row], titles: dict[str, str], method: str, baseline: str, top_k: int,
           show: int = 3) -> list[str]:
    """The questions by outcome (``show`` of each in full, 0 for all), then the totals."""
    def marks(ranking: list[str], gold: list[str]) -> str:
        found = [chr(65 + gold.index(d)) if d in gold else "." for d in ranking[:top_k]]
        return " ".join(found + ["."] * (top_k - len(found)))

    out = []
    for outcome in (FOUND, SAME, LOST):
        group = [r for r in rows if r.outcome == outcome]
        out += ["", f"== {TITLES[outcome]}: {len(group)} of {len(rows)} questions"]
        for r in group[: show or None]:
            out += ["", f"Q ({r.qtype or 'question'}): {r.question}"]
            out += [f"  gold  {chr(65 + i)}: {titles.get(d, d)}" for i, d in enumerate(r.gold)]
            out += [f"  {baseline:8s} top {top_k}: {marks(r.baseline, r.gold)}",
                    f"  {method:8s} top {top_k}: {marks(r.graph, r.gold)}"]
            for doc, names in r.bridges.items():
                out.append(f"  -> {method} found {chr(65 + r.gold.index(doc))}: "
                           f"{explain(names, titles.get(doc, doc))}")
        if show and len(group) > show:
            out.append(f"  ... and {len(group) - show} more (--all shows them)")
    out += ["", f"recall@{top_k} over these {len(rows)} questions: {baseline} {recall(rows, 'baseline'):.1f}, "
                f"{method} {recall(rows, 'graph'):.1f} (one question is {100 / max(len(rows), 1):.1f} points; "
                "a letter marks a gold passage in rank order, '.' any other passage)"]
    return out


def main(argv: list[str] | None = None) -> int:
    from .documents import load_documents
    from .index import GraphRAGIndex

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(SLICE), help="folder with corpus.jsonl and questions.jsonl")
    parser.add_argument("--method", default="a2rag", help="the graph method (any name from `graphrag-suite methods`)")
    parser.add_argument("--baseline", default="hybrid")
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    parser.add_argument("--embed", default=None, help="embedding model (default: the bundled all-MiniLM-L6-v2)")
    parser.add_argument("--all", action="store_true", help="print every question, not three of each kind")
    args = parser.parse_args(argv)
    folder = Path(args.data)
    if not (folder / "corpus.jsonl").is_file() or not (folder / "questions.jsonl").is_file():
        print(f"error: {folder} needs corpus.jsonl and questions.jsonl", file=sys.stderr)
        return 2
    docs = load_documents(folder / "corpus.jsonl")
    questions = load_questions(folder, args.limit)
    start = time.perf_counter()
    index = GraphRAGIndex.from_documents(docs, embed_model=args.embed, show_progress=False)
    print(f"indexed {len(docs)} passages of {folder.name} in {time.perf_counter() - start:.0f} s; "
          f"{len(questions)} questions, {args.baseline} against {args.method}, top {args.top_k}")
    rows = compare(index, questions, args.method, args.baseline, args.top_k)
    titles = {d.doc_id: d.metadata.get("title", d.doc_id) for d in docs}
    print("\n".join(report(rows, titles, args.method, args.baseline, args.top_k, show=0 if args.all else 3)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
