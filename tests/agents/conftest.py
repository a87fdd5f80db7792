"""What every agent's end-to-end test shares: a real `clarify serve`, a person answering through
its API, and a home folder of the agent's own with clarify's hook installed by
`clarify hook install`.

The agents are the ones `scripts/agents` installed (CLARIFY_TEST_AGENTS, the folder holding
`node_modules/.bin`); the server is CLARIFY_BIN. Without either, the tests skip with the reason,
or fail under CLARIFY_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REQUIRE = os.environ.get("CLARIFY_REQUIRE_SERVICES") == "1"
# How long a test waits for an agent to raise a request or to finish.
PATIENCE = 60.0


def missing(reason: str) -> None:
    if REQUIRE:
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def clarify_bin() -> str:
    given = os.environ.get("CLARIFY_BIN", "")
    if not given or not Path(given).is_file():
        missing(f"CLARIFY_BIN ({given or 'unset'}) is not a clarify binary")
    return given


@pytest.fixture(scope="session")
def agents_bin() -> Path:
    given = os.environ.get("CLARIFY_TEST_AGENTS", "")
    folder = Path(given) / "node_modules" / ".bin"
    if not given or not folder.is_dir():
        missing(
            f"CLARIFY_TEST_AGENTS ({given or 'unset'}) has no installed agents; run scripts/agents"
        )
    return folder


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Clarify:
    """A `clarify serve` of its own, with an agent key for the hooks and a responder key for the
    person the test plays."""

    def __init__(self, binary: str, folder: Path) -> None:
        self.binary = binary
        self.db = f"sqlite://{folder}/clarify.db"
        self.env = {**os.environ, "NO_COLOR": "1"}
        self.agent_key = self._key("agent", "agents")
        self.responder_key = self._key("responder", "alice")
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = open(folder / "clarify.log", "wb")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(
            [binary, "serve", "--db", self.db, "--listen", self.url.removeprefix("http://")],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/healthz", timeout=1)
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError(
                        f"clarify serve did not start; see {folder}/clarify.log"
                    ) from None
                time.sleep(0.05)

    def _key(self, role: str, name: str) -> str:
        return subprocess.run(
            [
                self.binary, "keys", "create", "--role", role, "--name", name,
                "--db", self.db, "--create",
            ],
            check=True,
            capture_output=True,
            text=True,
            env=self.env,
        ).stdout.strip()

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)
        self.log.close()

    def api(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.responder_key}",
                "Content-Type": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method} {path}: {e.code} {e.read().decode()}") from None

    def requests(self, status: str | None = None) -> list[dict[str, Any]]:
        query = f"?status={status}&limit=500" if status else "?limit=500"
        listed = self.api("GET", f"/v1/requests{query}")
        return listed["requests"] if isinstance(listed, dict) else listed

    def next_pending(
        self, run: AgentRun | None = None, timeout: float = PATIENCE
    ) -> dict[str, Any]:
        """The next request waiting for a person (oldest first); fails when none comes in time,
        or when `run`'s agent exits first."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pending = self.requests("pending")
            if pending:
                return min(pending, key=lambda r: r["created_at"])
            if run is not None and run.process.poll() is not None:
                raise AssertionError(
                    f"the agent exited before asking anything:\n{run.output()}{run.told()}"
                )
            time.sleep(0.1)
        raise AssertionError(
            f"no request reached clarify within {timeout}s" + (f":\n{run.output()}" if run else "")
        )

    def answer(self, request: dict[str, Any], answer: dict[str, Any]) -> Any:
        question = request["questions"][0]["id"]
        return self.api(
            "POST", f"/v1/requests/{request['id']}/answer", {"answers": {question: answer}}
        )

    def approve(self, request: dict[str, Any], **extra: Any) -> Any:
        return self.answer(request, {"decision": "approve", **extra})

    def deny(self, request: dict[str, Any], reason: str) -> Any:
        return self.answer(request, {"decision": "deny", "reason": reason})


@pytest.fixture
def clarify(clarify_bin: str, tmp_path: Path) -> Iterator[Clarify]:
    server = Clarify(clarify_bin, tmp_path)
    yield server
    server.stop()


@dataclass
class AgentRun:
    """An agent started in the background while the test answers for the person."""

    process: subprocess.Popen[str]
    log: Path
    # The scripted model the agent talks to, whose record shows what the agent told it.
    model: Any = None

    def told(self) -> str:
        if self.model is None:
            return ""
        return f"\nthe tool results the model got: {self.model.tool_results()}"

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-6000:]

    def wait(self, timeout: float = PATIENCE) -> str:
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError(
                f"the agent did not finish within {timeout}s:\n{self.output()}"
            ) from None
        return self.output()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@dataclass
class Sandbox:
    """An agent's home folder and working folder, with the environment it runs in: no network
    but 127.0.0.1, its configuration in the temporary home, clarify's URL and agent key."""

    home: Path
    work: Path
    env: dict[str, str]
    clarify: Clarify
    runs: list[AgentRun]

    def install_hook(self, agent: str, *flags: str) -> dict[str, Any]:
        """Runs `clarify hook install --agent AGENT` as a user would (user scope, this home)."""
        done = subprocess.run(
            [self.clarify.binary, "hook", "install", "--agent", agent, *flags],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        return {"stdout": done.stdout}

    def start(self, argv: list[str], model: Any = None, **popen: Any) -> AgentRun:
        log = self.home / f"agent-{len(self.runs)}.log"
        with open(log, "w") as out:
            process = subprocess.Popen(
                argv,
                cwd=self.work,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                text=True,
                **popen,
            )
        run = AgentRun(process, log, model)
        self.runs.append(run)
        return run


@pytest.fixture
def sandbox(clarify: Clarify, tmp_path: Path) -> Iterator[Sandbox]:
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "TMPDIR": str(tmp_path),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
        "NO_COLOR": "1",
        "CLARIFY_URL": clarify.url,
        "CLARIFY_TOKEN": clarify.agent_key,
        "NO_PROXY": "127.0.0.1,localhost",
    }
    box = Sandbox(home, work, env, clarify, [])
    yield box
    for run in box.runs:
        run.stop()
