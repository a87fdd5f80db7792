"""`verify_webhook` against a real delivery from `clarify serve`, and what it refuses."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from clarify_hitl import Client, WebhookVerificationError, verify_webhook

Delivery = tuple[dict[str, str], bytes]


@pytest.fixture
def receiver() -> Iterator[tuple[str, queue.Queue[Delivery]]]:
    received: queue.Queue[Delivery] = queue.Queue()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            received.put((dict(self.headers.items()), body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{http.server_address[1]}/hook", received
    http.shutdown()
    http.server_close()


def test_a_real_delivery_verifies_and_tampering_does_not(
    agent: Client, alice: Client, session: str, receiver: tuple[str, queue.Queue[Delivery]]
) -> None:
    url, received = receiver
    record = agent.create(
        {"question": "Hook?", "choices": ["yes", "no"], "session": session, "callback_url": url}
    )
    alice.answer(record.id, {"option": "yes"})
    headers, body = received.get(timeout=30)
    secret = agent.webhook_secret()

    outcome = verify_webhook(secret, headers, body)
    assert (outcome.request_id, outcome.status, outcome.answer) == (record.id, "answered", "yes")
    assert outcome.answered_by == "alice"
    lower = {k.lower(): v for k, v in headers.items()}
    assert lower["clarify-event"] == "request.answered"
    assert lower["clarify-delivery"]

    refusals = {
        "tampered body": (secret, headers, body.replace(b"yes", b"no!")),
        "wrong secret": ("whsec_wrong", headers, body),
        "no header": (
            secret,
            {k: v for k, v in headers.items() if k.lower() != "clarify-signature"},
            body,
        ),
    }
    for what, (key, hdrs, raw) in refusals.items():
        with pytest.raises(WebhookVerificationError) as refused:
            verify_webhook(key, hdrs, raw)
        assert refused.value.code == "invalid_signature", what

    signed_at = int(lower["clarify-signature"].split(",")[0].removeprefix("t="))
    with pytest.raises(WebhookVerificationError, match="signed 301 s ago, outside the 300 s"):
        verify_webhook(secret, headers, body, now=signed_at + 301)
    with pytest.raises(WebhookVerificationError, match="signed 301 s in the future, outside"):
        verify_webhook(secret, headers, body, now=signed_at - 301)
    assert verify_webhook(secret, headers, body, now=signed_at + 299).request_id == record.id
    assert abs(time.time() - signed_at) < 60
