"""LLMRelationExtractor: grounding, malformed output, failures, concurrency, PropertyGraphIndex."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from llama_index.core import PropertyGraphIndex
from llama_index.core.graph_stores.types import EntityNode, Relation
from llama_index.core.schema import TextNode, TransformComponent

from llama_index_graphrag_suite.extractors.llm_relations import LLMRelationExtractor
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.llm import LLMUnavailableError, RobustLLM, ScriptedLLM
from llama_index_graphrag_suite.text import normalize_entity

PASSAGE = "Marie Curie was born in Warsaw. She married Pierre Curie in Paris, where she taught physics."
ENTITIES = ["Marie Curie", "Warsaw", "Pierre Curie", "Paris"]


def chunk(text: str = PASSAGE, entities: list[str] = ENTITIES, id_: str = "chunk-1") -> TextNode:
    """A chunk as the statistical entity extractor leaves it."""
    node = TextNode(text=text, id_=id_)
    node.metadata["nodes"] = [
        EntityNode(name=normalize_entity(e), label="entity", properties={"surface": e}) for e in entities
    ]
    return node


def triples_json(*triples) -> str:
    return json.dumps({"triples": [list(t) for t in triples]})


def relations(node) -> list[tuple[str, str, str]]:
    return [(r.source_id, r.label, r.target_id) for r in node.metadata["relations"]]


def run(extractor, node):
    (out,) = extractor([node])
    return out


def test_good_json_is_kept_and_written_back():
    llm = ScriptedLLM(responses=[triples_json(
        ("Marie Curie", "born in", "Warsaw"),
        ("Marie Curie", "married", "Pierre Curie"),
        ("Marie Curie", "  Taught  ", "physics"),
    )])
    extractor = LLMRelationExtractor(llm=llm)
    node = run(extractor, chunk())

    assert relations(node) == [
        ("marie curie", "born in", "warsaw"),
        ("marie curie", "married", "pierre curie"),
        ("marie curie", "taught", "physics"),
    ]
    rel = node.metadata["relations"][0]
    assert rel.properties == {"text": "Marie Curie born in Warsaw", "kind": "llm", "chunk_id": "chunk-1"}
    # "physics" was not a known entity: it is added once, with its surface form; known ones are not duplicated.
    names = [n.name for n in node.metadata["nodes"]]
    assert names == ["marie curie", "warsaw", "pierre curie", "paris", "physics"]
    assert node.metadata["nodes"][-1].properties == {"surface": "physics"}
    assert extractor.stats == {
        "kept": 3, "dropped_ungrounded": 0, "dropped_malformed": 0, "dropped_over_limit": 0,
        "llm_calls": 1, "failed_chunks": 0,
    }
    # The prompt carried the passage and the entity surface names.
    assert PASSAGE in llm.prompts[0] and json.dumps(ENTITIES) in llm.prompts[0]


def test_malformed_and_truncated_output_is_counted_not_fatal():
    answer = (
        "```json\n{'triples': [['Marie Curie', 'born in', 'Warsaw'], ['Paris'], "
        "['Pierre Curie', 'lived in', 'Par"
    )
    extractor = LLMRelationExtractor(llm=ScriptedLLM(responses=[answer]))
    node = run(extractor, chunk())
    assert relations(node) == [("marie curie", "born in", "warsaw")]
    assert extractor.stats["kept"] == 1
    assert extractor.stats["dropped_malformed"] == 2  # wrong arity + truncated item

    garbage = LLMRelationExtractor(llm=ScriptedLLM(responses=["I am not sure what you mean."]))
    node = run(garbage, chunk())
    assert relations(node) == [] and "nodes" in node.metadata
    assert garbage.stats["dropped_malformed"] == 1 and garbage.stats["kept"] == 0

    strict = LLMRelationExtractor(llm=ScriptedLLM(responses=[answer]), raise_on_error=True)
    node = chunk()
    with pytest.raises(ValueError, match="malformed"):
        strict([node])
    assert "relations" in node.metadata  # keys are written back even then


def test_hallucinated_triples_are_dropped_as_ungrounded():
    llm = ScriptedLLM(responses=[triples_json(
        ("Marie Curie", "won", "Nobel Prize"),  # object not in the passage
        ("Albert Einstein", "met", "Marie Curie"),  # subject not in the passage
        ("Curie", "born in", "Wars"),  # "Wars" is only part of a word
        ("Marie Curie's", "lived in", "PARIS"),  # case and possessive are normalised: grounded
    )])
    extractor = LLMRelationExtractor(llm=llm)
    node = run(extractor, chunk())
    assert relations(node) == [("marie curie", "lived in", "paris")]
    assert extractor.stats["kept"] == 1 and extractor.stats["dropped_ungrounded"] == 3


def test_duplicates_and_max_triples_per_chunk():
    llm = ScriptedLLM(responses=[triples_json(
        ("Marie Curie", "born in", "Warsaw"),
        ("marie curie", "Born in", "warsaw"),  # same fact again
        ("Marie Curie", "married", "Pierre Curie"),
        ("Pierre Curie", "married", "Marie Curie"),
    )])
    extractor = LLMRelationExtractor(llm=llm, max_triples_per_chunk=2)
    node = run(extractor, chunk())
    assert relations(node) == [("marie curie", "born in", "warsaw"), ("marie curie", "married", "pierre curie")]
    assert extractor.stats["kept"] == 2 and extractor.stats["dropped_over_limit"] == 1


def test_failing_chunk_is_counted_but_dead_server_raises():
    # ScriptedLLM raises RuntimeError when it has no answer: a per-chunk failure.
    llm = ScriptedLLM(rules=[("Warsaw", triples_json(("Marie Curie", "born in", "Warsaw")))])
    extractor = LLMRelationExtractor(llm=llm, num_workers=1)
    nodes = extractor([chunk(), chunk("Nothing to see here.", [], "chunk-2")])
    assert relations(nodes[0]) == [("marie curie", "born in", "warsaw")]
    assert nodes[1].metadata == {"nodes": [], "relations": []}
    assert extractor.stats["failed_chunks"] == 1 and extractor.stats["llm_calls"] == 2

    dead = RobustLLM(ScriptedLLM(fail_from=1), max_retries=1, base_delay=0.001)
    with pytest.raises(LLMUnavailableError):
        LLMRelationExtractor(llm=dead)([chunk(id_="a"), chunk(id_="b")])
    # Without RobustLLM around it, a connection error still means "server down", not "bad chunk".
    with pytest.raises(LLMUnavailableError, match="ScriptedLLM"):
        LLMRelationExtractor(llm=ScriptedLLM(fail_from=1), num_workers=1)([chunk()])


def test_acall_runs_concurrently_bounded_by_num_workers():
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def slow(prompt: str) -> str:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return triples_json(("Marie Curie", "born in", "Warsaw"))

    llm = RobustLLM(ScriptedLLM(responder=slow))
    extractor = LLMRelationExtractor(llm=llm, num_workers=2)
    nodes = [chunk(id_=f"c{i}") for i in range(6)]
    asyncio.run(extractor.acall(nodes))
    assert peak[0] == 2
    assert all(relations(n) == [("marie curie", "born in", "warsaw")] for n in nodes)
    assert extractor.stats["kept"] == 6 and extractor.stats["llm_calls"] == 6


def test_call_inside_a_running_event_loop_uses_the_sync_path():
    llm = ScriptedLLM(responder=lambda p: triples_json(("Marie Curie", "born in", "Warsaw")))
    extractor = LLMRelationExtractor(llm=llm)

    async def inside_loop():
        return extractor([chunk(id_="a"), chunk(id_="b")])

    nodes = asyncio.run(inside_loop())
    assert [len(n.metadata["relations"]) for n in nodes] == [1, 1]


# -- inside PropertyGraphIndex -------------------------------------------------------------------------
class KnownEntityExtractor(TransformComponent):
    """Stand-in for the statistical extractor: tags the listed names that occur in a chunk."""

    names: list[str]

    def __call__(self, nodes, **kwargs):
        for node in nodes:
            found = [
                EntityNode(name=normalize_entity(n), label="entity", properties={"surface": n})
                for n in self.names
                if n in node.get_content()
            ]
            node.metadata["nodes"] = node.metadata.pop("nodes", []) + found
            node.metadata["relations"] = node.metadata.pop("relations", [])
        return nodes


def test_extractor_inside_property_graph_index():
    second = "Pierre Curie worked in Paris with Marie Curie."
    llm = ScriptedLLM(rules=[
        ("Passage: Marie Curie was born", triples_json(
            ("Marie Curie", "born in", "Warsaw"), ("Marie Curie", "discovered", "Polonium"),
        )),
        ("Passage: Pierre Curie worked", triples_json(("Pierre Curie", "worked in", "Paris"))),
    ])
    extractor = LLMRelationExtractor(llm=llm)
    index = PropertyGraphIndex(
        nodes=[TextNode(text=PASSAGE, id_="c1"), TextNode(text=second, id_="c2")],
        kg_extractors=[KnownEntityExtractor(names=ENTITIES), extractor],
        embed_kg_nodes=False,
        embed_model=HashEmbedding(),
        llm=llm,
        use_async=False,
    )
    triplets = index.property_graph_store.graph.triplets
    assert ("marie curie", "born in", "warsaw") in triplets
    assert ("pierre curie", "worked in", "paris") in triplets
    assert not any("polonium" in t for t in triplets)  # hallucinated: not in the passage
    assert len(triplets) == 2
    assert extractor.stats["dropped_ungrounded"] == 1 and llm.call_count == 2
    stored = index.property_graph_store.graph.relations
    assert all(isinstance(r, Relation) and r.properties["kind"] == "llm" for r in stored.values())
