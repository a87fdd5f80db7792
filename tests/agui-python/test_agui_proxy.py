"""The AG-UI proxy against a real AG-UI agent: a LangGraph graph that calls `interrupt()`, served
by the `ag-ui-langgraph` package (agent.py), and every event the proxy streams read with the
`ag-ui-protocol` package's types.

Each test starts the agent and `clarify serve` (a SQLite file of its own, `[[agui]]` naming the
agent) and runs it through `POST /agui/{name}` with an agent key; a person answers the
interrupt's request through the HTTP API with a responder key, as the inbox or Slack would.

The server binary is CLARIFY_BIN; without it the tests build `clarify` with cargo.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    CustomEvent,
    EventType,
    RunAgentInput,
    RunFinishedEvent,
    RunStartedEvent,
    StateSnapshotEvent,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
PATIENCE = 30.0


@pytest.fixture(scope="session")
def clarify_bin() -> str:
    given = os.environ.get("CLARIFY_BIN")
    if given and Path(given).is_file():
        return given
    if shutil.which("cargo") is None:
        pytest.fail("no clarify binary: set CLARIFY_BIN, or install Rust to build one")
    subprocess.run(["cargo", "build", "-p", "clarify", "--locked"], cwd=REPO, check=True)
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    return str(target / "debug" / "clarify")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def wait_for(url: str, process: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while True:
        try:
            urllib.request.urlopen(url, timeout=1)
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.terminate()
                pytest.fail(f"{what} did not start")
            time.sleep(0.1)


@pytest.fixture(scope="session")
def agent() -> Iterator[str]:
    """The LangGraph agent, served by ag-ui-langgraph; its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, str(HERE / "agent.py"), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    wait_for(f"{url}/outcome/health", process, "the AG-UI agent")
    try:
        yield url
    finally:
        process.terminate()
        process.wait(timeout=15)


@dataclass
class Clarify:
    """`clarify serve` on a database of its own, which `restart` keeps."""

    bin: str
    dir: Path
    agent_url: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def db(self) -> str:
        return f"sqlite://{self.dir}/clarify.db"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def key(self, role: str, name: str) -> str:
        return subprocess.run(
            [
                self.bin, "keys", "create", "--role", role, "--name", name,
                "--db", self.db, "--create",
            ],
            check=True,
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
        ).stdout.strip()

    def start(self) -> None:
        config = self.dir / "clarify.toml"
        config.write_text(
            f'[[agui]]\nname = "deployer"\nurl = "{self.agent_url}/outcome"\n\n'
            f'[[agui]]\nname = "legacy"\nurl = "{self.agent_url}/legacy"\n'
        )
        self.process = subprocess.Popen(
            [
                self.bin, "serve", "--db", self.db, "--listen", f"127.0.0.1:{self.port}",
                "--config", str(config),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"},
        )
        wait_for(f"{self.url}/healthz", self.process, "clarify serve")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=15)
            self.process = None


@dataclass
class Server:
    clarify: Clarify
    agent: str
    person: str

    @property
    def url(self) -> str:
        return self.clarify.url


@pytest.fixture
def server(clarify_bin: str, agent: str, tmp_path: Path) -> Iterator[Server]:
    clarify = Clarify(clarify_bin, tmp_path, agent)
    agent_key = clarify.key("agent", "frontend")
    person = clarify.key("responder", "alice")
    clarify.start()
    try:
        yield Server(clarify, agent_key, person)
    finally:
        clarify.stop()


def parse_event(data: str) -> Any:
    """One SSE `data:` as an AG-UI event of the ag-ui-protocol package (its own validation)."""
    raw = json.loads(data)
    kinds = {
        EventType.RUN_STARTED: RunStartedEvent,
        EventType.RUN_FINISHED: RunFinishedEvent,
        EventType.CUSTOM: CustomEvent,
        EventType.STATE_SNAPSHOT: StateSnapshotEvent,
    }
    kind = kinds.get(EventType(raw["type"]))
    return kind.model_validate(raw) if kind else raw


def run_input(thread: str, **extra: Any) -> dict[str, Any]:
    body = RunAgentInput(
        thread_id=thread,
        run_id=str(uuid.uuid4()),
        messages=[],
        state={},
        tools=[],
        context=[],
        forwarded_props={},
    ).model_dump(by_alias=True, exclude_none=True)
    body.update(extra)
    return body


def proxied(server: Server, name: str, body: dict[str, Any]) -> tuple[int, list[Any], str]:
    """Runs `body` through the proxy: the status, the events (parsed), and the raw text."""
    events: list[Any] = []
    with httpx.stream(
        "POST",
        f"{server.url}/agui/{name}",
        json=body,
        headers={"Authorization": f"Bearer {server.agent}", "Accept": "text/event-stream"},
        timeout=PATIENCE,
    ) as response:
        if response.status_code != 200:
            return response.status_code, [], response.read().decode()
        assert response.headers["content-type"].startswith("text/event-stream")
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(parse_event(line[len("data: ") :]))
    return 200, events, ""


def custom(events: list[Any], name: str) -> list[CustomEvent]:
    return [e for e in events if isinstance(e, CustomEvent) and e.name == name]


def answer(server: Server, request_id: str, text: str) -> None:
    reply = httpx.post(
        f"{server.url}/v1/requests/{request_id}/answer",
        json={"answers": {"q1": {"text": text}}},
        headers={"Authorization": f"Bearer {server.person}"},
        timeout=PATIENCE,
    )
    assert reply.status_code == 200, reply.text


def replay(server: Server, name: str, thread: str) -> list[Any]:
    reply = httpx.get(
        f"{server.url}/agui/{name}/threads/{thread}/events",
        headers={"Authorization": f"Bearer {server.agent}"},
        timeout=PATIENCE,
    )
    assert reply.status_code == 200, reply.text
    return [
        parse_event(line[len("data: ") :])
        for line in reply.text.splitlines()
        if line.startswith("data: ")
    ]


def replayed_until_finished(server: Server, name: str, thread: str) -> list[Any]:
    """The thread's replay once clarify has resumed the run (it does so on its own)."""
    deadline = time.monotonic() + PATIENCE
    while True:
        events = replay(server, name, thread)
        if any(isinstance(e, RunFinishedEvent) for e in events):
            return events
        if time.monotonic() > deadline:
            pytest.fail(f"clarify did not resume the run of thread {thread}")
        time.sleep(0.2)


def interrupted(server: Server, name: str, thread: str) -> tuple[list[Any], dict[str, Any]]:
    """Runs a new run of `thread` to its interrupt: the events and the one request announced."""
    status, events, text = proxied(server, name, run_input(thread))
    assert status == 200, text
    assert isinstance(events[0], RunStartedEvent)
    assert isinstance(events[-1], RunFinishedEvent)
    [announced] = custom(events, "clarify.requests")
    assert events[-2] is announced, "clarify.requests comes right before RUN_FINISHED"
    [request] = announced.value["requests"]
    assert request["answerUrl"].startswith(f"{server.url}/a/")
    return events, request


def final_region(events: list[Any]) -> str | None:
    snapshots = [e for e in events if isinstance(e, StateSnapshotEvent)]
    return snapshots[-1].snapshot.get("region") if snapshots else None


def test_an_interrupt_answered_elsewhere_is_resumed_by_clarify_with_the_answer(
    server: Server,
) -> None:
    thread = f"deploy-{uuid.uuid4()}"
    events, request = interrupted(server, "deployer", thread)
    finished = events[-1]
    assert finished.outcome is not None and finished.outcome.type == "interrupt"
    [interrupt] = finished.outcome.interrupts
    assert request["interruptId"] == interrupt.id

    record = httpx.get(
        f"{server.url}/v1/requests/{request['requestId']}",
        headers={"Authorization": f"Bearer {server.person}"},
        timeout=PATIENCE,
    ).json()
    assert record["session"] == thread
    assert record["questions"][0]["text"] == "Which region should the cluster run in?"
    assert record["display"], "the request shows which agent and thread ask"

    # The browser is gone; a person answers in the inbox (or Slack) later.
    answer(server, request["requestId"], "eu-west-1")
    resumed = replayed_until_finished(server, "deployer", thread)
    assert isinstance(resumed[0], RunStartedEvent)
    assert resumed[0].thread_id == thread
    assert final_region(resumed) == "eu-west-1", "the resumed run completed with the answer"
    finished = resumed[-1]
    assert finished.outcome is None or finished.outcome.type == "success"


def test_a_legacy_on_interrupt_run_is_resumed_through_forwarded_props(server: Server) -> None:
    thread = f"legacy-{uuid.uuid4()}"
    events, request = interrupted(server, "legacy", thread)
    assert events[-1].outcome is None, "the legacy agent finishes plainly"
    assert custom(events, "on_interrupt"), "the agent's own event passes through unchanged"
    answer(server, request["requestId"], "us-east-2")
    assert final_region(replayed_until_finished(server, "legacy", thread)) == "us-east-2"


def test_a_resume_through_the_proxy_answers_the_request_first(server: Server) -> None:
    thread = f"proxy-{uuid.uuid4()}"
    _, request = interrupted(server, "deployer", thread)
    resume = [{"interruptId": request["interruptId"], "status": "resolved", "payload": "ap-south-1"}]
    status, events, text = proxied(server, "deployer", run_input(thread, resume=resume))
    assert status == 200, text
    assert final_region(events) == "ap-south-1"
    record = httpx.get(
        f"{server.url}/v1/requests/{request['requestId']}",
        headers={"Authorization": f"Bearer {server.person}"},
        timeout=PATIENCE,
    ).json()
    assert record["status"] == "answered"
    assert record["outcome"]["questions"][0]["answer"] == "ap-south-1"
    assert record["outcome"]["answered_via"] == "agui"


def test_a_resume_of_an_interrupt_answered_elsewhere_is_refused_naming_the_answer(
    server: Server,
) -> None:
    thread = f"late-{uuid.uuid4()}"
    _, request = interrupted(server, "deployer", thread)
    answer(server, request["requestId"], "eu-central-1")
    resume = [{"interruptId": request["interruptId"], "status": "resolved", "payload": "us-west-1"}]
    status, _, text = proxied(server, "deployer", run_input(thread, resume=resume))
    assert status == 409, text
    error = json.loads(text)
    assert error["error"]["code"] == "already_resolved"
    assert "eu-central-1" in error["error"]["message"]
    assert "alice" in error["error"]["message"]
    assert final_region(replayed_until_finished(server, "deployer", thread)) == "eu-central-1"


def test_a_resume_naming_an_unknown_interrupt_or_leaving_one_out_is_refused(
    server: Server,
) -> None:
    thread = f"bad-{uuid.uuid4()}"
    _, request = interrupted(server, "deployer", thread)
    unknown = [
        {"interruptId": request["interruptId"], "status": "resolved", "payload": "x"},
        {"interruptId": "no-such-interrupt", "status": "resolved", "payload": "y"},
    ]
    status, _, text = proxied(server, "deployer", run_input(thread, resume=unknown))
    assert status == 400 and json.loads(text)["error"]["code"] == "unknown_interrupt", text
    assert "no-such-interrupt" in text
    # The request is untouched: the person can still answer it.
    answer(server, request["requestId"], "sa-east-1")


def test_a_restart_between_the_interrupt_and_the_answer_still_resumes_the_run(
    server: Server,
) -> None:
    thread = f"restart-{uuid.uuid4()}"
    _, request = interrupted(server, "deployer", thread)
    server.clarify.stop()
    server.clarify.start()
    answer(server, request["requestId"], "me-south-1")
    assert final_region(replayed_until_finished(server, "deployer", thread)) == "me-south-1"


def test_a_malformed_run_input_is_refused_before_anything_is_forwarded(server: Server) -> None:
    status, _, text = proxied(server, "deployer", {"threadId": "t", "messages": []})
    assert status == 400, text
    error = json.loads(text)["error"]
    assert error["code"] == "invalid_input"
    assert "runId" in error["message"]


def test_clarify_agui_run_runs_the_agent_to_its_end_asking_people(
    server: Server, tmp_path: Path
) -> None:
    thread = f"cli-{uuid.uuid4()}"
    run_file = tmp_path / "run.json"
    run_file.write_text(json.dumps(run_input(thread)))
    process = subprocess.Popen(
        [
            server.clarify.bin, "agui", "run", f"{server.clarify.agent_url}/outcome",
            "--input", str(run_file), "--name", "deployer",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CLARIFY_URL": server.url, "CLARIFY_TOKEN": server.agent},
    )
    deadline = time.monotonic() + PATIENCE
    pending: list[Any] = []
    while not pending:
        pending = httpx.get(
            f"{server.url}/v1/requests?status=pending&session={thread}",
            headers={"Authorization": f"Bearer {server.person}"},
            timeout=PATIENCE,
        ).json()["requests"]
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("clarify agui run asked nobody")
        time.sleep(0.1)
    answer(server, pending[0]["id"], "af-south-1")
    out, err = process.communicate(timeout=PATIENCE)
    assert process.returncode == 0, err
    events = [parse_event(line) for line in out.splitlines() if line.strip()]
    assert isinstance(events[0], RunStartedEvent)
    [announced] = custom(events, "clarify.requests")
    assert announced.value["requests"][0]["requestId"] == pending[0]["id"]
    finished = [e for e in events if isinstance(e, RunFinishedEvent)]
    assert len(finished) == 2, "the interrupted run, then the resumed one"
    assert final_region(events) == "af-south-1"
