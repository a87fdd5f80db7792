"""The API's wire types, read from the server's JSON.

Records and outcomes are frozen dataclasses built by `from_json`, each keeping the JSON it came
from in `raw`, so fields a newer server adds are never lost. Both clients use these same types.
Optional fields of newer servers (forms' `values`, quorum `votes`, `default_applied`, the signed
`receipt`) are `None` or empty when the server does not send them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import ProtocolError

JSON = dict[str, Any] | list[Any] | str | int | float | bool | None
"""Any JSON value."""

Status = Literal["pending", "answered", "skipped", "expired", "cancelled"]
RESOLVED: frozenset[str] = frozenset({"answered", "skipped", "expired", "cancelled"})


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"the server sent {what} that is not a JSON object")
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class Vote:
    """One responder's vote on a request that needs several approvals (quorum)."""

    by: str | None
    decision: str | None
    scope: str | None
    reason: str | None
    at: str | None

    @classmethod
    def from_json(cls, value: Any) -> Vote:
        v = _object(value, "a vote")
        return cls(
            by=_str(v.get("by")),
            decision=_str(v.get("decision")),
            scope=_str(v.get("scope")),
            reason=_str(v.get("reason")),
            at=_str(v.get("at")),
        )


@dataclass(frozen=True)
class QuestionOutcome:
    """What became of one question.

    `answer` is the option label (`single`), the list of labels (`multi`), the text (`open` and
    Other), the decision (`approval`: `approve`, `deny` or `revise`), or the values object
    (`form`); `None` when the request was not answered. `mode` says which: `option`, `other`,
    `text`, `decision`, `form` or `default` (an `on_timeout` default was applied).
    """

    id: str
    question: str
    kind: str
    choices_offered: list[str]
    answer: JSON
    mode: str | None
    decision: str | None = None
    scope: str | None = None
    edited_arguments: dict[str, Any] | None = None
    reason: str | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def refusal(self) -> str | None:
        """What the agent should read when this approval was not approved, else `None`.

        `revise` ("request changes") reads `Changes requested: <reason>`, so a model can tell it
        from a plain denial and try again with the change; `deny` reads the person's reason.
        """
        if self.decision == "revise":
            return f"Changes requested: {self.reason or ''}".strip()
        if self.decision == "deny":
            return self.reason
        return None

    @property
    def values(self) -> dict[str, Any] | None:
        """A form's values (`mode == "form"`), else `None`."""
        if self.mode == "form" and isinstance(self.answer, dict):
            return self.answer
        return None

    @classmethod
    def from_json(cls, value: Any) -> QuestionOutcome:
        q = _object(value, "a question's outcome")
        choices = q.get("choices_offered")
        edited = q.get("edited_arguments")
        return cls(
            id=_str(q.get("id")) or "",
            question=_str(q.get("question")) or "",
            kind=_str(q.get("kind")) or "",
            choices_offered=[c for c in choices if isinstance(c, str)]
            if isinstance(choices, list)
            else [],
            answer=q.get("answer"),
            mode=_str(q.get("mode")),
            decision=_str(q.get("decision")),
            scope=_str(q.get("scope")),
            edited_arguments=edited if isinstance(edited, dict) else None,
            reason=_str(q.get("reason")),
            raw=q,
        )


@dataclass(frozen=True)
class Outcome:
    """What an agent receives once a request is resolved.

    `status` is `answered`, `skipped`, `expired` or `cancelled`; every status but `answered`
    carries a `note` telling the model what happened. The properties `answer`, `decision`,
    `scope`, `edited_arguments`, `reason` and `values` read the first question, which is the
    only one in most requests.
    """

    request_id: str
    status: str
    questions: list[QuestionOutcome]
    answered_by: str | None
    resolved_at: str | None
    note: str | None = None
    votes: list[Vote] = field(default_factory=list)
    default_applied: bool = False
    receipt: str | None = None
    """The signed receipt of the decision (a compact JWS); see `verify_receipt`."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def answered(self) -> bool:
        return self.status == "answered"

    def question(self, id: str) -> QuestionOutcome:
        """The outcome of the question with this id; `KeyError` when there is none."""
        for q in self.questions:
            if q.id == id:
                return q
        raise KeyError(f"the outcome has no question {id!r}")

    @property
    def _first(self) -> QuestionOutcome | None:
        return self.questions[0] if self.questions else None

    @property
    def answer(self) -> JSON:
        return self._first.answer if self._first else None

    @property
    def decision(self) -> str | None:
        return self._first.decision if self._first else None

    @property
    def scope(self) -> str | None:
        return self._first.scope if self._first else None

    @property
    def edited_arguments(self) -> dict[str, Any] | None:
        return self._first.edited_arguments if self._first else None

    @property
    def reason(self) -> str | None:
        return self._first.reason if self._first else None

    @property
    def refusal(self) -> str | None:
        """The first question's refusal (see `QuestionOutcome.refusal`)."""
        return self._first.refusal if self._first else None

    @property
    def values(self) -> dict[str, Any] | None:
        return self._first.values if self._first else None

    @classmethod
    def from_json(cls, value: Any) -> Outcome:
        o = _object(value, "an outcome")
        questions = o.get("questions")
        votes = o.get("votes")
        return cls(
            request_id=_str(o.get("request_id")) or "",
            status=_str(o.get("status")) or "",
            questions=[QuestionOutcome.from_json(q) for q in questions]
            if isinstance(questions, list)
            else [],
            answered_by=_str(o.get("answered_by")),
            resolved_at=_str(o.get("resolved_at")),
            note=_str(o.get("note")),
            votes=[Vote.from_json(v) for v in votes] if isinstance(votes, list) else [],
            default_applied=o.get("default_applied") is True,
            receipt=_str(o.get("receipt")),
            raw=o,
        )


@dataclass(frozen=True)
class Record:
    """A request as the server returns it; `outcome` once it is resolved.

    `questions` are as validated (options with ids), kept as JSON objects.
    """

    id: str
    status: str
    questions: list[dict[str, Any]]
    context: JSON
    session: str | None
    agent: str | None
    tags: list[str]
    tool_call_id: str | None
    created_at: str | None
    expires_at: str | None
    resolved_at: str | None
    answered_by: str | None
    answer_url: str | None
    outcome: Outcome | None
    votes: list[Vote] = field(default_factory=list)
    approvals_required: int | None = None
    receipt: str | None = None
    """Once resolved, the signed receipt of the decision (a compact JWS); see `verify_receipt`."""
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def resolved(self) -> bool:
        return self.status in RESOLVED

    @classmethod
    def from_json(cls, value: Any) -> Record:
        r = _object(value, "a request record")
        if not isinstance(r.get("id"), str) or not isinstance(r.get("status"), str):
            raise ProtocolError("the server sent a request record without `id` and `status`")
        questions = r.get("questions")
        tags = r.get("tags")
        outcome = r.get("outcome")
        votes = r.get("votes")
        required = r.get("approvals_required")
        return cls(
            id=r["id"],
            status=r["status"],
            questions=[q for q in questions if isinstance(q, dict)]
            if isinstance(questions, list)
            else [],
            context=r.get("context"),
            session=_str(r.get("session")),
            agent=_str(r.get("agent")),
            tags=[t for t in tags if isinstance(t, str)] if isinstance(tags, list) else [],
            tool_call_id=_str(r.get("tool_call_id")),
            created_at=_str(r.get("created_at")),
            expires_at=_str(r.get("expires_at")),
            resolved_at=_str(r.get("resolved_at")),
            answered_by=_str(r.get("answered_by")),
            answer_url=_str(r.get("answer_url")),
            outcome=Outcome.from_json(outcome) if isinstance(outcome, dict) else None,
            votes=[Vote.from_json(v) for v in votes] if isinstance(votes, list) else [],
            approvals_required=required if isinstance(required, int) else None,
            receipt=_str(r.get("receipt")),
            raw=r,
        )


@dataclass(frozen=True)
class Page:
    """One page of `list`, newest first; pass `next_cursor` as `cursor` for the next."""

    requests: list[Record]
    next_cursor: str | None

    @classmethod
    def from_json(cls, value: Any) -> Page:
        p = _object(value, "a page of requests")
        requests = p.get("requests")
        if not isinstance(requests, list):
            raise ProtocolError("the server sent a page without `requests`")
        return cls(
            requests=[Record.from_json(r) for r in requests],
            next_cursor=_str(p.get("next_cursor")),
        )


@dataclass(frozen=True)
class Event:
    """One Server-Sent Event of `/v1/events`: `type` such as `request.answered`, `id` the event
    log's sequence (pass it as `last_event_id` to resume), `record` the request as it was sent."""

    id: str | None
    type: str
    record: Record | None
    data: JSON


def with_fields(base: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """`base` plus every field whose value is not `None` (`None` means absent)."""
    body = dict(base)
    for name, value in fields.items():
        if value is not None:
            body[name] = value
    return body
