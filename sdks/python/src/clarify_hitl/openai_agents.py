"""OpenAI Agents SDK: settling a run's tool approvals through clarify.

A tool made with `function_tool(needs_approval=...)` stops the run: `result.interruptions` lists
`ToolApprovalItem`s, and the run goes on with `Runner.run(agent, state)` once each item was
approved (`state.approve(item, always_approve=...)`) or rejected
(`state.reject(item, rejection_message=...)`). Here each item becomes one clarify approval (tool
name, arguments, call id as `tool_call_id`); `approve` approves, with `always_approve=True` when
the person chose scope `always`; `deny` rejects with the person's reason; a request that was not
answered (skipped, expired, cancelled) rejects with the outcome's note, so nothing runs
unapproved. The SDK has no way to run a tool with edited arguments, so approvals here do not
offer edits.

Each request's idempotency key is made of the `state_id`, the tool call id and a digest of the
call, so settling the same state again (in another process, after a restart) finds the same
requests instead of asking twice, whatever other fields (`session`, `tags`, ...) each call
passes. The session is left out of the key on purpose: a resume that names it where the first
call did not must still find the request already asked. For a run that must outlive its process,
save `state.to_string()` under an id of yours and pass that id as `state_id`: it is put into
each request's context, where a webhook receiver finds it
(`client.get(request_id).context["run_state_id"]`), restores the state with
`await RunState.from_string(agent, saved)` and calls `settle_state` on it with the same
`state_id`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from ._client import AsyncClient, Client
from ._protocol import seconds
from ._types import Outcome, Record

__all__ = [
    "Settled",
    "asettle_interruptions",
    "asettle_state",
    "settle_interruptions",
    "settle_state",
    "submit_state",
]

DEFAULT_SCOPES: tuple[str, ...] = ("once", "always")


@dataclass(frozen=True)
class Settled:
    """What happened to one tool approval: the item, the clarify outcome (`None` while still
    pending), and whether it was approved."""

    item: Any
    request_id: str
    outcome: Outcome | None

    @property
    def approved(self) -> bool:
        return (
            self.outcome is not None
            and self.outcome.answered
            and (self.outcome.decision == "approve")
        )


def _arguments(item: Any) -> dict[str, Any]:
    raw = getattr(item, "arguments", None)
    if isinstance(raw, str):
        try:
            value = json.loads(raw) if raw else {}
        except ValueError:
            return {"arguments": raw}
        return value if isinstance(value, dict) else {"arguments": value}
    return {}


def _body(
    item: Any, scopes: Sequence[str], state_id: str | None, fields: Mapping[str, Any]
) -> dict[str, Any]:
    name = getattr(item, "qualified_name", None) or getattr(item, "name", None) or "tool"
    call_id = getattr(item, "call_id", None)
    agent = getattr(getattr(item, "agent", None), "name", None)
    context: dict[str, Any] = {"tool_call_id": call_id}
    if state_id is not None:
        context["run_state_id"] = state_id
    body: dict[str, Any] = {
        "questions": [
            {
                "kind": "approval",
                "header": str(name)[:32],
                "text": f"Allow the agent to run {name}?",
                "action": {"name": str(name), "arguments": _arguments(item)},
                "scopes": list(scopes),
            }
        ],
        "agent": agent or "openai-agents",
        "context": context,
    }
    body.update({k: v for k, v in fields.items() if v is not None})
    if isinstance(call_id, str) and call_id:
        body["tool_call_id"] = call_id
        if "idempotency_key" not in fields:
            # Call ids come from the model: the saved state's id and a digest of the call narrow
            # the key to this run's call. Not the session, which a resume may name differently.
            call = json.dumps([name, body["questions"][0]["action"]["arguments"]], sort_keys=True)
            digest = hashlib.sha256(call.encode()).hexdigest()[:16]
            body["idempotency_key"] = f"openai-agents:{state_id or ''}:{call_id}:{digest}"
    return body


def _apply(state: Any, settled: Settled) -> None:
    outcome = settled.outcome
    if outcome is None:
        return
    if settled.approved:
        state.approve(settled.item, always_approve=outcome.scope == "always")
        return
    name = getattr(settled.item, "name", None) or "the tool"
    if outcome.answered:
        message = outcome.refusal or f"The person denied {name}."
    else:
        message = f"{name} was not run: nobody approved it ({outcome.status}). {outcome.note or ''}"
    message = message.strip()
    state.reject(settled.item, rejection_message=message)


def submit_state(
    client: Client,
    state: Any,
    *,
    state_id: str | None = None,
    scopes: Sequence[str] = DEFAULT_SCOPES,
    **fields: Any,
) -> list[Record]:
    """Raises one approval request per pending interruption of a `RunState` and returns their
    records without waiting; `state_id` goes into each request's context."""
    return [
        client.create(_body(item, scopes, state_id, fields)) for item in state.get_interruptions()
    ]


def settle_state(
    client: Client,
    state: Any,
    *,
    timeout: float | timedelta | None = None,
    state_id: str | None = None,
    scopes: Sequence[str] = DEFAULT_SCOPES,
    **fields: Any,
) -> list[Settled]:
    """Asks about every pending interruption of a `RunState`, waits up to `timeout` (default:
    until all are resolved), approves or rejects each resolved one on the state, and returns
    what happened. Items still pending are left alone (their `outcome` is `None`); settling
    again later picks the same requests up."""
    items = list(state.get_interruptions())
    records = [client.create(_body(item, scopes, state_id, fields)) for item in items]
    limit = seconds(timeout)
    settled = []
    for item, record in zip(items, records, strict=False):
        done = record if record.resolved else client.wait(record.id, limit)
        result = Settled(item, record.id, done.outcome)
        _apply(state, result)
        settled.append(result)
    return settled


async def asettle_state(
    client: AsyncClient,
    state: Any,
    *,
    timeout: float | timedelta | None = None,
    state_id: str | None = None,
    scopes: Sequence[str] = DEFAULT_SCOPES,
    **fields: Any,
) -> list[Settled]:
    """`settle_state` with an `AsyncClient`."""
    items = list(state.get_interruptions())
    records = [await client.create(_body(item, scopes, state_id, fields)) for item in items]
    limit = seconds(timeout)
    settled = []
    for item, record in zip(items, records, strict=False):
        done = record if record.resolved else await client.wait(record.id, limit)
        result = Settled(item, record.id, done.outcome)
        _apply(state, result)
        settled.append(result)
    return settled


def settle_interruptions(client: Client, result: Any, **options: Any) -> Any:
    """Settles a `RunResult`'s interruptions through clarify and returns the `RunState` to
    resume with `Runner.run(agent, state)`. Options are those of `settle_state`."""
    state = result.to_state()
    settle_state(client, state, **options)
    return state


async def asettle_interruptions(client: AsyncClient, result: Any, **options: Any) -> Any:
    """`settle_interruptions` with an `AsyncClient`."""
    state = result.to_state()
    await asettle_state(client, state, **options)
    return state
