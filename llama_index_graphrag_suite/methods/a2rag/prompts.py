"""A2RAG retriever prompts: document summaries for the gate (Eq. 1), seed extraction, stage sufficiency.

The retriever reads them by name (:data:`DEFAULT_PROMPTS`) through ``self.prompt(...)``, so
``update_prompts`` changes what its LLM sees. ``"answer"`` is the query engine's QA template: the
retrieval trace first (seeds, graph facts, bridges), then the numbered passages, cited as ``[n]``.
The control loop's own answer prompt, with the Triple-Check validators and the rewrites, is in
``loop_prompts.py``.
"""

from llama_index.core import PromptTemplate

from ...citations import CITATION_RULES

__all__ = [
    "A2RAG_QA_PROMPT",
    "A2RAG_QA_TEMPLATE",
    "DEFAULT_PROMPTS",
    "DOC_SUMMARY_PROMPT",
    "DOC_SUMMARY_TEMPLATE",
    "SEED_EXTRACTION_PROMPT",
    "SEED_EXTRACTION_TEMPLATE",
    "SUFFICIENCY_PROMPT",
    "SUFFICIENCY_TEMPLATE",
]

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

A2RAG_QA_TEMPLATE = f"""\
Answer the question from the context. The context starts with what an escalating graph search \
found: the seed entities of the question, knowledge-graph facts (subject | relation | object) and \
the links between them. The numbered passages that follow are the source text. Use the facts to \
see how the question's entities connect and the passages for the details. Use only the context; if \
it does not contain the answer, say so. {CITATION_RULES} The graph facts are not passages: cite the \
passages they come from.

Context:
{{context_str}}

Question: {{query_str}}
Answer: """

A2RAG_QA_PROMPT = PromptTemplate(A2RAG_QA_TEMPLATE)

# Name -> template, as ``get_prompts()`` lists them and ``update_prompts()`` replaces them.
DEFAULT_PROMPTS = {
    "seed_extraction": SEED_EXTRACTION_PROMPT,  # question -> {"entities": [...], "relations": [...]}
    "sufficiency": SUFFICIENCY_PROMPT,  # question, evidence -> yes / no, after every stage but the last
    "doc_summary": DOC_SUMMARY_PROMPT,  # title, text, max_words -> the gate's summary s_j (llm_summaries=True)
    "answer": A2RAG_QA_PROMPT,  # the query engine's text_qa_template (context_str, query_str), [n] citations
}
