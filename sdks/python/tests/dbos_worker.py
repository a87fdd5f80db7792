"""The DBOS worker of the tests, run as a process of its own so a test can SIGKILL it:
`deploy` is a `@DBOS.workflow()` that asks for an approval through `clarify_hitl.dbos.ask` and,
once decided, records that it went on (a step appending `<request id> <status> <when it resumed>` to
`CLARIFY_TEST_COMPLETIONS`).

    python dbos_worker.py [WORKFLOW_ID BUILD SESSION [TIMEOUT_SECONDS]]...

launches DBOS on `CLARIFY_TEST_DBOS_URL` (which recovers the workflows a killed worker left
pending), starts each workflow named on the command line under its id, and runs until killed.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from dbos import DBOS, SetWorkflowID

from clarify_hitl import Client
from clarify_hitl.dbos import ask

clarify = Client(os.environ["CLARIFY_URL"], os.environ["CLARIFY_TOKEN"])
completions = Path(os.environ["CLARIFY_TEST_COMPLETIONS"])

DBOS(
    config={
        "name": "clarify-dbos-test",
        "system_database_url": os.environ["CLARIFY_TEST_DBOS_URL"],
        "log_level": "WARNING",
        "notification_listener_polling_interval_sec": 0.05,
    }
)


@DBOS.step()
def record(request_id: str, status: str, resumed: float) -> None:
    with completions.open("a") as file:
        file.write(f"{request_id} {status} {resumed:.6f}\n")


@DBOS.workflow()
def deploy(build: int, session: str, timeout_seconds: int | None) -> dict[str, Any]:
    outcome = ask(
        clarify,
        questions=[
            {
                "text": f"Deploy build {build} to production?",
                "kind": "approval",
                "action": {"name": "deploy", "arguments": {"build": build}},
            }
        ],
        session=session,
        timeout_seconds=timeout_seconds,
    )
    record(outcome.request_id, outcome.status, time.time())
    return {
        "request_id": outcome.request_id,
        "status": outcome.status,
        "decision": outcome.decision,
        "reason": outcome.reason,
        "note": outcome.note,
    }


def main(args: list[str]) -> None:
    DBOS.launch()
    for spec in args:
        workflow_id, build, session, *timeout = spec.split(":")
        with SetWorkflowID(workflow_id):
            DBOS.start_workflow(deploy, int(build), session, int(timeout[0]) if timeout else None)
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main(sys.argv[1:])
