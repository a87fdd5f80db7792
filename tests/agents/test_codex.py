"""Codex through clarify's hook, as `clarify hook install --agent codex` writes it.

`codex exec` never asks for approval (it runs with the approval policy `never` whatever the
configuration says: an escalated command is refused and `PermissionRequest` never runs), so these
tests drive the interactive TUI in a terminal of its own (tmux). With `approval_policy =
"on-request"`, a command the model asks to run outside the sandbox, and a patch outside the
folders the sandbox may write, reach `PermissionRequest`, where clarify asks the person.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import PATIENCE, Clarify, Sandbox, missing
from models import Call, OpenAIModel

# A model Codex knows (its tools then include `apply_patch`), acknowledged as already offered its
# successor so that no upgrade notice waits for a key.
MODEL = "gpt-5.5"
SUCCESSOR = "gpt-6-sol"


class Terminal:
    """Codex's TUI in a detached tmux session on a socket of the test's own."""

    def __init__(self, sandbox: Sandbox, argv: list[str]) -> None:
        self.socket = str(sandbox.home / "tmux.sock")
        env = " ".join(shlex.quote(f"{k}={v}") for k, v in sandbox.env.items())
        command = f"env -i {env} {shlex.join(argv)}"
        subprocess.run(
            [
                "tmux",
                "-S",
                self.socket,
                "new-session",
                "-d",
                "-s",
                "codex",
                "-x",
                "200",
                "-y",
                "50",
                "-c",
                str(sandbox.work),
                command,
            ],
            check=True,
        )

    def screen(self) -> str:
        shown = subprocess.run(
            ["tmux", "-S", self.socket, "capture-pane", "-p", "-t", "codex"],
            capture_output=True,
            text=True,
        )
        return "\n".join(line.rstrip() for line in shown.stdout.splitlines() if line.strip())

    def close(self) -> None:
        subprocess.run(["tmux", "-S", self.socket, "kill-server"], capture_output=True)


@pytest.fixture
def codex(agents_bin: Path, sandbox: Sandbox) -> Iterator[Any]:
    """Starts Codex's TUI against a scripted model, with the hook installed; yields `start`."""
    if shutil.which("tmux") is None:
        missing("tmux is not installed (the Codex tests run its TUI in one)")
    codex_home = sandbox.home / ".codex"
    codex_home.mkdir()
    sandbox.env.update({"CODEX_HOME": str(codex_home), "SCRIPTED_API_KEY": "scripted"})
    terminals: list[Terminal] = []

    def start(model: OpenAIModel, *hook_flags: str) -> Terminal:
        (codex_home / "config.toml").write_text(f"""
model = "{MODEL}"
model_provider = "scripted"
approval_policy = "on-request"
sandbox_mode = "workspace-write"
check_for_update_on_startup = false

# The test's folders are under /tmp, which Codex lets commands and patches write by default.
[sandbox_workspace_write]
exclude_slash_tmp = true
exclude_tmpdir_env_var = true

[analytics]
enabled = false

[notice.model_migrations]
"{MODEL}" = "{SUCCESSOR}"

[projects."{sandbox.work}"]
trust_level = "trusted"

[model_providers.scripted]
name = "scripted"
base_url = "{model.url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
""")
        sandbox.install_hook("codex", *hook_flags)
        # The hooks are new to Codex: trusted here for this run, as automation does.
        terminal = Terminal(
            sandbox, [str(agents_bin / "codex"), "--dangerously-bypass-hook-trust", "Do the task."]
        )
        terminals.append(terminal)
        return terminal

    yield start
    for terminal in terminals:
        terminal.close()


def finish(model: OpenAIModel, terminal: Terminal) -> None:
    """Waits until the model has had every scripted call's result back (the TUI stays open)."""
    deadline = time.monotonic() + PATIENCE
    while time.monotonic() < deadline:
        if len(model.tool_results()) >= len(model.script):
            return
        time.sleep(0.1)
    raise AssertionError(f"Codex did not finish the script; its screen:\n{terminal.screen()}")


def pending(clarify: Clarify, terminal: Terminal) -> dict[str, Any]:
    try:
        return clarify.next_pending()
    except AssertionError as e:
        raise AssertionError(f"{e}; Codex's screen:\n{terminal.screen()}") from None


def escalated(command: str) -> Call:
    return Call(
        "exec_command",
        {"cmd": command, "sandbox_permissions": "require_escalated", "justification": "note a run"},
    )


def test_escalated_command_approved_runs(codex: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    with OpenAIModel([escalated("echo ran > ran.txt")]) as model:
        terminal = codex(model)
        request = pending(clarify, terminal)
        assert request["agent"] == "codex"
        action = request["questions"][0]["action"]
        assert action == {"name": "Bash", "arguments": {"command": "echo ran > ran.txt"}}, action
        assert request["context"]["justification"] == "note a run"
        clarify.approve(request)
        finish(model, terminal)
    assert (sandbox.work / "ran.txt").read_text() == "ran\n"


def test_escalated_command_denied_does_not_run(
    codex: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    with OpenAIModel([escalated("echo ran > ran.txt")]) as model:
        terminal = codex(model)
        clarify.deny(pending(clarify, terminal), "not on this machine")
        finish(model, terminal)
    assert not (sandbox.work / "ran.txt").exists()
    assert "not on this machine" in model.result_text(0)


def test_apply_patch_approved(codex: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    # A patch inside the folders the sandbox may write runs without asking; one outside them asks.
    target = sandbox.home / "notes.txt"
    patch = f"*** Begin Patch\n*** Add File: {target}\n+patched\n*** End Patch\n"
    with OpenAIModel([Call("apply_patch", {"input": patch})]) as model:
        terminal = codex(model)
        request = pending(clarify, terminal)
        action = request["questions"][0]["action"]
        assert action["name"] == "apply_patch"
        assert "+patched" in json.dumps(action["arguments"])
        clarify.approve(request)
        finish(model, terminal)
    assert target.read_text() == "patched\n"


def test_policy_deny_at_pre_tool_use(codex: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    policy = sandbox.home / "policy.toml"
    policy.write_text('deny = ["Bash"]\n')
    with OpenAIModel([escalated("echo ran > ran.txt")]) as model:
        terminal = codex(model, "--policy", str(policy))
        finish(model, terminal)
    assert not (sandbox.work / "ran.txt").exists()
    assert "policy does not allow Bash" in model.result_text(0)
    assert clarify.requests() == []
