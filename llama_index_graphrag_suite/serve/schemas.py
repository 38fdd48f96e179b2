"""Request and response bodies of the HTTP API (they make the OpenAPI page at ``/docs``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..registry import DEFAULT_METHOD
from .guards import clean_text, has_hidden_characters
from .runner import MAX_QUESTION_CHARS, MAX_TOP_K, RequestError, clean_question

__all__ = ["DeleteResponse", "DocumentIn", "InsertRequest", "InsertResponse", "RetrieveRequest",
           "QueryRequest", "RetrieveResponse"]


class RetrieveRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str = Field(..., description="the question; control and format characters are dropped (NFKC), what "
                                           "is left must hold a letter or digit and be at most 4000 characters")
    method: str = Field(DEFAULT_METHOD, description="a name from GET /methods, or name:variant")
    top_k: int = Field(5, ge=1, le=MAX_TOP_K, description="chunks to return")
    settings: dict[str, Any] | None = Field(None, description="method settings to change (GET /methods lists them)")
    graph: bool = Field(True, description="also return the evidence as nodes and edges for drawing")

    @field_validator("question")
    @classmethod
    def _not_empty(cls, value: str) -> str:
        try:
            return clean_question(value, MAX_QUESTION_CHARS)
        except RequestError as exc:
            raise ValueError(str(exc)) from None


class QueryRequest(RetrieveRequest):
    stream: bool = Field(False, description="answer as server-sent events: retrieval, token..., done")


class RetrieveResponse(BaseModel):
    method: str
    question: str
    nodes: list[dict[str, Any]] = Field(description="chunks in rank order, then the evidence node (kind='evidence')")
    evidence: dict[str, Any] = Field(description="the method's evidence, in the method's own shape")
    graph: dict[str, Any] | None = Field(None, description="the evidence as {nodes, edges, chunks}")
    timing_ms: dict[str, float]
    answer: str | None = None
    citations: dict[str, Any] | None = Field(None, description="what the answer cites: passages (number, chunk_id, "
                                             "doc_id, title, cited), cited, cited_chunk_ids, invalid, markers")


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    doc_id: str = Field(..., min_length=1, max_length=512, description="no control or format characters")
    text: str = Field(..., min_length=1, description="control and format characters (but line breaks and tabs) are "
                                                     "dropped; what is left must not be empty")
    title: str = ""
    metadata: dict[str, Any] | None = None

    @field_validator("doc_id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if has_hidden_characters(value) or not value.strip():
            raise ValueError("a doc_id must be visible text, without control or format characters")
        return value

    @field_validator("text")
    @classmethod
    def _text_not_empty(cls, value: str) -> str:
        value = clean_text(value)
        if not value.strip():
            raise ValueError("the document text is empty")
        return value

    @field_validator("title")
    @classmethod
    def _clean_title(cls, value: str) -> str:
        return clean_text(value, keep_newlines=False)


class InsertRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    documents: list[DocumentIn] = Field(..., min_length=1)


class InsertResponse(BaseModel):
    inserted: list[str] = Field(description="document ids")
    chunks: list[str] = Field(description="new chunk ids")
    stats: dict[str, int]
    persisted: bool
    warnings: list[str] = Field(default_factory=list, description="what reading the files warned about (scanned "
                                                                  "PDF pages without text, bad bytes)")


class DeleteResponse(BaseModel):
    deleted: str
    chunks_removed: int
    stats: dict[str, int]
    persisted: bool
