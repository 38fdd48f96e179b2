"""The OpenAI chat-completions wire format, both ways, for :class:`~.http_llm.HTTPCompletionLLM`.

* LlamaIndex ``ChatMessage`` -> the ``messages`` list of a request (roles, tool calls, tool results);
* a ``choices[0].message`` answer -> an assistant ``ChatMessage`` whose tool calls are kept, in
  OpenAI's own form, under ``additional_kwargs["tool_calls"]`` (where LlamaIndex's OpenAI client
  keeps them too, so agents and ``get_tool_calls_from_response`` read them the same way);
* streamed ``choices[0].delta`` pieces -> the growing message (:class:`StreamAccumulator`): text is
  appended, tool-call pieces are joined by their ``index``.

Nothing here does I/O; malformed answers raise :class:`~.transport.ResponseFormatError`.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from llama_index.core.base.llms.types import ChatMessage, MessageRole, ToolCallBlock
from llama_index.core.llms.llm import ToolSelection

from .json_repair import parse_json_lenient
from .transport import ResponseFormatError, snippet_of

__all__ = ["StreamAccumulator", "answer_message", "first_choice", "message_dicts", "tool_selections"]


def message_dicts(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """The request's ``messages``: text content, plus tool calls (assistant) or the call id (tool)."""
    out = []
    for message in messages:
        item: dict[str, Any] = {"role": message.role.value, "content": message.content or ""}
        calls = _tool_calls_of(message)
        if calls:
            item["tool_calls"] = calls
            item["content"] = message.content or None  # OpenAI: an assistant turn with only tool calls
        if message.role == MessageRole.TOOL:
            call_id = message.additional_kwargs.get("tool_call_id")
            if call_id:
                item["tool_call_id"] = call_id
        name = message.additional_kwargs.get("name")
        if name and message.role in (MessageRole.TOOL, MessageRole.USER):
            item["name"] = name
        out.append(item)
    return out


def _tool_calls_of(message: ChatMessage) -> list[dict[str, Any]]:
    """A message's tool calls in OpenAI form, whether kept in additional_kwargs or as ToolCallBlocks."""
    calls = message.additional_kwargs.get("tool_calls")
    if calls:
        return [c if isinstance(c, dict) else c.model_dump() for c in calls]
    return [
        {"id": block.tool_call_id or f"call_{i}", "type": "function",
         "function": {"name": block.tool_name, "arguments": block.tool_kwargs if isinstance(block.tool_kwargs, str)
                      else json.dumps(block.tool_kwargs)}}
        for i, block in enumerate(message.blocks) if isinstance(block, ToolCallBlock)
    ]


def first_choice(data: Any) -> dict[str, Any]:
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ResponseFormatError(f"the answer has no 'choices': {snippet_of(repr(data))!r}")
    return choices[0]


def answer_message(data: Any) -> ChatMessage:
    """The assistant message of a (non-streamed) chat-completions answer."""
    choice = first_choice(data)
    message = choice.get("message") or choice.get("delta")
    if not isinstance(message, dict):
        text = choice.get("text")  # a /completions-style answer from a lenient server
        if not isinstance(text, str):
            raise ResponseFormatError(f"the answer's first choice has no message: {snippet_of(repr(choice))!r}")
        return ChatMessage(role=MessageRole.ASSISTANT, content=text)
    content = message.get("content")
    calls = message.get("tool_calls") or []
    if content is None and ("content" in message or calls):
        content = ""  # an explicit null content (a refusal, or only tool calls) is an empty answer
    if not isinstance(content, str) or not isinstance(calls, list):
        raise ResponseFormatError(f"the answer's first choice has no text: {snippet_of(repr(choice))!r}")
    kwargs = {"tool_calls": [_normalised_call(c, i) for i, c in enumerate(calls)]} if calls else {}
    return ChatMessage(role=MessageRole.ASSISTANT, content=content, additional_kwargs=kwargs)


def _normalised_call(call: Any, index: int) -> dict[str, Any]:
    if not isinstance(call, dict) or not isinstance(call.get("function"), dict):
        raise ResponseFormatError(f"a tool call without a function: {snippet_of(repr(call))!r}")
    function = call["function"]
    arguments = function.get("arguments")
    return {"id": call.get("id") or f"call_{index}", "type": "function",
            "function": {"name": str(function.get("name") or ""),
                         "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {})}}


def tool_selections(message: ChatMessage) -> list[ToolSelection]:
    """The tool calls of an assistant message as LlamaIndex ``ToolSelection``\\ s.

    Arguments are JSON text on the wire; small models sometimes send almost-JSON, which the lenient
    parser repairs. Arguments that are no JSON object at all become ``{}`` (the tool then reports
    what is missing, which an agent can act on; an exception here would end the agent's run).
    """
    selections = []
    for call in _tool_calls_of(message):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                arguments = parse_json_lenient(arguments).value
        selections.append(ToolSelection(tool_id=str(call.get("id")), tool_name=str(function.get("name") or ""),
                                        tool_kwargs=arguments if isinstance(arguments, dict) else {}))
    return selections


class StreamAccumulator:
    """Folds streamed ``delta``\\ s into the message so far: text appended, tool calls joined by index."""

    def __init__(self) -> None:
        self.text = ""
        self._calls: dict[int, dict[str, Any]] = {}

    def add(self, event: Any) -> str:
        """Take one streamed event; return its new text (``""`` for a usage-only or tool-call event)."""
        choices = event.get("choices") if isinstance(event, dict) else None
        if choices == []:
            return ""  # the usage-only last event of stream_options.include_usage
        choice = first_choice(event)
        delta = choice.get("delta") or choice.get("message") or {}
        if not isinstance(delta, dict):
            raise ResponseFormatError(f"a streamed event has no delta: {snippet_of(repr(choice))!r}")
        piece = delta.get("content") if "content" in delta else choice.get("text")
        piece = piece if isinstance(piece, str) else ""
        if "message" in choice and "delta" not in choice:
            piece = piece[len(self.text):] if piece.startswith(self.text) else piece  # a whole answer
        self.text += piece
        for position, call in enumerate(delta.get("tool_calls") or []):
            self._add_call(call, position)
        return piece

    def _add_call(self, call: Any, position: int) -> None:
        if not isinstance(call, dict):
            raise ResponseFormatError(f"a streamed tool call is not an object: {snippet_of(repr(call))!r}")
        index = call.get("index", position)
        slot = self._calls.setdefault(index, {"id": None, "name": "", "arguments": ""})
        slot["id"] = call.get("id") or slot["id"]
        function = call.get("function") or {}
        slot["name"] += function.get("name") or ""
        arguments = function.get("arguments")
        slot["arguments"] += arguments if isinstance(arguments, str) else (json.dumps(arguments) if arguments else "")

    def message(self) -> ChatMessage:
        kwargs = {}
        if self._calls:
            kwargs["tool_calls"] = [
                {"id": slot["id"] or f"call_{index}", "type": "function",
                 "function": {"name": slot["name"], "arguments": slot["arguments"]}}
                for index, slot in sorted(self._calls.items())
            ]
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.text, additional_kwargs=kwargs)
