"""`verify_receipt`: receipts this test signs with a key of its own (valid, tampered, malformed),
the canonical-JSON vector all three SDKs share, and receipts a real server signed for requests
answered here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from conftest import ClarifyServer
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from clarify_hitl import (
    Client,
    ReceiptClaims,
    ReceiptVerificationError,
    Record,
    verify_receipt,
)
from clarify_hitl.receipts import arguments_sha256, canonical_json

# The same vector is in the TypeScript and Go SDKs' tests: all three must hash alike.
VECTOR_ARGUMENTS: dict[str, Any] = {"b": 1, "a": [1.5, "x", {"d": True, "c": None}], "é": 1e21}
VECTOR_CANONICAL = '{"a":[1.5,"x",{"c":null,"d":true}],"b":1,"é":1e+21}'
VECTOR_SHA256 = "dcad1a10f57b3958f6988f16f14e55ec393230600662db72530afa46f85d9082"

DEPLOY_ARGS: dict[str, Any] = {"env": "prod", "replicas": 3}


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    """An Ed25519 key with a kid, signing receipts as the server does."""

    def __init__(self, kid: str) -> None:
        self.kid = kid
        self.key = Ed25519PrivateKey.generate()

    def jwk(self) -> dict[str, str]:
        x = self.key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)
        return {
            "kty": "OKP",
            "crv": "Ed25519",
            "x": b64(x),
            "kid": self.kid,
            "alg": "EdDSA",
            "use": "sig",
        }

    def jwks(self) -> dict[str, Any]:
        return {"keys": [self.jwk()]}

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        head = header or {"alg": "EdDSA", "typ": "JWT", "kid": self.kid}
        signing_input = f"{b64(json.dumps(head).encode())}.{b64(json.dumps(claims).encode())}"
        return f"{signing_input}.{b64(self.key.sign(signing_input.encode()))}"


def claims_of(
    decision: str = "approve", status: str = "answered", arguments: Any = DEPLOY_ARGS
) -> dict[str, Any]:
    return {
        "iss": "http://127.0.0.1:7420",
        "sub": "req_1",
        "tid": "default",
        "iat": 1_765_000_000,
        "jti": "rcpt_1",
        "status": status,
        "by": "key:alice",
        "seq": 7,
        "approvals": [
            {
                "id": "deploy",
                "action": "deploy",
                "decision": decision,
                "args_sha256": arguments_sha256(arguments),
            }
        ],
    }


SIGNER = Signer("k1")


def test_canonical_json_and_its_sha256_match_the_shared_vector() -> None:
    assert canonical_json(VECTOR_ARGUMENTS).decode() == VECTOR_CANONICAL
    assert arguments_sha256(VECTOR_ARGUMENTS) == VECTOR_SHA256
    assert hashlib.sha256(VECTOR_CANONICAL.encode()).hexdigest() == VECTOR_SHA256
    # Members sort by UTF-16 code units: U+1F600 (the surrogates D83D DE00) before U+E000, the
    # other way round from code points or UTF-8.
    assert canonical_json({"\ue000": 2, "\U0001f600": 1}).decode() == '{"\U0001f600":1,"\ue000":2}'


def test_a_valid_receipt_returns_its_claims_typed() -> None:
    receipt = SIGNER.sign(claims_of())
    for jwks in (SIGNER.jwks(), json.dumps(SIGNER.jwks())):
        claims = verify_receipt(receipt, jwks, action="deploy", arguments=DEPLOY_ARGS)
        assert isinstance(claims, ReceiptClaims)
        assert (claims.sub, claims.status, claims.by, claims.seq, claims.kid) == (
            "req_1",
            "answered",
            "key:alice",
            7,
            "k1",
        )
        approval = claims.approval("deploy")
        assert approval is not None
        assert approval.decision == "approve"
    # Without an action the arguments must match the only approval; with neither, only the
    # signature is checked, so a denial verifies as a denial.
    assert verify_receipt(receipt, SIGNER.jwks(), arguments={"replicas": 3, "env": "prod"})
    denied = verify_receipt(SIGNER.sign(claims_of("deny")), SIGNER.jwks())
    assert denied.approvals[0].decision == "deny"


def test_one_of_several_approvals_of_an_action_matching_the_arguments_is_enough() -> None:
    claims = claims_of()
    claims["approvals"] = [
        {"id": "a", "action": "rm", "decision": "deny", "args_sha256": arguments_sha256(["x"])},
        {"id": "b", "action": "rm", "decision": "approve", "args_sha256": arguments_sha256(["y"])},
        {"id": "c", "action": "rm", "decision": "approve", "args_sha256": arguments_sha256(["z"])},
    ]
    receipt = SIGNER.sign(claims)
    assert verify_receipt(receipt, SIGNER.jwks(), action="rm", arguments=["z"]).sub == "req_1"
    check(receipt, "arguments_differ", action="rm", arguments=["x"])
    check(receipt, "action_needed", arguments=["z"])


def tamper_decision() -> str:
    header, _, signature = SIGNER.sign(claims_of("deny")).split(".")
    return f"{header}.{b64(json.dumps(claims_of('approve')).encode())}.{signature}"


def flip_signature_byte() -> str:
    header, payload, signature = SIGNER.sign(claims_of()).split(".")
    raw = bytearray(unb64(signature))
    raw[10] ^= 0x01
    return f"{header}.{payload}.{b64(bytes(raw))}"


def same_kid_other_key() -> str:
    return Signer("k1").sign(claims_of())


def header_of(header: dict[str, Any]) -> str:
    return SIGNER.sign(claims_of(), header=header)


def payload_of(payload: bytes) -> str:
    head = b64(json.dumps({"alg": "EdDSA", "kid": "k1"}).encode())
    signing_input = f"{head}.{b64(payload)}"
    return f"{signing_input}.{b64(SIGNER.key.sign(signing_input.encode()))}"


def check(receipt: str, reason: str, jwks: Any = None, **match: Any) -> None:
    with pytest.raises(ReceiptVerificationError) as refused:
        verify_receipt(receipt, SIGNER.jwks() if jwks is None else jwks, **match)
    assert refused.value.reason == refused.value.code == reason
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize(
    ("make", "reason", "match", "jwks"),
    [
        (lambda: SIGNER.sign(claims_of()), "arguments_differ", {"arguments": {"env": "dev"}}, None),
        (tamper_decision, "bad_signature", {"action": "deploy"}, None),
        (flip_signature_byte, "bad_signature", {}, None),
        (same_kid_other_key, "bad_signature", {}, None),
        (lambda: SIGNER.sign(claims_of()), "unknown_kid", {}, Signer("k2").jwks()),
        (lambda: SIGNER.sign(claims_of()), "invalid_jwks", {}, {"keys": "k1"}),
        (lambda: SIGNER.sign(claims_of()), "invalid_jwks", {}, "not json"),
        (lambda: header_of({"alg": "HS256", "kid": "k1"}), "not_eddsa", {}, None),
        (lambda: header_of({"alg": "none", "kid": "k1"}), "not_eddsa", {}, None),
        (lambda: header_of({"alg": "EdDSA"}), "malformed", {}, None),
        (lambda: "", "malformed", {}, None),
        (lambda: "a.b", "malformed", {}, None),
        (lambda: "a.b.c.d", "malformed", {}, None),
        (lambda: "!!.e30.AAAA", "malformed", {}, None),
        (lambda: SIGNER.sign(claims_of())[:-8], "malformed", {}, None),
        (lambda: payload_of(b"[1]"), "malformed", {}, None),
        (lambda: payload_of(b'{"sub": "req_1"}'), "malformed", {}, None),
        (lambda: SIGNER.sign(claims_of()), "action_not_in_receipt", {"action": "drop_db"}, None),
        (lambda: SIGNER.sign(claims_of("deny")), "not_approved", {"action": "deploy"}, None),
        (
            lambda: SIGNER.sign(claims_of("revise")),
            "not_approved",
            {"arguments": DEPLOY_ARGS},
            None,
        ),
        (
            lambda: SIGNER.sign(claims_of("none", status="expired")),
            "not_approved",
            {"action": "deploy"},
            None,
        ),
    ],
)
def test_a_receipt_that_does_not_prove_the_call_is_refused_with_its_reason(
    make: Callable[[], str], reason: str, match: dict[str, Any], jwks: Any
) -> None:
    check(make(), reason, jwks, **match)


def test_without_the_receipts_extra_the_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    receipt = SIGNER.sign(claims_of())
    monkeypatch.setitem(sys.modules, "rfc8785", None)
    with pytest.raises(ImportError, match=r"rfc8785 is missing.*clarify-hitl\[receipts\]"):
        verify_receipt(receipt, SIGNER.jwks(), action="deploy", arguments=DEPLOY_ARGS)


# Against the real server: a person answers through the API, the record's receipt verifies
# against the server's published keys.


def deploy_question(allow_edit: bool) -> dict[str, Any]:
    return {
        "id": "deploy",
        "kind": "approval",
        "text": "Deploy?",
        "action": {"name": "deploy", "arguments": DEPLOY_ARGS},
        "allow_edit": allow_edit,
    }


def resolved_receipt(
    agent: Client, alice: Client, session: str, answer: dict[str, Any], allow_edit: bool = False
) -> tuple[Record, str]:
    created = agent.create({"questions": [deploy_question(allow_edit)], "session": session})
    outcome = alice.answer(created.id, answer)
    record = agent.get(created.id)
    assert record.receipt, (
        f"the resolved record has no `receipt` (fields: {sorted(record.raw)}); "
        "is CLARIFY_BIN a server that signs receipts?"
    )
    assert outcome.raw.get("receipt") == record.receipt, "the outcome's receipt is not the record's"
    assert record.outcome is not None
    assert record.outcome.receipt == record.receipt
    return record, record.receipt


def server_jwks(server: ClarifyServer) -> dict[str, Any]:
    response = httpx.get(server.url + "/.well-known/jwks.json")
    assert response.status_code == 200, response.text
    jwks: dict[str, Any] = response.json()
    assert jwks["keys"], "the server publishes no keys"
    for key in jwks["keys"]:
        assert (key["kty"], key["crv"]) == ("OKP", "Ed25519")
    return jwks


def test_a_real_approval_receipt_verifies_for_its_action_and_arguments(
    server: ClarifyServer, agent: Client, alice: Client, session: str
) -> None:
    record, receipt = resolved_receipt(agent, alice, session, {"decision": "approve"})
    claims = verify_receipt(receipt, server_jwks(server), action="deploy", arguments=DEPLOY_ARGS)
    assert (claims.sub, claims.status, claims.iss) == (record.id, "answered", server.url)
    assert "alice" in claims.by
    assert [(a.id, a.action, a.decision) for a in claims.approvals] == [
        ("deploy", "deploy", "approve")
    ]
    with pytest.raises(ReceiptVerificationError, match="arguments differ"):
        verify_receipt(receipt, server_jwks(server), "deploy", {"env": "prod", "replicas": 4})
    with pytest.raises(ReceiptVerificationError, match="not in the receipt"):
        verify_receipt(receipt, server_jwks(server), "drop_database")


def test_a_real_receipt_binds_the_edited_arguments_not_the_proposed_ones(
    server: ClarifyServer, agent: Client, alice: Client, session: str
) -> None:
    edited = {"env": "staging", "replicas": 1}
    _, receipt = resolved_receipt(
        agent,
        alice,
        session,
        {"decision": "approve", "edited_arguments": edited},
        allow_edit=True,
    )
    jwks = server_jwks(server)
    assert verify_receipt(receipt, jwks, action="deploy", arguments=edited).status == "answered"
    with pytest.raises(ReceiptVerificationError) as refused:
        verify_receipt(receipt, jwks, action="deploy", arguments=DEPLOY_ARGS)
    assert refused.value.reason == "arguments_differ"


def test_a_real_denial_receipt_verifies_but_does_not_approve(
    server: ClarifyServer, agent: Client, alice: Client, session: str
) -> None:
    _, receipt = resolved_receipt(agent, alice, session, {"decision": "deny", "reason": "no"})
    jwks = server_jwks(server)
    assert verify_receipt(receipt, jwks).approvals[0].decision == "deny"
    with pytest.raises(ReceiptVerificationError) as refused:
        verify_receipt(receipt, jwks, action="deploy", arguments=DEPLOY_ARGS)
    assert refused.value.reason == "not_approved"
