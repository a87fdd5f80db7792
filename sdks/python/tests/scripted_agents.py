"""OpenAI Agents SDK models, scripted: they reply with tool calls and texts given in advance.

The SDK's tests use them, and so does the handbook's OpenAI Agents SDK page
(`docs/src/agents/openai-agents.md`), whose sample programs run in the suite with
`openai_agents_page_model()` in place of the model the page names; the handbook's test puts this
folder on `PYTHONPATH` for that.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from agents.items import ModelResponse, TResponseInputItem, TResponseStreamEvent
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)


class ScriptedModel(Model):
    """An Agents SDK model replying with the scripted outputs in turn: tool calls first, then a
    final text."""

    def __init__(self, turns: list[list[Any]]) -> None:
        self.turns = turns
        self.inputs: list[Any] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append(input)
        output = self.turns.pop(0)
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


def call(name: str, call_id: str, **arguments: Any) -> ResponseFunctionToolCall:
    """A function call in an Agents SDK model's output."""
    return ResponseFunctionToolCall(
        type="function_call",
        name=name,
        call_id=call_id,
        arguments=json.dumps(arguments),
        id=f"fc_{call_id}",
        status="completed",
    )


def text(words: str) -> ResponseOutputMessage:
    """A final text in an Agents SDK model's output."""
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=words, annotations=[])],
    )


class _MailerModel(Model):
    """The OpenAI Agents page's model, without a memory of its own (the page restores a run in
    another process): until a tool result is in its input it asks to e-mail Ada the report, with
    a fresh call id as a real model's; then it says what the tool answered."""

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        results = [
            str(item.get("output"))
            for item in (input if isinstance(input, list) else [])
            if isinstance(item, dict) and item.get("type") == "function_call_output"
        ]
        if results:
            output: list[Any] = [text(f"Done: {results[-1]}")]
        else:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
            output = [call("send_email", call_id, to="ada@example.com", subject="The report")]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("the scripted model does not stream")


def openai_agents_page_model() -> Model:
    """The OpenAI Agents page's model (see `_MailerModel`)."""
    return _MailerModel()
