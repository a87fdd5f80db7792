// Passkeys in the page: registering one, signing in with one, and confirming an answer to a
// high-risk request with one (step-up).
//
// The server sends WebAuthn options as JSON with binary values in unpadded base64url, and takes
// the browser's credential back as JSON the same way; the conversions are here. Every ceremony
// is two calls: start (a token and the options), then finish (the token and the credential).

import { call } from "./api.js";

function toBytes(text) {
  const base64 = text.replaceAll("-", "+").replaceAll("_", "/");
  const binary = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i += 1) bytes[i] = binary.charCodeAt(i);
  return bytes.buffer;
}

function toText(buffer) {
  const bytes = new Uint8Array(buffer);
  let binary = "";
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The options without nulls (a browser refuses `null` where it expects a list or a word). */
function clean(value) {
  if (Array.isArray(value)) return value.map(clean);
  if (value && typeof value === "object") {
    const out = {};
    for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) out[k] = clean(v);
    return out;
  }
  return value;
}

function descriptors(list) {
  return (list || []).map((d) => ({ ...d, id: toBytes(d.id) }));
}

function creationOptions(options) {
  const o = clean(options.publicKey);
  o.challenge = toBytes(o.challenge);
  o.user = { ...o.user, id: toBytes(o.user.id) };
  if (o.excludeCredentials) o.excludeCredentials = descriptors(o.excludeCredentials);
  return o;
}

function requestOptions(options) {
  const o = clean(options.publicKey);
  o.challenge = toBytes(o.challenge);
  if (o.allowCredentials) o.allowCredentials = descriptors(o.allowCredentials);
  return o;
}

function created(credential) {
  const r = credential.response;
  return {
    id: credential.id,
    rawId: toText(credential.rawId),
    type: credential.type,
    response: {
      attestationObject: toText(r.attestationObject),
      clientDataJSON: toText(r.clientDataJSON),
      transports: typeof r.getTransports === "function" ? r.getTransports() : undefined,
    },
    extensions: credential.getClientExtensionResults(),
  };
}

function asserted(credential) {
  const r = credential.response;
  return {
    id: credential.id,
    rawId: toText(credential.rawId),
    type: credential.type,
    response: {
      authenticatorData: toText(r.authenticatorData),
      clientDataJSON: toText(r.clientDataJSON),
      signature: toText(r.signature),
      userHandle: r.userHandle ? toText(r.userHandle) : null,
    },
    extensions: credential.getClientExtensionResults(),
  };
}

/** Whether this browser can use passkeys here (a secure context with WebAuthn). */
export function passkeysWork() {
  return window.isSecureContext && typeof window.PublicKeyCredential === "function";
}

/** Registers a passkey named `name` for the signed-in person; resolves to the stored passkey. */
export async function registerPasskey(name) {
  const started = await call("POST", "/v1/passkeys/registration");
  const credential = await navigator.credentials.create({ publicKey: creationOptions(started.options) });
  return call("POST", "/v1/passkeys", { token: started.token, name, credential: created(credential) });
}

/** Signs in with whichever passkey the person picks (nothing typed); the session cookie is set. */
export async function signInWithPasskey() {
  const started = await call("POST", "/v1/passkeys/sign-in");
  const credential = await navigator.credentials.get({ publicKey: requestOptions(started.options) });
  await call("POST", "/v1/passkeys/sign-in/finish", { token: started.token, credential: asserted(credential) });
}

/**
 * A passkey confirmation for one answer: starts at `base` + "/step-up", finishes at
 * `base` + "/step-up/finish"; resolves to the proof the answer carries in `X-Clarify-Step-Up`.
 */
export async function stepUp(base) {
  const started = await call("POST", `${base}/step-up`);
  const credential = await navigator.credentials.get({ publicKey: requestOptions(started.options) });
  const done = await call("POST", `${base}/step-up/finish`, { token: started.token, credential: asserted(credential) });
  return done.proof;
}

/**
 * Answers with `send(headers)`: for a request that needs a passkey confirmation (or when the
 * server says so), confirms first at `base`, then sends the answer with the proof. An admin
 * key's session (`adminKey`) needs none.
 */
export async function answerStepped(record, base, send, adminKey = false) {
  if (record.step_up && !adminKey) return send({ "X-Clarify-Step-Up": await stepUp(base) });
  try {
    return await send({});
  } catch (e) {
    if (e.code !== "step_up_required") throw e;
    return send({ "X-Clarify-Step-Up": await stepUp(base) });
  }
}
