"""A scripted OpenAI Chat Completions server on 127.0.0.1, the model of the Pydantic AI tests.

Pydantic AI reaches it through its own OpenAI provider's `base_url`, as it would reach any
OpenAI-compatible server. The script is the tool calls the model makes, one list per turn; once
they are used up the model answers with a text quoting the last tool result it was sent. Which
turn it is comes from the conversation (how many assistant messages it carries), so a retried
request gets the same answer. Every request body is kept, so a test reads what the agent sent
back: the tool results, with a denial's reason or an edited call's output.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from scripted_http import ScriptedServer


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model makes."""

    id: str
    name: str
    args: dict[str, Any]


class ChatCompletionsServer(ScriptedServer):
    """`POST /v1/chat/completions` following `turns`; use as a context manager."""

    def __init__(self, turns: list[list[ToolCall]]) -> None:
        self.turns = turns
        super().__init__()

    @property
    def base_url(self) -> str:
        return f"{self.root}/v1"

    def accepts(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def tool_results(self, request: int = -1) -> dict[str, str]:
        """The tool results in one request (the last by default), by tool call id."""
        return {
            m["tool_call_id"]: str(m.get("content"))
            for m in self.requests[request]["messages"]
            if m.get("role") == "tool"
        }

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages", [])
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if turn < len(self.turns):
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.args)},
                }
                for c in self.turns[turn]
            ]
            finish = "tool_calls"
        else:
            results = [str(m.get("content")) for m in messages if m.get("role") == "tool"]
            message["content"] = f"Done: {results[-1] if results else 'nothing to report'}"
            finish = "stop"
        return {
            "id": f"chatcmpl-{turn}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
