"""A client waiting in `ask` keeps waiting through a restart of clarify, and gets the answer
given after it; the question is asked once."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from conftest import ClarifyServer

from clarify_hitl import Client, Outcome, Record


def test_ask_waits_through_a_killed_and_restarted_server(clarify_bin: Path, tmp_path: Path) -> None:
    server = ClarifyServer(clarify_bin, tmp_path)
    server.start()
    try:
        agent = Client(server.url, server.key("agent", "py-agent"))
        alice = Client(server.url, server.key("responder", "alice"))
        result: list[Outcome | BaseException] = []

        def ask() -> None:
            try:
                result.append(agent.ask("Still there?", ["yes", "no"], session="restart"))
            except BaseException as e:
                result.append(e)

        waiter = threading.Thread(target=ask, daemon=True)
        waiter.start()
        deadline = time.monotonic() + 20
        pending: list[Record] = []
        while not pending and time.monotonic() < deadline:
            pending = list(alice.list(status="pending", session="restart"))
            time.sleep(0.05)
        assert len(pending) == 1

        server.kill()
        time.sleep(1.0)  # the waiter's long-poll broke; it is reconnecting meanwhile
        assert waiter.is_alive()
        server.start()
        alice.answer(pending[0].id, {"option": "no"})

        waiter.join(30)
        assert not waiter.is_alive()
        outcome = result[0]
        if isinstance(outcome, BaseException):
            pytest.fail(f"ask failed across the restart: {outcome!r}")
        assert (outcome.request_id, outcome.answer, outcome.answered_by) == (
            pending[0].id,
            "no",
            "alice",
        )
        assert [r.id for r in alice.list(session="restart")] == [pending[0].id]
    finally:
        server.stop()
