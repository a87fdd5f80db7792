"""What the clients do, written once for both.

Each operation is a generator ("flow") that yields the steps it needs, a `Call` (one HTTP
exchange) or a `Sleep`, and receives each call's decoded JSON body back, or has the call's
`ClarifyError` thrown into it. `Client` drives flows with blocking I/O and `AsyncClient` with
`await`, so retries, backoff and reconnection behave the same in both.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Generator, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar
from urllib.parse import quote

from ._errors import (
    ClarifyConnectionError,
    ClarifyError,
    ProtocolError,
    ServiceUnavailableError,
    error_from_response,
)
from ._types import JSON, Event, Outcome, Page, Record, with_fields

T = TypeVar("T")

LONG_POLL_SECONDS = 60
"""The longest single long-poll the server allows."""
CREATE_RETRY_SECONDS = 120.0
"""How long a create whose reply was lost is sent again (as `clarify ask` does)."""
MAX_BACKOFF_SECONDS = 5.0
DEFAULT_URL = "http://127.0.0.1:7420"


@dataclass(frozen=True)
class Call:
    """One HTTP exchange; the driver answers with the decoded JSON body of a 2xx response."""

    method: str
    path: str
    params: Mapping[str, str] = field(default_factory=dict)
    body: JSON = None
    timeout: float = 30.0
    has_body: bool = False


@dataclass(frozen=True)
class Sleep:
    seconds: float


Step = Call | Sleep
Flow = Generator[Step, Any, T]


def request_path(id: str, action: str = "") -> str:
    if not isinstance(id, str) or not id:
        raise ValueError("a request id must be a non-empty string")
    path = f"/v1/requests/{quote(id, safe='')}"
    return f"{path}/{action}" if action else path


def seconds(value: float | timedelta | None) -> float | None:
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def decode(status: int, text: str, retry_after: str | None, base_url: str) -> JSON:
    """The JSON of a response, or the `ClarifyError` it stands for (raised)."""
    try:
        value: JSON = json.loads(text) if text else None
    except ValueError:
        raise ProtocolError(
            f"HTTP {status} with a body that is not JSON; is {base_url} a clarify server?",
            status=status,
        ) from None
    if 200 <= status < 300:
        return value
    record = None
    if isinstance(value, dict) and isinstance(value.get("record"), dict):
        try:
            record = Record.from_json(value["record"])
        except ProtocolError:
            record = None
    raise error_from_response(status, value, retry_after, record)


def unreachable(base_url: str, detail: str, *, sent: bool, timed_out: bool) -> ClarifyError:
    if sent and timed_out:
        message = f"{base_url} did not reply in time"
    elif sent:
        message = f"the connection to {base_url} broke before the reply came ({detail})"
    else:
        message = (
            f"nothing answers at {base_url} ({detail}); is `clarify serve` running there? "
            "Set CLARIFY_URL to its address"
        )
    return ClarifyConnectionError(message, sent=sent)


def transient(error: ClarifyError) -> bool:
    """Whether waiting and trying again may succeed: no response, or the server is restarting."""
    return isinstance(error, (ClarifyConnectionError, ServiceUnavailableError, ProtocolError))


def idempotency_key() -> str:
    """A fresh idempotency key: 128 random bits."""
    return f"clarify-{secrets.token_hex(16)}"


def ask_body(
    question: str | None,
    choices: Iterable[Any] | None,
    questions: Iterable[Mapping[str, Any]] | None,
    context: JSON,
    timeout: float | timedelta | None,
    fields: Mapping[str, Any],
) -> dict[str, Any]:
    """The create body of `ask`: the one-question shorthand or `questions`, plus any fields."""
    if (question is None) == (questions is None):
        raise ValueError("ask needs either a question or questions=[...], not both")
    if question is not None:
        base: dict[str, Any] = {"question": question}
        if choices is not None:
            base["choices"] = list(choices)
    else:
        if choices is not None:
            raise ValueError("choices go inside each question when questions=[...] is given")
        base = {"questions": [dict(q) for q in questions or ()]}
    timeout_seconds = seconds(timeout)
    return with_fields(
        base,
        {
            "context": context,
            "timeout_seconds": None if timeout_seconds is None else int(timeout_seconds),
            **fields,
        },
    )


# Flows ------------------------------------------------------------------------------------------


def get_flow(id: str) -> Flow[Record]:
    return Record.from_json((yield Call("GET", request_path(id))))


def create_once_flow(body: Mapping[str, Any]) -> Flow[Record]:
    return Record.from_json((yield Call("POST", "/v1/requests", body=dict(body), has_body=True)))


def create_flow(body: Mapping[str, Any], within: float = CREATE_RETRY_SECONDS) -> Flow[Record]:
    """Creates a request, surviving a lost reply: the body gets an `idempotency_key` unless it
    has one, and the create is sent again (backing off) while the server was seen but did not
    reply, for up to `within` seconds. However many attempts arrive, there is one request.
    Nothing answering the first attempt is an error at once, since no server was seen."""
    body = dict(body)
    if body.get("idempotency_key") is None:
        body["idempotency_key"] = idempotency_key()
    waited = 0.0
    backoff = 0.2
    seen = False
    while True:
        try:
            return (yield from create_once_flow(body))
        except ClarifyError as error:
            if isinstance(error, ClarifyConnectionError):
                seen |= error.sent
            elif isinstance(error, ServiceUnavailableError):
                seen = True
            if not (seen and transient(error)) or waited + backoff > within:
                raise
        yield Sleep(backoff)
        waited += backoff
        backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


def wait_once_flow(id: str, timeout: float) -> Flow[Record]:
    poll = max(0, min(int(timeout), LONG_POLL_SECONDS))
    value = yield Call(
        "GET",
        request_path(id, "wait"),
        params={"timeout_seconds": str(poll)},
        timeout=poll + 15.0,
    )
    return Record.from_json(value)


def wait_flow(id: str, timeout: float | None, clock: Callable[[], float]) -> Flow[Record]:
    """Long-polls until the request is resolved or `timeout` seconds pass (`None`: no limit),
    reconnecting with backoff while the server is unreachable or restarting. Returns the last
    record seen, pending only when the time ran out."""
    deadline = None if timeout is None else clock() + timeout
    backoff = 0.2
    last: Record | None = None
    while True:
        left = LONG_POLL_SECONDS if deadline is None else max(0.0, deadline - clock())
        try:
            last = yield from wait_once_flow(id, left)
            backoff = 0.2
            if last.resolved or (deadline is not None and clock() >= deadline):
                return last
            continue
        except ClarifyError as error:
            if not transient(error):
                raise
            if deadline is not None and clock() + backoff >= deadline:
                if last is not None:
                    return last
                raise
        yield Sleep(backoff)
        backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)


def outcome_of(record: Record) -> Outcome:
    if record.outcome is None:
        raise ProtocolError(f"request {record.id} is {record.status} but came without an outcome")
    return record.outcome


def ask_flow(body: Mapping[str, Any], clock: Callable[[], float]) -> Flow[Outcome]:
    record = yield from create_flow(body)
    if not record.resolved:
        record = yield from wait_flow(record.id, None, clock)
    return outcome_of(record)


def list_flow(params: Mapping[str, Any]) -> Flow[Page]:
    query = {name: str(value) for name, value in params.items() if value is not None}
    return Page.from_json((yield Call("GET", "/v1/requests", params=query)))


def answer_flow(id: str, body: Mapping[str, Any]) -> Flow[Outcome | Record]:
    value = yield Call("POST", request_path(id, "answer"), body=dict(body), has_body=True)
    # A vote on a quorum request that needs more approvals is answered with the record, still
    # pending; anything that resolves the request, with the outcome.
    if isinstance(value, dict) and "request_id" not in value and value.get("status") == "pending":
        return Record.from_json(value)
    return Outcome.from_json(value)


def cancel_flow(id: str) -> Flow[Record]:
    value = yield Call("POST", request_path(id, "cancel"), body={}, has_body=True)
    return Record.from_json(value)


def extend_flow(id: str, by: str | int) -> Flow[Record]:
    value = yield Call("POST", request_path(id, "extend"), body={"by": by}, has_body=True)
    return Record.from_json(value)


def webhook_secret_flow() -> Flow[str]:
    value = yield Call("GET", "/v1/webhook-secret")
    if not isinstance(value, dict) or not isinstance(value.get("secret"), str):
        raise ProtocolError("the server sent a webhook secret without `secret`")
    secret: str = value["secret"]
    return secret


# Server-Sent Events -----------------------------------------------------------------------------


class SseDecoder:
    """Turns the lines of an event stream into `Event`s (the WHATWG rules clarify uses: `id`,
    `event`, `data` fields; comments and unknown fields ignored; a blank line ends an event)."""

    def __init__(self) -> None:
        self.last_event_id: str | None = None
        self._type = ""
        self._data: list[str] = []
        self._id: str | None = None

    def feed(self, line: str) -> Event | None:
        line = line.rstrip("\r\n")
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._type = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        return None

    def _dispatch(self) -> Event | None:
        if self._id is not None:
            self.last_event_id = self._id
        if not self._data:
            self._type = ""
            return None
        text = "\n".join(self._data)
        kind = self._type or "message"
        self._type, self._data = "", []
        try:
            data: JSON = json.loads(text)
        except ValueError:
            data = text
        record = None
        if isinstance(data, dict):
            try:
                record = Record.from_json(data)
            except ProtocolError:
                record = None
        return Event(id=self.last_event_id, type=kind, record=record, data=data)


def run_sync(flow: Flow[T], send: Callable[[Call], JSON], sleep: Callable[[float], None]) -> T:
    """Drives a flow with blocking calls."""
    reply: Any = None
    error: ClarifyError | None = None
    while True:
        try:
            step = flow.throw(error) if error is not None else flow.send(reply)
        except StopIteration as done:
            result: T = done.value
            return result
        reply, error = None, None
        if isinstance(step, Sleep):
            sleep(step.seconds)
            continue
        try:
            reply = send(step)
        except ClarifyError as e:
            error = e
