"""The shared flows' retry decisions and the event-stream decoder, driven by scripted replies."""

from __future__ import annotations

from typing import Any

import pytest

from clarify_hitl import ClarifyConnectionError, ClarifyError, ServiceUnavailableError
from clarify_hitl import _protocol as p

PENDING = {"id": "r1", "status": "pending", "questions": []}
ANSWERED = {
    "id": "r1",
    "status": "answered",
    "questions": [],
    "outcome": {"request_id": "r1", "status": "answered", "questions": []},
}


def drive(flow: p.Flow[Any], replies: list[Any]) -> tuple[Any, list[p.Step]]:
    """Runs a flow, answering each call with the next reply (raised when it is an error)."""
    steps: list[p.Step] = []

    def send(call: p.Call) -> Any:
        steps.append(call)
        reply = replies.pop(0)
        if isinstance(reply, ClarifyError):
            raise reply
        return reply

    def sleep(seconds: float) -> None:
        steps.append(p.Sleep(seconds))

    return p.run_sync(flow, send, sleep), steps


def test_a_create_whose_reply_was_lost_is_sent_again_under_one_key() -> None:
    lost = ClarifyConnectionError("broke", sent=True)
    restarting = ServiceUnavailableError("restarting", code="store_unavailable", status=503)
    record, steps = drive(p.create_flow({"question": "q"}), [lost, restarting, PENDING])
    assert record.id == "r1"
    calls = [s for s in steps if isinstance(s, p.Call)]
    keys = {c.body["idempotency_key"] for c in calls if isinstance(c.body, dict)}
    assert len(calls) == 3
    assert len(keys) == 1
    assert [s.seconds for s in steps if isinstance(s, p.Sleep)] == [0.2, 0.4]


def test_a_create_that_reached_nothing_fails_at_once() -> None:
    refused = ClarifyConnectionError("refused", sent=False)
    with pytest.raises(ClarifyConnectionError):
        drive(p.create_flow({"question": "q"}), [refused])


def test_a_refused_create_is_not_retried() -> None:
    invalid = ClarifyError("questions: at least one", code="invalid_request", status=422)
    with pytest.raises(ClarifyError, match="at least one"):
        drive(p.create_flow({"question": "q", "idempotency_key": "mine"}), [invalid])


def test_waiting_reconnects_until_resolved() -> None:
    gone = ClarifyConnectionError("refused", sent=False)
    record, steps = drive(p.wait_flow("r1", None, lambda: 0.0), [PENDING, gone, gone, ANSWERED])
    assert record.resolved
    assert record.outcome is not None
    assert [type(s).__name__ for s in steps] == ["Call", "Call", "Sleep", "Call", "Sleep", "Call"]


def test_the_event_decoder_reads_ids_types_and_multi_line_data() -> None:
    decoder = p.SseDecoder()
    lines = [
        ": keep-alive",
        "id: 7",
        "event: request.created",
        'data: {"id": "r1",',
        'data:  "status": "pending"}',
        "",
        "data: not json",
        "",
    ]
    events = [e for e in (decoder.feed(line) for line in lines) if e is not None]
    assert [(e.id, e.type) for e in events] == [("7", "request.created"), ("7", "message")]
    assert events[0].record is not None
    assert events[0].record.status == "pending"
    assert events[1].data == "not json"
    assert decoder.last_event_id == "7"
