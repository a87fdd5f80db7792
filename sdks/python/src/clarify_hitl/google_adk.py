"""Google ADK: tool confirmations answered through clarify.

An ADK tool asks for confirmation in one of two ways: `FunctionTool(func,
require_confirmation=True)` (a yes or no on the call the model made), or the tool itself calling
`tool_context.request_confirmation(hint=..., payload=...)` (a yes or no and, in `payload`, data
the person may change, such as the number of days to approve). Either way the run pauses with an
`adk_request_confirmation` function call among its events, and goes on when the next message
carries a function response with a `ToolConfirmation`. This module turns each pending
confirmation into one clarify approval and each outcome into that response:

- The approval shows the tool's name and, for a plain confirmation, the call's arguments (not
  editable: ADK runs the call the model made); for a confirmation with a payload, the payload,
  editable, with the call's arguments in the text.
- Approved: `ToolConfirmation(confirmed=True, payload=...)`, the payload as the person edited it
  (or as the tool gave it).
- Denied: `ToolConfirmation(confirmed=False, hint=<their reason>)`
  (`Changes requested: <reason>` when they asked for changes). A tool that asks with
  `request_confirmation` reads the reason from `tool_context.tool_confirmation.hint` and can tell
  the model; ADK's own `require_confirmation=True` answers the model "This tool call is
  rejected." whatever the reason.
- A request that was not answered (skipped, expired, cancelled) is a denial carrying the outcome's
  note, so nothing runs unconfirmed.

`resolve_confirmations` (and `aresolve_confirmations`) returns the `google.genai.types.Content` to
send as the runner's next `new_message`; `run_with_humans` runs to the end, asking for each
confirmation on the way. Each request's idempotency key is made of the confirmation call's id
(ADK makes it unique and keeps it in the session) and a digest of the call, so resolving the same
session events again (after a crash, from another process) finds the same requests instead of
asking twice. `agent` defaults to `google-adk`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.tools.tool_confirmation import ToolConfirmation
from google.genai import types

from ._client import AsyncClient, Client
from ._protocol import seconds
from ._types import Outcome

__all__ = [
    "aresolve_confirmations",
    "arun_with_humans",
    "resolve_confirmations",
    "run_with_humans",
]

REQUEST_CONFIRMATION = "adk_request_confirmation"
"""The function call ADK pauses a run with (its `REQUEST_CONFIRMATION_FUNCTION_CALL_NAME`)."""

# The hint ADK gives when a tool asks for confirmation without one of its own: words for the
# client developer, which the person is better shown as a question.
_ADK_DEFAULT_HINT = "Please approve or reject the tool call"


@dataclass(frozen=True)
class _Confirmation:
    """One pending confirmation and the request that asks about it."""

    call_id: str
    tool: str
    payload: Any
    wrapped: bool
    body: dict[str, Any]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _pending(events: Iterable[Event]) -> list[tuple[Event, types.FunctionCall]]:
    """The `adk_request_confirmation` calls among `events` that no function response answers."""
    asked: list[tuple[Event, types.FunctionCall]] = []
    answered: set[str] = set()
    for event in events:
        for call in event.get_function_calls():
            if call.name == REQUEST_CONFIRMATION and call.id:
                asked.append((event, call))
        for response in event.get_function_responses():
            if response.name == REQUEST_CONFIRMATION and response.id:
                answered.add(response.id)
    return [(event, call) for event, call in asked if call.id not in answered]


def _confirmation(
    event: Event, call: types.FunctionCall, fields: Mapping[str, Any]
) -> _Confirmation:
    args = call.args or {}
    original = args.get("originalFunctionCall")
    original = original if isinstance(original, Mapping) else {}
    asked = args.get("toolConfirmation")
    asked = asked if isinstance(asked, Mapping) else {}
    tool = str(original.get("name") or "tool")
    arguments = original.get("args")
    arguments = dict(arguments) if isinstance(arguments, Mapping) else {}
    hint = asked.get("hint")
    hint = hint if isinstance(hint, str) and not hint.startswith(_ADK_DEFAULT_HINT) else ""
    payload = asked.get("payload")
    question: dict[str, Any] = {"kind": "approval", "header": tool[:32]}
    wrapped = False
    if payload is None:
        question["text"] = hint or f"Allow the agent to run {tool}?"
        question["action"] = {"name": tool, "arguments": arguments}
        question["allow_edit"] = False
    else:
        wrapped = not isinstance(payload, dict)
        shown = {"payload": payload} if wrapped else payload
        called = f"{tool}({json.dumps(arguments, default=str)})"
        question["text"] = f"{hint or f'Allow the agent to run {tool}?'}\n\nThe call: {called}"
        question["action"] = {"name": tool, "arguments": shown}
        question["allow_edit"] = True
    call_id = str(call.id)
    context: dict[str, Any] = {
        "confirmation_call_id": call_id,
        "invocation_id": event.invocation_id,
    }
    if event.author:
        context["agent_name"] = event.author
    body: dict[str, Any] = {"questions": [question], "agent": "google-adk", "context": context}
    if isinstance(original.get("id"), str):
        body["tool_call_id"] = original["id"]
    body.update({k: v for k, v in fields.items() if v is not None})
    if "idempotency_key" not in fields:
        digest = _digest([tool, arguments, payload])
        body["idempotency_key"] = f"google-adk:{call_id}:{digest}"
    return _Confirmation(call_id, tool, payload, wrapped, body)


def _confirmations(events: Iterable[Event], fields: Mapping[str, Any]) -> list[_Confirmation]:
    return [_confirmation(event, call, fields) for event, call in _pending(events)]


def _tool_confirmation(asked: _Confirmation, outcome: Outcome) -> ToolConfirmation:
    if not outcome.answered:
        note = f"{asked.tool} was not run: nobody approved it ({outcome.status})."
        return ToolConfirmation(confirmed=False, hint=f"{note} {outcome.note or ''}".strip())
    if outcome.decision != "approve":
        reason = outcome.refusal or f"The person denied {asked.tool}."
        return ToolConfirmation(confirmed=False, hint=reason)
    payload = asked.payload
    edited = outcome.edited_arguments
    if payload is not None and edited is not None:
        payload = edited.get("payload") if asked.wrapped else edited
    return ToolConfirmation(confirmed=True, payload=payload)


def _content(done: list[tuple[_Confirmation, Outcome]]) -> types.Content | None:
    if not done:
        return None
    parts = [
        types.Part(
            function_response=types.FunctionResponse(
                name=REQUEST_CONFIRMATION,
                id=asked.call_id,
                response=_tool_confirmation(asked, outcome).model_dump(
                    by_alias=True, exclude_none=True
                ),
            )
        )
        for asked, outcome in done
    ]
    return types.Content(role="user", parts=parts)


def resolve_confirmations(
    client: Client,
    events: Iterable[Event],
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> types.Content | None:
    """Asks about every pending `adk_request_confirmation` call in `events` (a run's events, or
    a session's), waits for the answers, and returns the `Content` that answers them, to pass
    to the runner as `new_message`; `None` when nothing is pending.

    With a `timeout`, confirmations still pending then are left out (`None` when none was
    answered); resolving the same events later finds the same requests. Extra `fields`
    (`session`, `responders`, `tags`, `timeout_seconds`, ...) go into every request."""
    pending = _confirmations(events, fields)
    records = [client.create(asked.body) for asked in pending]
    limit = seconds(timeout)
    done = []
    for asked, record in zip(pending, records, strict=True):
        final = record if record.resolved else client.wait(record.id, limit)
        if final.outcome is not None:
            done.append((asked, final.outcome))
    return _content(done)


async def aresolve_confirmations(
    client: AsyncClient,
    events: Iterable[Event],
    *,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> types.Content | None:
    """`resolve_confirmations` with an `AsyncClient`."""
    pending = _confirmations(events, fields)
    records = [await client.create(asked.body) for asked in pending]
    limit = seconds(timeout)
    done = []
    for asked, record in zip(pending, records, strict=True):
        final = record if record.resolved else await client.wait(record.id, limit)
        if final.outcome is not None:
            done.append((asked, final.outcome))
    return _content(done)


async def _session_events(runner: Runner, user_id: str, session_id: str) -> list[Event]:
    session = await runner.session_service.get_session(
        app_name=runner.app_name, user_id=user_id, session_id=session_id
    )
    if session is None:
        raise ValueError(f"no session {session_id!r} of user {user_id!r} in the runner's service")
    return list(session.events)


def run_with_humans(
    runner: Runner,
    *,
    user_id: str,
    session_id: str,
    new_message: types.Content | None,
    client: Client,
    **fields: Any,
) -> list[Event]:
    """Runs the agent on `new_message` to the end, asking a person through clarify for every
    tool confirmation on the way, and returns the events of the run.

    `session` defaults to the ADK session id. Pass `new_message=None` to continue a session that
    is already waiting for confirmations (after a restart): the same requests are found again.
    Not for a running event loop (ADK's `Runner.run` is not either): use `arun_with_humans`."""
    fields = {"session": session_id, **fields}
    events: list[Event] = []
    if new_message is None:
        message = resolve_confirmations(
            client, asyncio.run(_session_events(runner, user_id, session_id)), **fields
        )
    else:
        message = new_message
    while message is not None:
        run = list(runner.run(user_id=user_id, session_id=session_id, new_message=message))
        events.extend(run)
        message = resolve_confirmations(client, run, **fields)
    return events


async def arun_with_humans(
    runner: Runner,
    *,
    user_id: str,
    session_id: str,
    new_message: types.Content | None,
    client: AsyncClient,
    **fields: Any,
) -> list[Event]:
    """`run_with_humans` with `Runner.run_async` and an `AsyncClient`."""
    fields = {"session": session_id, **fields}
    events: list[Event] = []
    if new_message is None:
        pending = await _session_events(runner, user_id, session_id)
        message = await aresolve_confirmations(client, pending, **fields)
    else:
        message = new_message
    while message is not None:
        run = [
            event
            async for event in runner.run_async(
                user_id=user_id, session_id=session_id, new_message=message
            )
        ]
        events.extend(run)
        message = await aresolve_confirmations(client, run, **fields)
    return events
