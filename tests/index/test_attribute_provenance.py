"""Deleting one of two inserts that changed an older entity's attributes takes back only that insert's part.

Before: an insert's provenance record kept the entity's whole attributes from before it, and a delete of the insert
put them back wholesale. So insert X, insert Y, delete X erased what Y had given the entity (the PathRAG extractor's
merged description, a scalar attribute Y set), and a later delete of Y then put back X's part.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

import pytest
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.schema import BaseNode, TransformComponent

from llama_index_graphrag_suite import GraphRAGIndex, IndexConfig
from llama_index_graphrag_suite.documents import make_document
from llama_index_graphrag_suite.embeddings import HashEmbedding
from llama_index_graphrag_suite.extractors.pathrag_extractor import SEPARATOR, PathRAGExtractor
from llama_index_graphrag_suite.index import update
from llama_index_graphrag_suite.extractors.statistical import CONTAINS, ENTITY_LABEL
from llama_index_graphrag_suite.index.provenance import checked
from llama_index_graphrag_suite.llm import ScriptedLLM

CONFIG = IndexConfig(entities="statistical", entity_threshold=0.1)
BASE = ("base", "Ada Lorne", "Ada Lorne was a painter born in Marlow. Ada Lorne painted harbours and fishing boats.")
X = ("x", "Kell Academy", "Kell Academy is an art school in Dunmore. Ada Lorne studied at Kell Academy for two years.")
Y = ("y", "Vant Gallery", "The Vant Gallery is a museum in Dunmore. The Vant Gallery holds works by Ada Lorne.")
OTHER = ("other", "Esk River", "The Esk River reaches the sea at Marlow. Boats moor on the Esk River.")

ADA = "ada lorne"
BASE_PART, X_PART = "A painter born in Marlow.", "A student of Kell Academy."
Y_PART = "Her works hang in the Vant Gallery."
SAYS = {  # the PathRAG extractor's answer for each document (found by its first words)
    "Ada Lorne was a painter": [("Ada Lorne", "person", BASE_PART)],
    "Kell Academy is an art school": [("Ada Lorne", "person", X_PART),
                                      ("Kell Academy", "organization", "An art school.")],
    "The Vant Gallery is a museum": [("Ada Lorne", "person", Y_PART), ("Vant Gallery", "organization", "A museum.")],
    "The Esk River reaches": [("Esk River", "geo", "A river.")],
}


def _llm() -> ScriptedLLM:
    def respond(prompt: str) -> str:
        for marker, entities in SAYS.items():
            if marker in prompt:
                return json.dumps({"entities": [{"name": n, "type": t, "description": d} for n, t, d in entities],
                                   "relations": []})
        return '{"entities": [], "relations": []}'
    return ScriptedLLM(responder=respond)


def _doc(spec):
    doc_id, title, text = spec
    return make_document(doc_id, text, title)


def _describing_index() -> GraphRAGIndex:
    return GraphRAGIndex.from_documents([_doc(BASE), _doc(OTHER)], embed_model=HashEmbedding(dim=64), config=CONFIG,
                                        extra_extractors=[PathRAGExtractor(llm=_llm(), max_gleaning=0)])


def _description(index: GraphRAGIndex, key: str = ADA) -> list[str]:
    return index.entities[key].attributes["description"].split(SEPARATOR)


def _entity_table(index: GraphRAGIndex) -> dict[str, Any]:
    return {k: e.to_json() for k, e in index.entities.items()}


def _stored(index: GraphRAGIndex, key: str = ADA) -> str:
    return index.property_graph_store.graph.nodes[key].properties.get("description", "")


def test_deleting_the_first_of_two_inserts_keeps_the_second_s_description():
    index = _describing_index()
    assert _description(index) == [BASE_PART]
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    assert _description(index) == [BASE_PART, X_PART, Y_PART]
    assert len(index.state.provenance) == 2  # both inserts changed the older entity's description
    index.delete("x")
    assert _description(index) == [BASE_PART, Y_PART]
    assert _stored(index) == SEPARATOR.join([BASE_PART, Y_PART])  # the store's node follows the tables
    assert "kell academy" not in index.entities  # X's own entity goes with it
    assert index.entities["vant gallery"].attributes["description"] == "A museum."


def test_the_same_across_persist_and_load_between_each_step(tmp_path):
    index = _describing_index()
    extractor = index.extra_extractors[0]
    before = _entity_table(index)

    def reload(index: GraphRAGIndex, step: str) -> GraphRAGIndex:
        index.persist(tmp_path / step)
        back = GraphRAGIndex.load(tmp_path / step, embed_model=HashEmbedding(dim=64))
        back.extra_extractors = [extractor]  # extractors are not saved with an index
        assert back.state.provenance == index.state.provenance
        return back

    index = reload(index, "base")
    index.insert([_doc(X)])
    index = reload(index, "x")
    index.insert([_doc(Y)])
    index = reload(index, "y")
    assert _description(index) == [BASE_PART, X_PART, Y_PART]
    index.delete("x")
    index = reload(index, "minus-x")
    assert _description(index) == [BASE_PART, Y_PART]
    assert _stored(index) == SEPARATOR.join([BASE_PART, Y_PART])
    index.delete("y")
    index = reload(index, "minus-y")
    assert _entity_table(index) == before and index.state.provenance == []


def test_deleting_the_second_of_two_inserts_keeps_the_first_s_description():
    index = _describing_index()
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    index.delete("y")
    assert _description(index) == [BASE_PART, X_PART]
    index.delete("x")
    assert _description(index) == [BASE_PART]


def test_inserting_two_then_deleting_both_gives_back_the_entity_table_before_them():
    for order in (("x", "y"), ("y", "x")):
        index = _describing_index()
        before = _entity_table(index)
        index.insert([_doc(X)])
        index.insert([_doc(Y)])
        for doc_id in order:
            index.delete(doc_id)
        assert _entity_table(index) == before, order
        assert index.state.provenance == []
        assert _stored(index) == BASE_PART


def test_a_refresh_of_the_first_insert_keeps_the_second_s_description():
    index = _describing_index()
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    doc_id, title, _ = X
    # the new text says nothing about Ada Lorne: the refresh deletes X's part of her description, keeps Y's
    index.refresh([make_document(doc_id, "Kell Academy, founded in 1850, teaches painting in Dunmore.", title)])
    assert _description(index) == [BASE_PART, Y_PART]


def test_a_failed_delete_leaves_the_descriptions_and_the_records_as_they_were(monkeypatch):
    index = _describing_index()
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    table, records = _entity_table(index), json.loads(json.dumps(index.state.provenance))

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    with monkeypatch.context() as m:  # fails after step 3 rewrote the descriptions and the later record
        m.setattr(update, "remove_vectors", broken)
        with pytest.raises(RuntimeError, match="disk full"):
            index.delete("x")
    assert _entity_table(index) == table and index.state.provenance == records
    index.delete("x")
    assert _description(index) == [BASE_PART, Y_PART]


# -- scalar attributes (an extractor that sets values, not a merged description) ------------------------------------

class _Says(TransformComponent):
    """An extractor that gives each chunk's entities fixed properties: {first words of a chunk: {name: properties}}."""

    says: dict[str, dict[str, dict[str, Any]]]

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        for node in nodes:
            for marker, entities in self.says.items():
                if marker in node.get_content():
                    kg_nodes = node.metadata.setdefault(KG_NODES_KEY, [])
                    rels = node.metadata.setdefault(KG_RELATIONS_KEY, [])
                    for name, props in entities.items():
                        key = name.lower()
                        kg_nodes.append(EntityNode(name=key, label=ENTITY_LABEL, properties={"surface": name, **props}))
                        rels.append(Relation(label=CONTAINS, source_id=node.node_id, target_id=key,
                                             properties={"kind": CONTAINS}))
        return nodes


def _scalar_index(x_sets: dict[str, Any], y_sets: dict[str, Any]) -> GraphRAGIndex:
    says = {"Ada Lorne was a painter": {"Ada Lorne": {"era": "modern", "rank": 3}},
            "Kell Academy is an art school": {"Ada Lorne": x_sets},
            "The Vant Gallery is a museum": {"Ada Lorne": y_sets}}
    return GraphRAGIndex.from_documents([_doc(BASE), _doc(OTHER)], embed_model=HashEmbedding(dim=64), config=CONFIG,
                                        extra_extractors=[_Says(says=says)])


def test_a_scalar_attribute_the_second_insert_set_survives_a_delete_of_the_first():
    index = _scalar_index({"era": "baroque", "rank": 5, "school": "Kell"}, {"era": "gothic", "rank": 7})
    before = _entity_table(index)
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    assert index.entities[ADA].attributes == {"era": "gothic", "rank": 7, "school": "Kell"}
    index.delete("x")
    # Y's values stay; what only X set (a value Y did not change) goes back to what it was before X
    assert index.entities[ADA].attributes == {"era": "gothic", "rank": 7}
    index.delete("y")
    assert _entity_table(index) == before and index.state.provenance == []


def test_a_scalar_attribute_only_the_first_insert_changed_goes_back_on_its_delete():
    index = _scalar_index({"era": "baroque"}, {"rank": 7})
    before = _entity_table(index)
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    assert index.entities[ADA].attributes == {"era": "baroque", "rank": 7}
    index.delete("x")
    assert index.entities[ADA].attributes == {"era": "modern", "rank": 7}
    index.delete("y")
    assert _entity_table(index) == before


def test_a_scalar_attribute_across_persist_and_load(tmp_path):
    index = _scalar_index({"era": "baroque", "rank": 5}, {"era": "gothic"})
    extractor = index.extra_extractors[0]
    before = _entity_table(index)
    for step, change in enumerate([lambda i: i.insert([_doc(X)]), lambda i: i.insert([_doc(Y)]),
                                   lambda i: i.delete("x"), lambda i: i.delete("y")]):
        change(index)
        index.persist(tmp_path / str(step))
        index = GraphRAGIndex.load(tmp_path / str(step), embed_model=HashEmbedding(dim=64))
        index.extra_extractors = [extractor]
        if step == 2:
            assert index.entities[ADA].attributes == {"era": "gothic", "rank": 3}
    assert _entity_table(index) == before


# -- records saved before the per-attribute values were kept ---------------------------------------------------------

def _as_old_records(records: list[dict]) -> list[dict]:
    """The records as an older library wrote them: the attributes before each insert only."""
    old = [{k: v for k, v in rec.items() if k in ("chunks", "links", "facts", "types", "attributes", "relinked")}
           for rec in records]
    assert checked(json.loads(json.dumps(old))) == old
    return old


def test_records_in_the_old_format_still_load_and_take_back_only_the_deleted_insert_s_part(tmp_path):
    index = _describing_index()
    before = _entity_table(index)
    index.insert([_doc(X)])
    index.insert([_doc(Y)])
    index.persist(tmp_path / "idx")
    version = tmp_path / "idx" / json.loads((tmp_path / "idx" / "CURRENT").read_text())["version"]
    provenance = version / "provenance.json"
    provenance.write_text(json.dumps(_as_old_records(json.loads(provenance.read_text()))))
    manifest = version / "manifest.json"
    from llama_index_graphrag_suite.fileio import sha256_file

    data = json.loads(manifest.read_text())
    if "provenance.json" in data.get("files", {}):
        data["files"]["provenance.json"] = sha256_file(provenance)
    manifest.write_text(json.dumps(data))
    index = GraphRAGIndex.load(tmp_path / "idx", embed_model=HashEmbedding(dim=64))
    index.delete("x")
    assert _description(index) == [BASE_PART, Y_PART]
    index.delete("y")
    assert _entity_table(index) == before


@pytest.mark.parametrize("bad", [{"set": []}, {"set": {"ada lorne": {"description": ["a list"]}}},
                                 {"set": {"ada lorne": "not a mapping"}}])
def test_a_malformed_record_of_set_values_is_refused(bad):
    record = {"chunks": ["x#0"], "links": {}, "facts": {}, "types": [], "attributes": {"ada lorne": {}}, **bad}
    with pytest.raises(ValueError):
        checked([record])
