"""Claude Code (`claude -p`) through clarify's hook, as `clarify hook install` writes it.

The model is scripted (models.AnthropicModel); the person is the test, answering through the
API. Each test checks what a user would see: the file on disk, what the model was told, and who
was asked.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from conftest import Clarify, Sandbox
from models import AnthropicModel, Call

HERE = Path(__file__).resolve().parent


@pytest.fixture
def claude(agents_bin: Path, sandbox: Sandbox) -> Any:
    """Starts `claude -p` against a scripted model, in the sandbox, with the hook installed."""
    sandbox.env.update(
        {
            "ANTHROPIC_API_KEY": "sk-scripted",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
    )

    def start(model: AnthropicModel, *flags: str) -> Any:
        sandbox.env["ANTHROPIC_BASE_URL"] = model.url
        return sandbox.start(
            [str(agents_bin / "claude"), "-p", "Do the task.", "--output-format", "json", *flags],
            model,
        )

    return start


def edit_script(path: Path, old: str, new: str) -> list[Call]:
    # Claude Code edits only a file it has read.
    return [
        Call("Read", {"file_path": str(path)}),
        Call("Edit", {"file_path": str(path), "old_string": old, "new_string": new}),
    ]


def test_edit_approved_shows_a_diff_and_a_summary(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    sandbox.install_hook("claude-code")
    app = sandbox.work / "app.py"
    app.write_text("x = 1\n")
    with AnthropicModel(edit_script(app, "x = 1", "x = 2")) as model:
        run = claude(model)
        request = clarify.next_pending(run)
        assert request["agent"] == "claude-code"
        assert request["questions"][0]["action"]["name"] == "Edit"
        assert "app.py" in request["summary"], request["summary"]
        shown = json.dumps(request["display"])
        assert "-x = 1" in shown and "+x = 2" in shown, shown
        clarify.approve(request)
        run.wait()
    assert app.read_text() == "x = 2\n"
    assert not model.tool_results()[-1].is_error, model.tool_results()


def test_edit_denied_tells_the_model_why(claude: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    sandbox.install_hook("claude-code")
    app = sandbox.work / "app.py"
    app.write_text("x = 1\n")
    with AnthropicModel(edit_script(app, "x = 1", "x = 2")) as model:
        run = claude(model)
        clarify.deny(clarify.next_pending(run), "keep x at one")
        run.wait()
    assert app.read_text() == "x = 1\n"
    result = model.tool_results()[-1]
    assert "keep x at one" in result.text and result.is_error, result


def test_edit_approved_with_the_persons_edit(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    sandbox.install_hook("claude-code")
    app = sandbox.work / "app.py"
    app.write_text("x = 1\n")
    with AnthropicModel(edit_script(app, "x = 1", "x = 2")) as model:
        run = claude(model)
        request = clarify.next_pending(run)
        edited = {**request["questions"][0]["action"]["arguments"], "new_string": "x = 3"}
        clarify.approve(request, edited_arguments=edited)
        run.wait()
    assert app.read_text() == "x = 3\n"


def test_ask_user_question_is_answered_in_clarify(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    # `claude -p` offers AskUserQuestion only when something can answer it: a permission prompt
    # tool. The hook answers it first, at PreToolUse.
    sandbox.install_hook("claude-code")
    mcp = {"mcpServers": {"clarify": {"command": clarify.binary, "args": ["mcp"]}}}
    question = {
        "question": "Which database?",
        "header": "Database",
        "multiSelect": False,
        "options": [
            {"label": "Postgres", "description": "the server"},
            {"label": "SQLite", "description": "a file"},
        ],
    }
    with AnthropicModel([Call("AskUserQuestion", {"questions": [question]})]) as model:
        run = claude(
            model,
            "--mcp-config",
            json.dumps(mcp),
            "--permission-prompt-tool",
            "mcp__clarify__approve_tool_use",
        )
        request = clarify.next_pending(run)
        asked = request["questions"][0]
        assert asked["text"] == "Which database?"
        labels = {o["label"]: o["id"] for o in asked["options"]}
        clarify.answer(request, {"option": labels["SQLite"]})
        run.wait()
    assert len(clarify.requests()) == 1
    answer = model.result_text(0)
    assert "SQLite" in answer and "Which database?" in answer, answer


def test_policy_deny_asks_nobody(claude: Any, sandbox: Sandbox, clarify: Clarify) -> None:
    policy = sandbox.home / "policy.toml"
    policy.write_text('deny = ["Bash"]\n')
    sandbox.install_hook("claude-code", "--policy", str(policy))
    with AnthropicModel(
        [Call("Bash", {"command": "touch made.txt", "description": "make a file"})]
    ) as model:
        claude(model).wait()
    assert not (sandbox.work / "made.txt").exists()
    assert "policy does not allow Bash" in model.result_text(0)
    assert clarify.requests() == []


def test_session_grant_lets_the_same_call_through(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    sandbox.install_hook("claude-code")
    append = Call("Bash", {"command": "echo ran >> log.txt", "description": "note a run"})
    with AnthropicModel([append, append]) as model:
        run = claude(model)
        request = clarify.next_pending(run)
        assert request["questions"][0]["scopes"] == ["once", "session", "always"]
        clarify.approve(request, scope="session")
        run.wait()
    assert (sandbox.work / "log.txt").read_text() == "ran\nran\n"
    assert len(clarify.requests()) == 1
    assert len(model.tool_results()) == 2


def test_permission_prompt_tool_asks_through_clarify_mcp(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    mcp = {"mcpServers": {"clarify": {"command": clarify.binary, "args": ["mcp"]}}}
    with AnthropicModel(
        [Call("Bash", {"command": "touch made.txt", "description": "make a file"})]
    ) as model:
        run = claude(
            model,
            "--mcp-config",
            json.dumps(mcp),
            "--permission-prompt-tool",
            "mcp__clarify__approve_tool_use",
        )
        request = clarify.next_pending(run)
        assert request["questions"][0]["action"]["name"] == "Bash"
        clarify.approve(request)
        run.wait()
    assert (sandbox.work / "made.txt").exists()


def test_mcp_elicitation_is_answered_in_clarify(
    claude: Any, sandbox: Sandbox, clarify: Clarify
) -> None:
    sandbox.install_hook("claude-code")
    server = {"command": sys.executable, "args": [str(HERE / "eliciting_server.py")]}
    mcp = {"mcpServers": {"deployer": server}}
    with AnthropicModel([Call("mcp__deployer__deploy", {})]) as model:
        run = claude(model, "--mcp-config", json.dumps(mcp))
        approval = clarify.next_pending(run)
        assert approval["questions"][0]["action"]["name"] == "mcp__deployer__deploy"
        clarify.approve(approval)
        form = clarify.next_pending(run)
        assert form["questions"][0]["text"] == "Which environment?"
        clarify.answer(form, {"values": {"env": "staging"}})
        run.wait()
    assert "deployed to staging" in model.result_text(0)
