"""`clarify_hitl.dbos.ask` in a real DBOS workflow on the local PostgreSQL, against a real
`clarify serve`: the worker of `dbos_worker.py` runs in a process of its own (so a test can
SIGKILL it and start another, which DBOS recovery resumes), a person answers through the API.

The database is made for the module (`clarify_dbos_<random>` on the server of
`CLARIFY_TEST_POSTGRES`, else postgres@127.0.0.1:5432) and dropped after."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
from conftest import ChildProcess, ClarifyServer
from durable_support import completed, pending_one

from clarify_hitl import Client

psycopg = pytest.importorskip("psycopg")
dbos = pytest.importorskip("dbos")

TESTS = Path(__file__).resolve().parent


def _postgres_base() -> str:
    return (
        os.environ.get("CLARIFY_TEST_POSTGRES") or "postgresql://postgres@127.0.0.1:5432/postgres"
    )


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(("postgresql", parts.netloc, f"/{name}", parts.query, ""))


@pytest.fixture(scope="module")
def dbos_url() -> Iterator[str]:
    admin = _with_database(_postgres_base(), "postgres")
    try:
        connection = psycopg.connect(admin, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        reason = f"no PostgreSQL for DBOS at {urlsplit(admin).netloc}: {error}".strip()
        if os.environ.get("CLARIFY_REQUIRE_SERVICES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    name = f"clarify_dbos_{uuid.uuid4().hex[:12]}"
    with connection:
        connection.execute(f'CREATE DATABASE "{name}"')
        try:
            yield _with_database(admin, name)
        finally:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class Worker(ChildProcess):
    """`dbos_worker.py` in a process of its own."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env = env
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *workflows: str) -> None:
        env = {
            **os.environ,
            **self.env,
            "PYTHONPATH": os.pathsep.join([str(TESTS.parent / "src"), str(TESTS)]),
        }
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(TESTS / "dbos_worker.py"), *workflows],
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=TESTS,
            )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError(f"the DBOS worker did not start: {self.log.read_text()[-3000:]}")

    # The worker keeps nothing to flush: ending it is crashing it.
    stop = ChildProcess.kill


@pytest.fixture(scope="module")
def completions(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("dbos") / "completions.txt"


@pytest.fixture
def worker(
    dbos_url: str, server: ClarifyServer, agent_key: str, completions: Path, tmp_path: Path
) -> Iterator[Worker]:
    w = Worker(
        {
            "CLARIFY_URL": server.url,
            "CLARIFY_TOKEN": agent_key,
            "CLARIFY_TEST_DBOS_URL": dbos_url,
            "CLARIFY_TEST_COMPLETIONS": str(completions),
        },
        tmp_path / "worker.log",
    )
    yield w
    w.stop()


def result(dbos_url: str, workflow_id: str, within: float = 60) -> dict[str, Any]:
    """The workflow's result, read from DBOS's system database once it succeeded."""
    client = dbos.DBOSClient(system_database_url=dbos_url)
    try:
        handle = client.retrieve_workflow(workflow_id)
        deadline = time.monotonic() + within
        status = handle.get_status().status
        while status in ("PENDING", "ENQUEUED") and time.monotonic() < deadline:
            time.sleep(0.05)
            status = handle.get_status().status
        assert status == "SUCCESS", f"workflow {workflow_id} is {status}"
        value: dict[str, Any] = handle.get_result()
        return value
    finally:
        client.destroy()


def test_an_approval_reaches_the_workflow(
    worker: Worker, dbos_url: str, alice: Client, session: str, completions: Path
) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    worker.start(f"{workflow}:481:{session}")
    record = pending_one(alice, session)
    assert record.agent == "dbos"
    assert record.questions[0]["action"] == {"name": "deploy", "arguments": {"build": 481}}

    alice.answer(record.id, {"decision": "approve"})
    done = result(dbos_url, workflow)
    assert (done["request_id"], done["status"], done["decision"]) == (
        record.id,
        "answered",
        "approve",
    )
    assert completed(completions, record.id) == [f"{record.id} answered"]


def test_a_denial_reaches_the_workflow_with_its_reason(
    worker: Worker, dbos_url: str, alice: Client, session: str
) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    worker.start(f"{workflow}:482:{session}")
    record = pending_one(alice, session)
    alice.answer(record.id, {"decision": "deny", "reason": "not on Fridays"})

    done = result(dbos_url, workflow)
    assert (done["status"], done["decision"], done["reason"]) == (
        "answered",
        "deny",
        "not on Fridays",
    )


def test_the_worker_killed_while_waiting_is_recovered_on_the_same_request(
    worker: Worker, dbos_url: str, alice: Client, session: str, completions: Path
) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    worker.start(f"{workflow}:483:{session}")
    record = pending_one(alice, session)

    worker.kill()
    # Answered while no worker runs: clarify keeps the answer until the recovered workflow
    # asks for it.
    alice.answer(record.id, {"decision": "approve"})
    worker.start()  # DBOS recovery runs the pending workflow again from its checkpoints

    done = result(dbos_url, workflow)
    assert (done["request_id"], done["decision"]) == (record.id, "approve")
    assert [r.id for r in alice.list(session=session)] == [record.id]
    assert completed(completions, record.id) == [f"{record.id} answered"]


def test_the_worker_killed_before_the_answer_is_recovered_and_answered_once(
    worker: Worker, dbos_url: str, alice: Client, session: str, completions: Path
) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    worker.start(f"{workflow}:484:{session}")
    record = pending_one(alice, session)

    worker.kill()
    worker.start()
    time.sleep(1.0)  # the recovered workflow is back in its wait
    alice.answer(record.id, {"decision": "approve"})

    done = result(dbos_url, workflow)
    assert (done["request_id"], done["decision"]) == (record.id, "approve")
    assert [r.id for r in alice.list(session=session)] == [record.id]
    assert completed(completions, record.id) == [f"{record.id} answered"]


def test_an_expired_request_reaches_the_workflow_as_expired(
    worker: Worker, dbos_url: str, alice: Client, session: str
) -> None:
    workflow = f"wf-{uuid.uuid4().hex[:8]}"
    worker.start(f"{workflow}:485:{session}:1")
    record = pending_one(alice, session)

    done = result(dbos_url, workflow)
    assert (done["request_id"], done["status"], done["decision"]) == (record.id, "expired", None)
    assert done["note"]
