"""Gemini CLI (`gemini -p --yolo`) through clarify's hook, as `clarify hook install --agent
gemini` writes it.

With `--yolo` Gemini CLI's own policy runs every tool unasked, so clarify's `BeforeTool` hook is
the one that asks (the setup the handbook recommends).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import Clarify, Sandbox
from models import Call, GeminiModel


@pytest.fixture
def gemini(agents_bin: Path, sandbox: Sandbox) -> Any:
    """Starts `gemini -p --yolo` against a scripted model, with the hook installed."""
    settings = sandbox.home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    # Offline and quiet: an API key (no sign-in), no telemetry, no updates.
    settings.write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            }
        )
    )
    sandbox.install_hook("gemini")
    # A headless run trusts its folder this way; `--yolo` is ignored in an untrusted one.
    sandbox.env.update(
        {
            "GEMINI_API_KEY": "scripted",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
    )

    def start(model: GeminiModel) -> Any:
        sandbox.env["GOOGLE_GEMINI_BASE_URL"] = model.url
        return sandbox.start(
            [str(agents_bin / "gemini"), "-p", "Do the task.", "--yolo", "--output-format", "json"],
            model,
        )

    return start


def test_write_file_approved(gemini: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    notes = sandbox.work / "notes.txt"
    with GeminiModel(
        [Call("write_file", {"file_path": str(notes), "content": "hello\n"})]
    ) as model:
        run = gemini(model)
        request = clarify.next_pending(run)
        assert request["agent"] == "gemini"
        assert request["questions"][0]["action"]["name"] == "write_file"
        clarify.approve(request)
        run.wait()
    assert notes.read_text() == "hello\n"
    assert not model.tool_results()[0].is_error


def test_write_file_denied_tells_the_model_why(
    gemini: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    notes = sandbox.work / "notes.txt"
    with GeminiModel(
        [Call("write_file", {"file_path": str(notes), "content": "hello\n"})]
    ) as model:
        run = gemini(model)
        clarify.deny(clarify.next_pending(run), "no new files")
        run.wait()
    assert not notes.exists()
    assert "no new files" in model.result_text(0)


def test_run_shell_command_approved(gemini: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    shell = Call(
        "run_shell_command", {"command": "echo ran > ran.txt", "description": "note a run"}
    )
    with GeminiModel([shell]) as model:
        run = gemini(model)
        request = clarify.next_pending(run)
        assert request["questions"][0]["action"]["arguments"]["command"] == "echo ran > ran.txt"
        clarify.approve(request)
        run.wait()
    assert (sandbox.work / "ran.txt").read_text() == "ran\n"


def test_run_shell_command_denied(gemini: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    shell = Call(
        "run_shell_command", {"command": "echo ran > ran.txt", "description": "note a run"}
    )
    with GeminiModel([shell]) as model:
        run = gemini(model)
        clarify.deny(clarify.next_pending(run), "not now")
        run.wait()
    assert not (sandbox.work / "ran.txt").exists()
    assert "not now" in model.result_text(0)


def test_replace_is_shown_as_a_diff(gemini: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    app = sandbox.work / "app.py"
    app.write_text("x = 1\n")
    edit = Call(
        "replace",
        {
            "file_path": str(app),
            "old_string": "x = 1",
            "new_string": "x = 2",
            "instruction": "Set x to two.",
        },
    )
    with GeminiModel([edit]) as model:
        run = gemini(model)
        request = clarify.next_pending(run)
        shown = json.dumps(request["display"])
        assert "-x = 1" in shown and "+x = 2" in shown, shown
        clarify.approve(request)
        run.wait()
    assert app.read_text() == "x = 2\n"
