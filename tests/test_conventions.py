"""LlamaIndex conventions: Settings.embed_model is respected, SimpleDirectoryReader input gets stable ids and titles."""

from llama_index.core import Settings, SimpleDirectoryReader

from llama_index_graphrag_suite import GraphRAGIndex
from llama_index_graphrag_suite.documents import document_key
from llama_index_graphrag_suite.embeddings import HashEmbedding


def test_settings_embed_model_is_used_when_none_is_passed(monkeypatch, documents):
    mine = HashEmbedding(dim=64)
    monkeypatch.setattr(Settings, "_embed_model", mine)
    index = GraphRAGIndex.from_documents(documents[:3])
    assert index.embed_model is mine and index.chunk_vectors.dim == 64


def test_folder_documents_get_stable_ids_and_titles(tmp_path):
    (tmp_path / "marlow_town.txt").write_text("Marlow is a town on the Esk River. It has a harbour.")
    (tmp_path / "ada.md").write_text("# Ada Lorne\n\nAda Lorne was a painter born in Marlow.")
    first = [document_key(d) for d in SimpleDirectoryReader(str(tmp_path)).load_data()]
    second = [document_key(d) for d in SimpleDirectoryReader(str(tmp_path)).load_data()]
    assert first == second  # SimpleDirectoryReader's own ids are random uuids
    assert {t for _, t in first} == {"marlow town", "Ada Lorne"}
    assert all(i.endswith((".txt", ".md")) for i, _ in first)
    index = GraphRAGIndex.from_documents(SimpleDirectoryReader(str(tmp_path)).load_data(), embed_model="hash")
    assert {c.doc_id for c in index.chunks.values()} == {i for i, _ in first}
