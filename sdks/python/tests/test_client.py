"""The blocking and async clients against a real server: asking, answering, every status,
errors, pages and events."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from conftest import ClarifyServer, Person, free_port

from clarify_hitl import (
    AlreadyResolvedError,
    AsyncClient,
    AuthenticationError,
    ClarifyConnectionError,
    ClarifyError,
    Client,
    NotFoundError,
    Outcome,
    Record,
    ValidationError,
)

Answer = Callable[[Callable[[Record], Any]], Person]


def test_ask_returns_the_label_the_person_chose_and_who_chose_it(
    agent: Client, person: Answer, session: str
) -> None:
    with person(lambda r: {"option": r.questions[0]["options"][1]["id"]}):
        outcome = agent.ask(
            "Which database?",
            ["Postgres", "SQLite"],
            session=session,
            context="two instances behind a load balancer",
        )
    assert outcome.status == "answered"
    assert outcome.answer == "SQLite"
    assert outcome.questions[0].mode == "option"
    assert outcome.questions[0].choices_offered == ["Postgres", "SQLite"]
    assert outcome.answered_by == "alice"
    assert outcome.note is None


def test_several_questions_come_back_typed(agent: Client, person: Answer, session: str) -> None:
    questions: list[dict[str, Any]] = [
        {
            "id": "regions",
            "question": "Which regions?",
            "choices": ["eu", "us", "asia"],
            "kind": "multi",
        },
        {"id": "why", "question": "Why?"},
        {
            "id": "deploy",
            "kind": "approval",
            "text": "Deploy?",
            "action": {"name": "deploy", "arguments": {"env": "prod"}},
            "scopes": ["once", "session"],
            "allow_edit": True,
        },
    ]
    answers = {
        "answers": {
            "regions": {"options": ["eu", "asia"]},
            "why": {"text": "latency"},
            "deploy": {
                "decision": "approve",
                "scope": "session",
                "edited_arguments": {"env": "staging"},
                "reason": "not prod yet",
            },
        }
    }
    with person(lambda r: answers):
        outcome = agent.ask(questions=questions, session=session)
    assert outcome.question("regions").answer == ["eu", "asia"]
    assert outcome.question("why").answer == "latency"
    assert outcome.question("why").mode == "text"
    deploy = outcome.question("deploy")
    assert (deploy.decision, deploy.scope, deploy.reason) == ("approve", "session", "not prod yet")
    assert deploy.edited_arguments == {"env": "staging"}
    with pytest.raises(KeyError):
        outcome.question("nope")


def test_unanswered_statuses_carry_a_note(agent: Client, alice: Client, session: str) -> None:
    skipped = agent.create({"question": "Skip me?", "session": session})
    alice.skip(skipped.id)
    cancelled = agent.create({"question": "Cancel me?", "session": session})
    assert agent.cancel(cancelled.id).status == "cancelled"
    expired = agent.ask("Expire me?", timeout=1, session=session)
    for outcome, status in [
        (agent.outcome(skipped.id, 0), "skipped"),
        (agent.outcome(cancelled.id, 0), "cancelled"),
        (expired, "expired"),
    ]:
        assert outcome is not None
        assert outcome.status == status
        assert outcome.note
        assert outcome.answer is None


def test_a_responder_extends_a_deadline_within_the_bound(
    agent: Client, alice: Client, session: str
) -> None:
    created = agent.create(
        {"question": "Still needed?", "session": session, "timeout_seconds": 600}
    )
    assert created.expires_at is not None
    before = datetime.fromisoformat(created.expires_at.replace("Z", "+00:00"))
    moved = alice.extend(created.id, "30m")
    assert moved.expires_at is not None
    after = datetime.fromisoformat(moved.expires_at.replace("Z", "+00:00"))
    assert (after - before).total_seconds() == 1800
    assert alice.extend(created.id, 60).expires_at is not None
    with pytest.raises(ClarifyError) as too_far:
        alice.extend(created.id, "2d")
    assert too_far.value.code == "extension_too_long"
    assert agent.get(created.id).expires_at == alice.get(created.id).expires_at
    agent.cancel(created.id)
    with pytest.raises(AlreadyResolvedError):
        alice.extend(created.id, "30m")


def test_a_quorum_vote_comes_back_as_the_pending_record_then_the_outcome(
    server: ClarifyServer, agent: Client, alice: Client, session: str
) -> None:
    record = agent.create(
        {
            "questions": [
                {"text": "Rotate keys?", "kind": "approval", "action": {"name": "rotate_keys"}}
            ],
            "approvals_required": 2,
            "session": session,
        }
    )
    assert record.approvals_required == 2
    counted = alice.answer(record.id, {"decision": "approve"})
    assert isinstance(counted, Record)
    assert counted.status == "pending"
    assert [v.by for v in counted.votes] == ["alice"]
    with pytest.raises(ClarifyError) as again:
        alice.answer(record.id, {"decision": "approve"})
    assert again.value.code == "already_voted"
    assert again.value.status == 409
    with Client(server.url, server.key("responder", f"bob-{session}")) as bob:
        decided = bob.answer(record.id, {"decision": "approve"})
    assert isinstance(decided, Outcome)
    assert decided.status == "answered"
    assert [v.by for v in decided.votes] == ["alice", f"bob-{session}"]


def test_create_with_an_idempotency_key_creates_once(agent: Client, session: str) -> None:
    body = {"question": "Once?", "session": session, "idempotency_key": f"k-{session}"}
    first = agent.create(body)
    again = agent.create(body)
    assert again.id == first.id
    assert [r.id for r in agent.list(session=session)] == [first.id]
    assert first.answer_url
    assert "/a/" in first.answer_url


def test_wait_returns_the_pending_record_when_time_runs_out(agent: Client, session: str) -> None:
    record = agent.create({"question": "Slow?", "session": session})
    started = time.monotonic()
    waited = agent.wait(record.id, 1.2)
    assert waited.status == "pending"
    assert not waited.resolved
    assert 1.0 <= time.monotonic() - started < 10
    assert agent.outcome(record.id, 0) is None


def test_errors_say_what_went_wrong(
    server: ClarifyServer, agent: Client, alice: Client, session: str
) -> None:
    with pytest.raises(NotFoundError) as missing:
        agent.get("no-such-request")
    assert (missing.value.status, missing.value.code) == (404, "not_found")

    record = agent.create({"question": "Pick", "choices": ["a", "b"], "session": session})
    with pytest.raises(ValidationError) as invalid:
        alice.answer(record.id, {"option": "c"})
    assert invalid.value.status == 422
    assert "c" in invalid.value.message
    assert agent.get(record.id).status == "pending"

    alice.answer(record.id, {"option": "a"})
    with pytest.raises(AlreadyResolvedError) as late:
        alice.answer(record.id, {"option": "b"})
    assert late.value.record is not None
    assert late.value.record.answered_by == "alice"
    assert late.value.record.outcome is not None
    assert late.value.record.outcome.answer == "a"

    with Client(server.url, "ck_wrong") as stranger, pytest.raises(AuthenticationError) as denied:
        stranger.get(record.id)
    assert denied.value.status == 401
    assert "CLARIFY_TOKEN" in str(denied.value)

    with pytest.raises(ValueError, match="either a question or questions"):
        agent.ask()


def test_nothing_listening_is_a_connection_error_at_once() -> None:
    with Client(f"http://127.0.0.1:{free_port()}", "ck_x") as client:
        started = time.monotonic()
        with pytest.raises(ClarifyConnectionError) as error:
            client.ask("Anyone?")
    assert error.value.sent is False
    assert "is `clarify serve` running" in str(error.value)
    assert time.monotonic() - started < 5


def test_environment_gives_the_defaults(
    server: ClarifyServer, agent_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLARIFY_URL", server.url)
    monkeypatch.setenv("CLARIFY_TOKEN", agent_key)
    with Client() as client:
        assert client.base_url == server.url
        assert client.list_page(limit=1).requests is not None
    with pytest.raises(ValueError, match="http"):
        Client("ftp://example.com")


def test_list_iterates_every_page_newest_first(agent: Client, session: str) -> None:
    ids = [agent.create({"question": f"n{i}", "session": session}).id for i in range(5)]
    listed = [r.id for r in agent.list(session=session, page_size=2)]
    assert listed == list(reversed(ids))
    first = agent.list_page(session=session, limit=2)
    assert len(first.requests) == 2
    assert first.next_cursor


def test_events_resume_after_the_last_event_seen(
    agent: Client, alice: Client, session: str
) -> None:
    record = agent.create({"question": "Events?", "session": session})
    created_id = None
    stream = agent.events(last_event_id="0")
    for event in stream:
        if event.record is not None and event.record.id == record.id:
            assert (event.type, event.record.status) == ("request.created", "pending")
            created_id = event.id
            break
    stream.close()
    assert created_id is not None
    alice.answer(record.id, {"text": "yes"})
    # Resuming after the creation replays only what came after it: the first event is newer.
    resumed = agent.events(last_event_id=created_id)
    first = None
    for event in resumed:
        first = first or event
        if event.record is not None and event.record.id == record.id:
            assert event.type == "request.answered"
            assert event.record.outcome is not None
            assert event.record.outcome.answer == "yes"
            break
    resumed.close()
    assert first is not None
    assert first.id is not None
    assert int(first.id) > int(created_id)


def test_async_client_asks_lists_and_streams(
    server: ClarifyServer, agent_key: str, alice: Client, session: str
) -> None:
    async def main() -> None:
        async with AsyncClient(server.url, agent_key) as client:
            with Person(alice, session, lambda r: {"option": "yes"}):
                outcome = await client.ask("Ship it?", ["yes", "no"], session=session)
            assert (outcome.status, outcome.answer, outcome.answered_by) == (
                "answered",
                "yes",
                "alice",
            )
            other = await client.create({"question": "Later?", "session": session})
            assert (await client.wait(other.id, 0)).status == "pending"
            listed = [r.id async for r in client.list(session=session, page_size=1)]
            assert listed == [other.id, outcome.request_id]
            events = client.events(last_event_id="0")
            kinds = []
            async for event in events:
                if event.record is not None and event.record.id == outcome.request_id:
                    kinds.append(event.type)
                    if event.type == "request.answered":
                        break
            await events.aclose()
            assert kinds == ["request.created", "request.answered"]
            await client.cancel(other.id)
            with pytest.raises(NotFoundError):
                await client.get(f"missing-{uuid.uuid4().hex}")

    asyncio.run(main())
