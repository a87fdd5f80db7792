"""`clarify mcp` (stdio) and `/mcp` (Streamable HTTP) driven by the official MCP Python SDK.

The SDK speaks 2025-11-25 over the `initialize` handshake (mode "legacy") and the stateless
2026-07-28 (mode "2026-07-28"), where it drives `input_required` rounds itself. In both, the
client declares form elicitation and its user answers clarify's form: the answer resolves the
request. (2025-06-18, which the SDK no longer offers, is covered by the Rust tests.)

The server binary is CLARIFY_BIN; without it the tests build `clarify` with cargo.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
MODES = ["legacy", "2026-07-28"]
VERSIONS = {"legacy": "2025-11-25", "2026-07-28": "2026-07-28"}
QUESTION = {"question": "Which database?", "choices": ["Postgres", "SQLite"]}


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


def answering(content: dict[str, Any], seen: list[types.ElicitRequestParams]) -> Any:
    """An elicitation callback: the client's user fills the form with `content`."""

    async def callback(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        seen.append(params)
        return types.ElicitResult(action="accept", content=content)

    return callback


def message_of(params: types.ElicitRequestParams) -> str:
    return str(params.model_dump(by_alias=True)["message"])


@pytest.mark.parametrize("mode", MODES)
def test_stdio_asks_in_the_client(clarify_bin: str, tmp_path: Path, mode: str) -> None:
    seen: list[types.ElicitRequestParams] = []

    async def main() -> None:
        server = StdioServerParameters(
            command=clarify_bin, args=["mcp", "--db", f"sqlite://{tmp_path}/clarify.db"]
        )
        async with Client(
            server, mode=mode, elicitation_callback=answering({"answer": "postgres"}, seen)
        ) as client:
            assert client.protocol_version == VERSIONS[mode]
            tools = await client.list_tools()
            assert "ask_human" in [t.name for t in tools.tools]
            result = await client.call_tool("ask_human", QUESTION)
            text = result.content[0].text  # type: ignore[union-attr]
            assert text.startswith("answered by ") and text.endswith(": Postgres"), text
            assert result.structured_content is not None
            assert result.structured_content["status"] == "answered"

    anyio.run(main)
    assert [message_of(p) for p in seen] == ["Which database?"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture
def http_server(clarify_bin: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    db = f"sqlite://{tmp_path}/clarify.db"
    env = {**os.environ, "NO_COLOR": "1"}
    key = subprocess.run(
        [
            clarify_bin, "keys", "create", "--role", "agent", "--name", "bot",
            "--db", db, "--create",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout.strip()
    port = free_port()
    process = subprocess.Popen(
        [clarify_bin, "serve", "--db", db, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=1)
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                pytest.fail("clarify serve did not start")
            time.sleep(0.1)
    try:
        yield url, key
    finally:
        process.terminate()
        process.wait(timeout=15)


@pytest.mark.parametrize("mode", MODES)
def test_http_asks_in_the_client(http_server: tuple[str, str], mode: str) -> None:
    url, key = http_server
    seen: list[types.ElicitRequestParams] = []

    async def main() -> None:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        transport = streamable_http_client(f"{url}/mcp", http_client=http)
        async with Client(
            transport, mode=mode, elicitation_callback=answering({"answer": "sqlite"}, seen)
        ) as client:
            assert client.protocol_version == VERSIONS[mode]
            result = await client.call_tool("ask_human", QUESTION)
            text = result.content[0].text  # type: ignore[union-attr]
            assert text == "answered by bot: SQLite", text

    anyio.run(main)
    assert len(seen) == 1
