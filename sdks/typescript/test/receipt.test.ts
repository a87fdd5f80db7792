/**
 * `verifyReceipt`: receipts this test signs with a key of its own (valid, tampered, malformed),
 * the canonical-JSON vector all three SDKs share, and receipts a real `clarify serve` signed for
 * requests answered here.
 */

import assert from "node:assert/strict";
import { createHash, generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  type AnswerBody,
  argumentsSha256,
  canonicalJson,
  type Jwks,
  type ReceiptRefusal,
  ReceiptVerificationError,
  type VerifyReceiptOptions,
  verifyReceipt,
} from "@clarify-hitl/client";

import { Server, uniqueSession } from "./support.js";

// The same vector is in the Python and Go SDKs' tests: all three must hash alike.
const VECTOR_ARGUMENTS = { b: 1, a: [1.5, "x", { d: true, c: null }], é: 1e21 };
const VECTOR_CANONICAL = '{"a":[1.5,"x",{"c":null,"d":true}],"b":1,"é":1e+21}';
const VECTOR_SHA256 = "dcad1a10f57b3958f6988f16f14e55ec393230600662db72530afa46f85d9082";

const DEPLOY_ARGS = { env: "prod", replicas: 3 };

const b64 = (data: Buffer | string): string => Buffer.from(data).toString("base64url");

/** An Ed25519 key with a kid, signing receipts as the server does. */
class Signer {
  readonly privateKey: KeyObject;
  readonly jwks: Jwks;

  constructor(readonly kid: string) {
    const pair = generateKeyPairSync("ed25519");
    this.privateKey = pair.privateKey;
    const { x } = pair.publicKey.export({ format: "jwk" });
    this.jwks = { keys: [{ kty: "OKP", crv: "Ed25519", x: x!, kid, alg: "EdDSA", use: "sig" }] };
  }

  sign(claims: object, header: object = { alg: "EdDSA", typ: "JWT", kid: this.kid }): string {
    const input = `${b64(JSON.stringify(header))}.${b64(JSON.stringify(claims))}`;
    return `${input}.${b64(sign(null, Buffer.from(input), this.privateKey))}`;
  }
}

function claimsOf(decision = "approve", status = "answered", args: unknown = DEPLOY_ARGS): object {
  return {
    iss: "http://127.0.0.1:7420",
    sub: "req_1",
    tid: "default",
    iat: 1_765_000_000,
    jti: "rcpt_1",
    status,
    by: "key:alice",
    seq: 7,
    approvals: [{ id: "deploy", action: "deploy", decision, args_sha256: sha256(canonicalJson(args)) }],
  };
}

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

const signer = new Signer("k1");

async function refused(
  receipt: string,
  reason: ReceiptRefusal,
  options: VerifyReceiptOptions = {},
  jwks: Jwks | string = signer.jwks,
): Promise<void> {
  await assert.rejects(verifyReceipt(receipt, jwks, options), (error: unknown) => {
    assert.ok(error instanceof ReceiptVerificationError, `not a ReceiptVerificationError: ${String(error)}`);
    assert.equal(error.reason, reason, error.message);
    assert.equal(error.code, reason);
    assert.ok(!error.message.includes("\n"), "the message is one line");
    return true;
  });
}

describe("receipts signed here", () => {
  test("canonical JSON and its SHA-256 match the vector the SDKs share", async () => {
    assert.equal(canonicalJson(VECTOR_ARGUMENTS), VECTOR_CANONICAL);
    assert.equal(await argumentsSha256(VECTOR_ARGUMENTS), VECTOR_SHA256);
    assert.equal(sha256(VECTOR_CANONICAL), VECTOR_SHA256);
    // Members sort by UTF-16 code units: U+1F600 (the surrogates D83D DE00) before U+E000, the
    // other way round from code points or UTF-8.
    assert.equal(canonicalJson({ "\uE000": 2, "\u{1F600}": 1, a: undefined }), '{"\u{1F600}":1,"\uE000":2}');
    assert.equal(canonicalJson([-0, 1e-7, 123456789012345680000, "\u2028\u0007"]), '[0,1e-7,123456789012345680000,"\u2028\\u0007"]');
    assert.throws(() => canonicalJson({ x: Number.NaN }), TypeError);
    assert.throws(() => canonicalJson("\uD800"), TypeError);
  });

  test("a valid receipt returns its claims", async () => {
    const receipt = signer.sign(claimsOf());
    for (const jwks of [signer.jwks, JSON.stringify(signer.jwks)]) {
      const claims = await verifyReceipt(receipt, jwks, { action: "deploy", arguments: DEPLOY_ARGS });
      assert.deepEqual(
        [claims.sub, claims.status, claims.by, claims.seq, claims.kid, claims.iat],
        ["req_1", "answered", "key:alice", 7, "k1", 1_765_000_000],
      );
      assert.equal(claims.approvals[0]?.decision, "approve");
    }
    // Without an action the arguments must match the only approval; with neither, only the
    // signature is checked, so a denial verifies as a denial.
    await verifyReceipt(receipt, signer.jwks, { arguments: { replicas: 3, env: "prod" } });
    const denied = await verifyReceipt(signer.sign(claimsOf("deny")), signer.jwks);
    assert.equal(denied.approvals[0]?.decision, "deny");
  });

  test("one of several approvals of an action matching the arguments is enough", async () => {
    const claims = {
      ...claimsOf(),
      approvals: [
        { id: "a", action: "rm", decision: "deny", args_sha256: sha256('["x"]') },
        { id: "b", action: "rm", decision: "approve", args_sha256: sha256('["y"]') },
        { id: "c", action: "rm", decision: "approve", args_sha256: sha256('["z"]') },
      ],
    };
    const receipt = signer.sign(claims);
    assert.equal((await verifyReceipt(receipt, signer.jwks, { action: "rm", arguments: ["z"] })).sub, "req_1");
    await refused(receipt, "arguments_differ", { action: "rm", arguments: ["x"] });
    await refused(receipt, "action_needed", { arguments: ["z"] });
  });

  const [header, payload, signature] = signer.sign(claimsOf("deny")).split(".") as [string, string, string];
  const flipped = Buffer.from(signature, "base64url");
  flipped[10]! ^= 0x01;
  const signedPayload = (raw: string): string => {
    const input = `${b64(JSON.stringify({ alg: "EdDSA", kid: "k1" }))}.${b64(raw)}`;
    return `${input}.${b64(sign(null, Buffer.from(input), signer.privateKey))}`;
  };
  const valid = signer.sign(claimsOf());
  const cases: [string, string, ReceiptRefusal, VerifyReceiptOptions, Jwks | string][] = [
    ["tampered arguments", valid, "arguments_differ", { arguments: { env: "dev" } }, signer.jwks],
    ["tampered decision", `${header}.${b64(JSON.stringify(claimsOf("approve")))}.${signature}`, "bad_signature", { action: "deploy" }, signer.jwks],
    ["a flipped signature byte", `${header}.${payload}.${b64(flipped)}`, "bad_signature", {}, signer.jwks],
    ["the same kid, another key", new Signer("k1").sign(claimsOf()), "bad_signature", {}, signer.jwks],
    ["another key's JWKS", valid, "unknown_kid", {}, new Signer("k2").jwks],
    ["a JWKS without keys", valid, "invalid_jwks", {}, JSON.stringify({ keys: "k1" })],
    ["a JWKS that is not JSON", valid, "invalid_jwks", {}, "not json"],
    ["HS256", signer.sign(claimsOf(), { alg: "HS256", kid: "k1" }), "not_eddsa", {}, signer.jwks],
    ["alg none", signer.sign(claimsOf(), { alg: "none", kid: "k1" }), "not_eddsa", {}, signer.jwks],
    ["no kid", signer.sign(claimsOf(), { alg: "EdDSA" }), "malformed", {}, signer.jwks],
    ["empty", "", "malformed", {}, signer.jwks],
    ["two parts", "a.b", "malformed", {}, signer.jwks],
    ["four parts", "a.b.c.d", "malformed", {}, signer.jwks],
    ["not base64url", "!!.e30.AAAA", "malformed", {}, signer.jwks],
    ["a cut signature", valid.slice(0, -8), "malformed", {}, signer.jwks],
    ["a payload that is a list", signedPayload("[1]"), "malformed", {}, signer.jwks],
    ["a payload without claims", signedPayload('{"sub": "req_1"}'), "malformed", {}, signer.jwks],
    ["another action", valid, "action_not_in_receipt", { action: "drop_db" }, signer.jwks],
    ["a denial", signer.sign(claimsOf("deny")), "not_approved", { action: "deploy" }, signer.jwks],
    ["a revision", signer.sign(claimsOf("revise")), "not_approved", { arguments: DEPLOY_ARGS }, signer.jwks],
    ["an expiry", signer.sign(claimsOf("none", "expired")), "not_approved", { action: "deploy" }, signer.jwks],
  ];
  for (const [name, receipt, reason, options, jwks] of cases) {
    test(`refused, ${reason}: ${name}`, () => refused(receipt, reason, options, jwks));
  }
});

describe("receipts a real server signed", () => {
  let server: Server;

  before(async () => {
    server = await Server.start();
  });

  after(async () => {
    await server?.close();
  });

  async function resolvedReceipt(answer: AnswerBody, allowEdit = false): Promise<{ id: string; receipt: string }> {
    const agent = server.agent();
    const created = await agent.create({
      questions: [
        { id: "deploy", kind: "approval", text: "Deploy?", action: { name: "deploy", arguments: DEPLOY_ARGS }, allow_edit: allowEdit },
      ],
      session: uniqueSession("receipts"),
    });
    const outcome = await server.alice().answer(created.id, answer);
    const record = await agent.get(created.id);
    const receipt = record.receipt;
    assert.ok(
      typeof receipt === "string" && receipt !== "",
      `the resolved record has no \`receipt\` (fields: ${Object.keys(record).sort().join(", ")}); is CLARIFY_BIN a server that signs receipts?`,
    );
    assert.equal((outcome as { receipt?: string }).receipt, receipt, "the outcome's receipt is not the record's");
    assert.equal(record.outcome?.receipt, receipt);
    return { id: created.id, receipt };
  }

  async function serverJwks(): Promise<Jwks> {
    const response = await fetch(`${server.url}/.well-known/jwks.json`);
    assert.equal(response.status, 200);
    const jwks = (await response.json()) as Jwks;
    assert.ok(jwks.keys.length > 0, "the server publishes no keys");
    for (const key of jwks.keys) assert.deepEqual([key.kty, key.crv], ["OKP", "Ed25519"]);
    return jwks;
  }

  test("an approval's receipt verifies for its action and arguments, not for others", async () => {
    const { id, receipt } = await resolvedReceipt({ decision: "approve" });
    const jwks = await serverJwks();
    const claims = await verifyReceipt(receipt, jwks, { action: "deploy", arguments: DEPLOY_ARGS });
    assert.deepEqual([claims.sub, claims.status, claims.iss], [id, "answered", server.url]);
    assert.match(claims.by, /alice/);
    assert.deepEqual(
      claims.approvals.map((a) => [a.id, a.action, a.decision]),
      [["deploy", "deploy", "approve"]],
    );
    await refused(receipt, "arguments_differ", { action: "deploy", arguments: { env: "prod", replicas: 4 } }, jwks);
    await refused(receipt, "action_not_in_receipt", { action: "drop_database" }, jwks);
  });

  test("the receipt binds the edited arguments, not the proposed ones", async () => {
    const edited = { env: "staging", replicas: 1 };
    const { receipt } = await resolvedReceipt({ decision: "approve", edited_arguments: edited }, true);
    const jwks = await serverJwks();
    assert.equal((await verifyReceipt(receipt, jwks, { action: "deploy", arguments: edited })).status, "answered");
    await refused(receipt, "arguments_differ", { action: "deploy", arguments: DEPLOY_ARGS }, jwks);
  });

  test("a denial's receipt verifies but does not approve", async () => {
    const { receipt } = await resolvedReceipt({ decision: "deny", reason: "no" });
    const jwks = await serverJwks();
    assert.equal((await verifyReceipt(receipt, jwks)).approvals[0]?.decision, "deny");
    await refused(receipt, "not_approved", { action: "deploy", arguments: DEPLOY_ARGS }, jwks);
  });
});
