// The inbox's sign-in form: an identity provider's button, a passkey, or an API key, as the
// server allows here.
//
// The server says how people sign in through the page's `data-oidc` and `data-key-login`; a key
// is sent to `/v1/login` and never kept by the page.

import { h, fill } from "./dom.js";
import { call } from "./api.js";
import { passkeysWork, signInWithPasskey } from "./passkeys.js";
import { badgeIcon } from "./notifications.js";

const app = document.getElementById("app");
const topbar = document.getElementById("topbar");

/**
 * Shows the sign-in form, with `problem` (or nothing) above it; `signedIn(session)` is told of
 * the session once someone signs in.
 */
export function showLogin(problem, signedIn) {
  topbar.hidden = true;
  document.title = "Sign in · clarify";
  badgeIcon("");
  const input = h("input", { type: "password", id: "key", autocomplete: "off", spellcheck: "false", placeholder: "ck_…", required: true });
  const alert = h("div", { class: "alert", role: "alert", hidden: !problem }, problem || "");
  const button = h("button", { type: "submit", class: "btn primary" }, "Sign in");
  // The server says how people sign in here: an identity provider's button (`data-oidc`), and
  // whether keys and login links still work for people (`data-key-login`).
  const provider = app.dataset.oidc || "";
  const keys = app.dataset.keyLogin !== "false";
  const sso = provider
    ? h("div", { class: "actions" }, h("a", { class: "btn primary", id: "oidc-sign-in", href: "/auth/oidc/start" }, `Sign in with ${provider}`))
    : null;
  // Any passkey registered here, picked in the browser's own chooser: nothing to type.
  const passkey = passkeysWork()
    ? h("div", { class: "actions" }, h("button", { type: "button", class: "btn", id: "passkey-sign-in", onclick: () => passkeySignIn(alert, signedIn) }, "Sign in with a passkey"))
    : null;
  const form = h(
    "form",
    { class: "panel-body", novalidate: true },
    h("h1", {}, "Sign in to the inbox"),
    alert,
    sso,
    passkey,
    keys ? h("p", {}, provider ? "Or open a one-time login link, or paste an API key." : ["Open the one-time login link that ", h("code", {}, "clarify serve"), " printed, or paste an API key."]) : null,
    keys ? h("div", { class: "field" }, h("label", { for: "key" }, "API key"), input) : null,
    keys ? h("div", { class: "actions" }, button) : null,
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) {
      fill(alert, "Paste an API key first.");
      alert.hidden = false;
      input.focus();
      return;
    }
    button.disabled = true;
    try {
      const session = await call("POST", "/v1/login", { key });
      input.value = "";
      signedIn(session);
    } catch (e) {
      fill(alert, e.status === 401 ? "This key is unknown or revoked. Check it, or ask an admin for a login link." : e.message);
      alert.hidden = false;
      input.focus();
    } finally {
      button.disabled = false;
    }
  });
  fill(app, h("section", { class: "login" }, h("div", { class: "panel" }, form)));
  if (keys) input.focus();
}

async function passkeySignIn(alert, signedIn) {
  try {
    await signInWithPasskey();
    signedIn(await call("GET", "/v1/session"));
  } catch (e) {
    fill(alert, e.name === "NotAllowedError" ? "No passkey was used: the browser's prompt was cancelled or timed out." : e.message);
    alert.hidden = false;
  }
}
