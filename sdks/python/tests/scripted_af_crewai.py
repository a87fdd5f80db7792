"""A scripted OpenAI Chat Completions server on 127.0.0.1, for the Agent Framework and CrewAI tests.

Both frameworks reach their model through a configurable base URL (Agent Framework's
`OpenAIChatCompletionClient(base_url=...)`, CrewAI's `LLM(base_url=...)`), so the tests point them
here and the real client code runs: the framework sends `POST /chat/completions` (plain JSON or
`stream: true` server-sent events) and gets back the next turn of a script, tool calls or a text.

Which turn it is comes from the conversation sent (how many assistant messages it already holds),
so a request sent again gets the same reply. Every request body is recorded, so a test reads what
the framework sent back to the model: the tool results, a denial's reason, an answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from conftest import ClarifyServer, Person, page_programs
from scripted_http import ScriptedServer

from clarify_hitl import Client


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a model turn; `id` is made unique per server when not given, as a real
    model's call ids are."""

    name: str
    args: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True)
class Turn:
    """One reply of the model: tool calls, or else a text."""

    calls: list[ToolCall] = field(default_factory=list)
    text: str = ""


def calls(*made: ToolCall) -> Turn:
    return Turn(calls=list(made))


def say(text: str) -> Turn:
    return Turn(text=text)


Script = list[Turn] | Callable[[list[dict[str, Any]]], Turn]
"""The turns in order, or a function choosing the reply from the conversation's messages."""


class ChatServer(ScriptedServer):
    """`POST /chat/completions` (also under `/v1`) following a script; a context manager. Its
    replies may stream (server-sent events), so it brings its own handler."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self._prefix = uuid.uuid4().hex[:12]
        super().__init__()

    @property
    def url(self) -> str:
        """The base URL to give the framework (the OpenAI SDK's `base_url`)."""
        return f"{self.root}/v1"

    def tool_results(self, index: int = -1) -> list[str]:
        """The tool results (`role: tool` contents) in the request at `index`, in order."""
        return [
            _text(m.get("content")) for m in self.requests[index]["messages"] if m["role"] == "tool"
        ]

    def last_text(self, index: int = -1) -> str:
        """Everything the request at `index` carried after the model's last turn, as text: the
        tool results and any user message sent with them."""
        messages = self.requests[index]["messages"]
        tail: list[str] = []
        for message in reversed(messages):
            if message["role"] == "assistant":
                break
            tail.append(_text(message.get("content")))
        return "\n".join(reversed(tail))

    def _turn(self, messages: list[dict[str, Any]]) -> Turn:
        if callable(self.script):
            return self.script(messages)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        return self.script[done] if done < len(self.script) else say("Done.")

    def _reply(self, body: dict[str, Any]) -> tuple[str, bytes]:
        messages = body.get("messages") or []
        turn = self._turn(messages)
        done = sum(1 for m in messages if m.get("role") == "assistant")
        tool_calls = [
            {
                "id": c.id or f"call_{self._prefix}_{done}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(c.args)},
            }
            for i, c in enumerate(turn.calls)
        ]
        model = str(body.get("model") or "scripted")
        created = 1_800_000_000
        finish = "tool_calls" if tool_calls else "stop"
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        if not body.get("stream"):
            message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
            if tool_calls:
                message["tool_calls"] = tool_calls
            reply = {
                "id": f"chatcmpl-{self._prefix}-{len(self.requests)}",
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
            return "application/json", json.dumps(reply).encode()
        base = {
            "id": f"chatcmpl-{self._prefix}-{len(self.requests)}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
        }
        chunks: list[dict[str, Any]] = []
        delta: dict[str, Any] = {"role": "assistant", "content": turn.text or ""}
        if tool_calls:
            delta["tool_calls"] = [{"index": i, **c} for i, c in enumerate(tool_calls)]
        chunks.append({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": usage})
        events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        return "text/event-stream", events.encode()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; without this the second waits for the
            # client's delayed acknowledgement (40 ms a reply).
            disable_nagle_algorithm = True

            def log_message(self, *_: Any) -> None:
                pass

            def _send(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, "application/json", b'{"error": {"message": "not found"}}')
                    return
                with server._lock:
                    server.requests.append(body)
                    content_type, payload = server._reply(body)
                self._send(200, content_type, payload)

        return Handler


def _text(content: Any) -> str:
    """A message's content as text (a string, or a list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


# The e-mail the handbook's Agent Framework and CrewAI programs ask to send.
ADA = {"to": "ada@example.com", "subject": "The report"}


def run_mail_program(
    page: str,
    server: ClarifyServer,
    agent_key: str,
    alice: Client,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Runs the first Python program of the handbook page `page` as a reader would, against a
    scripted model that asks to mail Ada and a person who approves: it prints the model's last
    word, the person saw the arguments, and the tool ran."""
    (program, *_) = page_programs(page)
    with (
        ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed Ada.")]) as model,
        Person(alice, "chat-42", lambda r: {"decision": "approve"}) as p,
    ):
        monkeypatch.setenv("CLARIFY_URL", server.url)
        monkeypatch.setenv("CLARIFY_TOKEN", agent_key)
        monkeypatch.setenv("OPENAI_BASE_URL", model.url)
        monkeypatch.setenv("OPENAI_API_KEY", "unused")
        exec(compile(program, page, "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.strip().endswith("Mailed Ada.")
    assert [r.questions[0]["action"]["arguments"] for r in p.answered] == [ADA]
    assert model.tool_results() == ["sent 'The report' to ada@example.com"]
