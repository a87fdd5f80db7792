// The settings page (`/settings`): the signed-in person's passkeys, to add and remove.
//
// A passkey signs in without a key or a password, and confirms answers to high-risk requests
// where the server asks for that (step-up). Each is kept on the person's device; the server
// keeps only its public key.

import { h, fill } from "./dom.js";
import { call } from "./api.js";
import { passkeysWork, registerPasskey } from "./passkeys.js";

function when(text) {
  if (!text) return "never";
  const d = new Date(text);
  return Number.isNaN(d.getTime()) ? text : d.toLocaleString();
}

/** The settings view; `onEnded(e)` is told of a failure that means the session ended. */
export function settingsView(onEnded) {
  const list = h("div", { id: "passkey-list" });
  const status = h("p", { class: "meta", id: "passkey-status", role: "status" });
  const name = h("input", { type: "text", id: "passkey-name", maxlength: "64", autocomplete: "off", placeholder: "This laptop", required: true });
  const add = h("button", { type: "submit", class: "btn primary", id: "add-passkey" }, "Add a passkey");
  const form = h(
    "form",
    { novalidate: true },
    h("div", { class: "field" }, h("label", { for: "passkey-name" }, "Name of the new passkey"), name),
    h("div", { class: "actions" }, add),
  );

  async function load() {
    let body;
    try {
      body = await call("GET", "/v1/passkeys");
    } catch (e) {
      if (onEnded(e)) return;
      fill(status, e.message);
      return;
    }
    const passkeys = body.passkeys || [];
    if (!passkeys.length) {
      fill(list, h("p", { class: "empty", id: "no-passkeys" }, "No passkeys yet."));
      return;
    }
    fill(
      list,
      h(
        "ul",
        { class: "passkeys" },
        passkeys.map((p) =>
          h(
            "li",
            { class: "passkey", "data-id": p.id },
            h("strong", { class: "passkey-name" }, p.name),
            " ",
            h("span", { class: "meta" }, `added ${when(p.created_at)}, last used ${when(p.last_used_at)}`),
            " ",
            h("button", { type: "button", class: "btn small remove-passkey", onclick: () => remove(p) }, "Remove"),
          ),
        ),
      ),
    );
  }

  async function remove(passkey) {
    try {
      await call("DELETE", `/v1/passkeys/${encodeURIComponent(passkey.id)}`);
      fill(status, `Removed ${passkey.name}.`);
    } catch (e) {
      if (onEnded(e)) return;
      fill(status, e.message);
    }
    load();
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const label = name.value.trim();
    if (!label) {
      fill(status, "Give the passkey a name first, such as the device it is on.");
      name.focus();
      return;
    }
    add.disabled = true;
    try {
      const made = await registerPasskey(label);
      name.value = "";
      fill(status, `Added ${made.name}.`);
    } catch (e) {
      if (onEnded(e)) return;
      fill(status, e.name === "NotAllowedError" ? "The passkey was not made: the browser's prompt was cancelled or timed out." : e.message);
    } finally {
      add.disabled = false;
    }
    load();
  });

  const el = h(
    "section",
    { class: "panel settings" },
    h(
      "div",
      { class: "panel-body" },
      h("h1", {}, "Settings"),
      h("h2", {}, "Passkeys"),
      h("p", {}, "A passkey signs you in without a key, and confirms your answers to high-risk requests where this server asks for that. It stays on your device or in your password manager."),
      list,
      passkeysWork() ? form : h("p", { class: "notice" }, "This browser cannot make passkeys here: it needs a secure address (HTTPS, or localhost)."),
      status,
    ),
  );
  load();
  return el;
}
