"""ArchRAG prompts: community summaries (Algorithm 1 line 7), adaptive filtering (Eq. 3) and the answer (Eq. 4).

``DEFAULT_PROMPTS`` names them for ``ArchRAGRetriever.get_prompts()`` / ``update_prompts()``:
``community_summary`` (the hierarchy's LLM summaries), ``filter_analysis`` and ``final_answer`` (the
adaptive-filtering graph, ``langgraph_agents.archrag_filter``, reads them from the retriever it is given),
and ``answer``: the query engine's QA template, the layers searched then the numbered passages, cited as ``[n]``.
"""

from llama_index.core import PromptTemplate

from ...citations import CITATION_RULES

COMMUNITY_SUMMARY_TEMPLATE = """\
You write the summary of one community of a knowledge graph: a group of entities (or of smaller \
communities) that are linked to each other and share themes. Read the members and the relations \
among them, then write a summary a reader can use to decide whether this community helps with a \
question: what the members are, what ties them together, and the most important specific facts \
(names, dates, places, roles). Use only the information given.

Members (name: description):
{members}

Relations among the members (subject | relation | object):
{relations}

Answer with one JSON object and nothing else: {"title": "a short name for the community", \
"summary": "one paragraph of at most 120 words"}
Answer: """

COMMUNITY_SUMMARY_PROMPT = PromptTemplate(COMMUNITY_SUMMARY_TEMPLATE)

FILTER_ANALYSIS_TEMPLATE = """\
You help answer a question by analysing one piece of retrieved information. It comes from a \
knowledge graph: an entity with its relations, or the summary of a community of entities at some \
level of detail. Write a short analysis report that keeps only what is relevant to the question \
(facts, names, dates, the reasoning link to the question), and rate how useful this piece is for \
answering the question with an integer score from 0 to 100: 0 = irrelevant or nothing usable, \
50 = related background, 100 = contains the answer or a decisive step towards it.

Question: {question}

Retrieved information ({kind}, layer {layer}):
{content}

Answer with one JSON object and nothing else: {"report": "your analysis", "score": integer 0-100}
Answer: """

FILTER_ANALYSIS_PROMPT = PromptTemplate(FILTER_ANALYSIS_TEMPLATE)

FINAL_ANSWER_TEMPLATE = """\
Answer the question using the analysis reports below. Each report was written by an analyst who read \
one piece of retrieved information; they are sorted by the analyst's relevance score, most relevant \
first, and may contain noise. Prefer the information in the higher-scored reports, combine reports \
when the question needs several steps, and say so if the reports do not contain the answer. After \
each statement, cite the reports it rests on by their numbers in square brackets, for example [2] \
for Report 2 or [1][3]; cite only report numbers that appear below.

Reports:
{reports}

Question: {question}
Answer: """

FINAL_ANSWER_PROMPT = PromptTemplate(FINAL_ANSWER_TEMPLATE)

ARCHRAG_QA_TEMPLATE = f"""\
Answer the question from the context. The context starts with what a search of a hierarchy of \
graph communities found, layer by layer: entities with their relations (layer 0) and summaries of \
communities of entities (higher layers), each with its relevance score. The numbered passages that \
follow are the source text. Use the summaries to see what the question is about and the passages \
for the details. Use only the context; if it does not contain the answer, say so. {CITATION_RULES} \
The layers are not passages: cite the passages their facts come from.

Context:
{{context_str}}

Question: {{query_str}}
Answer: """

ARCHRAG_QA_PROMPT = PromptTemplate(ARCHRAG_QA_TEMPLATE)

DEFAULT_PROMPTS: dict[str, PromptTemplate] = {
    "community_summary": COMMUNITY_SUMMARY_PROMPT,
    "filter_analysis": FILTER_ANALYSIS_PROMPT,
    "final_answer": FINAL_ANSWER_PROMPT,
    "answer": ARCHRAG_QA_PROMPT,  # the query engine's text_qa_template (context_str, query_str), [n] citations
}

__all__ = ["ARCHRAG_QA_PROMPT", "COMMUNITY_SUMMARY_PROMPT", "DEFAULT_PROMPTS", "FILTER_ANALYSIS_PROMPT", "FINAL_ANSWER_PROMPT"]
