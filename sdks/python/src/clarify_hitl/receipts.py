"""Checking a receipt: proof, signed by the server, of what a person decided.

Every resolved request carries `receipt`, a compact JWS (RFC 7515) signed with Ed25519 (`alg`
`EdDSA`, a `kid` naming the key). Its claims say which request (`sub`), how it ended (`status`),
who resolved it (`by`), and for each approval question the action, the decision and
`args_sha256`: the SHA-256 of the RFC 8785 (JCS) canonical JSON of the arguments approved (the
edited ones where the person edited them). An executor that holds the receipt and the server's
public keys (`GET /.well-known/jwks.json`) can check, without asking the server, that the exact
call it is about to make was approved.

The checks need `cryptography` (Ed25519) and `rfc8785` (JCS), the `receipts` extra:
`pip install 'clarify-hitl[receipts]'`. The rest of the package works without them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._errors import ClarifyError
from ._types import JSON

__all__ = [
    "ReceiptApproval",
    "ReceiptClaims",
    "ReceiptVerificationError",
    "arguments_sha256",
    "canonical_json",
    "verify_receipt",
]

_EXTRA_HINT = "pip install 'clarify-hitl[receipts]'"
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class ReceiptVerificationError(ClarifyError):
    """The receipt does not prove what was asked of it; do not act on it.

    `code` (also `reason`) says why: `malformed`, `not_eddsa`, `unknown_kid`, `bad_signature`,
    `invalid_jwks`, `action_not_in_receipt`, `action_needed` (arguments without an action while
    the receipt has several approvals), `not_approved` or `arguments_differ`.
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message, code=reason)
        self.reason = reason


@dataclass(frozen=True)
class ReceiptApproval:
    """One approval question of the request: the action, what the person decided, and the
    SHA-256 of the canonical JSON of the arguments they approved."""

    id: str
    action: str
    decision: str
    args_sha256: str


@dataclass(frozen=True)
class ReceiptClaims:
    """A receipt's claims, once its signature is verified.

    `iss` is the server's public URL, `sub` the request's id, `tid` its tenant, `iat` the
    signing time (Unix seconds), `jti` the receipt's unique id, `status` how the request ended,
    `by` who resolved it (`key:<name>`, or `system`), `seq` the resolution's position in the
    audit chain, and `kid` the key that signed it. `raw` keeps every claim as sent.
    """

    iss: str
    sub: str
    tid: str
    iat: int
    jti: str
    status: str
    by: str
    seq: int
    approvals: list[ReceiptApproval]
    kid: str
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def approval(self, action: str) -> ReceiptApproval | None:
        """The first approval of `action`, or `None` when the receipt has none."""
        return next((a for a in self.approvals if a.action == action), None)


def canonical_json(value: JSON) -> bytes:
    """`value` as RFC 8785 (JCS) canonical JSON: keys sorted, no spaces, ES6 number form."""
    rfc8785 = _require("rfc8785")
    try:
        encoded: bytes = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as e:
        raise ValueError(f"the arguments cannot be written as canonical JSON: {e}") from None
    return encoded


def arguments_sha256(arguments: JSON) -> str:
    """The lowercase hex SHA-256 of the arguments' canonical JSON, as a receipt's `args_sha256`."""
    return hashlib.sha256(canonical_json(arguments)).hexdigest()


def verify_receipt(
    receipt: str,
    jwks: Mapping[str, Any] | str | bytes,
    action: str | None = None,
    arguments: JSON = None,
) -> ReceiptClaims:
    """Verifies a receipt's signature against `jwks` and returns its claims.

    `jwks` is the server's `/.well-known/jwks.json`, as a dict or its JSON text. With `action`,
    the receipt must hold an approval of that action whose decision is `approve` on an
    `answered` request; with `arguments` too, one such approval must have been of exactly these
    arguments (compared through `args_sha256`). With `arguments` alone, the receipt's only
    approval must be approved and match them. `None` means not given.

    Raises `ReceiptVerificationError` with a one-line reason when any check fails, and
    `ImportError` naming the `receipts` extra when its packages are not installed.
    """
    ed25519 = _require("cryptography.hazmat.primitives.asymmetric.ed25519")
    invalid_signature = _require("cryptography.exceptions").InvalidSignature

    parts = receipt.strip().split(".") if isinstance(receipt, str) else []
    if len(parts) != 3:
        raise _malformed("it is not a compact JWS (three base64url parts joined by dots)")
    header = _json_object(_b64decode(parts[0], "header"), "header")
    alg = header.get("alg")
    if alg != "EdDSA":
        raise ReceiptVerificationError(
            "not_eddsa", f"the receipt is signed with alg {alg!r}; only EdDSA (Ed25519) is accepted"
        )
    kid = header.get("kid")
    if not isinstance(kid, str) or not kid:
        raise _malformed("its header names no key (`kid`)")
    payload = _b64decode(parts[1], "payload")
    signature = _b64decode(parts[2], "signature")
    if len(signature) != 64:
        raise _malformed(f"its signature is {len(signature)} bytes, not Ed25519's 64")

    public_key = ed25519.Ed25519PublicKey.from_public_bytes(_public_key(jwks, kid))
    try:
        public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode("ascii"))
    except invalid_signature:
        raise ReceiptVerificationError(
            "bad_signature",
            f"bad signature: the receipt was not signed by key {kid!r} or was changed after",
        ) from None

    claims = _claims(_json_object(payload, "payload"), kid)
    if action is not None or arguments is not None:
        _check_approval(claims, action, arguments)
    return claims


def _check_approval(claims: ReceiptClaims, action: str | None, arguments: JSON) -> None:
    if action is None:
        if len(claims.approvals) != 1:
            if not claims.approvals:
                raise ReceiptVerificationError(
                    "action_not_in_receipt", "the receipt holds no approval to match arguments to"
                )
            names = ", ".join(a.action for a in claims.approvals)
            raise ReceiptVerificationError(
                "action_needed",
                f"the receipt holds {len(claims.approvals)} approvals ({names}); "
                "name the action the arguments are for",
            )
        entries = claims.approvals
        action = entries[0].action
    else:
        entries = [a for a in claims.approvals if a.action == action]
        if not entries:
            held = ", ".join(repr(a.action) for a in claims.approvals) or "none"
            raise ReceiptVerificationError(
                "action_not_in_receipt",
                f"action {action!r} is not in the receipt (its approvals: {held})",
            )
    if claims.status != "answered":
        raise ReceiptVerificationError(
            "not_approved",
            f"action {action!r} was not approved: the request was {claims.status}, not answered",
        )
    approved = [a for a in entries if a.decision == "approve"]
    if not approved:
        decisions = ", ".join(sorted({a.decision for a in entries}))
        raise ReceiptVerificationError(
            "not_approved", f"action {action!r} was not approved: the decision was {decisions}"
        )
    if arguments is not None:
        digest = arguments_sha256(arguments)
        if not any(a.args_sha256 == digest for a in approved):
            raise ReceiptVerificationError(
                "arguments_differ",
                f"the arguments differ from those approved for {action!r} "
                f"(sha256 {digest[:12]}…, approved {approved[0].args_sha256[:12]}…)",
            )


def _require(module: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(
            f"checking receipts needs the `receipts` extra ({module.split('.')[0]} is missing): "
            f"{_EXTRA_HINT}"
        ) from None


def _malformed(why: str) -> ReceiptVerificationError:
    return ReceiptVerificationError("malformed", f"malformed receipt: {why}")


def _b64decode(text: str, what: str) -> bytes:
    if not _BASE64URL.fullmatch(text) or len(text) % 4 == 1:
        raise _malformed(f"its {what} is not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise _malformed(f"its {what} is not base64url") from None


def _json_object(raw: bytes, what: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        raise _malformed(f"its {what} is not JSON") from None
    if not isinstance(value, dict):
        raise _malformed(f"its {what} is not a JSON object")
    return value


def _public_key(jwks: Mapping[str, Any] | str | bytes, kid: str) -> bytes:
    if isinstance(jwks, (str, bytes)):
        try:
            jwks = json.loads(jwks)
        except ValueError:
            raise ReceiptVerificationError("invalid_jwks", "the JWKS is not JSON") from None
    keys = jwks.get("keys") if isinstance(jwks, Mapping) else None
    if not isinstance(keys, list):
        raise ReceiptVerificationError(
            "invalid_jwks", 'the JWKS is not {"keys": [...]} (the server\'s /.well-known/jwks.json)'
        )
    for key in keys:
        if not isinstance(key, Mapping) or key.get("kid") != kid:
            continue
        x = key.get("x")
        if key.get("kty") != "OKP" or key.get("crv") != "Ed25519" or not isinstance(x, str):
            raise ReceiptVerificationError(
                "unknown_kid", f"the JWKS key {kid!r} is not an Ed25519 (OKP) key"
            )
        try:
            raw = _b64decode(x, "key")
        except ReceiptVerificationError:
            raw = b""
        if len(raw) != 32:
            raise ReceiptVerificationError(
                "invalid_jwks", f"the JWKS key {kid!r} has an `x` that is not 32 base64url bytes"
            )
        return raw
    raise ReceiptVerificationError(
        "unknown_kid",
        f"unknown kid {kid!r}: no key of the JWKS has it "
        "(is this the JWKS of the server that signed the receipt?)",
    )


def _claims(c: dict[str, Any], kid: str) -> ReceiptClaims:
    def text(name: str) -> str:
        value = c.get(name)
        if not isinstance(value, str):
            raise _malformed(f"its claim `{name}` is not a string")
        return value

    def integer(name: str) -> int:
        value = c.get(name)
        if not isinstance(value, int) or isinstance(value, bool):
            raise _malformed(f"its claim `{name}` is not an integer")
        return value

    entries = c.get("approvals", [])
    if not isinstance(entries, list):
        raise _malformed("its claim `approvals` is not a list")
    approvals = []
    for entry in entries:
        fields = entry if isinstance(entry, dict) else {}
        values = [fields.get(k) for k in ("id", "action", "decision", "args_sha256")]
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) != len(values):
            raise _malformed("an approval lacks `id`, `action`, `decision` or `args_sha256`")
        approvals.append(ReceiptApproval(*strings))
    return ReceiptClaims(
        iss=text("iss"),
        sub=text("sub"),
        tid=text("tid"),
        iat=integer("iat"),
        jti=text("jti"),
        status=text("status"),
        by=text("by"),
        seq=integer("seq"),
        approvals=approvals,
        kid=kid,
        raw=c,
    )
