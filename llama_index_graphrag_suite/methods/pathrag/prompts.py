"""PathRAG prompts: query keywords (node retrieval) and the path answer (Eq. 6).

The keyword prompt follows the structure of the LightRAG prompt the authors' code uses (high- and
low-level keywords as JSON). The indexing prompts (entity and relation extraction, gleaning) belong to
the extractor: ``extractors/prompts.py``.

``DEFAULT_PROMPTS`` names them for ``PathRAGRetriever.get_prompts()`` / ``update_prompts()``:
``keywords`` (read by the retriever when it has an ``llm``) and ``answer`` (the query engine's QA
template: the question first, the passages, then the paths with the most reliable one last).
"""

from llama_index.core import PromptTemplate

from ...citations import CITATION_RULES

__all__ = ["DEFAULT_PROMPTS", "KEYWORDS_PROMPT", "KEYWORDS_TEMPLATE", "PATH_QA_PROMPT", "PATH_QA_TEMPLATE"]

KEYWORDS_TEMPLATE = """\
Extract keywords from the question, for searching a knowledge graph.
- high_level_keywords: the broad concepts or themes the question is about.
- low_level_keywords: the specific entities, names, places, dates and details it mentions.

Question: {question}

Answer with one JSON object and nothing else, for example:
{"high_level_keywords": ["film direction", "birthplace"], "low_level_keywords": ["The Grey Harbour", "Ada Lorne"]}
Answer: """

KEYWORDS_PROMPT = PromptTemplate(KEYWORDS_TEMPLATE)

PATH_QA_TEMPLATE = f"""\
Question: {{query_str}}

Answer the question above. Below are relational paths from a knowledge graph, each a chain of \
entities and the relations between them, in ascending order of reliability: the LAST path is the \
most reliable. Numbered passages from the source documents come before the paths. Follow the paths \
to connect the facts the question needs; use only this context and say so if it does not contain \
the answer. {CITATION_RULES} The paths are not passages: cite the passages their facts come from.

{{context_str}}

Answer: """

PATH_QA_PROMPT = PromptTemplate(PATH_QA_TEMPLATE)

DEFAULT_PROMPTS: dict[str, PromptTemplate] = {
    "keywords": KEYWORDS_PROMPT,  # question -> {"high_level_keywords": [...], "low_level_keywords": [...]}
    "answer": PATH_QA_PROMPT,  # the query engine's text_qa_template (query_str, context_str)
}
