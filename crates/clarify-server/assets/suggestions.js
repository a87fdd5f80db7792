// Suggested standing approvals: actions people keep approving once, offered above the pending
// list as grants to make with one click (`/v1/suggestions`).
//
// Only that click turns a suggestion into a grant; the list is read again whenever the pending
// list is, and shortly after an answer.

import { h, fill } from "./dom.js";
import { call } from "./api.js";

/**
 * The suggestions panel, over the inbox's `state` (its `suggestions`, `suggestionNote` and
 * `suggestTimer`); `ended(e)` is told of a failure and says whether it means the session ended.
 */
export function suggestedGrants(state, ended) {
  const announce = document.getElementById("announce");

  async function load() {
    try {
      const body = await call("GET", "/v1/suggestions");
      state.suggestions = body.suggestions || [];
    } catch (e) {
      if (ended(e)) return;
      state.suggestions = [];
    }
    render();
  }

  function render() {
    const panel = document.getElementById("suggestions");
    if (!panel) return;
    if (!state.suggestions.length && !state.suggestionNote) {
      fill(panel);
      return;
    }
    fill(
      panel,
      h(
        "section",
        { class: "suggestions", "aria-label": "Suggested standing approvals" },
        state.suggestions.map((s) =>
          h(
            "div",
            { class: "suggestion" },
            h(
              "p",
              {},
              "You approved ",
              h("code", {}, s.tool),
              ` with the same arguments ${s.approvals} times lately.`,
            ),
            h("pre", { class: "suggestion-args" }, JSON.stringify(s.arguments, null, 2)),
            h(
              "button",
              { type: "button", class: "btn small primary", onclick: (e) => accept(s, e.target) },
              "Always allow this",
            ),
          ),
        ),
        state.suggestionNote ? h("p", { class: "suggestion-note", role: "status" }, state.suggestionNote) : null,
      ),
    );
  }

  /** A person's click: the only way a suggestion becomes a grant. */
  async function accept(suggestion, button) {
    button.disabled = true;
    try {
      await call("POST", "/v1/suggestions/accept", { request_id: suggestion.request_id });
      state.suggestionNote = `${suggestion.tool} with these arguments is now always allowed. Revoke it under grants at any time.`;
      state.suggestions = state.suggestions.filter((s) => s !== suggestion);
    } catch (e) {
      if (ended(e)) return;
      state.suggestionNote = e.message;
      button.disabled = false;
    }
    announce.textContent = state.suggestionNote;
    render();
  }

  /** Reads the suggestions again once answers stop arriving for a moment: one answer can make one. */
  function loadSoon() {
    clearTimeout(state.suggestTimer);
    state.suggestTimer = setTimeout(load, 300);
  }

  return { load, loadSoon, render };
}
