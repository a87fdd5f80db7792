"""`Client` and `AsyncClient`: the API over httpx, one blocking and one for asyncio.

Both drive the flows of `_protocol` (the one implementation of what each call does, retries
included) and differ only in how they send a call and how they sleep.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Mapping
from datetime import timedelta
from typing import Any, TypeVar

import httpx

from . import _protocol as p
from ._errors import ClarifyError, ProtocolError
from ._types import JSON, Event, Outcome, Page, Record

T = TypeVar("T")

_VERSION = "0.1.0"
_STREAM_READ_TIMEOUT = 45.0
"""The server sends a keep-alive every 15 s; a stream silent this long is dead."""


class _Base:
    """What the two clients share: configuration and turning httpx's answers into JSON or
    `ClarifyError`s."""

    def __init__(
        self,
        url: str | None,
        token: str | None,
        clock: Callable[[], float] | None,
    ) -> None:
        base = url or os.environ.get("CLARIFY_URL") or p.DEFAULT_URL
        parsed = httpx.URL(base)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"invalid clarify URL {base!r}: use an http:// or https:// URL")
        self.base_url = base.rstrip("/")
        self._token = token if token is not None else os.environ.get("CLARIFY_TOKEN") or None
        self._clock = clock or time.monotonic

    def _headers(self) -> dict[str, str]:
        headers = {"user-agent": f"clarify-hitl/{_VERSION}", "accept": "application/json"}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"
        return headers

    def _request(self, call: p.Call) -> dict[str, Any]:
        args: dict[str, Any] = {
            "method": call.method,
            "url": self.base_url + call.path,
            "params": dict(call.params),
            "headers": self._headers(),
            "timeout": httpx.Timeout(call.timeout, connect=5.0),
        }
        if call.has_body:
            args["json"] = call.body
        return args

    def _decode(self, response: httpx.Response) -> JSON:
        return p.decode(
            response.status_code, response.text, response.headers.get("retry-after"), self.base_url
        )

    def _unreachable(self, error: httpx.TransportError) -> ClarifyError:
        connect = isinstance(error, (httpx.ConnectError, httpx.ConnectTimeout))
        detail = "connection refused" if connect else (str(error) or type(error).__name__)
        return p.unreachable(
            self.base_url,
            detail,
            sent=not connect,
            timed_out=isinstance(error, httpx.TimeoutException),
        )

    @staticmethod
    def _list_params(
        status: str | None,
        session: str | None,
        agent: str | None,
        tag: str | None,
        limit: int | None,
        cursor: str | None,
    ) -> dict[str, Any]:
        return {
            "status": status,
            "session": session,
            "agent": agent,
            "tag": tag,
            "limit": limit,
            "cursor": cursor,
        }


class Client(_Base):
    """A blocking client of one clarify server.

    `url` and `token` default to `CLARIFY_URL` (else `http://127.0.0.1:7420`) and
    `CLARIFY_TOKEN`. Use it as a context manager, or call `close()`.

    >>> client = Client()
    >>> outcome = client.ask("Deploy to prod?", ["yes", "no"])
    >>> outcome.answer
    'yes'
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        http_client: httpx.Client | None = None,
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        super().__init__(url, token, clock)
        self._http = http_client or httpx.Client()
        self._sleep = sleep or time.sleep

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: p.Call) -> JSON:
        try:
            response = self._http.request(**self._request(call))
        except httpx.TransportError as e:
            raise self._unreachable(e) from e
        return self._decode(response)

    def _run(self, flow: p.Flow[T]) -> T:
        return p.run_sync(flow, self._send, self._sleep)

    def ask(
        self,
        question: str | None = None,
        choices: Iterable[Any] | None = None,
        *,
        questions: Iterable[Mapping[str, Any]] | None = None,
        context: JSON = None,
        timeout: float | timedelta | None = None,
        **fields: Any,
    ) -> Outcome:
        """Asks a person and waits for the outcome.

        Give one `question` (with `choices` it is a one-choice question, without an open one) or
        up to five `questions`. `timeout` is how long the person has (seconds or a timedelta;
        default the server's hour; `0` never expires); once it passes the outcome is `expired`.
        Any other field of a create (`session`, `agent`, `tags`, `tool_call_id`, `allow_skip`,
        `responders`, `callback_url`, `idempotency_key`, ...) goes in `fields`.

        The create is sent again if its reply is lost (under an idempotency key, so it is asked
        once), and the wait reconnects across server restarts.
        """
        body = p.ask_body(question, choices, questions, context, timeout, fields)
        return self._run(p.ask_flow(body, self._clock))

    def create(self, body: Mapping[str, Any], *, retry: bool = True) -> Record:
        """Creates a request from any accepted body shape and returns its record at once.

        With `retry` (the default) a create whose reply was lost is sent again under an
        idempotency key (added unless the body has one), so it is created once."""
        if retry:
            return self._run(p.create_flow(body))
        return self._run(p.create_once_flow(body))

    def wait(self, id: str, timeout: float | timedelta | None = None) -> Record:
        """Waits up to `timeout` (default: until resolved) and returns the record, resolved or
        still pending. Long-polls, reconnecting across server restarts."""
        return self._run(p.wait_flow(id, p.seconds(timeout), self._clock))

    def outcome(self, id: str, timeout: float | timedelta | None = None) -> Outcome | None:
        """The request's outcome, waiting up to `timeout` (default: until resolved); `None`
        when it is still pending then."""
        return self.wait(id, timeout).outcome

    def get(self, id: str) -> Record:
        return self._run(p.get_flow(id))

    def list_page(
        self,
        *,
        status: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        """One page of requests, newest first."""
        params = self._list_params(status, session, agent, tag, limit, cursor)
        return self._run(p.list_flow(params))

    def list(
        self,
        *,
        status: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        tag: str | None = None,
        page_size: int | None = None,
    ) -> Generator[Record, None, None]:
        """Every matching request, newest first, fetching pages as the iteration goes."""
        cursor = None
        while True:
            page = self.list_page(
                status=status, session=session, agent=agent, tag=tag, limit=page_size, cursor=cursor
            )
            yield from page.requests
            if not page.next_cursor or not page.requests:
                return
            cursor = page.next_cursor

    def answer(self, id: str, answer: Mapping[str, Any]) -> Outcome | Record:
        """Answers a request (`{"answers": {...}}`, or a one-question request's answer itself,
        e.g. `{"option": "yes"}`); returns the outcome. On a quorum request (`approvals_required`
        above 1) the answer is this key's vote: while more approvals are needed it returns the
        `Record`, still pending, with the `votes` so far. Raises `AlreadyResolvedError` when
        someone was first, `ValidationError` when the answer does not fit (still pending), and
        `ClarifyError` with code `already_voted` for a second vote."""
        return self._run(p.answer_flow(id, answer))

    def skip(self, id: str) -> Outcome:
        return _resolved(self.answer(id, {"skip": True}))

    def cancel(self, id: str) -> Record:
        return self._run(p.cancel_flow(id))

    def extend(self, id: str, by: str | int) -> Record:
        """Moves a pending request's deadline `by` later (`"30m"`, `"2h"`, `"1d"`, or seconds),
        as someone who may answer it, up to the server's `[decisions] max_extension`; returns
        the record with its new `expires_at`. Raises `ClarifyError` (`extension_too_long`,
        `invalid_extension`) when it may not move that far, `AlreadyResolvedError` when the
        request is no longer pending."""
        return self._run(p.extend_flow(id, by))

    def webhook_secret(self) -> str:
        """The secret that signs this tenant's webhooks (for `verify_webhook`)."""
        return self._run(p.webhook_secret_flow())

    def events(
        self, last_event_id: str | None = None, *, reconnect: bool = True
    ) -> Generator[Event, None, None]:
        """Server-Sent Events of the key's tenant (`request.created`, `request.answered`, ...).

        Without `last_event_id` it starts with events from now on; with it, it replays every
        later one first. When the stream drops it reconnects with `Last-Event-ID`, so no event
        is missed or repeated; with `reconnect=False` it ends instead."""
        decoder = p.SseDecoder()
        decoder.last_event_id = last_event_id
        backoff = 0.2
        while True:
            headers = self._headers() | {"accept": "text/event-stream"}
            if decoder.last_event_id is not None:
                headers["last-event-id"] = decoder.last_event_id
            try:
                with self._http.stream(
                    "GET",
                    self.base_url + "/v1/events",
                    headers=headers,
                    timeout=httpx.Timeout(_STREAM_READ_TIMEOUT, connect=5.0),
                ) as response:
                    if response.status_code != 200:
                        response.read()
                        self._decode(response)
                        raise ProtocolError(
                            f"HTTP {response.status_code} instead of an event stream",
                            status=response.status_code,
                        )
                    backoff = 0.2
                    for line in response.iter_lines():
                        event = decoder.feed(line)
                        if event is not None:
                            yield event
            except httpx.TransportError as e:
                error: ClarifyError = self._unreachable(e)
                if not reconnect:
                    raise error from e
            except ClarifyError as e:
                if not (reconnect and p.transient(e)):
                    raise
            if not reconnect:
                return
            self._sleep(backoff)
            backoff = min(backoff * 2, p.MAX_BACKOFF_SECONDS)


class AsyncClient(_Base):
    """The asyncio twin of `Client`: the same methods, awaited (`list` and `events` are async
    iterators). Use it as an async context manager, or call `aclose()`."""

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        http_client: httpx.AsyncClient | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        super().__init__(url, token, clock)
        self._http = http_client or httpx.AsyncClient()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: p.Call) -> JSON:
        try:
            response = await self._http.request(**self._request(call))
        except httpx.TransportError as e:
            raise self._unreachable(e) from e
        return self._decode(response)

    async def _run(self, flow: p.Flow[T]) -> T:
        reply: Any = None
        error: ClarifyError | None = None
        while True:
            try:
                step = flow.throw(error) if error is not None else flow.send(reply)
            except StopIteration as done:
                result: T = done.value
                return result
            reply, error = None, None
            if isinstance(step, p.Sleep):
                await asyncio.sleep(step.seconds)
                continue
            try:
                reply = await self._send(step)
            except ClarifyError as e:
                error = e

    async def ask(
        self,
        question: str | None = None,
        choices: Iterable[Any] | None = None,
        *,
        questions: Iterable[Mapping[str, Any]] | None = None,
        context: JSON = None,
        timeout: float | timedelta | None = None,
        **fields: Any,
    ) -> Outcome:
        """Asks a person and waits for the outcome; see `Client.ask`."""
        body = p.ask_body(question, choices, questions, context, timeout, fields)
        return await self._run(p.ask_flow(body, self._clock))

    async def create(self, body: Mapping[str, Any], *, retry: bool = True) -> Record:
        """Creates a request and returns its record at once; see `Client.create`."""
        if retry:
            return await self._run(p.create_flow(body))
        return await self._run(p.create_once_flow(body))

    async def wait(self, id: str, timeout: float | timedelta | None = None) -> Record:
        """Waits up to `timeout` (default: until resolved); see `Client.wait`."""
        return await self._run(p.wait_flow(id, p.seconds(timeout), self._clock))

    async def outcome(self, id: str, timeout: float | timedelta | None = None) -> Outcome | None:
        return (await self.wait(id, timeout)).outcome

    async def get(self, id: str) -> Record:
        return await self._run(p.get_flow(id))

    async def list_page(
        self,
        *,
        status: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        tag: str | None = None,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> Page:
        params = self._list_params(status, session, agent, tag, limit, cursor)
        return await self._run(p.list_flow(params))

    async def list(
        self,
        *,
        status: str | None = None,
        session: str | None = None,
        agent: str | None = None,
        tag: str | None = None,
        page_size: int | None = None,
    ) -> AsyncGenerator[Record, None]:
        """Every matching request, newest first, fetching pages as the iteration goes."""
        cursor = None
        while True:
            page = await self.list_page(
                status=status, session=session, agent=agent, tag=tag, limit=page_size, cursor=cursor
            )
            for record in page.requests:
                yield record
            if not page.next_cursor or not page.requests:
                return
            cursor = page.next_cursor

    async def answer(self, id: str, answer: Mapping[str, Any]) -> Outcome | Record:
        return await self._run(p.answer_flow(id, answer))

    async def skip(self, id: str) -> Outcome:
        return _resolved(await self.answer(id, {"skip": True}))

    async def cancel(self, id: str) -> Record:
        return await self._run(p.cancel_flow(id))

    async def extend(self, id: str, by: str | int) -> Record:
        """Moves a pending request's deadline later; see `Client.extend`."""
        return await self._run(p.extend_flow(id, by))

    async def webhook_secret(self) -> str:
        return await self._run(p.webhook_secret_flow())

    async def events(
        self, last_event_id: str | None = None, *, reconnect: bool = True
    ) -> AsyncGenerator[Event, None]:
        """Server-Sent Events, resumed across drops; see `Client.events`."""
        decoder = p.SseDecoder()
        decoder.last_event_id = last_event_id
        backoff = 0.2
        while True:
            headers = self._headers() | {"accept": "text/event-stream"}
            if decoder.last_event_id is not None:
                headers["last-event-id"] = decoder.last_event_id
            try:
                async with self._http.stream(
                    "GET",
                    self.base_url + "/v1/events",
                    headers=headers,
                    timeout=httpx.Timeout(_STREAM_READ_TIMEOUT, connect=5.0),
                ) as response:
                    if response.status_code != 200:
                        await response.aread()
                        self._decode(response)
                        raise ProtocolError(
                            f"HTTP {response.status_code} instead of an event stream",
                            status=response.status_code,
                        )
                    backoff = 0.2
                    async for line in response.aiter_lines():
                        event = decoder.feed(line)
                        if event is not None:
                            yield event
            except httpx.TransportError as e:
                error: ClarifyError = self._unreachable(e)
                if not reconnect:
                    raise error from e
            except ClarifyError as e:
                if not (reconnect and p.transient(e)):
                    raise
            if not reconnect:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, p.MAX_BACKOFF_SECONDS)


def _resolved(result: Outcome | Record) -> Outcome:
    """A skip always resolves the request, so the server answers it with the outcome."""
    if isinstance(result, Outcome):
        return result
    raise ProtocolError("the server answered a skip without an outcome")
