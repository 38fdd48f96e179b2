"""PathRAGExtractor follows LLMRelationExtractor's failure policy: abort after consecutive refusals, or
skip them; the LLM's on_error / max_consecutive_failures / build_timeout are the defaults."""

from __future__ import annotations

import json
import time

import pytest
from llama_index.core.schema import TextNode

from llama_index_graphrag_suite.extractors.pathrag_extractor import PathRAGExtractor
from llama_index_graphrag_suite.llm import (LLMRequestError, LLMTimeoutError, LLMUnusableError, RobustLLM,
                                            ScriptedLLM)

ANSWER = json.dumps({"entities": [{"name": "Ada Lorne", "type": "person", "description": "a painter"}],
                     "relations": []})


def refused(status: int):
    return lambda n: LLMRequestError("http://llm.test/v1", RuntimeError(f"{status} refused"), status)


def chunks(n: int) -> list[TextNode]:
    return [TextNode(id_=f"c{i}", text=f"Ada Lorne painted picture {i}.") for i in range(n)]


@pytest.mark.parametrize("run", ["sync", "async"])
def test_consecutive_auth_refusals_abort_the_run(run):
    llm = ScriptedLLM(fail_from=1, error=refused(401))
    extractor = PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1)
    with pytest.raises(LLMUnusableError, match="3 consecutive failures"):
        if run == "sync":
            extractor(chunks(6))
        else:
            import asyncio

            asyncio.run(extractor.acall(chunks(6)))
    assert llm.call_count == 3  # nothing is sent after the abort
    with pytest.raises(LLMUnusableError):  # the extractor stays aborted
        extractor(chunks(1))


def test_an_answer_resets_the_streak_and_the_limit_is_configurable():
    llm = ScriptedLLM(responses=[ANSWER] * 10, fail_on={1, 3, 5}, error=refused(403))
    nodes = PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1, max_consecutive_failures=2)(chunks(6))
    assert sum(bool(n.metadata["relations"]) for n in nodes) == 3  # every other chunk got its entities
    llm = ScriptedLLM(fail_from=1, error=refused(404))
    with pytest.raises(LLMUnusableError, match="2 consecutive"):
        PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1, max_consecutive_failures=2)(chunks(5))


def test_skip_policy_from_the_llm_finishes_and_counts_skipped_chunks():
    llm = RobustLLM(ScriptedLLM(fail_from=1, error=refused(401)), on_error="skip", max_retries=0)
    extractor = PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=2)
    nodes = extractor(chunks(5))
    assert all(n.metadata["nodes"] == [] for n in nodes)
    assert llm.skipped_items == 5 and extractor.stats["failed_chunks"] == 5
    # the extractor's own setting wins over the LLM's
    with pytest.raises(LLMUnusableError):
        PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1, on_llm_error="abort")(chunks(4))


def test_a_request_error_of_one_chunk_never_aborts():
    llm = ScriptedLLM(responses=[ANSWER] * 10, fail_on={1, 2, 3, 4}, error=refused(413))  # "request": this chunk only
    nodes = PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1)(chunks(6))
    assert sum(bool(n.metadata["nodes"]) for n in nodes) == 2


def test_build_timeout_of_the_llm_bounds_the_run():
    slow = ScriptedLLM(responder=lambda prompt: (time.sleep(0.15), ANSWER)[1])
    llm = RobustLLM(slow, build_timeout=0.4, max_retries=0)
    start = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        PathRAGExtractor(llm=llm, max_gleaning=0, num_workers=1)(chunks(20))
    assert time.monotonic() - start < 1.5 and slow.call_count < 20
