"""PathRAG prompts: query keywords (node retrieval), entity/relation extraction (indexing), path answer (Eq. 6).

The keyword and extraction prompts follow the structure of the LightRAG prompts the authors' code uses
(high-/low-level keywords as JSON; entities with a type and a description, relations with a
description and keywords), asking for JSON instead of LightRAG's tuple delimiters because JSON is what
our lenient parser repairs best.
"""

from llama_index.core import PromptTemplate

KEYWORDS_TEMPLATE = """\
Extract keywords from the question, for searching a knowledge graph.
- high_level_keywords: the broad concepts or themes the question is about.
- low_level_keywords: the specific entities, names, places, dates and details it mentions.

Question: {question}

Answer with one JSON object and nothing else, for example:
{"high_level_keywords": ["film direction", "birthplace"], "low_level_keywords": ["The Grey Harbour", "Ada Lorne"]}
Answer: """

KEYWORDS_PROMPT = PromptTemplate(KEYWORDS_TEMPLATE)

EXTRACTION_TEMPLATE = """\
Read the text and list its entities and the relations between them.

Entities: every person, organisation, place, event, work or other named thing. For each give
"name" (as written in the text), "type" (one of: {entity_types}) and "description" (one or two
sentences saying what the text tells about it).
Relations: pairs of those entities that the text clearly relates. For each give "source" and
"target" (entity names), "description" (one sentence saying how they are related, from the text),
"keywords" (a few words naming the relation) and "strength" (1-10, how strong the relation is).

Text:
{text}

Answer with one JSON object and nothing else:
{"entities": [{"name": "...", "type": "...", "description": "..."}], \
"relations": [{"source": "...", "target": "...", "description": "...", "keywords": "...", "strength": 8}]}
Answer: """

EXTRACTION_PROMPT = PromptTemplate(EXTRACTION_TEMPLATE)

GLEANING_TEMPLATE = """\
Some entities and relations of the text below were missed. List ONLY the ones not in the earlier
answer, in the same JSON format; answer {"entities": [], "relations": []} if nothing was missed.

Text:
{text}

Earlier answer:
{previous}

Answer: """

GLEANING_PROMPT = PromptTemplate(GLEANING_TEMPLATE)

PATH_QA_TEMPLATE = """\
Question: {query_str}

Answer the question above. Below are relational paths from a knowledge graph, each a chain of \
entities and the relations between them, in ascending order of reliability: the LAST path is the \
most reliable. Passages from the source documents come before the paths. Follow the paths to \
connect the facts the question needs; use only this context and say so if it does not contain \
the answer.

{context_str}

Answer: """

PATH_QA_PROMPT = PromptTemplate(PATH_QA_TEMPLATE)
