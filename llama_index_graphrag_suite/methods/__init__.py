"""One folder per method (``agrag/``, ``pathrag/``, ``archrag/``, ``a2rag/``), the baselines, and what they share.

Each method folder holds everything a reader needs to change that method: ``retriever.py`` (the
LlamaIndex ``BaseRetriever``), ``config.py`` (its typed settings and variants), ``prompts.py`` and its
own helpers. The pure algorithms they call live in ``graph/``. Methods are found by name through
``llama_index_graphrag_suite.registry``; nothing here is imported until a method is used.
"""
