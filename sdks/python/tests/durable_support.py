"""What the durable-workflow tests (`test_restate.py`, `test_dbos.py`) share: finding the one
request a workflow asked, and counting how often a workflow got past its wait."""

from __future__ import annotations

import time
from pathlib import Path

from clarify_hitl import Client, Record


def pending_one(alice: Client, session: str, within: float = 30) -> Record:
    """The one pending request of `session`, once the workflow has asked."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        pending = list(alice.list(status="pending", session=session))
        if pending:
            assert len(pending) == 1, [r.id for r in pending]
            return pending[0]
        time.sleep(0.05)
    raise AssertionError(f"the workflow asked nothing in session {session} within {within} s")


def completed(completions: Path, request_id: str) -> list[str]:
    """What the workflow wrote after its wait for `request_id`, each `<id> <status>` (the time
    it resumed left out)."""
    lines = completions.read_text().splitlines() if completions.exists() else []
    return [" ".join(line.split()[:2]) for line in lines if line.split()[0] == request_id]
