"""CrewAI crews asking people through a real clarify server.

A real `Crew` whose agent's `LLM` has its `base_url` on a scripted Chat Completions server runs a
task: the model calls a tool, CrewAI runs it (the gated tool asks for an approval and waits; the
`ask_human` tool asks its questions), a person answers through the server's HTTP API, and the
tool's result goes back to the model, which the scripted server records.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# CrewAI reports telemetry and offers traces unless told not to; the tests are offline.
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_DISABLE_TRACKING", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("OTEL_SDK_DISABLED", "true")

pytest.importorskip("crewai")

from conftest import ClarifyServer, Person
from crewai import LLM, Agent, Crew, CrewOutput, Task
from crewai.tools import BaseTool
from pydantic import BaseModel
from scripted_af_crewai import ADA, ChatServer, ToolCall, calls, run_mail_program, say

from clarify_hitl import Client, Record
from clarify_hitl.crewai import AskHumanTool, gated

Answer = Callable[[Callable[[Record], Any]], Person]

# CrewAI's own code warns of its deprecated attributes on every kickoff.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HERE = Path(__file__).resolve().parent


class EmailArguments(BaseModel):
    to: str
    subject: str


class SendEmail(BaseTool):
    name: str = "send_email"
    description: str = "Send an e-mail."
    args_schema: type[BaseModel] = EmailArguments
    sent: list[dict[str, str]]

    def _run(self, to: str, subject: str) -> str:
        self.sent.append({"to": to, "subject": subject})
        return f"sent to {to}"


def kickoff(model: ChatServer, tool: BaseTool) -> str:
    """Runs a one-task crew whose agent has `tool`, and returns its final answer."""
    llm = LLM(model="openai/gpt-scripted", base_url=model.url, api_key="unused")
    mailer = Agent(
        role="Mailer",
        goal="Mail people what they asked for.",
        backstory="You send mail.",
        llm=llm,
        tools=[tool],
    )
    task = Task(description="Mail Ada the report.", expected_output="What was done.", agent=mailer)
    output = Crew(agents=[mailer], tasks=[task]).kickoff()
    assert isinstance(output, CrewOutput)
    return str(output.raw)


def test_approved_call_runs_and_its_result_reaches_the_model(
    agent: Client, person: Answer, session: str
) -> None:
    send_email = SendEmail(sent=[])
    with (
        ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed.")]) as model,
        person(lambda r: {"decision": "approve"}) as p,
    ):
        answer = kickoff(model, gated(send_email, agent, session=session))
    assert answer == "Mailed."
    assert send_email.sent == [ADA]
    question = p.answered[0].questions[0]
    assert question["action"] == {"name": "send_email", "arguments": ADA}
    assert question["allow_edit"] is True
    assert p.answered[0].agent == "crewai"
    assert model.tool_results() == ["sent to ada@example.com"]


def test_edited_arguments_are_the_ones_that_run(
    agent: Client, person: Answer, session: str
) -> None:
    send_email = SendEmail(sent=[])
    bob = {"to": "bob@example.com", "subject": "The report"}
    with (
        ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed.")]) as model,
        person(lambda r: {"decision": "approve", "edited_arguments": bob}),
    ):
        kickoff(model, gated(send_email, agent, session=session))
    assert send_email.sent == [bob]
    assert model.tool_results() == ["sent to bob@example.com"]


def test_denial_reason_reaches_the_model_and_the_tool_does_not_run(
    agent: Client, person: Answer, session: str
) -> None:
    send_email = SendEmail(sent=[])
    with (
        ChatServer([calls(ToolCall("send_email", ADA)), say("Not mailed.")]) as model,
        person(lambda r: {"decision": "deny", "reason": "Ada is on leave; mail Bob"}),
    ):
        kickoff(model, gated(send_email, agent, session=session, tags=["mail"]))
    assert send_email.sent == []
    assert model.tool_results() == ["send_email was not run: Ada is on leave; mail Bob"]
    assert [r.tags for r in agent.list(session=session)] == [["mail"]]


def test_the_same_call_made_again_is_asked_again(
    agent: Client, person: Answer, session: str
) -> None:
    send_email = SendEmail(sent=[])
    again = [calls(ToolCall("send_email", ADA)), calls(ToolCall("send_email", ADA)), say("Once.")]
    decisions = iter([{"decision": "approve"}, {"decision": "deny", "reason": "once is enough"}])
    with ChatServer(again) as model, person(lambda r: next(decisions)) as p:
        kickoff(model, gated(send_email, agent, session=session))
    assert len(p.answered) == 2
    assert send_email.sent == [ADA]
    assert model.tool_results() == [
        "sent to ada@example.com",
        "send_email was not run: once is enough",
    ]


def test_ask_human_returns_the_answer_to_the_model(
    agent: Client, person: Answer, session: str
) -> None:
    question = {
        "questions": [
            {
                "question": "Which address should get the report?",
                "header": "Address",
                "kind": "single",
                "options": [{"label": "ada@example.com"}, {"label": "bob@example.com"}],
            }
        ],
        "context": "Two people asked for it.",
    }
    with (
        ChatServer([calls(ToolCall("ask_human", question)), say("Noted.")]) as model,
        person(lambda r: {"option": "bob@example.com"}) as p,
    ):
        kickoff(model, AskHumanTool(agent, session=session))
    asked = p.answered[0]
    assert asked.questions[0]["text"] == "Which address should get the report?"
    assert asked.context == "Two people asked for it."
    (result,) = model.tool_results()
    assert '"answer": "bob@example.com"' in result
    assert '"status": "answered"' in result


def test_an_expired_request_does_not_run_the_tool(agent: Client, session: str) -> None:
    send_email = SendEmail(sent=[])
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Gave up.")]) as model:
        kickoff(model, gated(send_email, agent, session=session, timeout_seconds=1))
    assert send_email.sent == []
    (result,) = model.tool_results()
    assert result.startswith("send_email was not run: nobody approved it (expired).")


# The first process: the same crew, killed while it waits for the approval.
FIRST_PROCESS = """
import sys
from test_crewai import SendEmail, kickoff
from scripted_af_crewai import ChatServer, ToolCall, calls, say
from clarify_hitl import Client
from clarify_hitl.crewai import gated

url, key, session, run_id = sys.argv[1:]
email = {"to": "ada@example.com", "subject": "The report"}
with ChatServer([calls(ToolCall("send_email", email))]) as model:
    kickoff(model, gated(SendEmail(sent=[]), Client(url, key), session=session, run_id=run_id))
"""


def test_a_restarted_crew_finds_the_request_it_asked_before(
    server: ClarifyServer, agent_key: str, agent: Client, alice: Client, session: str
) -> None:
    run_id = f"nightly-{session}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent / "src"), str(HERE)])}
    first = subprocess.Popen(
        [sys.executable, "-c", FIRST_PROCESS, server.url, agent_key, session, run_id], env=env
    )
    try:
        deadline = time.monotonic() + 60
        while not list(agent.list(session=session)):
            assert first.poll() is None, "the first process ended before it asked"
            assert time.monotonic() < deadline, "the first process did not ask within 60 s"
            time.sleep(0.1)
    finally:
        first.kill()
        first.wait(10)
    (asked,) = agent.list(session=session)
    alice.answer(asked.id, {"decision": "approve"})

    send_email = SendEmail(sent=[])
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed.")]) as model:
        kickoff(model, gated(send_email, agent, session=session, run_id=run_id))
    assert [r.id for r in agent.list(session=session)] == [asked.id]
    assert send_email.sent == [ADA]


def test_the_handbook_page_program_runs_as_shown(
    server: ClarifyServer,
    agent_key: str,
    alice: Client,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_mail_program("agents/crewai.md", server, agent_key, alice, monkeypatch, capsys)
