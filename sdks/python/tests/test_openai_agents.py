"""OpenAI Agents SDK runs whose tools need approval, settled through a real clarify server, with a
scripted `Model` standing in for the LLM."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.run_state import RunState
from conftest import ClarifyServer, Person
from scripted_agents import ScriptedModel, call, text

from clarify_hitl import AsyncClient, Client, Record
from clarify_hitl.openai_agents import (
    asettle_interruptions,
    settle_interruptions,
    settle_state,
    submit_state,
)

Answer = Callable[[Callable[[Record], Any]], Person]

set_tracing_disabled(True)


def first_turn(session: str) -> list[Any]:
    """Two calls needing approval, with call ids unique to the test as a real model's are (the
    tests share one server, and the idempotency keys are made of the call ids)."""
    return [
        call("send_email", f"call_a-{session}", to="ada@example.com", subject="hi"),
        call("delete_file", f"call_b-{session}", path="/tmp/report"),
    ]


def make_agent(
    ran: list[tuple[str, dict[str, Any]]], session: str, turns: list[list[Any]] | None = None
) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        ran.append(("send_email", {"to": to, "subject": subject}))
        return f"sent to {to}"

    @function_tool(needs_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    model = ScriptedModel(turns or [first_turn(session), [text("done")]])
    return Agent(
        name="assistant", instructions="help", tools=[send_email, delete_file], model=model
    )


def outputs_of(items: Any) -> dict[str, str]:
    """The tool results in a model input, by call id."""
    return {
        i["call_id"]: str(i["output"])
        for i in items
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    }


def decide(record: Record) -> Any:
    if record.questions[0]["action"]["name"] == "send_email":
        return {"decision": "approve", "scope": "always"}
    return {"decision": "deny", "reason": "keep the report"}


def test_two_approvals_one_approved_always_one_denied(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    # After the approvals the model mails Ada again: scope `always` lets that run unasked.
    again = [call("send_email", f"call_c-{session}", to="ada@example.com", subject="again")]
    assistant = make_agent(ran, session, [first_turn(session), again, [text("done")]])
    result = Runner.run_sync(assistant, "mail Ada and clean up")
    assert len(result.interruptions) == 2
    with person(decide) as p:
        state = settle_interruptions(agent, result, session=session)
    asked = {r.questions[0]["action"]["name"]: r for r in p.answered}
    assert asked["send_email"].questions[0]["action"]["arguments"] == {
        "to": "ada@example.com",
        "subject": "hi",
    }
    assert asked["send_email"].tool_call_id == f"call_a-{session}"
    assert asked["send_email"].questions[0]["scopes"] == ["once", "always"]
    assert asked["send_email"].questions[0]["allow_edit"] is False

    final = Runner.run_sync(assistant, state)
    assert final.interruptions == []
    assert final.final_output == "done"
    assert ran == [
        ("send_email", {"to": "ada@example.com", "subject": "hi"}),
        ("send_email", {"to": "ada@example.com", "subject": "again"}),
    ]
    assert len(p.answered) == 2
    model = assistant.model
    assert isinstance(model, ScriptedModel)
    second_turn = outputs_of(model.inputs[1])
    assert second_turn[f"call_a-{session}"] == "sent to ada@example.com"
    assert "keep the report" in second_turn[f"call_b-{session}"]


def test_a_state_saved_in_one_process_is_settled_in_another(
    agent: Client, alice: Client, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    assistant = make_agent(ran, session)
    result = Runner.run_sync(assistant, "mail Ada and clean up")
    saved = result.to_state().to_string()
    # As the handbook's page does it: the first process names no session, the resume does.
    records = submit_state(agent, result.to_state(), state_id=f"run-{session}")
    assert len(records) == 2
    assert all(
        r.context == {"tool_call_id": r.tool_call_id, "run_state_id": f"run-{session}"}
        for r in records
    )

    # Later, elsewhere: a webhook says the requests were answered; the state is restored and
    # settled from the same requests (found again by their idempotency keys, which the session
    # is no part of, so nobody is asked twice).
    for record in records:
        alice.answer(record.id, decide(record))
    restored = asyncio.run(RunState.from_string(assistant, saved))
    settled = settle_state(agent, restored, timeout=0, state_id=f"run-{session}", session=session)
    assert sorted(s.request_id for s in settled) == sorted(r.id for r in records)
    assert [s.approved for s in settled] == [True, False]
    final = Runner.run_sync(assistant, restored)
    assert final.final_output == "done"
    assert ran == [("send_email", {"to": "ada@example.com", "subject": "hi"})]
    assert list(agent.list(session=session)) == []


def test_async_settling_rejects_what_nobody_answered(
    server: ClarifyServer, agent_key: str, alice: Client, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    assistant = make_agent(ran, session)

    async def main() -> Any:
        async with AsyncClient(server.url, agent_key) as client:
            result = await Runner.run(assistant, "mail Ada and clean up")
            with Person(alice, session, lambda r: {"skip": True}):
                state = await asettle_interruptions(client, result, session=session)
            return await Runner.run(assistant, state)

    final = asyncio.run(main())
    assert final.final_output == "done"
    assert ran == []
    model = assistant.model
    assert isinstance(model, ScriptedModel)
    outputs = outputs_of(model.inputs[-1])
    assert all("nobody approved it (skipped)" in o for o in outputs.values()), outputs


def test_request_changes_rejects_with_the_change_asked_for(
    agent: Client, person: Answer, session: str
) -> None:
    ran: list[tuple[str, dict[str, Any]]] = []
    assistant = make_agent(ran, session)
    result = Runner.run_sync(assistant, "mail Ada and clean up")

    def revise(record: Record) -> Any:
        if record.questions[0]["action"]["name"] == "send_email":
            return {"decision": "revise", "reason": "write to bob@example.com instead"}
        return {"decision": "deny", "reason": "keep the report"}

    with person(revise):
        state = settle_interruptions(agent, result, session=session)
    final = Runner.run_sync(assistant, state)
    assert ran == []
    model = assistant.model
    assert isinstance(model, ScriptedModel)
    outputs = outputs_of(model.inputs[1])
    assert outputs[f"call_a-{session}"].startswith(
        "Changes requested: write to bob@example.com instead"
    )
    assert "keep the report" in outputs[f"call_b-{session}"]
    assert "Changes requested" not in outputs[f"call_b-{session}"]
    assert final.final_output == "done"
