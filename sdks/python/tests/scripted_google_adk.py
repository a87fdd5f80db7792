"""A scripted Gemini API server on 127.0.0.1, the model of the Google ADK tests.

ADK reaches it through its own `Gemini(base_url=...)` option, which google-genai uses for every
request, so the agent speaks the Gemini API (`models/{model}:generateContent`) as it would to
Google. The script is the function calls the model makes, one list per turn; once they are used
up the model answers with a text quoting the last function response it was sent. Which turn it is
comes from the conversation (how many model turns it carries), so a retried request gets the same
answer. Every request body is kept, so a test reads what the agent sent back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scripted_http import ScriptedServer


@dataclass(frozen=True)
class FunctionCall:
    """One function call the model makes (ADK gives it an id, as it does for Gemini's)."""

    name: str
    args: dict[str, Any]


class GeminiServer(ScriptedServer):
    """`POST /v1beta/models/{model}:generateContent` following `turns`; a context manager."""

    def __init__(self, turns: list[list[FunctionCall]]) -> None:
        self.turns = turns
        super().__init__()

    @property
    def base_url(self) -> str:
        return self.root

    def accepts(self, path: str) -> bool:
        return path.split("?")[0].endswith(":generateContent")

    def function_responses(self, request: int = -1) -> dict[str, Any]:
        """The function responses in one request (the last by default), by function name."""
        return {
            part["functionResponse"]["name"]: part["functionResponse"].get("response")
            for content in self.requests[request].get("contents", [])
            for part in content.get("parts", [])
            if "functionResponse" in part
        }

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        contents = body.get("contents", [])
        turn = sum(1 for c in contents if c.get("role") == "model")
        if turn < len(self.turns):
            parts: list[dict[str, Any]] = [
                {"functionCall": {"name": c.name, "args": c.args}} for c in self.turns[turn]
            ]
        else:
            results = [
                p["functionResponse"].get("response")
                for c in contents
                for p in c.get("parts", [])
                if "functionResponse" in p
            ]
            last = json.dumps(results[-1], sort_keys=True) if results else "nothing to report"
            parts = [{"text": f"Done: {last}"}]
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": "scripted",
        }
