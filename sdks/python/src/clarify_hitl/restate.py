"""Restate: a handler asks a person through clarify and waits durably for the outcome.

`ask(ctx, client, **fields)` inside a Restate handler (the `restate-sdk` package) does three
things, each kept in Restate's journal so that a crash at any point resumes instead of asking
again:

1. It creates a Restate awakeable, a promise that something outside the invocation resolves.
2. It creates the clarify request inside `ctx.run` (a journaled step), carrying
   `resume: {"restate": {"ingress": URL, "awakeable": ID}}`. When the request resolves
   (answered, skipped, expired or cancelled), clarify POSTs its outcome to
   `URL/restate/awakeables/ID/resolve` through its webhook outbox, retrying until the Restate
   ingress takes it. The create's idempotency key is `restate-` and the awakeable's id, which
   Restate derives from the invocation id and the call's place in the journal: a step whose
   result was not journaled before a crash is run again by the retried invocation and finds
   the same request, and two `ask`s in one handler get two requests.
3. It awaits the awakeable. Restate suspends the invocation meanwhile, so nothing holds a
   connection or a process for the hours a person may take; the outcome JSON becomes the
   `Outcome` returned.

The ingress URL is where clarify reaches the Restate ingress (not where the handler runs):
`ingress=`, else `CLARIFY_RESTATE_INGRESS`, else Restate's default `http://127.0.0.1:8080`.
clarify's outbound guard applies to it as to a `callback_url`: an ingress on a private address
must be allowed with the server's `outbound_allow`.

Every other keyword is a create field (`question`, `choices`, `questions`, `session`, `tags`,
`timeout_seconds`, `responders`, ...); `agent` defaults to `restate`. A create clarify refuses
(a `4xx` other than a rate limit) fails the invocation with a `TerminalError`; a create that
could not reach clarify is retried by Restate like any failed step.
"""

from __future__ import annotations

import os
from typing import Any

from restate import Context, RunOptions, TerminalError

from ._client import AsyncClient
from ._errors import ClarifyError, RateLimitedError
from ._protocol import transient
from ._types import Outcome, Record

__all__ = ["DEFAULT_INGRESS", "ask"]

DEFAULT_INGRESS = "http://127.0.0.1:8080"
"""The Restate server's default ingress address."""


def _ingress(given: str | None) -> str:
    url = given or os.environ.get("CLARIFY_RESTATE_INGRESS") or DEFAULT_INGRESS
    return url.rstrip("/")


async def _create(client: AsyncClient, body: dict[str, Any]) -> dict[str, Any]:
    """The create step: the record as JSON, which is what Restate journals."""
    try:
        record: Record = await client.create(body)
    except ClarifyError as error:
        if transient(error) or isinstance(error, RateLimitedError):
            raise
        raise TerminalError(f"clarify refused the request: {error}", status_code=500) from error
    return record.raw


async def ask(
    ctx: Context,
    client: AsyncClient,
    *,
    ingress: str | None = None,
    **fields: Any,
) -> Outcome:
    """Asks a person through clarify from a Restate handler and returns the outcome once the
    request resolves; see the module's documentation for what is journaled. `client` is an
    `AsyncClient`, since a Restate handler runs on an event loop.

    >>> @service.handler()
    ... async def deploy(ctx: restate.Context, version: str) -> str:
    ...     outcome = await ask(ctx, clarify, question=f"Deploy {version}?", choices=["yes", "no"])
    ...     return "deployed" if outcome.answer == "yes" else "kept"
    """
    awakeable_id, resolved = ctx.awakeable(type_hint=dict)
    body: dict[str, Any] = {"agent": "restate", **fields}
    body["idempotency_key"] = f"restate-{awakeable_id}"
    body["resume"] = {"restate": {"ingress": _ingress(ingress), "awakeable": awakeable_id}}
    record = await ctx.run_typed(
        "clarify: create request", _create, RunOptions(type_hint=dict), client, body
    )
    outcome = record.get("outcome")
    if isinstance(outcome, dict):
        # Resolved at creation (a policy decided, or an idempotent create found an old
        # answer): the journal already holds the outcome, so the awakeable is not awaited.
        return Outcome.from_json(outcome)
    return Outcome.from_json(await resolved)
