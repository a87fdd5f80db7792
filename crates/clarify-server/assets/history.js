// The history: resolved requests, newest first, narrowed by outcome, each opening to what became
// of it.
//
// Pages of `/v1/requests` are read as the person asks for more; a resolution that arrives as an
// event meanwhile is put at the top by the inbox, when `matches` says it belongs here.

import { h, fill, when, ago } from "./dom.js";
import { call } from "./api.js";
import { requestTitle, resolvedBy, answerText } from "./request.js";

/**
 * The history tab, over the inbox's `state` (its `history`: the status shown, the rows read, the
 * next page's cursor, and whether a page is loading or failed); `ended(e)` is told of a failure
 * and says whether it means the session ended, and `currentRoute()` says which request is open.
 */
export function historyView(state, { ended, currentRoute }) {
  const app = document.getElementById("app");

  function matches(record) {
    const status = state.history ? state.history.status : "";
    return record.status !== "pending" && (!status || record.status === status);
  }

  function showLayout() {
    const select = h(
      "select",
      { id: "history-status", onchange: () => load() },
      [["", "All resolved"], ["answered", "Answered"], ["skipped", "Skipped"], ["expired", "Expired"], ["cancelled", "Cancelled"]].map(([v, l]) => h("option", { value: v }, l)),
    );
    if (state.history) select.value = state.history.status;
    fill(
      app,
      h(
        "div",
        { class: "layout single", id: "layout" },
        h(
          "section",
          { class: "panel list-panel", "aria-labelledby": "history-title" },
          h("div", { class: "panel-head" }, h("h1", { id: "history-title" }, "History"), h("label", { for: "history-status", class: "sr-only" }, "Status"), h("div", {}, select)),
          h("div", { id: "history-list" }),
        ),
        h("section", { class: "panel detail-panel", "aria-label": "Request" }, h("div", { class: "panel-body", id: "detail" })),
      ),
    );
    if (!state.history) load();
  }

  async function load(cursor) {
    const select = document.getElementById("history-status");
    const status = select ? select.value : "";
    if (!cursor) state.history = { status, rows: [], more: null, loading: true, error: null };
    const q = new URLSearchParams({ limit: "50" });
    if (status) q.set("status", status);
    if (cursor) q.set("cursor", cursor);
    render();
    try {
      const page = await call("GET", `/v1/requests?${q}`);
      if (!state.history || state.history.status !== status) return;
      // A resolution that arrived as an event while this page was read is already listed.
      const listed = new Set(state.history.rows.map((r) => r.id));
      for (const r of page.requests) if (r.status !== "pending" && !listed.has(r.id)) state.history.rows.push(r);
      state.history.more = page.next_cursor;
      state.history.error = null;
    } catch (e) {
      if (ended(e)) return;
      if (state.history) state.history.error = e.message;
    }
    if (state.history) state.history.loading = false;
    render();
  }

  function render() {
    const list = document.getElementById("history-list");
    if (!list || !state.history) return;
    const hist = state.history;
    const current = currentRoute().id;
    let content;
    if (hist.error) {
      content = h("div", { class: "empty", role: "alert" }, `The history could not be read: ${hist.error}`);
    } else if (hist.loading && !hist.rows.length) {
      content = h("div", { class: "empty" }, "Loading…");
    } else if (!hist.rows.length) {
      content = h("div", { class: "empty" }, "Nothing resolved yet.");
    } else {
      content = h(
        "table",
        { class: "history-table" },
        h("thead", {}, h("tr", {}, h("th", {}, "Request"), h("th", {}, "Outcome"), h("th", {}, "By"), h("th", {}, "When"))),
        h(
          "tbody",
          {},
          hist.rows.map((record) => {
            const first = (record.questions || [])[0] || { text: "" };
            const summary = record.outcome && record.status === "answered" ? record.outcome.questions.map((oq) => answerText(oq, (record.questions || []).find((q) => q.id === oq.id)).replaceAll("\n", "; ")).join(" · ") : "";
            const link = h("a", { href: `#/history/${encodeURIComponent(record.id)}`, "aria-current": current === record.id ? "true" : false }, record.summary || first.text || requestTitle(record));
            const row = h(
              "tr",
              {},
              h("td", { class: "q" }, link),
              h("td", {}, h("span", { class: `status ${record.status}` }, record.status), summary ? h("span", { class: "answer-summary" }, summary) : null),
              h("td", {}, resolvedBy(record) || "—"),
              record.resolved_at ? h("td", { class: "when", title: when(record.resolved_at), "data-ago": record.resolved_at }, ago(record.resolved_at)) : h("td", {}),
            );
            row.dataset.id = record.id;
            return row;
          }),
        ),
      );
    }
    const more = hist.more
      ? h("div", { class: "more" }, h("button", { type: "button", class: "btn small", onclick: () => load(hist.more) }, "Load more"))
      : null;
    fill(list, content, more);
  }

  return { matches, showLayout, load, render };
}
