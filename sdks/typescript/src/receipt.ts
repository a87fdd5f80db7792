/**
 * Checks a receipt: proof, signed by the server, of what a person decided. Uses Web Crypto's
 * Ed25519 and SHA-256 (the `crypto` global of Node 20 and newer, also in Deno, Bun and current
 * browsers), so the package keeps no runtime dependency.
 *
 * Every resolved request carries `receipt`, a compact JWS (RFC 7515) signed with Ed25519 (`alg`
 * `EdDSA`, a `kid` naming the key). Its claims say which request (`sub`), how it ended
 * (`status`), who resolved it (`by`), and for each approval question the action, the decision and
 * `args_sha256`: the SHA-256 of the RFC 8785 (JCS) canonical JSON of the arguments approved (the
 * edited ones where the person edited them). An executor holding the receipt and the server's
 * public keys (`GET /.well-known/jwks.json`) can check, without asking the server, that the exact
 * call it is about to make was approved.
 */

import { ClarifyError } from "./errors.js";

/** One approval question of the request, as the receipt states it. */
export interface ReceiptApproval {
  /** The question's id. */
  id: string;
  /** The tool or action name. */
  action: string;
  /** `approve`, `deny`, `revise`, or `none` when nobody decided. */
  decision: string;
  /** Lowercase hex SHA-256 of the canonical JSON of the arguments approved. */
  args_sha256: string;
}

/** A receipt's claims, once its signature is verified. */
export interface ReceiptClaims {
  /** The server's public URL. */
  iss: string;
  /** The request's id. */
  sub: string;
  /** The request's tenant. */
  tid: string;
  /** When it was signed, in Unix seconds. */
  iat: number;
  /** The receipt's unique id. */
  jti: string;
  /** How the request ended: `answered`, `skipped`, `expired` or `cancelled`. */
  status: string;
  /** Who resolved it: `key:<name>`, or `system`. */
  by: string;
  /** The resolution's position in the audit chain. */
  seq: number;
  approvals: ReceiptApproval[];
  /** The key that signed it (from the header). */
  kid: string;
}

/** A public key of `/.well-known/jwks.json`. */
export interface Jwk {
  kty: string;
  crv?: string;
  x?: string;
  kid?: string;
  alg?: string;
  use?: string;
}

/** The server's `/.well-known/jwks.json`. */
export interface Jwks {
  keys: Jwk[];
}

export interface VerifyReceiptOptions {
  /** The receipt must approve this action (decision `approve` on an `answered` request). */
  action?: string;
  /**
   * The arguments about to be used: an approval (of `action`, or the receipt's only approval
   * when no action is named) must have approved exactly these, compared through `args_sha256`.
   */
  arguments?: unknown;
}

/** Why a receipt was refused; the `reason` (and `code`) of a `ReceiptVerificationError`. */
export type ReceiptRefusal =
  | "malformed"
  | "not_eddsa"
  | "unknown_kid"
  | "bad_signature"
  | "invalid_jwks"
  | "action_not_in_receipt"
  | "action_needed"
  | "not_approved"
  | "arguments_differ";

/** The receipt does not prove what was asked of it: do not act on it. */
export class ReceiptVerificationError extends ClarifyError {
  override name = "ReceiptVerificationError";
  readonly reason: ReceiptRefusal;

  constructor(reason: ReceiptRefusal, message: string) {
    super(message, { code: reason });
    this.reason = reason;
  }
}

/**
 * Verifies a receipt's signature against `jwks` (the server's `/.well-known/jwks.json`, parsed
 * or as text) and returns its claims. With `action` and/or `arguments`, also checks that they
 * were approved (see `VerifyReceiptOptions`); with neither, only the signature is checked and the
 * claims say what was decided. Throws a `ReceiptVerificationError` whose one-line message names
 * the reason.
 */
export async function verifyReceipt(
  receipt: string,
  jwks: Jwks | string,
  options: VerifyReceiptOptions = {},
): Promise<ReceiptClaims> {
  const parts = typeof receipt === "string" ? receipt.trim().split(".") : [];
  if (parts.length !== 3) throw malformed("it is not a compact JWS (three base64url parts joined by dots)");
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
  const header = jsonObject(base64url(headerPart, "header"), "header");
  if (header["alg"] !== "EdDSA") {
    throw new ReceiptVerificationError(
      "not_eddsa",
      `the receipt is signed with alg ${JSON.stringify(header["alg"] ?? null)}; only EdDSA (Ed25519) is accepted`,
    );
  }
  const kid = header["kid"];
  if (typeof kid !== "string" || kid === "") throw malformed("its header names no key (`kid`)");
  const payload = base64url(payloadPart, "payload");
  const signature = base64url(signaturePart, "signature");
  if (signature.length !== 64) throw malformed(`its signature is ${signature.length} bytes, not Ed25519's 64`);

  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    publicKey(jwks, kid),
    { name: "Ed25519" },
    false,
    ["verify"],
  );
  const signed = new TextEncoder().encode(`${headerPart}.${payloadPart}`);
  if (!(await globalThis.crypto.subtle.verify({ name: "Ed25519" }, key, signature, signed))) {
    throw new ReceiptVerificationError(
      "bad_signature",
      `bad signature: the receipt was not signed by key ${JSON.stringify(kid)} or was changed after`,
    );
  }

  const claims = readClaims(jsonObject(payload, "payload"), kid);
  if (options.action !== undefined || options.arguments !== undefined) {
    await checkApproval(claims, options.action, options.arguments);
  }
  return claims;
}

/**
 * `value` as RFC 8785 (JCS) canonical JSON. JSON.stringify already writes numbers and strings
 * exactly as RFC 8785 asks (it defines them by ECMAScript's own serialization), so only the
 * members' order is done here: sorted by their names' UTF-16 code units, which is what
 * `Array.prototype.sort` compares. Non-finite numbers and lone surrogates, which RFC 8785 has no
 * form for, throw a `TypeError`.
 */
export function canonicalJson(value: unknown): string {
  if (value !== null && typeof value === "object" && typeof (value as { toJSON?: unknown }).toJSON === "function") {
    value = (value as { toJSON: () => unknown }).toJSON();
  }
  if (value === null || typeof value === "boolean") return JSON.stringify(value);
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no form for ${value}`);
    return JSON.stringify(value);
  }
  if (typeof value === "string") {
    if (LONE_SURROGATE.test(value)) throw new TypeError("canonical JSON has no form for a lone surrogate");
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) {
    return `[${value.map((item: unknown) => (item === undefined || typeof item === "function" ? "null" : canonicalJson(item))).join(",")}]`;
  }
  if (typeof value === "object") {
    const object = value as { [name: string]: unknown };
    const names = Object.keys(object)
      .filter((name) => object[name] !== undefined && typeof object[name] !== "function")
      .sort();
    return `{${names.map((name) => `${canonicalJson(name)}:${canonicalJson(object[name])}`).join(",")}}`;
  }
  throw new TypeError(`canonical JSON has no form for a ${typeof value}`);
}

/** The lowercase hex SHA-256 of the arguments' canonical JSON, as a receipt's `args_sha256`. */
export async function argumentsSha256(value: unknown): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(canonicalJson(value)));
  let out = "";
  for (const byte of new Uint8Array(digest)) out += byte.toString(16).padStart(2, "0");
  return out;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

async function checkApproval(claims: ReceiptClaims, action: string | undefined, args: unknown): Promise<void> {
  let entries: ReceiptApproval[];
  if (action === undefined) {
    const only = claims.approvals[0];
    if (claims.approvals.length !== 1 || only === undefined) {
      if (claims.approvals.length === 0) {
        throw new ReceiptVerificationError("action_not_in_receipt", "the receipt holds no approval to match arguments to");
      }
      throw new ReceiptVerificationError(
        "action_needed",
        `the receipt holds ${claims.approvals.length} approvals (${claims.approvals.map((a) => a.action).join(", ")}); name the action the arguments are for`,
      );
    }
    entries = [only];
    action = only.action;
  } else {
    entries = claims.approvals.filter((a) => a.action === action);
    if (entries.length === 0) {
      const held = claims.approvals.map((a) => JSON.stringify(a.action)).join(", ") || "none";
      throw new ReceiptVerificationError(
        "action_not_in_receipt",
        `action ${JSON.stringify(action)} is not in the receipt (its approvals: ${held})`,
      );
    }
  }
  if (claims.status !== "answered") {
    throw new ReceiptVerificationError(
      "not_approved",
      `action ${JSON.stringify(action)} was not approved: the request was ${claims.status}, not answered`,
    );
  }
  const approved = entries.filter((a) => a.decision === "approve");
  if (approved.length === 0) {
    const decisions = [...new Set(entries.map((a) => a.decision))].sort().join(", ");
    throw new ReceiptVerificationError(
      "not_approved",
      `action ${JSON.stringify(action)} was not approved: the decision was ${decisions}`,
    );
  }
  if (args !== undefined) {
    const digest = await argumentsSha256(args);
    if (!approved.some((a) => a.args_sha256 === digest)) {
      throw new ReceiptVerificationError(
        "arguments_differ",
        `the arguments differ from those approved for ${JSON.stringify(action)} (sha256 ${digest.slice(0, 12)}…, approved ${approved[0]!.args_sha256.slice(0, 12)}…)`,
      );
    }
  }
}

function malformed(why: string): ReceiptVerificationError {
  return new ReceiptVerificationError("malformed", `malformed receipt: ${why}`);
}

function decodeBase64url(text: string): Uint8Array | undefined {
  if (!BASE64URL.test(text) || text.length % 4 === 1) return undefined;
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "=".repeat((4 - (text.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function base64url(text: string, what: string): Uint8Array {
  const bytes = decodeBase64url(text);
  if (bytes === undefined) throw malformed(`its ${what} is not base64url`);
  return bytes;
}

function jsonObject(bytes: Uint8Array, what: string): { [name: string]: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw malformed(`its ${what} is not JSON`);
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw malformed(`its ${what} is not a JSON object`);
  return value as { [name: string]: unknown };
}

function publicKey(jwks: Jwks | string, kid: string): Uint8Array {
  let set: unknown = jwks;
  if (typeof jwks === "string") {
    try {
      set = JSON.parse(jwks);
    } catch {
      throw new ReceiptVerificationError("invalid_jwks", "the JWKS is not JSON");
    }
  }
  const keys = set !== null && typeof set === "object" ? (set as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys)) {
    throw new ReceiptVerificationError(
      "invalid_jwks",
      `the JWKS is not {"keys": [...]} (the server's /.well-known/jwks.json)`,
    );
  }
  for (const key of keys as unknown[]) {
    if (key === null || typeof key !== "object" || (key as Jwk).kid !== kid) continue;
    const { kty, crv, x } = key as Jwk;
    if (kty !== "OKP" || crv !== "Ed25519" || typeof x !== "string") {
      throw new ReceiptVerificationError("unknown_kid", `the JWKS key ${JSON.stringify(kid)} is not an Ed25519 (OKP) key`);
    }
    const raw = decodeBase64url(x);
    if (raw === undefined || raw.length !== 32) {
      throw new ReceiptVerificationError(
        "invalid_jwks",
        `the JWKS key ${JSON.stringify(kid)} has an \`x\` that is not 32 base64url bytes`,
      );
    }
    return raw;
  }
  throw new ReceiptVerificationError(
    "unknown_kid",
    `unknown kid ${JSON.stringify(kid)}: no key of the JWKS has it (is this the JWKS of the server that signed the receipt?)`,
  );
}

function readClaims(c: { [name: string]: unknown }, kid: string): ReceiptClaims {
  const text = (name: string): string => {
    const value = c[name];
    if (typeof value !== "string") throw malformed(`its claim \`${name}\` is not a string`);
    return value;
  };
  const integer = (name: string): number => {
    const value = c[name];
    if (typeof value !== "number" || !Number.isInteger(value)) throw malformed(`its claim \`${name}\` is not an integer`);
    return value;
  };
  const entries = c["approvals"] ?? [];
  if (!Array.isArray(entries)) throw malformed("its claim `approvals` is not a list");
  const approvals = (entries as unknown[]).map((entry): ReceiptApproval => {
    const e = (entry !== null && typeof entry === "object" ? entry : {}) as { [name: string]: unknown };
    const { id, action, decision, args_sha256 } = e;
    if (typeof id !== "string" || typeof action !== "string" || typeof decision !== "string" || typeof args_sha256 !== "string") {
      throw malformed("an approval lacks `id`, `action`, `decision` or `args_sha256`");
    }
    return { id, action, decision, args_sha256 };
  });
  return {
    iss: text("iss"),
    sub: text("sub"),
    tid: text("tid"),
    iat: integer("iat"),
    jti: text("jti"),
    status: text("status"),
    by: text("by"),
    seq: integer("seq"),
    approvals,
    kid,
  };
}
