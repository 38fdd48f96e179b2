"""Prompts of the A2RAG adaptive control loop (Section III-B, Algorithm 1).

* the answer prompt: GENERATEANSWER(q, E) of Algorithm 1, line 10;
* the three Triple-Check validators, Eq. 2-4: relevance V_rel(q, E), grounding V_grd(a, E),
  adequacy V_ans(q, a). Each asks for "yes" or "no" on the first line and one sentence of reason;
* the three failure-aware rewrites, Eq. 6, one per failure type, worded after the paper: sharpen
  entity/relation expressions when the evidence is off-topic, ask for strictly evidence-grounded
  answering when the answer made unsupported claims, add the constraints the question implies when
  the answer is incomplete;
* the text shown to a human reviewer with the proposed evidence triples.

Each prompt opens with a distinct task line, so logs (and scripted test LLMs) can tell them apart.
"""

from llama_index.core import PromptTemplate

from ...citations import CITATION_RULES

__all__ = [
    "A2RAG_ANSWER_PROMPT",
    "ADEQUACY_CHECK_PROMPT",
    "GROUNDING_CHECK_PROMPT",
    "HUMAN_REVIEW_TEXT",
    "RELEVANCE_CHECK_PROMPT",
    "REWRITE_PROMPTS",
    "VALIDATOR_PROMPTS",
]

A2RAG_ANSWER_TEMPLATE = f"""\
Task: answer a question from retrieved evidence.
Use only the evidence below: knowledge-graph facts (subject | relation | object) and numbered \
passages. If the evidence does not contain the answer, say that it does not. Answer in one or two \
sentences. {CITATION_RULES} The facts are not passages: cite the passages they come from.

Question: {{question}}
{{refined}}
Evidence facts:
{{facts}}

Passages:
{{passages}}

Answer: """

_YES_NO = "Reply with yes or no on the first line, then one short sentence giving the reason."

RELEVANCE_CHECK_TEMPLATE = f"""\
Task: check evidence relevance.
Does the evidence below contain information that bears on the question, that is, facts about the \
entities and relations the question asks about? It need not answer the question completely.
{_YES_NO}

Question: {{question}}

Evidence:
{{evidence}}

Relevant: """

GROUNDING_CHECK_TEMPLATE = f"""\
Task: check that an answer is grounded in the evidence.
Is every factual claim of the answer stated in, or directly implied by, the evidence below? \
An answer that says the evidence does not contain the answer counts as grounded.
{_YES_NO}

Evidence:
{{evidence}}

Answer: {{answer}}

Grounded: """

ADEQUACY_CHECK_TEMPLATE = f"""\
Task: check that an answer resolves the question.
Does the answer give what the question asks for, completely and specifically (for example a name, \
a date or a yes/no with its reason)? An answer that only says the information is missing does not \
resolve the question.
{_YES_NO}

Question: {{question}}

Answer: {{answer}}

Resolves the question: """

RELEVANCE_CHECK_PROMPT = PromptTemplate(RELEVANCE_CHECK_TEMPLATE)
GROUNDING_CHECK_PROMPT = PromptTemplate(GROUNDING_CHECK_TEMPLATE)
ADEQUACY_CHECK_PROMPT = PromptTemplate(ADEQUACY_CHECK_TEMPLATE)
A2RAG_ANSWER_PROMPT = PromptTemplate(A2RAG_ANSWER_TEMPLATE)

# Check name -> prompt, in Triple-Check order (Eq. 5); the first failure picks the rewrite (Eq. 6).
VALIDATOR_PROMPTS = {
    "relevance": RELEVANCE_CHECK_PROMPT,
    "grounding": GROUNDING_CHECK_PROMPT,
    "adequacy": ADEQUACY_CHECK_PROMPT,
}

_REWRITE_TAIL = """
Question asked by the user: {question}
Search query that was used: {query}
Answer it produced: {answer}
Why the check failed: {reason}
Evidence it retrieved (abridged):
{evidence}

Write only the new search query, on one line, with no explanation.
New query: """

REWRITE_OFF_TOPIC_TEMPLATE = """\
Task: rewrite a search query whose evidence was off-topic.
The retrieved evidence did not bear on the question. Rewrite the query so that it names the exact \
entities (full names, titles, places) and the relation the question is about, drops vague words, \
and would retrieve passages about those entities rather than the ones below.
""" + _REWRITE_TAIL

REWRITE_UNGROUNDED_TEMPLATE = """\
Task: rewrite a search query whose answer was not grounded in the evidence.
The answer made claims the evidence does not support. Rewrite the query so that it asks for the \
specific fact that was missing from the evidence, and add the instruction "answer strictly from \
the retrieved passages".
""" + _REWRITE_TAIL

REWRITE_INCOMPLETE_TEMPLATE = """\
Task: rewrite a search query whose answer was incomplete.
The answer did not fully resolve the question. Rewrite the query so that it states every \
constraint the question implies (which entity, which relation, time, place, quantity) and asks \
for the part the answer left open, for example the intermediate entity of a two-step question.
""" + _REWRITE_TAIL

# Failure type (the first failed check) -> rewrite prompt, Eq. 6.
REWRITE_PROMPTS = {
    "relevance": PromptTemplate(REWRITE_OFF_TOPIC_TEMPLATE),
    "grounding": PromptTemplate(REWRITE_UNGROUNDED_TEMPLATE),
    "adequacy": PromptTemplate(REWRITE_INCOMPLETE_TEMPLATE),
}

HUMAN_REVIEW_TEXT = """\
Review the knowledge-graph facts retrieved for this question before the answer is written. \
Each fact is subject | relation | object with the passages it came from. Resume the graph with \
Command(resume=...) where resume is one of: True or "accept" to keep every fact; False or \
"reject" to drop them all (the answer then uses the passages only); a list of facts to use \
instead (each a [subject, relation, object] list or a dict with subject, predicate and object); \
or {"keep": [numbers of the facts to keep, from 0]} to keep a subset."""
