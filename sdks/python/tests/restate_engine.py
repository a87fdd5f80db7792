"""A real Restate server for the tests: the `restate-server` binary of the pinned npm package
(`CLARIFY_RESTATE_SERVER`, which `scripts/test` sets from `scripts/restate-server`), on free
ports of 127.0.0.1 with its state in a folder of its own, restartable on the same state; and a
Python Restate service (`restate_service.py`) served by hypercorn in a process of its own, so a
test can kill it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from conftest import ChildProcess, free_port

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def _wait_until(what: str, ready: Any, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited: {log.read_text(errors='replace')[-3000:]}")
        try:
            if ready():
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(
        f"{what} was not ready within 60 s: {log.read_text(errors='replace')[-3000:]}"
    )


class RestateServer(ChildProcess):
    """One Restate node: ingress, admin and node ports of its own, state in `directory`."""

    grace = 30

    def __init__(self, binary: Path, directory: Path, env: dict[str, str] | None = None) -> None:
        self.binary = binary
        self.env = env or {}
        self.directory = directory
        self.ingress_port = free_port()
        self.admin_port = free_port()
        self.node_port = free_port()
        self.ingress = f"http://127.0.0.1:{self.ingress_port}"
        self.admin = f"http://127.0.0.1:{self.admin_port}"
        self.log = directory / "restate.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            "RESTATE_INGRESS__BIND_ADDRESS": f"127.0.0.1:{self.ingress_port}",
            "RESTATE_ADMIN__BIND_ADDRESS": f"127.0.0.1:{self.admin_port}",
            "RESTATE_BIND_ADDRESS": f"127.0.0.1:{self.node_port}",
            "RESTATE_ADVERTISED_ADDRESS": f"http://127.0.0.1:{self.node_port}",
            "RESTATE_DISABLE_TELEMETRY": "true",
            # One partition and a small memory budget: a test node, on a shared machine.
            "RESTATE_DEFAULT_NUM_PARTITIONS": "1",
            "RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE": "256MiB",
            "RESTATE_LOG_FORMAT": "compact",
            "RESTATE_LOG_DISABLE_ANSI_CODES": "true",
            "NO_COLOR": "1",
            **self.env,
        }
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.binary),
                    "--base-dir",
                    str(self.directory / "state"),
                    "--no-logo",
                    "--listen-mode",
                    "tcp",
                ],
                stdout=log,
                stderr=log,
                env=env,
            )

        def ready() -> bool:
            admin = httpx.get(self.admin + "/health", timeout=1).status_code == 200
            ingress = httpx.get(self.ingress + "/restate/health", timeout=1).status_code == 200
            return admin and ingress

        _wait_until("restate-server", ready, self.process, self.log)

    def register(self, uri: str) -> None:
        """Registers the service deployment at `uri` (Restate discovers its handlers)."""
        response = httpx.post(
            self.admin + "/deployments", json={"uri": uri, "force": True}, timeout=30
        )
        if response.status_code >= 300:
            raise RuntimeError(f"registering {uri}: {response.status_code} {response.text}")

    def send(self, service: str, handler: str, body: Any) -> str:
        """Starts an invocation without waiting for it; its id."""
        response = httpx.post(f"{self.ingress}/{service}/{handler}/send", json=body, timeout=30)
        response.raise_for_status()
        invocation: str = response.json()["invocationId"]
        return invocation

    def status(self, invocation: str) -> str:
        """The invocation's status in Restate (`running`, `suspended`, `backing-off`, ...)."""
        response = httpx.post(
            self.admin + "/query",
            json={"query": f"SELECT status FROM sys_invocation WHERE id = '{invocation}'"},
            headers={"accept": "application/json"},
            timeout=10,
        )
        response.raise_for_status()
        status: str = response.json()["rows"][0]["status"]
        return status

    def attach_response(self, invocation: str, within: float = 60) -> httpx.Response:
        """The ingress's answer once the invocation completes (its attach), success or not."""
        return httpx.get(f"{self.ingress}/restate/invocation/{invocation}/attach", timeout=within)

    def attach(self, invocation: str, within: float = 60) -> Any:
        """The invocation's result, waiting for it to complete."""
        response = self.attach_response(invocation, within)
        if response.status_code != 200:
            raise AssertionError(f"invocation {invocation}: {response.status_code} {response.text}")
        return response.json()


class PythonService(ChildProcess):
    """`restate_service:app` under hypercorn (HTTP/2 cleartext, which Restate speaks), in a
    process of its own; restartable on the same port."""

    def __init__(self, directory: Path, env: dict[str, str]) -> None:
        self.port = free_port()
        self.uri = f"http://127.0.0.1:{self.port}"
        self.env = env
        self.log = directory / "service.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {
            **os.environ,
            **self.env,
            "PYTHONPATH": os.pathsep.join([str(SRC), str(TESTS)]),
        }
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "hypercorn",
                    "--bind",
                    f"127.0.0.1:{self.port}",
                    "restate_service:app",
                ],
                stdout=log,
                stderr=log,
                env=env,
                cwd=TESTS,
            )

        def ready() -> bool:
            return httpx.get(self.uri + "/health", timeout=1).status_code == 200

        _wait_until("the Python Restate service", ready, self.process, self.log)
