"""Checking that a webhook delivery came from clarify.

clarify signs each delivery with `Clarify-Signature: t=<unix seconds>,v1=<hex>`, where
`v1 = hex(HMAC-SHA256(secret, "<t>." + raw body))` and `secret` is the tenant's webhook secret
(`GET /v1/webhook-secret`, or `Client.webhook_secret()`). Deliveries are at least once:
deduplicate on the `Clarify-Delivery` header.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

from ._errors import ClarifyError
from ._types import Outcome

DEFAULT_TOLERANCE_SECONDS = 300
"""How far a signature's time may be from now: 5 minutes, against replayed deliveries."""


class WebhookVerificationError(ClarifyError):
    """The delivery is not signed by clarify with this secret, or is too old; refuse it."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="invalid_signature")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    for key, value in headers.items():
        if key.lower() == name:
            return value
    return None


def verify_webhook(
    secret: str,
    headers: Mapping[str, str],
    body: bytes | str,
    *,
    tolerance: float = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> Outcome:
    """Checks a delivery's `Clarify-Signature` and returns its outcome.

    `headers` are the request's headers (any mapping; names compared case-insensitively),
    `body` the raw body exactly as received. Raises `WebhookVerificationError` when the header
    is missing or malformed, the time is more than `tolerance` seconds from `now` (default:
    the current time), or no `v1` signature matches (compared in constant time).
    """
    raw = body.encode() if isinstance(body, str) else bytes(body)
    header = _header(headers, "clarify-signature")
    if not header:
        raise WebhookVerificationError("the delivery has no Clarify-Signature header")
    timestamp: int | None = None
    signatures: list[str] = []
    for part in header.split(","):
        name, _, value = part.strip().partition("=")
        if name == "t":
            try:
                timestamp = int(value)
            except ValueError:
                raise WebhookVerificationError(
                    f"Clarify-Signature has a time that is not a number: {value[:40]!r}"
                ) from None
        elif name == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        raise WebhookVerificationError("Clarify-Signature needs both t=<time> and v1=<signature>")
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance:
        age = int(current - timestamp)
        when = f"{age} s ago" if age >= 0 else f"{-age} s in the future"
        raise WebhookVerificationError(
            f"the delivery was signed {when}, outside the {int(tolerance)} s tolerance; "
            "check the clocks, or refuse a replay"
        )
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + raw, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise WebhookVerificationError(
            "the signature does not match; is the secret this tenant's webhook secret?"
        )
    try:
        delivered: Any = json.loads(raw)
    except ValueError:
        raise WebhookVerificationError("the signed body is not JSON") from None
    return Outcome.from_json(delivered)
