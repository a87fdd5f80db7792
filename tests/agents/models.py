"""Scripted model servers: the model APIs the coding agents speak, served on 127.0.0.1.

Each server plays one model API (Anthropic Messages, OpenAI Responses, Gemini) and follows a
script: the tool calls the model makes, one per turn, then a closing text. Which turn it is comes
from the conversation the agent sends (how many tool results it carries), so a retried request
gets the same answer. Requests that are not the agent's main loop (titles, routing, next-speaker
checks, quota probes: they carry no tools) get plain text, or a JSON object where the request asks
for one. Every request is recorded, so a test reads what the agent sent back: the tool results,
with a denial's reason or the output of an edited call.

The formats follow the public API references; the agents accept them as their real providers'.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

SIDE_TEXT = "Scripted"
FINAL_TEXT = "Done."


@dataclass
class Call:
    """One tool call the model makes: the tool's name and its arguments."""

    name: str
    args: dict[str, Any]


@dataclass
class Recorded:
    path: str
    body: dict[str, Any]


@dataclass
class ToolResult:
    """A tool result the agent sent back to the model, as text."""

    call_id: str
    text: str
    is_error: bool = False


class ScriptedModel:
    """A model API on 127.0.0.1 following `script`; use as a context manager."""

    def __init__(self, script: list[Call], final_text: str = FINAL_TEXT) -> None:
        self.script = script
        self.final_text = final_text
        self.requests: list[Recorded] = []
        self.unknown: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ScriptedModel:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    # What each API defines.

    def respond(self, path: str, query: str, body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        """The reply to a POST (status, content type, body); `None` for a path it does not serve."""
        raise NotImplementedError

    def tool_results(self) -> list[ToolResult]:
        """Every tool result the agent sent, in order, each once."""
        raise NotImplementedError

    # Shared.

    def main_requests(self) -> list[Recorded]:
        """The requests of the agent's main loop (the ones that offer tools)."""
        return [r for r in self.requests if self.is_main(r.body)]

    def is_main(self, body: dict[str, Any]) -> bool:
        return bool(body.get("tools"))

    def tool_names(self) -> list[str]:
        """The tools the agent offered the model in its first main request."""
        raise NotImplementedError

    def result_text(self, index: int) -> str:
        results = self.tool_results()
        assert len(results) > index, f"the agent sent {len(results)} tool results: {results}"
        return results[index].text

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def _reply(self, status: int, content_type: str, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:
                with model._lock:
                    model.unknown.append(f"GET {self.path}")
                self._reply(404, "application/json", b'{"error": {"message": "not found"}}')

            def do_HEAD(self) -> None:
                self._reply(200, "text/plain", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                parts = urlsplit(self.path)
                with model._lock:
                    model.requests.append(Recorded(self.path, body))
                    reply = model.respond(parts.path, parts.query, body)
                    if reply is None:
                        model.unknown.append(f"POST {self.path}")
                if reply is None:
                    self._reply(404, "application/json", b'{"error": {"message": "not found"}}')
                else:
                    self._reply(*reply)

        return Handler

    def _step(self, done: int) -> Call | None:
        return self.script[done] if done < len(self.script) else None


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    """Server-sent events: `event:` lines where named, each event's JSON as `data:`."""
    out = []
    for name, data in events:
        if name:
            out.append(f"event: {name}\n")
        out.append(f"data: {json.dumps(data)}\n\n")
    return "".join(out).encode()


class AnthropicModel(ScriptedModel):
    """The Anthropic Messages API (`POST /v1/messages`), streaming or not."""

    def respond(self, path: str, query: str, body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if path.endswith("/count_tokens"):
            return 200, "application/json", b'{"input_tokens": 10}'
        if not path.endswith("/v1/messages"):
            return None
        model = body.get("model", "claude")
        if self.is_main(body):
            done = sum(1 for _ in self._results_in(body))
            call = self._step(done)
        else:
            done, call = 0, None
        if call is None:
            block: dict[str, Any] = {
                "type": "text",
                "text": self.final_text if self.is_main(body) else SIDE_TEXT,
            }
            stop = "end_turn"
        else:
            block = {
                "type": "tool_use",
                "id": f"toolu_scripted_{done:02d}",
                "name": call.name,
                "input": call.args,
            }
            stop = "tool_use"
        message = {
            "id": f"msg_scripted_{len(self.requests):03d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [block],
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            return 200, "application/json", json.dumps(message).encode()
        start = {**message, "content": [], "stop_reason": None}
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            opened = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        return (
            200,
            "text/event-stream",
            sse(
                [
                    ("message_start", {"type": "message_start", "message": start}),
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": 0, "content_block": opened},
                    ),
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                    ),
                    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
                    (
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 5},
                        },
                    ),
                    ("message_stop", {"type": "message_stop"}),
                ]
            ),
        )

    @staticmethod
    def _results_in(body: dict[str, Any]) -> list[ToolResult]:
        found = []
        for message in body.get("messages", []):
            content = message.get("content")
            if not isinstance(content, list):
                continue
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    inner = block.get("content")
                    if isinstance(inner, list):
                        text = "\n".join(
                            str(b.get("text", "")) for b in inner if isinstance(b, dict)
                        )
                    else:
                        text = str(inner or "")
                    found.append(
                        ToolResult(str(block.get("tool_use_id")), text, bool(block.get("is_error")))
                    )
        return found

    def tool_results(self) -> list[ToolResult]:
        return _unique(r for req in self.main_requests() for r in self._results_in(req.body))

    def tool_names(self) -> list[str]:
        main = self.main_requests()
        return [t.get("name", "") for t in main[0].body.get("tools", [])] if main else []


class OpenAIModel(ScriptedModel):
    """The OpenAI Responses API (`POST /v1/responses`), streaming.

    A call to a tool the agent declares as `custom` (free-form text, like Codex's `apply_patch`)
    is sent as a `custom_tool_call` whose input is the call's `input` argument.
    """

    OUTPUTS = ("function_call_output", "custom_tool_call_output")

    def is_main(self, body: dict[str, Any]) -> bool:
        # Codex names each request's thread in its metadata; its title thread offers tools too.
        metadata = (body.get("client_metadata") or {}).get("x-codex-turn-metadata") or "{}"
        try:
            thread = json.loads(metadata).get("thread_source")
        except (ValueError, AttributeError):
            thread = None
        return bool(body.get("tools")) and thread != "thread_title"

    def respond(self, path: str, query: str, body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if not path.endswith("/responses"):
            return None
        done = sum(1 for _ in self._results_in(body)) if self.is_main(body) else 0
        call = self._step(done) if self.is_main(body) else None
        response_id = f"resp_scripted_{len(self.requests):03d}"
        if call is None:
            text = self.final_text if self.is_main(body) else SIDE_TEXT
            item: dict[str, Any] = {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{response_id}",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        elif self._is_custom(body, call.name):
            item = {
                "type": "custom_tool_call",
                "id": f"ctc_{response_id}",
                "status": "completed",
                "call_id": f"call_scripted_{done:02d}",
                "name": call.name,
                "input": str(call.args.get("input", "")),
            }
        else:
            item = {
                "type": "function_call",
                "id": f"fc_{response_id}",
                "status": "completed",
                "call_id": f"call_scripted_{done:02d}",
                "name": call.name,
                "arguments": json.dumps(call.args),
            }
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        response = {
            "id": response_id,
            "object": "response",
            "status": "in_progress",
            "model": body.get("model"),
            "output": [],
        }
        return (
            200,
            "text/event-stream",
            sse(
                [
                    ("response.created", {"type": "response.created", "response": response}),
                    (
                        "response.output_item.added",
                        {"type": "response.output_item.added", "output_index": 0, "item": item},
                    ),
                    (
                        "response.output_item.done",
                        {"type": "response.output_item.done", "output_index": 0, "item": item},
                    ),
                    (
                        "response.completed",
                        {
                            "type": "response.completed",
                            "response": {
                                **response,
                                "status": "completed",
                                "output": [item],
                                "usage": usage,
                            },
                        },
                    ),
                ]
            ),
        )

    @staticmethod
    def _is_custom(body: dict[str, Any], name: str) -> bool:
        return any(
            t.get("type") == "custom" and t.get("name") == name for t in body.get("tools", [])
        )

    @classmethod
    def _results_in(cls, body: dict[str, Any]) -> list[ToolResult]:
        found = []
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") in cls.OUTPUTS:
                output = item.get("output")
                if isinstance(output, list):
                    text = "\n".join(str(o.get("text", "")) for o in output if isinstance(o, dict))
                elif isinstance(output, dict):
                    text = str(output.get("content", json.dumps(output)))
                else:
                    text = str(output or "")
                found.append(ToolResult(str(item.get("call_id")), text))
        return found

    def tool_results(self) -> list[ToolResult]:
        return _unique(r for req in self.main_requests() for r in self._results_in(req.body))

    def tool_names(self) -> list[str]:
        main = self.main_requests()
        return (
            [t.get("name", t.get("type", "")) for t in main[0].body.get("tools", [])]
            if main
            else []
        )


class GeminiModel(ScriptedModel):
    """The Gemini API: `models/{model}:streamGenerateContent?alt=sse` and `:generateContent`.

    A request asking for JSON (`responseJsonSchema` or `responseSchema`: Gemini CLI's
    next-speaker check and model routing) gets an object filled from the schema, choosing
    `user` where the schema offers it, so the agent hands the turn back.
    """

    def is_main(self, body: dict[str, Any]) -> bool:
        return any(
            t.get("functionDeclarations") for t in body.get("tools", []) if isinstance(t, dict)
        )

    def respond(self, path: str, query: str, body: dict[str, Any]) -> tuple[int, str, bytes] | None:
        if path.endswith(":countTokens"):
            return 200, "application/json", b'{"totalTokens": 10}'
        streaming = path.endswith(":streamGenerateContent")
        if not streaming and not path.endswith(":generateContent"):
            return None
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if self.is_main(body):
            done = len(self._results_in(body))
            call = self._step(done)
            if call is None:
                part: dict[str, Any] = {"text": self.final_text}
            else:
                part = {
                    "functionCall": {
                        "id": f"call_scripted_{done:02d}",
                        "name": call.name,
                        "args": call.args,
                    }
                }
        elif schema:
            part = {"text": json.dumps(_fill(schema))}
        else:
            part = {"text": SIDE_TEXT}
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 10,
                "candidatesTokenCount": 5,
                "totalTokenCount": 15,
            },
            "modelVersion": path.rsplit("/", 1)[-1].split(":")[0],
        }
        if streaming:
            return 200, "text/event-stream", sse([(None, chunk)])
        return 200, "application/json", json.dumps(chunk).encode()

    @staticmethod
    def _results_in(body: dict[str, Any]) -> list[ToolResult]:
        found = []
        for content in body.get("contents", []):
            for part in content.get("parts", []) if isinstance(content, dict) else []:
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(response, dict):
                    payload = response.get("response") or {}
                    is_error = isinstance(payload, dict) and "error" in payload
                    text = (
                        payload.get("error" if is_error else "output", payload)
                        if isinstance(payload, dict)
                        else payload
                    )
                    found.append(
                        ToolResult(
                            str(response.get("id", response.get("name"))),
                            text if isinstance(text, str) else json.dumps(text),
                            is_error,
                        )
                    )
        return found

    def tool_results(self) -> list[ToolResult]:
        return _unique(r for req in self.main_requests() for r in self._results_in(req.body))

    def tool_names(self) -> list[str]:
        main = self.main_requests()
        if not main:
            return []
        return [
            d.get("name", "")
            for t in main[0].body.get("tools", [])
            for d in t.get("functionDeclarations", [])
        ]


def _fill(schema: dict[str, Any]) -> Any:
    """A value matching a (simple) JSON schema, preferring `user` among enumerated strings."""
    kind = schema.get("type")
    kind = kind.lower() if isinstance(kind, str) else kind
    if "enum" in schema:
        values = schema["enum"]
        return "user" if "user" in values else values[0]
    if kind == "object":
        return {name: _fill(prop) for name, prop in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return SIDE_TEXT


def _unique(results: Any) -> list[ToolResult]:
    seen: dict[str, ToolResult] = {}
    for result in results:
        seen.setdefault(result.call_id, result)
    return list(seen.values())
