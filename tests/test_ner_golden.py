"""Speed work must not change what is extracted: the chunk, entity and relation tables of a small corpus
(encyclopaedia passages, a long multi-chunk document, a markdown file with headings, a Chinese passage)
are compared with tables recorded from the code before the speed-ups, for both LLM-free extractors.

Regenerate (only after a deliberate, reported change of behaviour):
    HF_HUB_OFFLINE=1 .venv/bin/python tests/test_ner_golden.py --regenerate
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding

HERE = Path(__file__).parent / "fixtures" / "ner_golden"


def corpus():
    rows = [json.loads(line) for line in (HERE / "corpus.jsonl").open(encoding="utf-8") if line.strip()]
    return [make_document(r["id"], r["text"], r["title"]) for r in rows]


def tables(entities: str) -> dict:
    """The index's tables in a stable, comparable form (sets sorted; chunk entity lists keep their order)."""
    index = GraphRAGIndex(embed_model=HashEmbedding(dim=64), config=IndexConfig(entities=entities))
    index.insert(corpus())
    return {
        "chunks": [[c.id, hashlib.sha1(c.text.encode()).hexdigest()[:16], c.entities] for c in (index.chunks[k] for k in sorted(index.chunks))],
        "entities": [[e.key, e.surface, e.type, sorted(e.chunks)] for e in (index.entities[k] for k in sorted(index.entities))],
        "facts": [[f.id, f.subject, f.predicate, f.object, f.text, f.kind, sorted(f.chunks)]
                  for f in (index.facts[k] for k in sorted(index.facts))],
    }


def golden_path(entities: str) -> Path:
    return HERE / f"tables-{entities}.json"


@pytest.mark.parametrize("entities", ["ner", "statistical"])
def test_tables_equal_the_recorded_ones(entities):
    expected = json.loads(golden_path(entities).read_text(encoding="utf-8"))
    got = json.loads(json.dumps(tables(entities)))  # tuples -> lists, as in the file
    for table in ("chunks", "entities", "facts"):
        assert len(got[table]) == len(expected[table]), table
        for g, e in zip(got[table], expected[table]):
            assert g == e, table


def test_ner_tables_are_the_same_from_worker_processes(monkeypatch):
    """A big build parses in worker processes (Docs come back serialised, their tensors dropped first)."""
    from llama_index_graphrag_suite.extractors import spacy_pipeline

    monkeypatch.setattr(spacy_pipeline, "MIN_TEXTS_FOR_PROCESSES", 0)
    monkeypatch.setattr("llama_index_graphrag_suite.extractors.ner.default_processes", lambda: 2)
    expected = json.loads(golden_path("ner").read_text(encoding="utf-8"))
    assert json.loads(json.dumps(tables("ner"))) == expected


if __name__ == "__main__" and "--regenerate" in sys.argv:
    for kind in ("ner", "statistical"):
        data = tables(kind)
        # one record per line: a change shows as a readable diff
        lines = ",\n".join(f'"{t}": [\n' + ",\n".join(json.dumps(r, ensure_ascii=False) for r in data[t]) + "\n]"
                           for t in data)
        golden_path(kind).write_text("{\n" + lines + "\n}\n", encoding="utf-8")
        print(kind, {t: len(v) for t, v in data.items()})
