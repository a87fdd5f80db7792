"""DBOS: a workflow asks a person through clarify and waits durably for the outcome.

`ask(client, **fields)` inside a `@DBOS.workflow()` (the `dbos` package) runs two steps, each
checkpointed in DBOS's system database:

1. **create**: the clarify request, under the idempotency key `dbos-<workflow id>-<step id>`.
   The step id is the call's place in the workflow, so the workflow run again by DBOS recovery
   after a crash finds the same request (whether or not the step's checkpoint was written before
   the crash), and two `ask`s in one workflow get two requests.
2. **wait**: a long-poll of clarify (`GET /v1/requests/{id}/wait`, reconnecting with backoff)
   until the request resolves. Its result, the outcome, is checkpointed, so a recovered workflow
   that already had its answer does not wait again; one killed while waiting waits again on the
   same request.

Why a long-poll step rather than `DBOS.recv` fed by clarify's webhook: the wait needs nothing
reachable from clarify (no receiver to expose, sign-check and keep in step with the workflow),
and no server-side support, while clarify keeps the request and its answer durably on its own
side: an answer given while the worker was down is read by the recovered workflow's wait as
soon as it starts. The price is one open HTTP connection per waiting workflow, which the
worker process holds anyway while the workflow runs.

Every keyword is a create field (`question`, `choices`, `questions`, `session`, `tags`,
`timeout_seconds`, `responders`, ...); `agent` defaults to `dbos`.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dbos import DBOS

from ._client import Client
from ._protocol import outcome_of
from ._types import Outcome, Record

__all__ = ["ask"]

_MAX_KEY_CHARS = 256


def _idempotency_key() -> str:
    """`dbos-<workflow id>-<step id>`, read inside the create step; a workflow id too long for a
    key is replaced by its digest."""
    workflow_id, step_id = DBOS.workflow_id, DBOS.step_id
    key = f"dbos-{workflow_id}-{step_id}"
    if len(key) > _MAX_KEY_CHARS:
        digest = hashlib.sha256(str(workflow_id).encode()).hexdigest()
        key = f"dbos-{digest}-{step_id}"
    return key


def _create(client: Client, body: dict[str, Any]) -> dict[str, Any]:
    record = client.create({**body, "idempotency_key": _idempotency_key()})
    return record.raw


def _wait(client: Client, request_id: str) -> dict[str, Any]:
    return outcome_of(client.wait(request_id)).raw


def ask(client: Client, **fields: Any) -> Outcome:
    """Asks a person through clarify from a DBOS workflow and returns the outcome once the
    request resolves; see the module's documentation for what is checkpointed.

    >>> @DBOS.workflow()
    ... def deploy(version: str) -> str:
    ...     outcome = ask(clarify, question=f"Deploy {version}?", choices=["yes", "no"])
    ...     return "deployed" if outcome.answer == "yes" else "kept"
    """
    if DBOS.workflow_id is None:
        raise RuntimeError("clarify_hitl.dbos.ask runs inside a @DBOS.workflow()")
    body: dict[str, Any] = {"agent": "dbos", **fields}
    record = Record.from_json(
        DBOS.run_step({"name": "clarify: create request"}, _create, client, body)
    )
    if record.outcome is not None:
        return record.outcome
    outcome = DBOS.run_step({"name": "clarify: wait for the outcome"}, _wait, client, record.id)
    return Outcome.from_json(outcome)
