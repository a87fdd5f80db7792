"""Fixtures: a real `clarify serve` on a real socket, keys made with `clarify keys create`, and a
person answering requests from another thread.

The server binary is `CLARIFY_BIN` (the workspace's `scripts/test` sets it to the debug build it
just made); without it the tests build `clarify` with cargo.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from clarify_hitl import Client, Record

REPO = Path(__file__).resolve().parents[3]


def _clarify_bin() -> Path:
    given = os.environ.get("CLARIFY_BIN")
    if given and Path(given).is_file():
        return Path(given)
    if shutil.which("cargo") is None:
        pytest.fail(
            "no clarify binary: set CLARIFY_BIN to one, or install Rust so the tests can run "
            "`cargo build -p clarify --locked`"
        )
    target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
    print(f"building clarify into {target} (set CLARIFY_BIN to skip this)")
    subprocess.run(["cargo", "build", "-p", "clarify", "--locked"], cwd=REPO, check=True)
    return target / "debug" / "clarify"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def page_programs(page: str) -> list[str]:
    """The Python programs of the handbook page `docs/src/<page>`, in order."""
    text = (REPO / "docs/src" / page).read_text()
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


class ChildProcess:
    """A process a test starts and ends: `kill` crashes it (SIGKILL), `stop` asks it to end
    (SIGTERM) and kills it after `grace` seconds."""

    process: subprocess.Popen[bytes] | None = None
    grace: float = 10

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(self.grace)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(self.grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
            self.process = None


class ClarifyServer(ChildProcess):
    """`clarify serve` on a SQLite file in a temporary directory; restartable on its port."""

    def __init__(self, binary: Path, directory: Path) -> None:
        self.binary = binary
        self.db = f"sqlite://{directory / 'clarify.db'}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = directory / "serve.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    "serve",
                    "--listen",
                    f"127.0.0.1:{self.port}",
                    "--db",
                    self.db,
                    "--webhook-first-retry",
                    "1s",
                    # The webhook receivers of the tests listen on 127.0.0.1, which the
                    # outbound guard refuses unless allowed.
                    "--outbound-allow",
                    "127.0.0.0/8",
                ],
                stdout=log,
                stderr=log,
                env={**os.environ, "NO_COLOR": "1", "RUST_LOG": "warn"},
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"clarify serve exited: {self.log.read_text()[-2000:]}")
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.05)
        raise RuntimeError("clarify serve did not become healthy within 30 s")

    def key(self, role: str, name: str) -> str:
        done = subprocess.run(
            [str(self.binary), "keys", "create", "--role", role, "--name", name, "--db", self.db],
            capture_output=True,
            check=True,
            text=True,
        )
        return done.stdout.strip()


@pytest.fixture(scope="session")
def clarify_bin() -> Path:
    return _clarify_bin()


@pytest.fixture(scope="session")
def server(clarify_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClarifyServer]:
    s = ClarifyServer(clarify_bin, tmp_path_factory.mktemp("clarify"))
    s.start()
    yield s
    s.stop()


@pytest.fixture(scope="session")
def agent_key(server: ClarifyServer) -> str:
    return server.key("agent", "py-agent")


@pytest.fixture(scope="session")
def responder_key(server: ClarifyServer) -> str:
    return server.key("responder", "alice")


@pytest.fixture
def agent(server: ClarifyServer, agent_key: str) -> Iterator[Client]:
    with Client(server.url, agent_key) as client:
        yield client


@pytest.fixture
def alice(server: ClarifyServer, responder_key: str) -> Iterator[Client]:
    with Client(server.url, responder_key) as client:
        yield client


@pytest.fixture
def session() -> str:
    """A session name of this test's own, so tests sharing the server do not see each other."""
    return f"s-{uuid.uuid4().hex[:12]}"


class Person:
    """Answers each pending request of one session, in creation order, from another thread.

    `decide(record)` returns the answer body, or `None` to leave that request alone. The
    records answered, and their outcomes, are kept in order.
    """

    def __init__(self, client: Client, session: str, decide: Callable[[Record], Any]) -> None:
        self.client = client
        self.session = session
        self.decide = decide
        self.answered: list[Record] = []
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._seen: set[str] = set()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Person:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        if self.error is not None and exc[0] is None:
            raise self.error

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                pending = list(self.client.list(status="pending", session=self.session))
                for record in reversed(pending):
                    if record.id in self._seen:
                        continue
                    body = self.decide(record)
                    if body is None:
                        continue
                    self._seen.add(record.id)
                    self.client.answer(record.id, body)
                    self.answered.append(record)
                self._stop.wait(0.05)
        except BaseException as e:  # reported by __exit__
            self.error = e


@pytest.fixture
def person(alice: Client, session: str) -> Callable[[Callable[[Record], Any]], Person]:
    def make(decide: Callable[[Record], Any]) -> Person:
        return Person(alice, session, decide)

    return make
