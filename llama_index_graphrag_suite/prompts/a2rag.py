"""A2RAG retriever prompts: document summaries for the gate (Eq. 1), seed extraction, stage sufficiency.

The control loop's prompts (answer, Triple-Check validators, rewrite) live in ``prompts/a2rag_loop.py``.
"""

from llama_index.core import PromptTemplate

DOC_SUMMARY_TEMPLATE = """\
Summarise the document below in at most {max_words} words for a search index. Name its main \
entities (people, places, works, organisations) and what the document says about them. Write plain \
sentences, no preamble, no lists.

Title: {title}
Document:
{text}

Summary: """

DOC_SUMMARY_PROMPT = PromptTemplate(DOC_SUMMARY_TEMPLATE)

SEED_EXTRACTION_TEMPLATE = """\
Find the seeds of a graph search in a question: the named entities it mentions (people, places, \
works, organisations, dates, titles), written exactly as in the question, and the relation phrases \
that link them (for example "mother of", "directed", "born in").

Question: {question}

Answer with one JSON object and nothing else: {"entities": [...], "relations": [...]}, for example \
{"entities": ["Lothair II"], "relations": ["mother of", "died"]}. Use empty lists when there are none.
Answer: """

SEED_EXTRACTION_PROMPT = PromptTemplate(SEED_EXTRACTION_TEMPLATE)

SUFFICIENCY_TEMPLATE = """\
You decide whether evidence collected so far is enough to answer a question. You do not answer the \
question. The evidence is graph facts (subject | relation | object) and passages.

Question: {question}

Evidence:
{evidence}

Is this evidence sufficient to answer the question? Answer with one word: yes or no.
Answer: """

SUFFICIENCY_PROMPT = PromptTemplate(SUFFICIENCY_TEMPLATE)
