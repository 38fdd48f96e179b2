"""LangGraph graphs over llama-index-graphrag-suite retrievers (A2RAG control loop, ArchRAG adaptive
filtering, retriever nodes and tools). They arrive with their methods; this package is their home."""
