"""`clarify_hitl.restate.ask` against a real Restate server (the pinned npm package's binary)
and a real `clarify serve`: the Python service of `restate_service.py` asks, a person answers
through the API, and clarify resolves the handler's awakeable through the Restate ingress.

Each test starts its own invocation of `Deploy/run` and checks what the handler returned, how
many requests exist for it, and how often the handler got past its wait (the completions file)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import ClarifyServer
from durable_support import completed, pending_one
from restate_engine import PythonService, RestateServer

from clarify_hitl import Client


@pytest.fixture(scope="module")
def restate_bin() -> Path:
    given = os.environ.get("CLARIFY_RESTATE_SERVER")
    if given and Path(given).is_file():
        return Path(given)
    reason = (
        "no Restate server: set CLARIFY_RESTATE_SERVER to a restate-server binary "
        "(scripts/restate-server installs the pinned one and prints its path)"
    )
    if os.environ.get("CLARIFY_REQUIRE_SERVICES") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def restate(restate_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestateServer]:
    node = RestateServer(restate_bin, tmp_path_factory.mktemp("restate"))
    node.start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def completions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("completions") / "completions.txt"


@pytest.fixture(scope="module")
def service(
    restate: RestateServer,
    server: ClarifyServer,
    agent_key: str,
    completions: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[PythonService]:
    svc = PythonService(
        tmp_path_factory.mktemp("service"),
        {
            "CLARIFY_URL": server.url,
            "CLARIFY_TOKEN": agent_key,
            "CLARIFY_RESTATE_INGRESS": restate.ingress,
            "CLARIFY_TEST_COMPLETIONS": str(completions),
        },
    )
    svc.start()
    restate.register(svc.uri)
    yield svc
    svc.stop()


def deliveries(server: ClarifyServer, key: str, request_id: str) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/v1/requests/{request_id}/deliveries",
        headers={"authorization": f"Bearer {key}"},
        timeout=10,
    )
    response.raise_for_status()
    found: list[dict[str, Any]] = response.json()["deliveries"]
    return found


def test_an_approval_reaches_the_handler(
    restate: RestateServer,
    service: PythonService,
    alice: Client,
    session: str,
    completions: Path,
) -> None:
    invocation = restate.send("Deploy", "run", {"build": 481, "session": session})
    record = pending_one(alice, session)
    assert record.agent == "restate"
    assert record.questions[0]["action"] == {"name": "deploy", "arguments": {"build": 481}}
    resume = record.raw["resume"]["restate"]
    assert resume["ingress"] == restate.ingress
    assert resume["awakeable"]

    alice.answer(record.id, {"decision": "approve"})
    result = restate.attach(invocation)

    assert (result["request_id"], result["status"], result["decision"]) == (
        record.id,
        "answered",
        "approve",
    )
    assert completed(completions, record.id) == [f"{record.id} answered"]


def test_a_denial_reaches_the_handler_with_its_reason(
    restate: RestateServer, service: PythonService, alice: Client, session: str
) -> None:
    invocation = restate.send("Deploy", "run", {"build": 482, "session": session})
    record = pending_one(alice, session)
    alice.answer(record.id, {"decision": "deny", "reason": "not on Fridays"})

    result = restate.attach(invocation)
    assert (result["status"], result["decision"], result["reason"]) == (
        "answered",
        "deny",
        "not on Fridays",
    )


def test_the_service_killed_while_waiting_resumes_on_the_same_request(
    restate: RestateServer,
    service: PythonService,
    alice: Client,
    session: str,
    completions: Path,
) -> None:
    invocation = restate.send("Deploy", "run", {"build": 483, "session": session})
    record = pending_one(alice, session)

    service.kill()
    time.sleep(0.5)
    service.start()
    # Restate retries the invocation on the restarted service, which replays its journal: the
    # create step's result is there, so nothing is asked again.
    time.sleep(2.0)
    alice.answer(record.id, {"decision": "approve"})

    result = restate.attach(invocation)
    assert (result["request_id"], result["decision"]) == (record.id, "approve")
    assert [r.id for r in alice.list(session=session)] == [record.id]
    assert completed(completions, record.id) == [f"{record.id} answered"]


def test_restate_down_when_answered_gets_the_answer_once_it_is_back(
    restate: RestateServer,
    service: PythonService,
    server: ClarifyServer,
    agent_key: str,
    alice: Client,
    session: str,
    completions: Path,
) -> None:
    invocation = restate.send("Deploy", "run", {"build": 484, "session": session})
    record = pending_one(alice, session)

    restate.kill()
    alice.answer(record.id, {"decision": "approve"})
    deadline = time.monotonic() + 30
    failed: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        found = deliveries(server, agent_key, record.id)
        failed = [a for d in found for a in d["attempts"] if a.get("status_code") != 202]
        if len(failed) >= 2:
            break
        time.sleep(0.2)
    # Refused while the ingress is down, and tried again.
    assert len(failed) >= 2, deliveries(server, agent_key, record.id)

    restate.start()
    result = restate.attach(invocation, within=90)
    assert (result["request_id"], result["decision"]) == (record.id, "approve")
    assert [r.id for r in alice.list(session=session)] == [record.id]
    assert completed(completions, record.id) == [f"{record.id} answered"]
    # clarify marks the delivery once the ingress's reply is in, which may be after the handler
    # finished.
    found = deliveries(server, agent_key, record.id)
    until = time.monotonic() + 10
    while found and found[0]["status"] == "pending" and time.monotonic() < until:
        time.sleep(0.1)
        found = deliveries(server, agent_key, record.id)
    assert len(found) == 1
    assert found[0]["status"] == "delivered"
    assert [a.get("status_code") for a in found[0]["attempts"]][-1] == 202


def test_an_expired_request_reaches_the_handler_as_expired(
    restate: RestateServer, service: PythonService, alice: Client, session: str
) -> None:
    invocation = restate.send(
        "Deploy", "run", {"build": 485, "session": session, "timeout_seconds": 1}
    )
    record = pending_one(alice, session)

    result = restate.attach(invocation)
    assert (result["request_id"], result["status"], result["decision"]) == (
        record.id,
        "expired",
        None,
    )
    assert result["note"]


def test_a_create_clarify_refuses_fails_the_invocation_instead_of_retrying(
    restate: RestateServer, service: PythonService, alice: Client, session: str
) -> None:
    invocation = restate.send(
        "Deploy", "run", {"build": 487, "session": session, "timeout_seconds": -5}
    )
    response = restate.attach_response(invocation, within=30)
    assert response.status_code >= 400
    assert "clarify refused the request" in response.text
    assert list(alice.list(session=session)) == []


def test_a_suspended_invocation_is_resumed_by_the_answer(
    restate_bin: Path,
    server: ClarifyServer,
    agent_key: str,
    alice: Client,
    session: str,
    tmp_path: Path,
) -> None:
    """A person may take hours; Restate suspends a waiting invocation (here after half a second
    instead of a minute), and the awakeable's resolution starts it again by replaying its
    journal."""
    node = RestateServer(
        restate_bin, tmp_path, {"RESTATE_WORKER__INVOKER__INACTIVITY_TIMEOUT": "500ms"}
    )
    node.start()
    completions = tmp_path / "completions.txt"
    service = PythonService(
        tmp_path,
        {
            "CLARIFY_URL": server.url,
            "CLARIFY_TOKEN": agent_key,
            "CLARIFY_RESTATE_INGRESS": node.ingress,
            "CLARIFY_TEST_COMPLETIONS": str(completions),
        },
    )
    service.start()
    try:
        node.register(service.uri)
        invocation = node.send("Deploy", "run", {"build": 486, "session": session})
        record = pending_one(alice, session)
        deadline = time.monotonic() + 20
        while node.status(invocation) != "suspended" and time.monotonic() < deadline:
            time.sleep(0.1)
        assert node.status(invocation) == "suspended"

        alice.answer(record.id, {"decision": "approve"})
        result = node.attach(invocation)
        assert (result["request_id"], result["decision"]) == (record.id, "approve")
        assert [r.id for r in alice.list(session=session)] == [record.id]
        assert completed(completions, record.id) == [f"{record.id} answered"]
    finally:
        service.stop()
        node.stop()
