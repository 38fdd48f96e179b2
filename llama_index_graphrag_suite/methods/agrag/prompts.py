"""AGRAG prompts: the query-aware triple filter (Eq. 9, p_tf) and the answer prompt (Eq. 22, p_gen).

The retriever reads them by name through ``self.prompt(...)``, so ``update_prompts({"triple_filter": ...})``
changes what the LLM filter is asked and ``update_prompts({"answer": ...})`` the query engine's QA template.
A replacement triple filter keeps the variables ``{question}`` and ``{facts}`` (numbered candidate
triples); the answer prompt keeps ``{context_str}`` and ``{query_str}`` and asks for ``[n]`` citations of the
numbered passages (``citations.py``).
"""

from llama_index.core import PromptTemplate

from ...citations import CITATION_RULES

__all__ = ["AGRAG_QA_PROMPT", "AGRAG_QA_TEMPLATE", "DEFAULT_PROMPTS", "TRIPLE_FILTER_PROMPT", "TRIPLE_FILTER_TEMPLATE"]

TRIPLE_FILTER_TEMPLATE = """\
You select evidence for a question. Below are numbered candidate facts, each a \
(subject | predicate | object) triple with the sentence it came from. Keep only the facts that help \
answer the question or that connect entities the question is about; drop the rest.

Question: {question}

Candidate facts:
{facts}

Answer with one JSON object and nothing else: {"keep": [numbers of the facts to keep]}, for example \
{"keep": [1, 3]}. If none helps, answer {"keep": []}.
Answer: """

TRIPLE_FILTER_PROMPT = PromptTemplate(TRIPLE_FILTER_TEMPLATE)

AGRAG_QA_TEMPLATE = f"""\
Answer the question from the context. The context starts with a reasoning graph: facts that link \
the entities of the question, one per line as subject | relation | object, grouped by connected \
component. Follow its links to see which passages matter and why; then read the numbered passages \
that follow for the details. Use only the context; if it does not contain the answer, say so. \
{CITATION_RULES} The reasoning graph is not a passage: cite the passages its facts come from.

Context:
{{context_str}}

Question: {{query_str}}
Answer: """

AGRAG_QA_PROMPT = PromptTemplate(AGRAG_QA_TEMPLATE)

# The names the retriever reads them by (``get_prompts()`` / ``update_prompts()``).
DEFAULT_PROMPTS = {"triple_filter": TRIPLE_FILTER_PROMPT, "answer": AGRAG_QA_PROMPT}
