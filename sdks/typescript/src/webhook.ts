/**
 * Checks the signature clarify puts on webhook deliveries, with Web Crypto (global in Node 20
 * and newer, in Deno, Bun, edge runtimes and browsers).
 *
 * A delivery carries `Clarify-Signature: t=<unix seconds>,v1=<hex>` where
 * `v1 = hex(HMAC-SHA256(secret, "<t>." + body))`; the secret comes from
 * `GET /v1/webhook-secret` (`Client.webhookSecret()`).
 */

import { ClarifyError } from "./errors.js";
import type { Outcome } from "./types.js";

export interface VerifyWebhookOptions {
  /**
   * How far the signature's time may be from now, in seconds, so that a captured delivery
   * cannot be replayed later; default 300. `Infinity` turns the check off.
   */
  toleranceSeconds?: number;
  /** The current time in milliseconds since the epoch; default `Date.now()`. */
  now?: number;
}

/** Headers as a `Headers` object (fetch, Next.js, Hono) or a plain object (Node's `req.headers`). */
export type WebhookHeaders = Headers | { [name: string]: string | string[] | undefined };

/**
 * Checks a delivery and returns the outcome it carries. `body` must be the exact bytes received
 * (the raw body, not re-serialized JSON). Throws a `WebhookVerificationError` (code
 * `invalid_signature`) for a missing, malformed, wrong or stale signature: refuse the delivery.
 */
export async function verifyWebhook(
  secret: string,
  headers: WebhookHeaders,
  body: string | Uint8Array,
  options: VerifyWebhookOptions = {},
): Promise<Outcome> {
  const header = headerValue(headers, "clarify-signature");
  if (header === undefined || header === "") {
    throw new WebhookVerificationError("the delivery has no Clarify-Signature header");
  }
  let t: string | undefined;
  const signatures: string[] = [];
  for (const part of header.split(",")) {
    const [name, value] = splitOnce(part.trim(), "=");
    if (name === "t") t = value;
    else if (name === "v1" && value !== undefined && value !== "") signatures.push(value.toLowerCase());
  }
  if (t === undefined || signatures.length === 0) {
    throw new WebhookVerificationError("Clarify-Signature needs both t=<time> and v1=<signature>");
  }
  if (!/^\d{1,15}$/.test(t)) {
    throw new WebhookVerificationError(`Clarify-Signature has a time that is not a number: ${JSON.stringify(t.slice(0, 40))}`);
  }
  const tolerance = options.toleranceSeconds ?? 300;
  const skew = (options.now ?? Date.now()) / 1000 - Number(t);
  if (Math.abs(skew) > tolerance) {
    throw new WebhookVerificationError(
      `the delivery was signed ${skew >= 0 ? `${Math.trunc(skew)} s ago` : `${Math.trunc(-skew)} s in the future`}, outside the ${tolerance} s tolerance; check the clocks, or refuse a replay`,
    );
  }

  const encoder = new TextEncoder();
  const bytes = typeof body === "string" ? encoder.encode(body) : body;
  const signed = new Uint8Array(t.length + 1 + bytes.length);
  signed.set(encoder.encode(`${t}.`), 0);
  signed.set(bytes, t.length + 1);
  const key = await globalThis.crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const expected = hex(new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", key, signed)));
  if (!signatures.some((candidate) => constantTimeEqual(candidate, expected))) {
    throw new WebhookVerificationError("no Clarify-Signature matches: a wrong secret, or a changed body");
  }
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as Outcome;
  } catch {
    throw new WebhookVerificationError("the signed body is not JSON");
  }
}

/** A delivery that is not signed by clarify with this secret, or is too old: refuse it. */
export class WebhookVerificationError extends ClarifyError {
  override name = "WebhookVerificationError";

  constructor(message: string) {
    super(message, { code: "invalid_signature" });
  }
}

function headerValue(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as { [name: string]: string | string[] | undefined })) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(",") : value;
  }
  return undefined;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const at = text.indexOf(separator);
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}

function hex(bytes: Uint8Array): string {
  let out = "";
  for (const byte of bytes) out += byte.toString(16).padStart(2, "0");
  return out;
}

/** Compares without stopping at the first difference, so timing says nothing about the secret. */
function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
