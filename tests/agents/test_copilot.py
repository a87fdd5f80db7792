"""GitHub Copilot CLI (`copilot -p`) through clarify's hook, as `clarify hook install --agent
copilot` writes it.

Copilot CLI runs offline against a model provider of one's own (`COPILOT_OFFLINE=true` with
`COPILOT_PROVIDER_BASE_URL`; here the Anthropic API), so no GitHub sign-in is needed. With
`--allow-all-tools` its own permission prompt stays out of the way and clarify's `PreToolUse`
hook is the one that asks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conftest import Clarify, Sandbox
from models import AnthropicModel, Call


@pytest.fixture
def copilot(agents_bin: Path, sandbox: Sandbox) -> Any:
    """Starts `copilot -p` against a scripted model, with the hook installed."""
    sandbox.install_hook("copilot")
    sandbox.env.update(
        {
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_TYPE": "anthropic",
            "COPILOT_PROVIDER_API_KEY": "scripted",
            "COPILOT_MODEL": "claude-sonnet-4.5",
            "COPILOT_AUTO_UPDATE": "false",
        }
    )

    def start(model: AnthropicModel) -> Any:
        sandbox.env["COPILOT_PROVIDER_BASE_URL"] = model.url
        return sandbox.start(
            [str(agents_bin / "copilot"), "-p", "Do the task.", "--allow-all-tools"], model
        )

    return start


SHELL = Call("bash", {"command": "echo ran > ran.txt", "description": "note a run"})


def test_shell_command_approved(copilot: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    with AnthropicModel([SHELL]) as model:
        run = copilot(model)
        request = clarify.next_pending(run)
        assert request["agent"] == "copilot"
        # Copilot CLI names its `bash` tool `Bash` to a hook registered as PreToolUse.
        assert request["questions"][0]["action"]["name"] == "Bash"
        assert request["questions"][0]["action"]["arguments"]["command"] == "echo ran > ran.txt"
        clarify.approve(request)
        run.wait()
    assert (sandbox.work / "ran.txt").read_text() == "ran\n"


def test_shell_command_denied_tells_the_model_why(
    copilot: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    with AnthropicModel([SHELL]) as model:
        run = copilot(model)
        clarify.deny(clarify.next_pending(run), "not on this machine")
        run.wait()
    assert not (sandbox.work / "ran.txt").exists()
    assert "not on this machine" in model.result_text(0)
