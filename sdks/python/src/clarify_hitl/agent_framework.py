"""Microsoft Agent Framework: answering a run's user input requests through clarify.

A tool made with `@tool(approval_mode="always_require")` does not run when the model calls it: the
run ends with a `function_approval_request` in `response.user_input_requests`, and goes on when
the caller runs the agent again, in the same `AgentSession`, with messages carrying
`request.to_function_approval_response(approved)`. A declaration-only tool (a `FunctionTool`
without a function, such as an `ask_human` tool) ends the run the same way with its
`function_call`, and goes on with a `function_result` for it. `resolve_approvals` turns each
request into one clarify request and returns those messages:

- an approval request becomes an approval question showing the tool's name and arguments. Agent
  Framework binds an approval to the call it recorded in the session and runs that call's
  arguments whatever the response carries, so the arguments are not editable here.
- approved: the response approves the call, and the framework runs the tool.
- denied, changes requested, or not answered (skipped, expired, cancelled): the response rejects
  the call, so nothing runs unapproved. The framework tells the model only
  `Error: Tool call invocation was rejected by user.`, so a user message after the responses
  carries the reason: the person's (`Changes requested: <reason>` when they asked for changes),
  or the outcome's status and note.
- a declaration-only call whose arguments are a clarify question (the `ask_human` input:
  `{"questions": [...]}`, or `{"question": ...}`) is asked as they are, and answered with a
  `function_result` holding the outcome JSON, as the `ask_human` MCP tool returns it.

Each request's idempotency key is made of the framework's occurrence id of the call (unique to
the run, kept in the session and in a saved response), the model's call id and a digest of the
call, so resolving the same response again, in another process after a restart, finds the same
requests instead of asking twice. `agent` defaults to the name of the agent that made the call.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from agent_framework import Content, Message

from ._client import AsyncClient, Client
from ._protocol import seconds
from ._types import Outcome

__all__ = ["UnsupportedRequestError", "aresolve_approvals", "resolve_approvals"]


class UnsupportedRequestError(ValueError):
    """A user input request this module cannot turn into a clarify request."""


@dataclass(frozen=True)
class _Pending:
    """One user input request of a response, and the clarify request that asks about it."""

    request: Content
    call: Content
    body: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.call.name or "tool")

    @property
    def is_approval(self) -> bool:
        return bool(self.request.type == "function_approval_request")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _arguments(call: Content) -> dict[str, Any]:
    parsed = call.parse_arguments()
    return dict(parsed) if parsed else {}


def _is_question(arguments: Mapping[str, Any]) -> bool:
    return isinstance(arguments.get("questions"), list) or isinstance(
        arguments.get("question"), str
    )


def _plan(request: Content, author: str | None, fields: Mapping[str, Any]) -> _Pending:
    if request.type == "function_approval_request" and request.function_call is not None:
        call = request.function_call
    elif request.type == "function_call":
        call = request
    else:
        raise UnsupportedRequestError(
            f"a {request.type} request cannot be asked through clarify; only function approval "
            "requests and declaration-only tool calls can"
        )
    name = str(call.name or "tool")
    arguments = _arguments(call)
    base: dict[str, Any] = {"agent": author or "agent-framework"}
    if call.call_id:
        base["tool_call_id"] = call.call_id
    base.update({k: v for k, v in fields.items() if v is not None})
    occurrence = request.id or call.id or ""
    if "idempotency_key" not in fields:
        base["idempotency_key"] = (
            f"agent-framework:{occurrence}:{call.call_id or ''}:{_digest([name, arguments])}"
        )
    if request.type == "function_call":
        if not _is_question(arguments):
            raise UnsupportedRequestError(
                f"the declaration-only tool {name} was called with arguments that are not a "
                "clarify question; give it the ask_human input ({'questions': [...]})"
            )
        return _Pending(request, call, {**arguments, **base})
    question = {
        "kind": "approval",
        "header": name[:32],
        "text": f"Allow the agent to run {name}?",
        "action": {"name": name, "arguments": arguments},
        "allow_edit": False,
    }
    context = {"tool_call_id": call.call_id, "approval_request_id": request.id}
    return _Pending(request, call, {"questions": [question], "context": context, **base})


def _plans(response: Any, fields: Mapping[str, Any]) -> list[_Pending]:
    plans = []
    for message in getattr(response, "messages", None) or []:
        for content in message.contents:
            if isinstance(content, Content) and content.user_input_request:
                plans.append(_plan(content, message.author_name, fields))
    return plans


def _refusal(pending: _Pending, outcome: Outcome) -> str:
    """What the model reads about a call that was not approved."""
    name = pending.name
    if not outcome.answered:
        note = outcome.note or ""
        return f"{name} was not run: nobody approved it ({outcome.status}). {note}".strip()
    return f"{name} was not run: {outcome.refusal or 'the person denied it.'}"


def _messages(plans: list[_Pending], outcomes: list[Outcome]) -> list[Message]:
    results: list[Content] = []
    responses: list[Content] = []
    refusals: list[str] = []
    for pending, outcome in zip(plans, outcomes, strict=True):
        if not pending.is_approval:
            results.append(
                Content.from_function_result(
                    call_id=str(pending.call.call_id),
                    id=pending.call.id,
                    result=json.dumps(outcome.raw),
                )
            )
            continue
        approved = outcome.answered and outcome.decision == "approve"
        responses.append(pending.request.to_function_approval_response(approved=approved))
        if not approved:
            refusals.append(_refusal(pending, outcome))
    messages = []
    if results:
        messages.append(Message("tool", results))
    if responses:
        messages.append(Message("user", responses))
    if refusals:
        messages.append(Message("user", ["\n".join(refusals)]))
    return messages


def resolve_approvals(
    client: Client,
    response: Any,
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> list[Message] | None:
    """Asks about every user input request of an `AgentResponse` (or `ChatResponse`) and returns
    the messages that answer them, for `agent.run(messages, session=session)`; an empty list when
    there are none, `None` when some request is still pending after `timeout` (default: wait
    until all are resolved; `0`: only look). Extra `fields` (`responders`, `tags`,
    `timeout_seconds`, `session`, ...) go into every request."""
    plans = _plans(response, fields)
    records = [client.create(p.body) for p in plans]
    limit = seconds(timeout)
    outcomes = []
    for record in records:
        done = record if record.resolved else client.wait(record.id, limit)
        if done.outcome is None:
            return None
        outcomes.append(done.outcome)
    return _messages(plans, outcomes)


async def aresolve_approvals(
    client: AsyncClient,
    response: Any,
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> list[Message] | None:
    """`resolve_approvals` with an `AsyncClient`."""
    plans = _plans(response, fields)
    records = [await client.create(p.body) for p in plans]
    limit = seconds(timeout)
    outcomes = []
    for record in records:
        done = record if record.resolved else await client.wait(record.id, limit)
        if done.outcome is None:
            return None
        outcomes.append(done.outcome)
    return _messages(plans, outcomes)
