"""Microsoft Agent Framework runs whose tools need approval, resolved through a real clarify server.

A real `Agent` with the framework's `OpenAIChatCompletionClient` talks to a scripted Chat
Completions server (its `base_url`), so the framework's own approval flow runs end to end: the
model calls a tool, the run ends with `user_input_requests`, the adapter asks, a person answers
through the server's HTTP API, and the run goes on with the messages the adapter returned. What
the model received next is read from the scripted server.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest

pytest.importorskip("agent_framework")

from agent_framework import Agent, AgentResponse, AgentSession, FunctionTool, tool
from agent_framework.openai import OpenAIChatCompletionClient
from conftest import REPO, ClarifyServer, Person
from scripted_af_crewai import ADA, ChatServer, ToolCall, calls, run_mail_program, say

from clarify_hitl import AsyncClient, Client, Record
from clarify_hitl.agent_framework import aresolve_approvals, resolve_approvals

Answer = Callable[[Callable[[Record], Any]], Person]
T = TypeVar("T")


def mailer(server: ChatServer, ran: list[dict[str, Any]]) -> Agent:
    @tool(approval_mode="always_require")
    def send_email(to: str, subject: str) -> str:
        """Send an e-mail."""
        ran.append({"to": to, "subject": subject})
        return f"sent to {to}"

    # The declaration-only ask_human tool, made as the handbook's page makes it.
    definition = json.loads((REPO / "tools/ask_human.openai.json").read_text())["function"]
    ask_human = FunctionTool(
        name="ask_human",
        description=definition["description"],
        func=None,
        input_model=definition["parameters"],
    )
    client = OpenAIChatCompletionClient("gpt-scripted", api_key="unused", base_url=server.url)
    return Agent(client=client, name="mailer", instructions="Help.", tools=[send_email, ask_human])


class Loop:
    """One event loop for all of a test's runs: the framework's OpenAI client keeps its
    connections on the loop it first ran on."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()

    def run(self, step: Awaitable[T]) -> T:
        async def main() -> T:
            return await step

        return self._loop.run_until_complete(main())

    def close(self) -> None:
        self._loop.close()


@pytest.fixture
def loop() -> Iterator[Loop]:
    running = Loop()
    yield running
    running.close()


def first_run(loop: Loop, agent: Agent) -> tuple[AgentSession, AgentResponse]:
    session = agent.create_session()
    response = loop.run(agent.run("Mail Ada the report.", session=session))
    return session, response


def test_approved_call_runs_and_its_result_reaches_the_model(
    agent: Client, person: Answer, session: str, loop: Loop
) -> None:
    ran: list[dict[str, Any]] = []
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed.")]) as model:
        assistant = mailer(model, ran)
        thread, response = first_run(loop, assistant)
        assert ran == []
        assert len(response.user_input_requests) == 1
        with person(lambda r: {"decision": "approve"}) as p:
            messages = resolve_approvals(agent, response, session=session)
        assert messages is not None
        final = loop.run(assistant.run(messages, session=thread))
    assert ran == [ADA]
    assert final.text == "Mailed."
    asked = p.answered[0]
    assert asked.agent == "mailer"
    assert asked.questions[0]["action"] == {"name": "send_email", "arguments": ADA}
    assert asked.questions[0]["allow_edit"] is False
    assert asked.tool_call_id == model.requests[1]["messages"][2]["tool_calls"][0]["id"]
    assert model.tool_results() == ["sent to ada@example.com"]


def test_denial_reason_reaches_the_model_and_the_tool_does_not_run(
    agent: Client, person: Answer, session: str, loop: Loop
) -> None:
    ran: list[dict[str, Any]] = []
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Not mailed.")]) as model:
        assistant = mailer(model, ran)
        thread, response = first_run(loop, assistant)
        with person(lambda r: {"decision": "deny", "reason": "Ada is on leave; mail Bob"}):
            messages = resolve_approvals(agent, response, session=session, tags=["mail"])
        assert messages is not None
        loop.run(assistant.run(messages, session=thread))
    assert ran == []
    told = model.last_text()
    assert "rejected" in told
    assert "send_email was not run: Ada is on leave; mail Bob" in told
    assert [r.tags for r in agent.list(session=session)] == [["mail"]]


def test_a_question_through_a_declaration_only_tool_gets_the_answer(
    agent: Client, person: Answer, session: str, loop: Loop
) -> None:
    question = {
        "questions": [
            {
                "question": "Which address should get the report?",
                "header": "Address",
                "kind": "single",
                "options": [{"label": "ada@example.com"}, {"label": "bob@example.com"}],
            }
        ]
    }
    ran: list[dict[str, Any]] = []
    with ChatServer([calls(ToolCall("ask_human", question)), say("Noted.")]) as model:
        assistant = mailer(model, ran)
        thread, response = first_run(loop, assistant)
        with person(lambda r: {"option": "bob@example.com"}) as p:
            messages = resolve_approvals(agent, response, session=session)
        assert messages is not None
        loop.run(assistant.run(messages, session=thread))
    assert p.answered[0].questions[0]["text"] == "Which address should get the report?"
    (result,) = model.tool_results()
    assert '"answer": "bob@example.com"' in result
    assert '"status": "answered"' in result


def test_an_expired_request_rejects_the_call_with_the_note(
    server: ClarifyServer, agent_key: str, session: str
) -> None:
    ran: list[dict[str, Any]] = []
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Gave up.")]) as model:
        assistant = mailer(model, ran)

        async def main() -> None:
            thread = assistant.create_session()
            response = await assistant.run("Mail Ada the report.", session=thread)
            async with AsyncClient(server.url, agent_key) as client:
                messages = await aresolve_approvals(
                    client, response, session=session, timeout_seconds=1
                )
            assert messages is not None
            await assistant.run(messages, session=thread)

        asyncio.run(main())
    assert ran == []
    assert "send_email was not run: nobody approved it (expired)" in model.last_text()


def test_resolving_the_same_response_again_finds_the_same_request(
    agent: Client, alice: Client, session: str, loop: Loop
) -> None:
    ran: list[dict[str, Any]] = []
    with ChatServer([calls(ToolCall("send_email", ADA)), say("Mailed.")]) as model:
        assistant = mailer(model, ran)
        thread, response = first_run(loop, assistant)
        assert resolve_approvals(agent, response, session=session, timeout=0) is None
        # A restarted process: the saved response and session come back, and it asks again.
        saved_response, saved_thread = response.to_dict(), thread.to_dict()
        restored = AgentResponse.from_dict(saved_response)
        (record,) = agent.list(session=session)
        alice.answer(record.id, {"decision": "approve"})
        messages = resolve_approvals(agent, restored, session=session)
        assert messages is not None
        loop.run(assistant.run(messages, session=AgentSession.from_dict(saved_thread)))
    assert [r.id for r in agent.list(session=session)] == [record.id]
    assert ran == [ADA]


def test_the_handbook_page_program_runs_as_shown(
    server: ClarifyServer,
    agent_key: str,
    alice: Client,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_mail_program("agents/agent-framework.md", server, agent_key, alice, monkeypatch, capsys)
