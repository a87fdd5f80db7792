"""Google ADK agents whose tools ask for confirmation, answered through a real clarify server,
with a scripted Gemini API server standing in for the LLM (reached through ADK's own
`Gemini(base_url=...)`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("google.adk", reason="runs in scripts/test-pydantic-ai-adk's environment")

from conftest import ClarifyServer, Person, page_programs
from google.adk.agents import Agent
from google.adk.models import Gemini
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types
from scripted_google_adk import FunctionCall, GeminiServer

from clarify_hitl import AsyncClient, Client, Record
from clarify_hitl.google_adk import (
    arun_with_humans,
    resolve_confirmations,
    run_with_humans,
)

Answer = Callable[[Callable[[Record], Any]], Person]
Ran = list[tuple[str, dict[str, Any]]]

USER = "ada"
MAIL = FunctionCall("send_email", {"to": "ada@example.com", "subject": "hi"})
TIME_OFF = FunctionCall("request_time_off", {"days": 3})


def make_runner(model: GeminiServer, ran: Ran, session_id: str) -> Runner:
    """An agent with a plain confirmation (`require_confirmation=True`) and one that asks with a
    payload the person may change (ADK's `request_confirmation`), on an in-memory session."""

    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        ran.append(("send_email", {"to": to, "subject": subject}))
        return f"sent to {to}"

    def request_time_off(days: int, tool_context: ToolContext) -> dict[str, Any]:
        """Book days off."""
        confirmation = tool_context.tool_confirmation
        if confirmation is None:
            tool_context.request_confirmation(
                hint="Approve the time off?", payload={"approved_days": days}
            )
            return {"status": "waiting for approval"}
        if not confirmation.confirmed:
            return {"status": "rejected", "reason": confirmation.hint}
        approved = int((confirmation.payload or {})["approved_days"])
        ran.append(("request_time_off", {"days": approved}))
        return {"status": "booked", "days": approved}

    agent = Agent(
        name="assistant",
        model=Gemini(
            model="gemini-2.5-flash", base_url=model.base_url, client_kwargs={"api_key": "test"}
        ),
        instruction="Help the user.",
        tools=[FunctionTool(send_email, require_confirmation=True), request_time_off],
    )
    sessions = InMemorySessionService()
    asyncio.run(sessions.create_session(app_name="app", user_id=USER, session_id=session_id))
    return Runner(agent=agent, app_name="app", session_service=sessions)


def said(words: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=words)])


def final_text(events: list[Any]) -> str:
    texts = [p.text for e in events if e.content for p in e.content.parts or [] if p.text]
    return str(texts[-1])


def test_an_approved_call_runs_and_a_denial_reason_reaches_the_model(
    agent: Client, person: Answer, session: str
) -> None:
    ran: Ran = []

    def decide(record: Record) -> Any:
        if record.questions[0]["action"]["name"] == "send_email":
            return {"decision": "approve"}
        return {"decision": "deny", "reason": "the team is short that week"}

    with GeminiServer([[MAIL, TIME_OFF]]) as model:
        runner = make_runner(model, ran, session)
        with person(decide) as p:
            events = run_with_humans(
                runner, user_id=USER, session_id=session, new_message=said("hi"), client=agent
            )
    assert ran == [("send_email", {"to": "ada@example.com", "subject": "hi"})]
    responses = model.function_responses()
    assert responses["send_email"] == {"result": "sent to ada@example.com"}
    assert responses["request_time_off"] == {
        "status": "rejected",
        "reason": "the team is short that week",
    }
    assert "the team is short that week" in final_text(events)

    asked = {r.questions[0]["action"]["name"]: r for r in p.answered}
    mail = asked["send_email"].questions[0]
    assert mail["text"] == "Allow the agent to run send_email?"
    assert mail["action"]["arguments"] == {"to": "ada@example.com", "subject": "hi"}
    assert mail["allow_edit"] is False  # ADK runs the call the model made
    time_off = asked["request_time_off"]
    assert time_off.questions[0]["action"]["arguments"] == {"approved_days": 3}
    assert time_off.questions[0]["text"].startswith("Approve the time off?")
    assert time_off.agent == "google-adk"
    assert time_off.session == session
    assert isinstance(time_off.context, dict)
    assert time_off.context["agent_name"] == "assistant"


def test_a_plain_confirmation_denied_does_not_run(
    agent: Client, person: Answer, session: str
) -> None:
    ran: Ran = []
    with GeminiServer([[MAIL]]) as model:
        runner = make_runner(model, ran, session)
        with person(lambda r: {"decision": "deny", "reason": "not today"}):
            run_with_humans(
                runner, user_id=USER, session_id=session, new_message=said("hi"), client=agent
            )
    assert ran == []
    # ADK's require_confirmation answers the model with its own words, whatever the reason.
    assert model.function_responses()["send_email"] == {"error": "This tool call is rejected."}


def test_the_tool_gets_the_payload_the_person_edited(
    server: ClarifyServer, agent_key: str, person: Answer, session: str
) -> None:
    ran: Ran = []
    edit = {"decision": "approve", "edited_arguments": {"approved_days": 2}}

    async def main(runner: Runner) -> list[Any]:
        async with AsyncClient(server.url, agent_key) as client:
            return await arun_with_humans(
                runner, user_id=USER, session_id=session, new_message=said("hi"), client=client
            )

    with GeminiServer([[TIME_OFF]]) as model:
        runner = make_runner(model, ran, session)
        with person(lambda r: edit):
            events = asyncio.run(main(runner))
    assert ran == [("request_time_off", {"days": 2})]
    assert model.function_responses()["request_time_off"] == {"status": "booked", "days": 2}
    assert final_text(events) == 'Done: {"days": 2, "status": "booked"}'


def test_an_expired_request_is_a_denial_with_the_outcome_note(agent: Client, session: str) -> None:
    ran: Ran = []
    with GeminiServer([[TIME_OFF]]) as model:
        runner = make_runner(model, ran, session)
        run_with_humans(
            runner,
            user_id=USER,
            session_id=session,
            new_message=said("hi"),
            client=agent,
            timeout_seconds=1,
        )
    assert ran == []
    response = model.function_responses()["request_time_off"]
    assert response["status"] == "rejected"
    assert response["reason"].startswith(
        "request_time_off was not run: nobody approved it (expired)."
    )


def test_a_session_waiting_for_a_confirmation_resumes_from_the_same_request(
    agent: Client, alice: Client, session: str
) -> None:
    ran: Ran = []
    with GeminiServer([[MAIL]]) as model:
        runner = make_runner(model, ran, session)
        # The first process runs until ADK asks, raises the request, and stops there.
        events = list(runner.run(user_id=USER, session_id=session, new_message=said("hi")))
        assert resolve_confirmations(agent, events, timeout=0, session=session) is None
        (record,) = agent.list(session=session)
        alice.answer(record.id, {"decision": "approve"})

        # A restarted process continues the session: the same request, answered, not a new one.
        resumed = run_with_humans(
            runner, user_id=USER, session_id=session, new_message=None, client=agent
        )
    assert [r.id for r in agent.list(session=session)] == [record.id]
    assert ran == [("send_email", {"to": "ada@example.com", "subject": "hi"})]
    assert final_text(resumed) == 'Done: {"result": "sent to ada@example.com"}'


def test_two_sessions_with_the_same_call_ask_twice(agent: Client, alice: Client) -> None:
    """The key is the confirmation's own id, not the call's content: another session's identical
    call is another request."""
    ids = []
    for _ in range(2):
        session = f"s-{uuid.uuid4().hex[:12]}"
        with GeminiServer([[MAIL]]) as model:
            runner = make_runner(model, [], session)
            events = list(runner.run(user_id=USER, session_id=session, new_message=said("hi")))
            resolve_confirmations(agent, events, timeout=0, session=session)
        ids += [r.id for r in agent.list(session=session)]
    assert len(set(ids)) == 2


def test_the_handbooks_program_runs_as_shown(
    server: ClarifyServer,
    agent_key: str,
    person: Answer,
    session: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CLARIFY_URL", server.url)
    monkeypatch.setenv("CLARIFY_TOKEN", agent_key)
    (program, *_) = page_programs("agents/google-adk.md")
    edit = {"decision": "approve", "edited_arguments": {"approved_days": 2}}
    with GeminiServer([[TIME_OFF]]) as model:
        gemini = Gemini(
            model="gemini-2.5-flash", base_url=model.base_url, client_kwargs={"api_key": "test"}
        )
        code = program.replace('model="gemini-2.5-flash"', "model=page_model")
        with person(lambda r: edit):
            exec(
                compile(code.replace("chat-42", session), "google-adk.md", "exec"),
                {"page_model": gemini},
            )
    assert capsys.readouterr().out == 'Done: {"days": 2, "status": "booked"}\n'
