"""Prompts of the LLM extractors (indexing time).

* :data:`RELATION_EXTRACTION_PROMPT` (:class:`~.llm_relations.LLMRelationExtractor`, AGRAG Eq. 4). The
  statistical extractor has already found the passage's named entities; the LLM only has to say
  how they are related. Answers are checked against the passage afterwards (a triple is kept only if
  both ends occur in it), so the prompt insists on names from the list or words copied verbatim.
* :data:`EXTRACTION_PROMPT` and :data:`GLEANING_PROMPT` (:class:`~.pathrag_extractor.PathRAGExtractor`,
  the indexing graph PathRAG assumes). They follow the structure of the LightRAG prompts the PathRAG
  authors' code uses (entities with a type and a description, relations with a description and
  keywords), asking for JSON instead of LightRAG's tuple delimiters because JSON is what our lenient
  parser repairs best.

They live with the extractors, not with the methods: a method imports the extractors' helpers
(``methods/pathrag`` uses ``extractors.entity_stats``), so the extractors must not import a method.
"""

from llama_index.core import PromptTemplate

__all__ = [
    "EXTRACTION_PROMPT",
    "EXTRACTION_TEMPLATE",
    "GLEANING_PROMPT",
    "GLEANING_TEMPLATE",
    "RELATION_EXTRACTION_PROMPT",
    "RELATION_EXTRACTION_TEMPLATE",
]

# ------------------------------------------------------------------ LLM relations between known entities

RELATION_EXTRACTION_TEMPLATE = """\
You build a knowledge graph from a passage. List the factual relations the passage states \
as (subject, predicate, object) triples.

Rules:
- Subject and object must each be one of the named entities listed below, or a short phrase \
copied word for word from the passage. Never invent names or paraphrase them.
- Replace pronouns and descriptions such as "he", "she", "it" or "the company" by the name they refer to.
- Keep predicates short: a verb phrase of one to four words, such as "born in" or "founded".
- Only include relations the passage states; skip opinions and guesses.
- Answer with a single JSON object and nothing else, in this form:
{"triples": [["subject", "predicate", "object"], ...]}
- If the passage states no relation, answer {"triples": []}.

Example
Passage: Ada Lovelace worked with Charles Babbage in London. She wrote the first published algorithm.
Named entities: ["Ada Lovelace", "Charles Babbage", "London"]
Answer: {"triples": [["Ada Lovelace", "worked with", "Charles Babbage"], ["Ada Lovelace", "worked in", "London"], ["Ada Lovelace", "wrote", "first published algorithm"]]}

Now the real task.
Passage: {text}
Named entities: {entities}
Answer: """

RELATION_EXTRACTION_PROMPT = PromptTemplate(RELATION_EXTRACTION_TEMPLATE)

# ------------------------------------------------------------------ PathRAG (LightRAG-style) entities and relations

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
