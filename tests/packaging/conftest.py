"""What the packaging tests share: the clarify binary, tools that may be missing, podman, the image
built by scripts/image, a fresh PostgreSQL database, and small HTTP helpers for the API.

A tool that cannot be had skips the tests that need it with a reason; with
CLARIFY_REQUIRE_SERVICES=1 (as CI sets it) that is a failure instead.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIRE = os.environ.get("CLARIFY_REQUIRE_SERVICES") == "1"


def need(ok: bool, reason: str) -> None:
    """Skips the test when `ok` is false, or fails it when services are required."""
    if ok:
        return
    if REQUIRE:
        pytest.fail(f"{reason} (CLARIFY_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


def need_tool(name: str, why: str) -> str:
    path = shutil.which(name)
    need(path is not None, f"{name} is not installed; {why}")
    return path  # type: ignore[return-value]


def run(cmd: list[str], *, check: bool = True, timeout: float = 600, **kwargs) -> subprocess.CompletedProcess:
    """Runs a command, its output captured as text; a failure shows both streams."""
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(map(str, cmd))} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


@pytest.fixture(scope="session")
def clarify_bin() -> Path:
    """CLARIFY_BIN (scripts/test sets it to the workspace's debug build), or a debug build."""
    given = os.environ.get("CLARIFY_BIN")
    if given:
        return Path(given)
    run(["cargo", "build", "--locked", "-p", "clarify"], cwd=ROOT, timeout=3600)
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "clarify"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Api:
    """The HTTP API of one server, with a key."""

    def __init__(self, base: str, key: str | None = None):
        self.base = base.rstrip("/")
        self.key = key

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 10) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("content-type", "application/json")
        if self.key:
            req.add_header("authorization", f"Bearer {self.key}")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                raw = resp.read()
                return resp.status, json.loads(raw) if raw.strip().startswith(b"{") else {}
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, json.loads(raw) if raw.strip().startswith(b"{") else {}

    def status(self, path: str, timeout: float = 2) -> int | None:
        """The status of a GET, or None when nothing answers."""
        try:
            return self.call("GET", path, timeout=timeout)[0]
        except (OSError, urllib.error.URLError):
            return None

    def wait_ready(self, within: float = 60, path: str = "/readyz", describe=lambda: "") -> float:
        """Polls until `path` answers 200; returns the seconds it took."""
        start = time.monotonic()
        while time.monotonic() - start < within:
            if self.status(path) == 200:
                return time.monotonic() - start
            time.sleep(0.05)
        raise AssertionError(f"{self.base}{path} did not answer 200 within {within} s\n{describe()}")

    def ask(self, question: str, choices: list[str]) -> str:
        status, record = self.call("POST", "/v1/requests", {"question": question, "choices": choices})
        assert status == 201, (status, record)
        return record["id"]

    def answer(self, request_id: str, option: str) -> dict:
        status, outcome = self.call("POST", f"/v1/requests/{request_id}/answer", {"option": option})
        assert status == 200, (status, outcome)
        return outcome


def answer_of(record: dict) -> str | None:
    """The first question's answer of a resolved record, or None while it is pending."""
    outcome = record.get("outcome") or {}
    if outcome.get("status") != "answered":
        return None
    return outcome["questions"][0]["answer"]


@pytest.fixture(scope="session")
def admin_key(clarify_bin: Path) -> str:
    """A fresh key in clarify's token format, from `clarify keys generate`."""
    key = run([str(clarify_bin), "keys", "generate"]).stdout.strip()
    assert key and "\n" not in key, f"`clarify keys generate` printed {key!r}"
    return key


class Podman:
    """podman as scripts/packaging configured it (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF)."""

    def __init__(self):
        self.containers: list[str] = []

    def __call__(self, *args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        return run(["podman", *args], check=check, timeout=timeout)

    def start(self, image: str, *args: str, name: str | None = None, env: dict | None = None,
              options: list[str] | None = None) -> str:
        """Starts a container on the host network (the tests stay on loopback)."""
        name = name or f"clarify-test-{secrets.token_hex(4)}"
        cmd = ["run", "-d", "--name", name, "--network", "host"]
        for key, value in (env or {}).items():
            cmd += ["-e", f"{key}={value}"]
        cmd += options or []
        self.containers.append(name)
        self(*cmd, image, *args)
        return name

    def logs(self, name: str) -> str:
        result = self("logs", name, check=False)
        return result.stdout + result.stderr

    def cleanup(self) -> None:
        for name in self.containers:
            self("rm", "--force", "--volumes", name, check=False)
        self.containers.clear()


@pytest.fixture(scope="session")
def podman_session():
    need(os.environ.get("CLARIFY_TEST_PODMAN") == "1" and shutil.which("podman") is not None,
         "podman is not installed (scripts/test installs Debian's podman as root)")
    p = Podman()
    yield p
    p.cleanup()


@pytest.fixture
def podman(podman_session):
    p = Podman()
    yield p
    p.cleanup()


@pytest.fixture(scope="session")
def image(podman_session, clarify_bin: Path) -> str:
    """The image, built by scripts/image over the local Debian base, from the binary under test."""
    base = os.environ.get("CLARIFY_TEST_BASE_IMAGE")
    need(bool(base), "no local Debian base image (scripts/packaging makes it with debootstrap, as root)")
    tag = f"localhost/clarify-test:{os.getpid()}"
    result = run([str(ROOT / "scripts" / "image"), "--base", base, "--tag", tag, "--binary", str(clarify_bin)],
                 timeout=900)
    lines = result.stdout.strip().splitlines()
    assert lines and lines[-1] == tag, f"scripts/image should print the tag last, printed {result.stdout!r}"
    yield tag
    podman_session("rmi", "--force", tag, check=False)
    # The build's intermediate stage, left untagged in this suite's own store.
    podman_session("image", "prune", "--force", check=False)


@pytest.fixture
def postgres_db():
    """A fresh, empty PostgreSQL database (dropped afterwards); its URL."""
    admin_url = os.environ.get("CLARIFY_TEST_POSTGRES")
    need(bool(admin_url), "CLARIFY_TEST_POSTGRES is not set (scripts/test sets it when PostgreSQL answers)")
    psql = need_tool("psql", "the PostgreSQL tests make their database with it")
    name = f"clarify_pkg_{secrets.token_hex(6)}"
    run([psql, admin_url, "-v", "ON_ERROR_STOP=1", "-c", f"CREATE DATABASE {name}"])
    base, _, _ = admin_url.rpartition("/")
    yield f"{base}/{name}"
    run([psql, admin_url, "-c", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=False)
