"""Prompt for LLM relation extraction (AGRAG Eq. 4).

The statistical extractor has already found the passage's named entities; the LLM only has to say
how they are related. Answers are checked against the passage afterwards (a triple is kept only if
both ends occur in it), so the prompt insists on names from the list or words copied verbatim.
"""

from llama_index.core import PromptTemplate

__all__ = ["RELATION_EXTRACTION_PROMPT", "RELATION_EXTRACTION_TEMPLATE"]

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
