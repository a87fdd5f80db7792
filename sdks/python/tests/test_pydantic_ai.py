"""Pydantic AI agents whose tools need a person, answered through a real clarify server, with a
scripted OpenAI Chat Completions server standing in for the LLM (reached through Pydantic AI's
own provider `base_url`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip("pydantic_ai", reason="runs in scripts/test-pydantic-ai-adk's environment")

from conftest import ClarifyServer, Person, page_programs
from pydantic_ai import Agent, CallDeferred
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import (
    DeferredToolRequests,
    DeferredToolResults,
    ToolApproved,
    ToolDenied,
)
from scripted_pydantic_ai import ChatCompletionsServer, ToolCall

from clarify_hitl import AsyncClient, Client, Record
from clarify_hitl.pydantic_ai import (
    ClarifyApprovals,
    aresolve_deferred,
    resolve_deferred,
)

Answer = Callable[[Callable[[Record], Any]], Person]
Ran = list[tuple[str, dict[str, Any]]]


def mail_and_delete(session: str) -> list[ToolCall]:
    """Two calls needing approval, with call ids unique to the test as a real model's are (the
    tests share one server, and the idempotency keys are made of the call ids)."""
    return [
        ToolCall(f"call_a-{session}", "send_email", {"to": "ada@example.com", "subject": "hi"}),
        ToolCall(f"call_b-{session}", "delete_file", {"path": "/tmp/report"}),
    ]


def make_agent(
    model: ChatCompletionsServer,
    ran: Ran,
    capabilities: list[AbstractCapability[Any]] | None = None,
) -> Agent[None, Any]:
    chat = OpenAIChatModel(
        "gpt-scripted", provider=OpenAIProvider(base_url=model.base_url, api_key="test")
    )
    agent: Agent[None, Any] = Agent(
        chat,
        name="mailer",
        output_type=[str, DeferredToolRequests],
        capabilities=capabilities or [],
    )

    @agent.tool_plain(requires_approval=True)
    def send_email(to: str, subject: str) -> str:
        """Send an email."""
        ran.append(("send_email", {"to": to, "subject": subject}))
        return f"sent to {to}"

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        ran.append(("delete_file", {"path": path}))
        return f"deleted {path}"

    @agent.tool_plain
    def ask_user(question: str, choices: list[str] | None = None) -> str:
        """Ask the user a question."""
        raise CallDeferred(kind="question")

    return agent


def decide(record: Record) -> Any:
    if record.questions[0]["action"]["name"] == "send_email":
        return {"decision": "approve"}
    return {"decision": "deny", "reason": "keep the report"}


def test_the_capability_runs_the_approved_call_and_tells_the_model_the_reason_of_a_denial(
    agent: Client, person: Answer, session: str
) -> None:
    ran: Ran = []
    with ChatCompletionsServer([mail_and_delete(session)]) as model:
        mailer = make_agent(model, ran, [ClarifyApprovals(agent, session=session)])
        with person(decide) as p:
            result = mailer.run_sync("mail Ada and clean up")
    assert result.output == "Done: keep the report"
    assert ran == [("send_email", {"to": "ada@example.com", "subject": "hi"})]
    results = model.tool_results()
    assert results[f"call_a-{session}"] == "sent to ada@example.com"
    assert results[f"call_b-{session}"] == "keep the report"

    asked = {r.questions[0]["action"]["name"]: r for r in p.answered}
    mail = asked["send_email"]
    assert mail.questions[0]["action"]["arguments"] == {"to": "ada@example.com", "subject": "hi"}
    assert mail.questions[0]["allow_edit"] is True
    assert mail.agent == "pydantic-ai"
    assert mail.tool_call_id == f"call_a-{session}"
    assert isinstance(mail.context, dict)
    assert mail.context["agent_name"] == "mailer"
    assert mail.context["conversation_id"] == result.conversation_id


def test_the_tool_runs_with_the_arguments_the_person_edited(
    agent: Client, person: Answer, session: str
) -> None:
    ran: Ran = []
    call = ToolCall(f"call_a-{session}", "send_email", {"to": "ada@example.com", "subject": "hi"})
    with ChatCompletionsServer([[call]]) as model:
        mailer = make_agent(model, ran, [ClarifyApprovals(agent, session=session)])
        edit = {"to": "bob@example.com", "subject": "hi"}
        with person(lambda r: {"decision": "approve", "edited_arguments": edit}):
            result = mailer.run_sync("mail Ada")
    assert ran == [("send_email", {"to": "bob@example.com", "subject": "hi"})]
    assert model.tool_results()[f"call_a-{session}"] == "sent to bob@example.com"
    assert result.output == "Done: sent to bob@example.com"


def test_a_question_the_tool_defers_is_asked_and_its_answer_is_the_result(
    server: ClarifyServer, agent_key: str, person: Answer, session: str
) -> None:
    ran: Ran = []
    turns = [
        [ToolCall(f"call_q-{session}", "ask_user", {"question": "Which day suits Ada?"})],
        [
            ToolCall(
                f"call_c-{session}",
                "ask_user",
                {"question": "Which room?", "choices": ["North", "South"]},
            )
        ],
    ]

    def answer(record: Record) -> Any:
        if record.questions[0]["kind"] == "open":
            return {"text": "Tuesday"}
        return {"option": record.questions[0]["options"][1]["id"]}

    async def main() -> Any:
        async with AsyncClient(server.url, agent_key) as client:
            mailer = make_agent(model, ran, [ClarifyApprovals(client, session=session)])
            return await mailer.run("plan the meeting")

    with ChatCompletionsServer(turns) as model, person(answer) as p:
        result = asyncio.run(main())
    assert [r.questions[0]["text"] for r in p.answered] == ["Which day suits Ada?", "Which room?"]
    assert [o["label"] for o in p.answered[1].questions[0]["options"]] == ["North", "South"]
    assert model.tool_results(1)[f"call_q-{session}"] == "Tuesday"
    assert model.tool_results(2)[f"call_c-{session}"] == "South"
    assert result.output == "Done: South"


def test_an_expired_request_denies_the_call_with_the_outcome_note(
    agent: Client, session: str
) -> None:
    ran: Ran = []
    with ChatCompletionsServer([mail_and_delete(session)[:1]]) as model:
        approvals = ClarifyApprovals(agent, session=session, timeout_seconds=1)
        mailer = make_agent(model, ran, [approvals])
        result = mailer.run_sync("mail Ada")
    assert ran == []
    denial = model.tool_results()[f"call_a-{session}"]
    assert denial.startswith("send_email was not run: nobody approved it (expired).")
    assert result.output == f"Done: {denial}"


def test_a_run_that_stopped_is_resolved_twice_from_one_request_and_resumed(
    server: ClarifyServer, agent_key: str, agent: Client, alice: Client, session: str
) -> None:
    ran: Ran = []
    with ChatCompletionsServer([mail_and_delete(session)]) as model:
        mailer = make_agent(model, ran)
        stopped = mailer.run_sync("mail Ada and clean up")
        requests = stopped.output
        assert isinstance(requests, DeferredToolRequests)

        # The first process asks and stops looking; nothing is answered yet.
        conversation = stopped.conversation_id
        first = resolve_deferred(
            agent, requests, conversation_id=conversation, timeout=0, session=session
        )
        assert first.approvals == {}
        pending = list(agent.list(session=session))
        assert len(pending) == 2
        for record in pending:
            alice.answer(record.id, decide(record))

        # A restarted process resolves the same calls: the same requests, nobody asked twice.
        async def restarted() -> DeferredToolResults:
            async with AsyncClient(server.url, agent_key) as client:
                return await aresolve_deferred(
                    client, requests, conversation_id=conversation, session=session
                )

        results = asyncio.run(restarted())
        assert len(list(agent.list(session=session))) == 2
        approvals = results.approvals
        assert approvals[f"call_a-{session}"] == ToolApproved()
        assert approvals[f"call_b-{session}"] == ToolDenied("keep the report")
        assert set(results.answered_by.values()) == {"alice"}

        history = stopped.all_messages()
        final = mailer.run_sync(message_history=history, deferred_tool_results=results)
    assert final.output == "Done: keep the report"
    assert ran == [("send_email", {"to": "ada@example.com", "subject": "hi"})]
    assert model.tool_results()[f"call_a-{session}"] == "sent to ada@example.com"


def test_the_handbooks_programs_run_as_shown(
    server: ClarifyServer,
    agent_key: str,
    person: Answer,
    session: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CLARIFY_URL", server.url)
    monkeypatch.setenv("CLARIFY_TOKEN", agent_key)
    report = {"to": "ada@example.com", "subject": "The report"}
    for index, program in enumerate(page_programs("agents/pydantic-ai.md")):
        call = ToolCall(f"call_{index}-{session}", "send_email", report)
        with ChatCompletionsServer([[call]]) as model:
            chat = OpenAIChatModel(
                "gpt-scripted", provider=OpenAIProvider(base_url=model.base_url, api_key="test")
            )
            code = program.replace('"openai:gpt-5.1"', "page_model").replace("chat-42", session)
            with person(lambda r: {"decision": "approve"}):
                exec(
                    compile(code, f"pydantic-ai.md program {index + 1}", "exec"),
                    {"page_model": chat},
                )
        assert capsys.readouterr().out == "Done: sent 'The report' to ada@example.com\n"
