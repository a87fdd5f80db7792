"""awaithumans' HTTP ask+answer round trip on SQLite, measured as clarify's HTTP benchmark does.

`Server` runs `awaithumans serve` (one uvicorn worker, as that command starts it) on a fresh
SQLite file, with a reviewer made beforehand by `awaithumans add-user --operator` (a person who
logs in to the dashboard); `load` runs N clients against it. Each client is an agent and a
person, each with its own keep-alive connection, and one round trip is:

1. the agent creates a task: `POST /api/tasks` with `Authorization: Bearer <admin API token>`
   (how its SDK's `await_human` authenticates; the body is what `await_human` sends for a
   yes/no question: payload and response schemas, the form derived from the response model, a
   timeout and a fresh idempotency key);
2. the person completes it: `POST /api/tasks/{id}/complete` with the dashboard's session cookie
   (`awaithumans_session`, from `POST /api/auth/login` once per server), body
   `{"response": {"option": "yes"}}`;
3. the agent sees the outcome: `GET /api/tasks/{id}/poll?timeout=1`, the long-poll its SDK
   waits on, which answers at once with `completed` and the response since the task is done.

A second of warm-up, then a measured window, as clarify's `roundtrip`. Any unexpected status
raises `Failed` naming the call; the caller prints the server's log.
"""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
import uvloop
from pydantic import BaseModel

from awaithumans.forms import extract_form

REVIEWER_EMAIL = "reviewer@example.com"
WARM_UP_SECONDS = 1.0
ANSWER = {"option": "yes"}
CALL_TIMEOUT_SECONDS = 90.0


class Failed(Exception):
    """A step of the awaithumans round trip failed; the message names it."""


class Question(BaseModel):
    question: str


class Decision(BaseModel):
    option: Literal["yes", "no"]


def create_body() -> dict:
    """What `await_human(task="Deploy?", payload=Question(...), response_schema=Decision, ...)`
    posts, without the idempotency key (fresh per task)."""
    return {
        "task": "Deploy?",
        "payload": Question(question="Deploy?").model_dump(mode="json"),
        "payload_schema": Question.model_json_schema(),
        "response_schema": Decision.model_json_schema(),
        "form_definition": extract_form(Decision).model_dump(mode="json"),
        "timeout_seconds": 3600,
        "assign_to": None,
        "notify": None,
        "verifier_config": None,
        "redact_payload": False,
        "task_metadata": None,
    }


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of process `pid` so far (fields 14 and 15 of its stat)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Server:
    """`awaithumans serve` on a fresh SQLite file in `dir`, its output in `dir/serve.log`."""

    def __init__(self, venv_bin: Path, dir: Path) -> None:
        self.dir = dir
        self.log = dir / "serve.log"
        self.db = dir / "awaithumans.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_urlsafe(32)
        self.password = secrets.token_urlsafe(16)
        self.bin = venv_bin / "awaithumans"
        self.env = {
            **os.environ,
            "AWAITHUMANS_DB_PATH": str(self.db),
            "AWAITHUMANS_PAYLOAD_KEY": secrets.token_urlsafe(32),
            "AWAITHUMANS_ADMIN_API_TOKEN": self.token,
        }
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as log:
            added = subprocess.run(
                [str(self.bin), "add-user", "--email", REVIEWER_EMAIL, "--operator",
                 "--password", self.password],
                env=self.env, stdout=log, stderr=subprocess.STDOUT, check=False,
            )
            if added.returncode != 0:
                raise Failed(f"awaithumans add-user exited with {added.returncode}")
            # Its own session, so that a signal to the driver's group does not reach it before
            # the driver stops it.
            self.process = subprocess.Popen(
                [str(self.bin), "serve", "--host", "127.0.0.1", "--port", str(self.port),
                 "--log-level", "warning"],
                env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                raise Failed(f"awaithumans serve exited with {self.process.returncode} at start")
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise Failed("awaithumans serve did not answer GET /api/health within 30 s")
            time.sleep(0.1)

    def cpu_seconds(self) -> float:
        return cpu_seconds(self.process.pid) if self.process else 0.0

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def check(response: httpx.Response, what: str, expected: int) -> httpx.Response:
    if response.status_code != expected:
        raise Failed(f"{what} returned {response.status_code}, not {expected}: {response.text[:300]}")
    return response


async def login(url: str, password: str) -> str:
    """The reviewer's dashboard session cookie."""
    async with httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/api/auth/login", json={"email": REVIEWER_EMAIL, "password": password}
        )
        check(response, "POST /api/auth/login", 204)
        cookie = response.cookies.get("awaithumans_session")
        if not cookie:
            raise Failed("POST /api/auth/login set no awaithumans_session cookie")
        return cookie


@dataclass
class Load:
    per_second: float
    elapsed: float
    server_cpu_us: float
    server_cores: float
    client_cores: float
    p50_ms: float
    p99_ms: float
    max_ms: float


async def call(client: httpx.AsyncClient, method: str, path: str, what: str, expected: int,
               **kwargs) -> dict:
    """One call of the round trip; its JSON body, or `Failed` naming the call."""
    try:
        response = await client.request(method, path, **kwargs)
    except httpx.HTTPError as e:
        raise Failed(f"{method} {path} ({what}): {type(e).__name__} {e}") from e
    return check(response, f"{method} {path} ({what})", expected).json()


async def client_loop(server: Server, cookie: str, body: dict, stop: asyncio.Event,
                      done: list[int], latencies: list[float]) -> None:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    # Longer than the server's own wait for a database connection (SQLAlchemy's pool timeout,
    # 30 s), so that a request queued there ends with the server's answer, not this client's.
    timeout = httpx.Timeout(CALL_TIMEOUT_SECONDS)
    async with (
        httpx.AsyncClient(base_url=server.url, limits=limits, timeout=timeout,
                          headers={"Authorization": f"Bearer {server.token}"}) as agent,
        httpx.AsyncClient(base_url=server.url, limits=limits, timeout=timeout,
                          cookies={"awaithumans_session": cookie}) as person,
    ):
        while not stop.is_set():
            began = time.perf_counter()
            created = await call(agent, "POST", "/api/tasks", "the agent, admin token", 201,
                                 json={**body, "idempotency_key": uuid.uuid4().hex})
            task = created["id"]
            await call(person, "POST", f"/api/tasks/{task}/complete",
                       "the reviewer's session", 200, json={"response": ANSWER})
            outcome = await call(agent, "GET", f"/api/tasks/{task}/poll", "the agent", 200,
                                 params={"timeout": 1})
            if outcome.get("status") != "completed" or outcome.get("response") != ANSWER:
                raise Failed(f"GET /api/tasks/{task}/poll saw {outcome!r}, not the answer")
            latencies.append(time.perf_counter() - began)
            done[0] += 1


async def measure(server: Server, cookie: str, clients: int, seconds: float) -> Load:
    stop = asyncio.Event()
    done = [0]
    latencies: list[float] = []
    body = create_body()
    tasks = [
        asyncio.create_task(client_loop(server, cookie, body, stop, done, latencies))
        for _ in range(clients)
    ]

    async def window() -> Load:
        await asyncio.sleep(WARM_UP_SECONDS)
        before, cpu, own, seen = done[0], server.cpu_seconds(), time.process_time(), len(latencies)
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        count = done[0] - before
        elapsed = time.perf_counter() - started
        server_cpu = server.cpu_seconds() - cpu
        client_cpu = time.process_time() - own
        measured = sorted(latencies[seen:seen + count]) or [0.0]
        return Load(
            per_second=count / elapsed,
            elapsed=elapsed,
            server_cpu_us=server_cpu * 1e6 / max(count, 1),
            server_cores=server_cpu / elapsed,
            client_cores=client_cpu / elapsed,
            p50_ms=measured[len(measured) // 2] * 1e3,
            p99_ms=measured[min(len(measured) - 1, round((len(measured) - 1) * 0.99))] * 1e3,
            max_ms=measured[-1] * 1e3,
        )

    measuring = asyncio.create_task(window())
    # A failing client ends the run at once with its error.
    finished, _ = await asyncio.wait([measuring, *tasks], return_when=asyncio.FIRST_COMPLETED)
    if measuring not in finished:
        stop.set()
        measuring.cancel()
        for t in tasks:
            t.cancel()
        for t in finished:
            t.result()
        raise Failed("a client stopped before the window ended")
    stop.set()
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, BaseException):
            raise result
    return measuring.result()


def round_trips(venv_bin: Path, dir: Path, clients: int, seconds: float) -> Load:
    """`clients` clients against a fresh `awaithumans serve` in `dir`, stopped afterwards."""
    server = Server(venv_bin, dir)
    try:
        server.start()

        async def run() -> Load:
            return await measure(server, await login(server.url, server.password), clients, seconds)

        return uvloop.run(run())
    finally:
        server.stop()
