"""Pydantic AI: deferred tool calls answered through clarify.

A Pydantic AI tool defers its call when it needs a person: `requires_approval=True` (or raising
`ApprovalRequired`) asks for consent to run the call the model made, and raising
`CallDeferred(kind='question')` asks for content, such as an answer to the model's question.
Without a handler the run ends with `DeferredToolRequests` as its output, and a later run resumes
with `DeferredToolResults`. This module turns each pending call into one clarify request and each
outcome into the result Pydantic AI expects:

- an approval: a clarify approval showing the tool's name and the arguments the tool will receive,
  editable, under `reason` or `description` from the call's metadata
  (`ApprovalRequired(metadata={"reason": ...})`) when given. Approved: `ToolApproved()`, or
  `ToolApproved(override_args=...)` when the person edited the arguments, so the tool runs with
  theirs. Denied: `ToolDenied(message=<their reason>)`
  (`Changes requested: <reason>` when they asked for changes), which the model reads as the
  call's result.
- a question: an open question (a single choice when the call's metadata or arguments give
  `choices` or `options`), its text taken from `question` in the metadata or the arguments. The
  person's answer is the call's result.
- A request that was not answered (skipped, expired, cancelled) denies the approval, or fails the
  question with `ToolFailed`, carrying the outcome's note, so nothing runs unapproved.

External calls (plain `CallDeferred`) are left alone: they are work for code, not for a person.

`ClarifyApprovals(client, **fields)` does this during the run, as a capability
(`Agent(..., capabilities=[ClarifyApprovals(client)])`); `resolve_deferred` and
`aresolve_deferred` do it for a run that ended with `DeferredToolRequests`, returning the
`DeferredToolResults` to resume with (`agent.run(message_history=..., deferred_tool_results=...)`).

Each request's idempotency key is made of the conversation id (where known), the tool call id and
a digest of the call, so resolving the same calls again (after a crash, from another process)
finds the same requests instead of asking twice. `agent` defaults to `pydantic-ai`, and `session`
to the conversation id.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.messages import ToolCallPart
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)

from ._client import AsyncClient, Client
from ._protocol import seconds
from ._types import Outcome

__all__ = ["ClarifyApprovals", "aresolve_deferred", "resolve_deferred"]


@dataclass(frozen=True)
class _Ask:
    """One pending call, the request that asks about it, and whether it is a question."""

    call: ToolCallPart
    arguments: dict[str, Any]
    question: bool
    body: dict[str, Any]


def _arguments(requests: DeferredToolRequests, call: ToolCallPart) -> dict[str, Any]:
    """The arguments the tool will receive (validated, defaults filled), else the model's."""
    validated = requests.validated_args.get(call.tool_call_id)
    if isinstance(validated, dict):
        return validated
    try:
        return call.args_as_dict()
    except ValueError:
        return {"arguments": call.args}


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _choices(*sources: Mapping[str, Any]) -> list[str] | None:
    for source in sources:
        for name in ("choices", "options"):
            value = source.get(name)
            if isinstance(value, list) and value and all(isinstance(c, str) for c in value):
                return list(value)
    return None


def _question_body(call: ToolCallPart, arguments: dict[str, Any], metadata: Any) -> dict[str, Any]:
    meta = metadata if isinstance(metadata, Mapping) else {}
    text = meta.get("question") or arguments.get("question")
    if not isinstance(text, str) or not text:
        text = f"Answer for {call.tool_name}: {json.dumps(arguments, default=str)}"
    question: dict[str, Any] = {"header": call.tool_name[:32], "text": text}
    choices = _choices(meta, arguments)
    if choices is None:
        question["kind"] = "open"
    else:
        question["kind"] = "single"
        question["options"] = [{"label": c} for c in choices]
    return question


def _approval_body(call: ToolCallPart, arguments: dict[str, Any], metadata: Any) -> dict[str, Any]:
    meta = metadata if isinstance(metadata, Mapping) else {}
    text = meta.get("reason") or meta.get("description")
    if not isinstance(text, str) or not text:
        text = f"Allow the agent to run {call.tool_name}?"
    return {
        "kind": "approval",
        "header": call.tool_name[:32],
        "text": text,
        "action": {"name": call.tool_name, "arguments": arguments},
        "allow_edit": True,
    }


def _asks(
    requests: DeferredToolRequests,
    conversation_id: str | None,
    agent_name: str | None,
    fields: Mapping[str, Any],
) -> list[_Ask]:
    pending = [(call, False) for call in requests.approvals] + [
        (call, True) for call in requests.calls if requests.kind(call.tool_call_id) == "question"
    ]
    asks = []
    for call, is_question in pending:
        arguments = _arguments(requests, call)
        metadata = requests.metadata.get(call.tool_call_id)
        question = (
            _question_body(call, arguments, metadata)
            if is_question
            else _approval_body(call, arguments, metadata)
        )
        context: dict[str, Any] = {"tool_call_id": call.tool_call_id}
        if conversation_id:
            context["conversation_id"] = conversation_id
        if agent_name:
            context["agent_name"] = agent_name
        body: dict[str, Any] = {
            "questions": [question],
            "agent": "pydantic-ai",
            "context": context,
            "tool_call_id": call.tool_call_id,
        }
        if conversation_id:
            body["session"] = conversation_id
        body.update({k: v for k, v in fields.items() if v is not None})
        if "idempotency_key" not in fields:
            # Tool call ids come from the model, and some models number them from 1: the
            # conversation and a digest of the call narrow the key to this call.
            digest = _digest([call.tool_name, arguments, is_question])
            key = f"pydantic-ai:{conversation_id or ''}:{call.tool_call_id}:{digest}"
            body["idempotency_key"] = key
        asks.append(_Ask(call, arguments, is_question, body))
    return asks


def _unanswered(ask: _Ask, outcome: Outcome) -> str:
    what = "answered" if ask.question else "approved"
    return (
        f"{ask.call.tool_name} was not run: nobody {what} it ({outcome.status}). "
        f"{outcome.note or ''}"
    ).strip()


def _results(
    requests: DeferredToolRequests, done: list[tuple[_Ask, Outcome]]
) -> DeferredToolResults:
    approvals: dict[str, ToolApproved | ToolDenied] = {}
    calls: dict[str, Any] = {}
    answered_by: dict[str, str] = {}
    for ask, outcome in done:
        call_id = ask.call.tool_call_id
        if outcome.answered and outcome.answered_by:
            answered_by[call_id] = outcome.answered_by
        if ask.question:
            calls[call_id] = (
                outcome.answer if outcome.answered else ToolFailed(_unanswered(ask, outcome))
            )
        elif not outcome.answered:
            approvals[call_id] = ToolDenied(_unanswered(ask, outcome))
        elif outcome.decision == "approve":
            edited = outcome.edited_arguments
            changed = edited is not None and edited != ask.arguments
            approvals[call_id] = ToolApproved(override_args=edited if changed else None)
        else:
            message = outcome.refusal or f"The person denied {ask.call.tool_name}."
            approvals[call_id] = ToolDenied(message)
    return requests.build_results(approvals=approvals, calls=calls, answered_by=answered_by)


def resolve_deferred(
    client: Client,
    requests: DeferredToolRequests,
    *,
    conversation_id: str | None = None,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> DeferredToolResults:
    """Asks about every approval and question in `requests`, waits for the answers, and returns
    the `DeferredToolResults` to resume the run with.

    Pass the run's `conversation_id` (`result.conversation_id`) so the requests are keyed to it.
    With a `timeout`, calls whose requests are still pending then are left out of the results
    (resolving again later finds the same requests). Extra `fields` (`responders`, `tags`,
    `timeout_seconds`, ...) go into every request."""
    return _resolve(client, requests, conversation_id, None, seconds(timeout), fields)


async def aresolve_deferred(
    client: AsyncClient,
    requests: DeferredToolRequests,
    *,
    conversation_id: str | None = None,
    timeout: float | timedelta | None = None,
    **fields: Any,
) -> DeferredToolResults:
    """`resolve_deferred` with an `AsyncClient`."""
    return await _aresolve(client, requests, conversation_id, None, seconds(timeout), fields)


async def _aresolve(
    client: AsyncClient,
    requests: DeferredToolRequests,
    conversation_id: str | None,
    agent_name: str | None,
    limit: float | None,
    fields: Mapping[str, Any],
) -> DeferredToolResults:
    asks = _asks(requests, conversation_id, agent_name, fields)
    records = [await client.create(ask.body) for ask in asks]
    done = []
    for ask, record in zip(asks, records, strict=True):
        final = record if record.resolved else await client.wait(record.id, limit)
        if final.outcome is not None:
            done.append((ask, final.outcome))
    return _results(requests, done)


class ClarifyApprovals(AbstractCapability[Any]):
    """A capability that answers the run's deferred approvals and questions through clarify while
    the run waits, so the run goes on instead of ending with `DeferredToolRequests`.

    `client` is a `Client` (its waits run in a worker thread) or an `AsyncClient`; `fields` are
    create fields for every request (`responders`, `tags`, `timeout_seconds`, ...). Requests are
    keyed by the run's conversation id, so a run given the same message history after a restart
    finds the same requests. External calls are left to other capabilities, or to the run's
    output."""

    def __init__(self, client: Client | AsyncClient, **fields: Any) -> None:
        self.client = client
        self.fields = fields

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # a client cannot be written in an agent spec

    async def handle_deferred_tool_calls(
        self, ctx: RunContext[Any], *, requests: DeferredToolRequests
    ) -> DeferredToolResults | None:
        agent_name = ctx.agent.name if ctx.agent is not None else None
        if not requests.approvals and not any(
            requests.kind(c.tool_call_id) == "question" for c in requests.calls
        ):
            return None
        client = self.client
        if isinstance(client, AsyncClient):
            return await _aresolve(
                client, requests, ctx.conversation_id, agent_name, None, self.fields
            )
        return await asyncio.to_thread(
            _resolve, client, requests, ctx.conversation_id, agent_name, None, self.fields
        )


def _resolve(
    client: Client,
    requests: DeferredToolRequests,
    conversation_id: str | None,
    agent_name: str | None,
    limit: float | None,
    fields: Mapping[str, Any],
) -> DeferredToolResults:
    asks = _asks(requests, conversation_id, agent_name, fields)
    records = [client.create(ask.body) for ask in asks]
    done = []
    for ask, record in zip(asks, records, strict=True):
        final = record if record.resolved else client.wait(record.id, limit)
        if final.outcome is not None:
            done.append((ask, final.outcome))
    return _results(requests, done)
