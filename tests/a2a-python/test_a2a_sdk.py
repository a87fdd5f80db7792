"""`/a2a` and the agent card driven by the official A2A Python SDK (a2a-sdk).

Each test starts `clarify serve` with `[a2a] enabled = true` on a SQLite file of its own and
calls it as an A2A client would: the card read by the SDK's resolver, the client made from it
(1.0 over JSON-RPC, with an agent key as bearer), and a person answering through the HTTP API
with a responder key while the client waits. The 0.3 client is the SDK's compat transport.
Errors the SDK has no call for are sent as raw JSON-RPC.

The server binary is CLARIFY_BIN; without it the tests build `clarify` with cargo.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.types.a2a_pb2 import (
    AgentCard,
    AuthenticationInfo,
    CancelTaskRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
)
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from google.protobuf import json_format, struct_pb2

REPO = Path(__file__).resolve().parents[2]
PATIENCE = 20.0


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


@dataclass
class Clarify:
    """`clarify serve` on a database of its own, which `restart` keeps."""

    bin: str
    dir: Path
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
        config.write_text("[a2a]\nenabled = true\n")
        self.process = subprocess.Popen(
            [
                self.bin, "serve", "--db", self.db, "--listen", f"127.0.0.1:{self.port}",
                "--config", str(config), "--outbound-allow", "127.0.0.1/32",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "NO_COLOR": "1"},
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1)
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    pytest.fail("clarify serve did not start")
                time.sleep(0.1)

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
def server(clarify_bin: str, tmp_path: Path) -> Iterator[Server]:
    clarify = Clarify(clarify_bin, tmp_path)
    agent = clarify.key("agent", "planner")
    person = clarify.key("responder", "alice")
    clarify.start()
    try:
        yield Server(clarify, agent, person)
    finally:
        clarify.stop()


def http(token: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=PATIENCE)


async def card_of(server: Server) -> AgentCard:
    async with httpx.AsyncClient(timeout=PATIENCE) as plain:
        return await A2ACardResolver(plain, server.url).get_agent_card()


async def client_of(server: Server, streaming: bool = False, **config: Any) -> Client:
    card = await card_of(server)
    return ClientFactory(
        ClientConfig(streaming=streaming, httpx_client=http(server.agent), **config)
    ).create(card)


def text_message(text: str, context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        context_id=context_id,
        parts=[Part(text=text)],
    )


def data_message(body: dict[str, Any]) -> Message:
    value = struct_pb2.Value()
    json_format.ParseDict(body, value)
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(data=value)])


def send(message: Message, immediately: bool = False) -> SendMessageRequest:
    return SendMessageRequest(
        message=message,
        configuration=SendMessageConfiguration(return_immediately=immediately),
    )


def outcome(task: Task) -> dict[str, Any]:
    """The outcome the task's `outcome` artifact holds."""
    [artifact] = task.artifacts
    assert artifact.name == "outcome"
    value: dict[str, Any] = json_format.MessageToDict(artifact.parts[0].data)
    return value


async def answer(server: Server, text: str, task_id: str | None = None) -> None:
    """A person answers the pending request (task `task_id`, or the only one) with `text`."""
    async with http(server.person) as person:
        deadline = time.monotonic() + PATIENCE
        while task_id is None:
            page = (await person.get(f"{server.url}/v1/requests?status=pending")).json()
            if page["requests"]:
                task_id = page["requests"][0]["id"]
            elif time.monotonic() > deadline:
                pytest.fail("no request was created")
            else:
                await asyncio.sleep(0.05)
        reply = await person.post(
            f"{server.url}/v1/requests/{task_id}/answer", json={"answers": {"q1": {"text": text}}}
        )
        assert reply.status_code == 200, reply.text


async def only(events: Any) -> list[StreamResponse]:
    return [event async for event in events]


def test_the_card_names_the_skills_the_endpoint_and_bearer_auth(server: Server) -> None:
    card = asyncio.run(card_of(server))
    assert card.name == "clarify"
    assert [s.id for s in card.skills] == ["ask-human", "approve-action"]
    assert card.capabilities.streaming and card.capabilities.push_notifications
    bearer = card.security_schemes["bearer"].http_auth_security_scheme
    assert bearer.scheme == "Bearer"
    assert "bearer" in card.security_requirements[0].schemes
    versions = {(i.url, i.protocol_binding, i.protocol_version) for i in card.supported_interfaces}
    assert versions == {
        (f"{server.url}/a2a", "JSONRPC", "1.0"),
        (f"{server.url}/a2a", "JSONRPC", "0.3"),
    }


def test_a_blocking_send_returns_the_persons_answer(server: Server) -> None:
    async def main() -> None:
        client = await client_of(server)
        asking = asyncio.create_task(
            only(client.send_message(send(text_message("Which region?", "run-7"))))
        )
        await answer(server, "eu-west-1")
        [event] = await asking
        task = event.task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.context_id == "run-7"
        result = outcome(task)
        assert result["request_id"] == task.id
        assert result["status"] == "answered"
        assert result["answered_by"] == "alice"
        assert result["questions"][0]["question"] == "Which region?"
        assert result["questions"][0]["answer"] == "eu-west-1"
        await client.close()

    asyncio.run(main())


def test_return_immediately_then_get_and_cancel(server: Server) -> None:
    async def main() -> None:
        client = await client_of(server)
        body = {"question": "Which database?", "choices": ["PostgreSQL", "SQLite"]}
        [event] = await only(client.send_message(send(data_message(body), immediately=True)))
        task = event.task
        assert task.status.state == TaskState.TASK_STATE_WORKING
        assert task.context_id == task.id
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == TaskState.TASK_STATE_WORKING
        assert not got.artifacts
        cancelled = await client.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        assert outcome(cancelled)["status"] == "cancelled"
        assert outcome(cancelled)["answered_via"] == "a2a"
        got = await client.get_task(GetTaskRequest(id=task.id))
        assert got.status.state == TaskState.TASK_STATE_CANCELED
        with pytest.raises(TaskNotCancelableError):
            await client.cancel_task(CancelTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="no-such-task"))
        await client.close()

    asyncio.run(main())


def test_a_message_sent_again_returns_the_same_task(server: Server) -> None:
    async def main() -> None:
        client = await client_of(server)
        message = text_message("Ship it?")
        [first] = await only(client.send_message(send(message, immediately=True)))
        [again] = await only(client.send_message(send(message, immediately=True)))
        assert again.task.id == first.task.id
        await client.close()

    asyncio.run(main())


def test_a_stream_ends_with_the_outcome_and_a_subscription_sees_it_too(server: Server) -> None:
    async def main() -> None:
        streaming = await client_of(server, streaming=True)
        events: list[StreamResponse] = []

        async def follow() -> None:
            async for event in streaming.send_message(send(text_message("Rollback?"))):
                events.append(event)

        following = asyncio.create_task(follow())
        await answer(server, "yes")
        await asyncio.wait_for(following, PATIENCE)
        assert events[0].task.status.state == TaskState.TASK_STATE_WORKING
        task_id = events[0].task.id
        assert events[1].artifact_update.task_id == task_id
        artifact = json_format.MessageToDict(events[1].artifact_update.artifact.parts[0].data)
        assert artifact["questions"][0]["answer"] == "yes"
        assert events[2].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert len(events) == 3

        plain = await client_of(server)
        [created] = await only(plain.send_message(send(text_message("Scale up?"), True)))
        subscribed = asyncio.create_task(
            only(streaming.subscribe(SubscribeToTaskRequest(id=created.task.id)))
        )
        await asyncio.sleep(0.3)
        await answer(server, "no", created.task.id)
        seen = await asyncio.wait_for(subscribed, PATIENCE)
        assert seen[0].task.status.state == TaskState.TASK_STATE_WORKING
        assert seen[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        with pytest.raises(UnsupportedOperationError):
            await only(streaming.subscribe(SubscribeToTaskRequest(id=created.task.id)))
        await streaming.close()
        await plain.close()

    asyncio.run(main())


class Receiver:
    """A push notification receiver on 127.0.0.1 that keeps what it is sent."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        kept = self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (the name http.server calls)
                length = int(self.headers.get("content-length", "0"))
                kept.append(({k.lower(): v for k, v in self.headers.items()}, self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/a2a-events"

    def close(self) -> None:
        self.server.shutdown()


def test_push_notifications_carry_the_task_and_its_credentials(server: Server) -> None:
    receiver = Receiver()
    config = TaskPushNotificationConfig(
        url=receiver.url,
        token="run-7-token",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="receiver-secret"),
    )

    async def main() -> str:
        client = await client_of(server, push_notification_config=config)
        [event] = await only(client.send_message(send(text_message("Deploy?"), True)))
        task_id = event.task.id
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task_id, id="default")
        )
        assert got.url == receiver.url and got.token == "run-7-token"
        listed = await client.list_task_push_notification_configs(
            ListTaskPushNotificationConfigsRequest(task_id=task_id)
        )
        assert [c.url for c in listed.configs] == [receiver.url]
        assert not receiver.received, "nothing is pushed before the task ends"
        await answer(server, "go", task_id)
        await client.close()
        return task_id

    try:
        task_id = asyncio.run(main())
        deadline = time.monotonic() + PATIENCE
        while not receiver.received and time.monotonic() < deadline:
            time.sleep(0.05)
        [(headers, body)] = receiver.received
        assert headers["authorization"] == "Bearer receiver-secret"
        assert headers["x-a2a-notification-token"] == "run-7-token"
        assert headers["content-type"] == "application/a2a+json"
        pushed = json_format.ParseDict(json.loads(body), StreamResponse())
        assert pushed.task.id == task_id
        assert pushed.task.status.state == TaskState.TASK_STATE_COMPLETED
        assert outcome(pushed.task)["questions"][0]["answer"] == "go"
    finally:
        receiver.close()


def test_a_push_url_on_a_private_address_is_refused(server: Server) -> None:
    config = TaskPushNotificationConfig(url="http://10.0.0.7/hook")

    async def main() -> None:
        client = await client_of(server, push_notification_config=config)
        with pytest.raises(InvalidParamsError, match="not allowed"):
            await only(client.send_message(send(text_message("Deploy?"), True)))
        await client.close()
        async with http(server.person) as person:
            page = (await person.get(f"{server.url}/v1/requests")).json()
        assert page["requests"] == [], "a refused message creates no task"

    asyncio.run(main())


def test_a_task_outlives_a_restart(server: Server) -> None:
    async def created() -> str:
        client = await client_of(server)
        [event] = await only(client.send_message(send(text_message("Proceed?", "ctx-1"), True)))
        await client.close()
        return event.task.id

    task_id = asyncio.run(created())
    server.clarify.stop()
    server.clarify.start()

    async def after() -> None:
        client = await client_of(server)
        task = await client.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_WORKING
        assert task.context_id == "ctx-1"
        await answer(server, "proceed", task_id)
        task = await client.get_task(GetTaskRequest(id=task_id))
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert outcome(task)["questions"][0]["answer"] == "proceed"
        await client.close()

    asyncio.run(after())


def test_a_0_3_client_sends_gets_and_cancels(server: Server) -> None:
    async def main() -> None:
        card = await card_of(server)
        transport = CompatJsonRpcTransport(http(server.agent), card, f"{server.url}/a2a")
        response = await transport.send_message(send(text_message("Old client?"), True))
        task = response.task
        assert task.status.state == TaskState.TASK_STATE_WORKING
        got = await transport.get_task(GetTaskRequest(id=task.id))
        assert got.id == task.id
        cancelled = await transport.cancel_task(CancelTaskRequest(id=task.id))
        assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
        asking = asyncio.create_task(transport.send_message(send(text_message("Blocking?"))))
        await answer(server, "still works")
        done = (await asking).task
        assert done.status.state == TaskState.TASK_STATE_COMPLETED
        assert outcome(done)["questions"][0]["answer"] == "still works"
        await transport.close()

    asyncio.run(main())


def rpc(server: Server, method: str, params: Any, version: str | None) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {server.agent}"}
    if version is not None:
        headers["A2A-Version"] = version
    reply = httpx.post(
        f"{server.url}/a2a",
        json={"jsonrpc": "2.0", "id": 7, "method": method, "params": params},
        headers=headers,
    )
    assert reply.status_code == 200, reply.text
    body: dict[str, Any] = reply.json()
    assert body["id"] == 7
    return body


@pytest.mark.parametrize(
    ("method", "params", "version", "code"),
    [
        ("SendPigeon", {}, "1.0", -32601),
        ("tasks/fly", {}, None, -32601),
        ("GetTask", {"id": "x"}, "2.0", -32009),
        ("GetTask", {"id": "x"}, None, -32009),
        ("tasks/get", {"id": "x"}, "1.0", -32009),
        ("GetTask", {"id": "x"}, "1.0", -32001),
        ("tasks/get", {"id": "x"}, None, -32001),
        ("CancelTask", {"id": "x"}, "1.0", -32001),
        ("SendMessage", {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}}, "1.0", -32602),
        (
            "SendMessage",
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://x/y.png"}]}},
            "1.0",
            -32005,
        ),
        (
            "SendMessage",
            {
                "message": {
                    "messageId": "m",
                    "role": "ROLE_USER",
                    "parts": [{"data": {"question": "Again?", "revises": "no-such-request"}}],
                }
            },
            "1.0",
            -32602,
        ),
        (
            "message/send",
            {"message": {"kind": "message", "messageId": "m", "role": "user", "taskId": "gone", "parts": [{"kind": "text", "text": "More?"}]}},
            None,
            -32001,
        ),
    ],
)
def test_json_rpc_errors_carry_a2a_codes(
    server: Server, method: str, params: Any, version: str | None, code: int
) -> None:
    body = rpc(server, method, params, version)
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]


def test_calls_without_a_key_are_refused(server: Server) -> None:
    reply = httpx.post(f"{server.url}/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask"})
    assert reply.status_code == 401
    assert "Bearer" in reply.json()["error"]["message"]
