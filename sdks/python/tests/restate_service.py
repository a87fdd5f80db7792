"""The Python Restate service of the tests: `Deploy/run` asks for an approval through
`clarify_hitl.restate.ask` and, once decided, records that it went on (a journaled step that
appends `<request id> <status> <when it resumed>` to `CLARIFY_TEST_COMPLETIONS`), so a test can
count how often the handler got past its wait and the benchmark can time it. Served by
hypercorn from `restate_engine.PythonService`."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import restate

from clarify_hitl import AsyncClient
from clarify_hitl.restate import ask

clarify = AsyncClient(os.environ["CLARIFY_URL"], os.environ["CLARIFY_TOKEN"])
completions = Path(os.environ["CLARIFY_TEST_COMPLETIONS"])

deploy = restate.Service("Deploy")


@deploy.handler()
async def run(ctx: restate.Context, order: dict[str, Any]) -> dict[str, Any]:
    fields: dict[str, Any] = {"session": order["session"]}
    if "timeout_seconds" in order:
        fields["timeout_seconds"] = order["timeout_seconds"]
    outcome = await ask(
        ctx,
        clarify,
        questions=[
            {
                "text": f"Deploy build {order['build']} to production?",
                "kind": "approval",
                "action": {"name": "deploy", "arguments": {"build": order["build"]}},
            }
        ],
        **fields,
    )

    resumed = time.time()

    def record() -> None:
        with completions.open("a") as file:
            file.write(f"{outcome.request_id} {outcome.status} {resumed:.6f}\n")

    await ctx.run_typed("record the decision", record)
    return {
        "request_id": outcome.request_id,
        "status": outcome.status,
        "decision": outcome.decision,
        "reason": outcome.reason,
        "note": outcome.note,
    }


app = restate.app(services=[deploy])
