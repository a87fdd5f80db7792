// The inbox: log in, the live list of pending requests, answering, and the history.
//
// The list is read from `/v1/requests` each time the event stream opens, and kept current by
// `/v1/events` in between: each event carries the request as it is now, so the list only has to
// file it (pending and matching the filters: shown; anything else: gone). The browser's
// EventSource reconnects by itself and resumes after the last event it saw; when it gives up
// (an error response), the page opens a new stream after a pause, so nothing is missed either
// way. The list is also read at once on sign-in, so it shows even when no stream can open.
//
// The tab shows the pending count in its title and icon, and while it is hidden each request
// that arrives raises a desktop notification, once the person has allowed them.

import { h, put, fill, when, ago, timeLeft } from "./dom.js";
import { call, useCsrf } from "./api.js";
import { requestView, requestTitle, resolvedBy, answerText, quorumOf } from "./request.js";
import { answerStepped, passkeysWork, signInWithPasskey } from "./passkeys.js";
import { settingsView } from "./settings.js";

// Every event carries the request as it is now; a vote, a reminder or an escalation changes a
// pending request (its votes, who may answer), so the list and the open view are refreshed.
const EVENTS = [
  "request.created",
  "request.answered",
  "request.skipped",
  "request.expired",
  "request.cancelled",
  "request.voted",
  "request.reminded",
  "request.escalated",
];
const PAGE = 100;

const app = document.getElementById("app");
const topbar = document.getElementById("topbar");
const liveEl = document.getElementById("live");
const liveText = document.getElementById("live-text");
const whoEl = document.getElementById("who");
const countEl = document.getElementById("pending-count");
const tabPending = document.getElementById("tab-pending");
const tabHistory = document.getElementById("tab-history");
const tabSettings = document.getElementById("tab-settings");
const announce = document.getElementById("announce");
const notifyEl = document.getElementById("notify");
const notifyAsk = document.getElementById("notify-ask");
const notifyState = document.getElementById("notify-state");
const pushState = document.getElementById("push-state");
const pushToggle = document.getElementById("push-toggle");
const iconLink = document.querySelector('link[rel="icon"]');

const state = {
  session: null,
  filters: readFilters(),
  pending: new Map(),
  arrival: new Map(),
  listing: 0,
  loads: new Set(),
  arrived: 0,
  listed: 0,
  more: null,
  loaded: false,
  seen: { session: new Set(), agent: new Set(), tag: new Set() },
  history: null,
  view: null,
  viewId: null,
  opening: 0,
  opens: 0,
  stream: null,
  retry: 0,
  retryTimer: null,
  clock: null,
  // Pending approvals ticked for a batch answer, by id.
  selected: new Set(),
  batchNote: null,
  // Actions people keep approving once, offered as standing grants (`/v1/suggestions`).
  suggestions: [],
  suggestionNote: null,
  suggestTimer: null,
};

// ---- session ---------------------------------------------------------------------------

async function start() {
  registerWorker();
  document.getElementById("logout").addEventListener("click", logout);
  notifyAsk.addEventListener("click", askToNotify);
  pushToggle.addEventListener("click", togglePush);
  // The answer can change in the browser's settings meanwhile; show it again on coming back.
  document.addEventListener("visibilitychange", showNotifyControl);
  showNotifyControl();
  window.addEventListener("hashchange", route);
  try {
    const session = await call("GET", "/v1/session");
    signedIn(session);
  } catch (e) {
    if (e.status === 401) showLogin(null);
    else showLogin(e.message);
  }
}

/**
 * Registers the service worker (`/sw.js`), which makes the inbox an installable app that opens
 * at once and says so when it is offline. The inbox works the same without one (an insecure
 * context, or a browser without service workers).
 */
function registerWorker() {
  if (!window.isSecureContext || !("serviceWorker" in navigator)) return;
  navigator.serviceWorker.register("/sw.js").catch((e) => console.warn("no service worker:", e));
}

function signedIn(session) {
  state.session = session;
  useCsrf(session.csrf_token);
  topbar.hidden = false;
  fill(whoEl, h("span", { class: "who" }, session.name), h("span", { class: "chip" }, session.role));
  connect();
  loadPending();
  if (state.clock === null) state.clock = setInterval(refreshTimes, 15000);
  route();
  // Keeps this browser's subscription known to the server (the same endpoint replaces it), unless
  // the person turned push off here.
  const Note = notifications();
  if (Note && Note.permission === "granted" && localStorage.getItem(PUSH_OFF) !== "1") startPush();
}

function showLogin(problem) {
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
    ? h("div", { class: "actions" }, h("button", { type: "button", class: "btn", id: "passkey-sign-in", onclick: () => passkeySignIn(alert) }, "Sign in with a passkey"))
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

async function passkeySignIn(alert) {
  try {
    await signInWithPasskey();
    signedIn(await call("GET", "/v1/session"));
  } catch (e) {
    fill(alert, e.name === "NotAllowedError" ? "No passkey was used: the browser's prompt was cancelled or timed out." : e.message);
    alert.hidden = false;
  }
}

async function logout() {
  try {
    await call("POST", "/v1/logout");
  } catch {
    // Logged out either way: the cookie may already be gone.
  }
  signedOut(null);
}

function signedOut(problem) {
  disconnect();
  closeView();
  for (const note of notes.values()) note.close();
  useCsrf(null);
  state.session = null;
  state.pending.clear();
  state.listing += 1;
  state.history = null;
  state.loaded = false;
  history.replaceState(null, "", location.pathname + location.search);
  showLogin(problem);
}

/** A 401 anywhere means the session ended. */
function ended(e) {
  if (e && e.status === 401) {
    signedOut("Your session has ended. Sign in again.");
    return true;
  }
  return false;
}

// ---- filters -------------------------------------------------------------------------------

function readFilters() {
  const q = new URLSearchParams(location.search);
  return { session: q.get("session") || "", agent: q.get("agent") || "", tag: q.get("tag") || "" };
}

function writeFilters() {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(state.filters)) if (v) q.set(k, v);
  const search = q.toString();
  history.replaceState(null, "", `${location.pathname}${search ? `?${search}` : ""}${location.hash}`);
}

function matches(record) {
  const f = state.filters;
  if (f.session && record.session !== f.session) return false;
  if (f.agent && record.agent !== f.agent) return false;
  if (f.tag && !(record.tags || []).includes(f.tag)) return false;
  return true;
}

function remember(record) {
  if (record.session) state.seen.session.add(record.session);
  if (record.agent) state.seen.agent.add(record.agent);
  for (const t of record.tags || []) state.seen.tag.add(t);
}

// ---- the pending list ------------------------------------------------------------------

async function loadPending(cursor) {
  const q = new URLSearchParams({ status: "pending", limit: String(PAGE) });
  for (const [k, v] of Object.entries(state.filters)) if (v) q.set(k, v);
  if (cursor) q.set("cursor", cursor);
  if (!cursor) state.listing += 1;
  // A page is read at one instant and arrives later: events in between are filed again on
  // top of it, so an answer given meanwhile is not undone by the older page.
  const load = { listing: state.listing, events: [] };
  state.loads.add(load);
  try {
    const page = await call("GET", `/v1/requests?${q}`);
    // A newer reading of the whole list has begun: this page belongs to an older one.
    if (load.listing !== state.listing) return;
    if (!cursor) {
      state.pending.clear();
      state.arrival.clear();
      state.listed = 0;
    }
    page.requests.forEach((r, i) => {
      state.pending.set(r.id, r);
      // Pages come newest first: keep that order among requests created in the same instant.
      state.arrival.set(r.id, -(state.listed + i));
      remember(r);
    });
    state.listed += page.requests.length;
    if (!cursor) loadSuggestions();
    for (const record of load.events) file(record);
    state.more = page.next_cursor;
    state.loaded = true;
    state.listError = null;
  } catch (e) {
    if (ended(e)) return;
    state.listError = e.message;
  } finally {
    state.loads.delete(load);
  }
  renderList();
}

/** Puts a record where it now belongs in the pending list. */
function file(record) {
  if (record.status === "pending" && matches(record)) {
    state.pending.set(record.id, record);
    if (!state.arrival.has(record.id)) state.arrival.set(record.id, (state.arrived += 1));
  } else {
    state.pending.delete(record.id);
    state.arrival.delete(record.id);
  }
}

/** Files a record that changed (by event `name`): in the pending list, the history, and the open view. */
function apply(record, name) {
  remember(record);
  for (const load of state.loads) load.events.push(record);
  const wasListed = state.pending.has(record.id);
  file(record);
  if (record.status !== "pending" && state.history) {
    state.history.rows = state.history.rows.filter((r) => r.id !== record.id);
    if (historyMatches(record)) state.history.rows.unshift(record);
  }
  if (state.view && state.viewId === record.id) state.view.update(record);
  const arrived = !wasListed && state.pending.has(record.id);
  if (arrived) {
    const first = (record.questions || [])[0];
    announce.textContent = `New request${record.agent ? ` from ${record.agent}` : ""}: ${first ? first.text : ""}`;
    // Only a request created since the page opened is news; one that shows up for another
    // reason (a reminder while the list is still being read) was there all along.
    if (name === "request.created") notify(record);
  }
  if (record.status !== "pending" && notes.has(record.id)) notes.get(record.id).close();
  if (record.status === "answered") {
    clearTimeout(state.suggestTimer);
    state.suggestTimer = setTimeout(loadSuggestions, 300);
  }
  renderList(arrived ? record.id : null);
  if (currentRoute().name === "history") renderHistory();
}

/** Newest first; among requests created in the same millisecond, the later arrival first. */
function sortedPending() {
  const arrival = (r) => state.arrival.get(r.id) || 0;
  return [...state.pending.values()].sort((a, b) => {
    if (a.created_at !== b.created_at) return a.created_at < b.created_at ? 1 : -1;
    return arrival(b) - arrival(a);
  });
}

function updateCount() {
  const n = state.pending.size;
  const shown = state.more ? `${n}+` : String(n);
  countEl.textContent = n ? shown : "";
  countEl.hidden = !n;
  document.title = n ? `(${shown}) Inbox · clarify` : "Inbox · clarify";
  badgeIcon(n ? shown : "");
}

function listPanel() {
  return document.getElementById("pending-list");
}

/** Rows already drawn, by request id: redrawing the list reuses those that did not change. */
const drawn = new Map();

function renderList(arrived) {
  updateCount();
  const list = listPanel();
  if (!list) return;
  const focused = document.activeElement;
  const rows = sortedPending();
  const r = currentRoute();
  let content;
  if (state.listError) {
    content = h("div", { class: "empty", role: "alert" }, `The list could not be read: ${state.listError}`);
  } else if (!state.loaded) {
    content = h("div", { class: "empty" }, "Loading…");
  } else if (!rows.length) {
    const filtered = Object.values(state.filters).some(Boolean);
    content = h("div", { class: "empty" }, filtered ? "Nothing pending matches these filters." : "Nothing is waiting for you. New requests appear here as they arrive.");
  } else {
    const items = rows.map((record) => {
      const current = r.id === record.id;
      const selected = state.selected.has(record.id);
      const key = `${current}|${selected}|${JSON.stringify(record)}`;
      const old = drawn.get(record.id);
      if (old && old.key === key && record.id !== arrived) return old.item;
      const item = h("li", { class: "row-item" }, selectBox(record, selected), pendingRow(record, current, record.id === arrived));
      drawn.set(record.id, { key, item });
      return item;
    });
    for (const id of drawn.keys()) if (!state.pending.has(id)) drawn.delete(id);
    for (const id of [...state.selected]) if (!state.pending.has(id)) state.selected.delete(id);
    content = list.querySelector("ul.rows") || h("ul", { class: "rows", "aria-label": "Pending requests" });
    content.replaceChildren(...items);
  }
  const more = state.more
    ? h("div", { class: "more" }, h("button", { type: "button", class: "btn small", onclick: () => loadPending(state.more) }, "Load more"))
    : null;
  if (list.firstChild !== content || list.childNodes.length !== (more ? 2 : 1)) {
    fill(list, content, more);
  } else if (more) {
    list.replaceChild(more, list.childNodes[1]);
  }
  // Moving a focused row out and back in loses its focus; give it back.
  if (focused && focused !== document.activeElement && list.contains(focused)) focused.focus({ preventScroll: true });
  renderBatchBar();
  fillDatalists();
}

// ---- suggested standing grants -------------------------------------------------------------

async function loadSuggestions() {
  try {
    const body = await call("GET", "/v1/suggestions");
    state.suggestions = body.suggestions || [];
  } catch (e) {
    if (ended(e)) return;
    state.suggestions = [];
  }
  renderSuggestions();
}

function renderSuggestions() {
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
            { type: "button", class: "btn small primary", onclick: (e) => acceptSuggestion(s, e.target) },
            "Always allow this",
          ),
        ),
      ),
      state.suggestionNote ? h("p", { class: "suggestion-note", role: "status" }, state.suggestionNote) : null,
    ),
  );
}

/** A person's click: the only way a suggestion becomes a grant. */
async function acceptSuggestion(suggestion, button) {
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
  renderSuggestions();
}

// ---- answering several at once -------------------------------------------------------------

/** Whether a pending request can be answered in a batch: one approval question. */
function batchable(record) {
  const questions = record.questions || [];
  return questions.length === 1 && questions[0].kind === "approval";
}

/** The row's checkbox, for approvals only; other requests need their own form. */
function selectBox(record, selected) {
  if (!batchable(record)) return h("span", { class: "select-slot", "aria-hidden": "true" });
  const box = h("input", {
    type: "checkbox",
    class: "select",
    "aria-label": `Select: ${record.summary || (record.questions[0] || {}).text || record.id}`,
    onchange: (e) => {
      if (e.target.checked) state.selected.add(record.id);
      else state.selected.delete(record.id);
      state.batchNote = null;
      renderBatchBar();
    },
  });
  box.checked = selected;
  box.dataset.id = record.id;
  return box;
}

function renderBatchBar() {
  const list = listPanel();
  if (!list) return;
  let bar = document.getElementById("batch-bar");
  const n = state.selected.size;
  if (!n && !state.batchNote) {
    if (bar) bar.remove();
    return;
  }
  if (!bar) {
    bar = h("div", { id: "batch-bar", class: "batch-bar", role: "region", "aria-label": "Answer the selected requests" });
    list.parentNode.insertBefore(bar, list);
  }
  fill(
    bar,
    n ? h("span", { class: "batch-count" }, `${n} selected`) : null,
    n ? h("button", { type: "button", class: "btn small primary", id: "batch-approve", onclick: () => answerSelected("approve") }, "Approve selected") : null,
    n ? h("button", { type: "button", class: "btn small", id: "batch-deny", onclick: () => answerSelected("deny") }, "Deny selected") : null,
    n ? h("button", { type: "button", class: "btn small", onclick: () => { state.selected.clear(); state.batchNote = null; renderList(); } }, "Clear") : null,
    state.batchNote ? h("p", { class: "batch-note", id: "batch-note", role: "status" }, state.batchNote) : null,
  );
}

/** Answers every selected approval with `decision` (scope once) in one `POST /v1/answers`. */
async function answerSelected(decision) {
  const ids = [...state.selected];
  if (!ids.length) return;
  for (const b of document.querySelectorAll("#batch-bar button")) b.disabled = true;
  let result;
  try {
    result = await call("POST", "/v1/answers", { items: ids.map((id) => ({ id, answer: { decision, scope: "once" } })) });
  } catch (e) {
    if (ended(e)) return;
    state.batchNote = `Nothing was answered: ${e.message}`;
    renderBatchBar();
    return;
  }
  const failed = [];
  let done = 0;
  for (const item of result.items || []) {
    if (item.status === 200 || item.status === 202) {
      done += 1;
      state.selected.delete(item.id);
      if (item.status === 200) state.pending.delete(item.id);
    } else {
      const record = state.pending.get(item.id);
      const title = record ? record.summary || (record.questions[0] || {}).text : item.id;
      const message = item.body && item.body.error ? item.body.error.message : `status ${item.status}`;
      failed.push(`${title}: ${message}`);
    }
  }
  const verb = decision === "approve" ? "approved" : "denied";
  state.batchNote = `${done} ${verb}.` + (failed.length ? ` ${failed.length} not answered: ${failed.join("; ")}` : "");
  announce.textContent = state.batchNote;
  renderList();
}

function kindOf(record) {
  const kinds = new Set((record.questions || []).map((q) => q.kind));
  if (kinds.has("approval")) return "approval";
  if (kinds.size === 1) return [...kinds][0];
  return "questions";
}

const KIND_CHIPS = { approval: "Approval", single: "Choice", multi: "Multiple choice", open: "Open", form: "Form", questions: "Questions" };

function pendingRow(record, current, isNew) {
  const questions = record.questions || [];
  const first = questions[0] || { text: "" };
  const left = timeLeft(record.expires_at, true);
  const extra = questions.length > 1 ? ` (+${questions.length - 1} more)` : "";
  const quorum = quorumOf(record);
  const voted = quorum && state.session && (record.votes || []).some((v) => v.by === state.session.name);
  const a = h(
    "a",
    { class: `row${isNew ? " row-new" : ""}`, href: `#/requests/${encodeURIComponent(record.id)}`, "aria-current": current ? "true" : false },
    h("span", { class: "row-title" }, record.summary || first.text, record.summary ? null : extra),
    // The question the agent wrote, under a summary that says something else (the tool and its
    // file or arguments).
    record.summary && record.summary !== first.text ? h("span", { class: "row-question" }, first.text, extra) : null,
    h(
      "span",
      { class: "row-meta" },
      h("span", { class: "chip kind" }, KIND_CHIPS[kindOf(record)]),
      quorum ? h("span", { class: "chip quorum", title: quorum.approvers.length ? `approved by ${quorum.approvers.join(", ")}` : null }, quorum.text, voted ? " · you voted" : null) : null,
      // A header that only repeats the kind ("Approval") would read twice.
      first.header && first.header.toLowerCase() !== KIND_CHIPS[kindOf(record)].toLowerCase() ? h("span", { class: "chip" }, first.header) : null,
      record.agent ? h("span", {}, record.agent) : null,
      record.session ? h("span", {}, `session ${record.session}`) : null,
      (record.tags || []).map((t) => h("span", { class: "chip tag" }, t)),
      h("span", { title: when(record.created_at), "data-ago": record.created_at }, ago(record.created_at)),
      record.expires_at ? h("span", { class: `deadline ${left.urgency}`, "data-left": record.expires_at }, left.text) : null,
    ),
  );
  a.dataset.id = record.id;
  return a;
}

/** Relative times drift; redraw them now and then. */
function refreshTimes() {
  for (const el of document.querySelectorAll("[data-ago]")) el.textContent = ago(el.dataset.ago);
  for (const el of document.querySelectorAll("[data-left]")) {
    const left = timeLeft(el.dataset.left, true);
    el.textContent = left.text;
    el.className = `deadline ${left.urgency}`;
  }
}

function fillDatalists() {
  for (const key of ["session", "agent", "tag"]) {
    const list = document.getElementById(`seen-${key}`);
    if (!list) continue;
    fill(list, [...state.seen[key]].sort().slice(0, 200).map((v) => h("option", { value: v })));
  }
}

function filtersForm() {
  const field = (key, label) =>
    h(
      "div",
      {},
      h("label", { for: `filter-${key}` }, label),
      h("input", { type: "search", id: `filter-${key}`, name: key, list: `seen-${key}`, autocomplete: "off", value: state.filters[key] }),
      h("datalist", { id: `seen-${key}` }),
    );
  const form = h(
    "form",
    { class: "filters", role: "search", "aria-label": "Filter pending requests" },
    field("session", "Session"),
    field("agent", "Agent"),
    field("tag", "Tag"),
    h(
      "div",
      { class: "filter-actions" },
      h("button", { type: "submit", class: "btn small" }, "Apply filters"),
      h("button", { type: "button", class: "btn small", onclick: () => setFilters({ session: "", agent: "", tag: "" }) }, "Clear"),
    ),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const data = new FormData(form);
    setFilters({ session: String(data.get("session") || "").trim(), agent: String(data.get("agent") || "").trim(), tag: String(data.get("tag") || "").trim() });
  });
  const active = Object.values(state.filters).filter(Boolean).length;
  return h(
    "details",
    { class: "filter-box", open: active > 0 },
    h("summary", {}, "Filters", h("span", { class: "chip", id: "filter-count", hidden: !active }, String(active))),
    form,
  );
}

function setFilters(filters) {
  state.filters = filters;
  writeFilters();
  for (const [k, v] of Object.entries(filters)) {
    const input = document.getElementById(`filter-${k}`);
    if (input) input.value = v;
  }
  const active = Object.values(filters).filter(Boolean).length;
  const count = document.getElementById("filter-count");
  if (count) {
    count.textContent = String(active);
    count.hidden = !active;
  }
  state.loaded = false;
  renderList();
  loadPending();
}

// ---- the event stream -----------------------------------------------------------------

function setLive(mode, text) {
  liveEl.dataset.state = mode;
  liveText.textContent = text;
  liveEl.title = text;
}

function connect() {
  disconnect();
  setLive("connecting", "Connecting…");
  const stream = new EventSource("/v1/events");
  state.stream = stream;
  stream.onopen = () => {
    state.retry = 0;
    state.opens += 1;
    setLive("live", "Live");
    // The list is read (again) once the stream is open, so nothing that happened before the
    // stream's starting point can be missing from it.
    loadPending();
    if (state.history && state.opens > 1) loadHistory();
  };
  for (const name of EVENTS) {
    stream.addEventListener(name, (event) => {
      let record;
      try {
        record = JSON.parse(event.data);
      } catch {
        return;
      }
      if (record && typeof record === "object" && record.id) apply(record, name);
    });
  }
  stream.onerror = () => {
    if (stream.readyState === EventSource.CONNECTING) {
      // The browser is reconnecting and will resume after the last event it saw.
      setLive("reconnecting", "Reconnecting…");
      return;
    }
    stream.close();
    state.stream = null;
    setLive("offline", "Offline, retrying");
    state.retry += 1;
    const wait = Math.min(30000, 1000 * 2 ** Math.min(state.retry, 5));
    state.retryTimer = setTimeout(async () => {
      state.retryTimer = null;
      try {
        await call("GET", "/v1/session");
      } catch (e) {
        if (ended(e)) return;
      }
      if (state.session) connect();
    }, wait);
  };
}

function disconnect() {
  if (state.retryTimer !== null) clearTimeout(state.retryTimer);
  state.retryTimer = null;
  if (state.stream) state.stream.close();
  state.stream = null;
}

// ---- notifications and the tab's icon -----------------------------------------------------

// Permission is asked for only when "Notify me" is clicked, never on load: a prompt nobody asked
// for is one people refuse (and browsers hold against the site). The browser remembers the
// answer; the server knows nothing of it. Pages may notify only in a secure context (HTTPS, or
// this machine), so elsewhere the control is absent, as where the API is.

/** Notifications shown and not yet closed, by request id. */
const notes = new Map();

function notifications() {
  return window.isSecureContext && typeof window.Notification === "function" ? window.Notification : null;
}

/** "Notify me" while the browser has no answer; then what it answered. */
function showNotifyControl() {
  const api = notifications();
  notifyEl.hidden = !api;
  if (!api) return;
  const permission = api.permission;
  notifyAsk.hidden = permission !== "default";
  notifyState.hidden = permission === "default";
  notifyState.textContent = permission === "granted" ? "Notifications on" : "Notifications blocked";
  notifyState.title =
    permission === "granted"
      ? "New requests show as desktop notifications while this tab is in the background"
      : "Allow notifications for this site in the browser's settings to get them";
}

async function askToNotify() {
  const api = notifications();
  if (!api) return;
  notifyAsk.disabled = true;
  try {
    await api.requestPermission();
  } catch {
    // Not granted, which the control then says.
  } finally {
    notifyAsk.disabled = false;
  }
  showNotifyControl();
  if (api.permission === "granted") {
    localStorage.removeItem(PUSH_OFF);
    startPush();
  }
}

// Web Push: with notifications allowed, the browser also subscribes through the service worker,
// so new requests reach this device while the inbox is closed (phones and desktops alike).
// Where the browser has no service worker or push, or subscribing fails, the page says so and
// keeps notifying while it is open. "Turn off" removes this browser's subscription.

const PUSH_OFF = "clarify.push.off";

function showPush(text, title, toggle) {
  pushState.hidden = !text;
  pushState.textContent = text ? ` · ${text}` : "";
  pushState.title = title || "";
  pushToggle.hidden = !toggle;
  pushToggle.textContent = toggle || "";
}

function pushAvailable() {
  return "serviceWorker" in navigator && typeof window.PushManager === "function";
}

function keyBytes(text) {
  const base64 = text.replace(/-/g, "+").replace(/_/g, "/");
  const raw = atob(base64 + "=".repeat((4 - (base64.length % 4)) % 4));
  return Uint8Array.from(raw, (c) => c.charCodeAt(0));
}

function sameKey(a, b) {
  if (!a || a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a);
  return x.every((v, i) => v === b[i]);
}

async function pushRegistration() {
  await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  // Subscribing needs an active worker; one that never activates is a failure, not a wait.
  return Promise.race([
    navigator.serviceWorker.ready,
    new Promise((_, reject) => setTimeout(() => reject(new Error("no service worker")), 10000)),
  ]);
}

async function startPush() {
  const role = state.session && state.session.role;
  if (role !== "responder" && role !== "admin") return;
  if (!pushAvailable()) {
    showPush("only while open", "This browser cannot receive push notifications; new requests notify while the inbox is open");
    return;
  }
  try {
    const { key } = await call("GET", "/v1/push/key");
    const serverKey = keyBytes(key);
    const registration = await pushRegistration();
    let subscription = await registration.pushManager.getSubscription();
    if (subscription && !sameKey(subscription.options.applicationServerKey, serverKey)) {
      await subscription.unsubscribe();
      subscription = null;
    }
    if (!subscription) {
      subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: serverKey });
    }
    await call("POST", "/v1/push/subscriptions", subscription.toJSON());
    showPush("push on", "New requests reach this device even while the inbox is closed", "Turn off");
  } catch (e) {
    showPush("only while open", `Push notifications are not available here (${e.message || e}); new requests notify while the inbox is open`);
  }
}

async function togglePush() {
  if (pushToggle.textContent === "Turn on") {
    localStorage.removeItem(PUSH_OFF);
    await startPush();
    return;
  }
  pushToggle.disabled = true;
  try {
    const registration = await navigator.serviceWorker.getRegistration("/");
    const subscription = registration && (await registration.pushManager.getSubscription());
    if (subscription) {
      const { items } = await call("GET", "/v1/push/subscriptions");
      for (const item of items.filter((i) => i.endpoint === subscription.endpoint)) {
        await call("DELETE", `/v1/push/subscriptions/${encodeURIComponent(item.id)}`);
      }
      await subscription.unsubscribe();
    }
    localStorage.setItem(PUSH_OFF, "1");
    showPush("push off", "New requests notify only while the inbox is open", "Turn on");
  } catch (e) {
    showPush("push on", `Turning push off failed (${e.message || e}); try again`, "Turn off");
  } finally {
    pushToggle.disabled = false;
  }
}

/** One desktop notification for a new request, if allowed and nobody is looking at the tab. */
function notify(record) {
  const Note = notifications();
  if (!Note || Note.permission !== "granted" || document.visibilityState !== "hidden") return;
  const questions = record.questions || [];
  const first = questions[0] || { text: "" };
  const extra = questions.length > 1 ? ` (+${questions.length - 1} more)` : "";
  let note;
  try {
    // Title and body are plain text to the browser: nothing here is parsed as markup.
    // The summary titles it; the body adds the question, or who asks when the summary is the
    // question itself.
    const from = record.agent ? `New request from ${record.agent}` : "New request";
    const title = record.summary || from;
    const body = first.text === title ? `${from}${extra}` : `${first.text}${extra}`;
    note = new Note(title, { body, tag: record.id });
  } catch {
    return; // Some browsers (Android's) notify only through a service worker.
  }
  notes.set(record.id, note);
  note.addEventListener("click", () => {
    window.focus();
    location.hash = `#/requests/${encodeURIComponent(record.id)}`;
    note.close();
  });
  note.addEventListener("close", () => {
    if (notes.get(record.id) === note) notes.delete(record.id);
  });
}

// The tab's icon with the pending count: the page's own icon drawn on a canvas with a badge,
// set as a data: URL (which the page's Content-Security-Policy allows for images).
const plainIcon = iconLink.getAttribute("href");
const iconImage = new Image();
const icon = { wanted: "", shown: "" };
iconImage.addEventListener("load", () => badgeIcon(icon.wanted));
iconImage.src = plainIcon;

/** Shows `badge` (a count, as text) on the tab's icon; "" for the plain icon. */
function badgeIcon(badge) {
  icon.wanted = badge;
  // Until the icon has loaded there is nothing to draw on; its load draws the badge.
  const shown = iconImage.complete && iconImage.naturalWidth ? badge : "";
  if (shown === icon.shown) return;
  icon.shown = shown;
  if (!shown) {
    iconLink.setAttribute("href", plainIcon);
    return;
  }
  // A count only goes past 99 with a full page (100) and more to read: it says "99+".
  const label = shown.length > 2 ? "99+" : shown;
  const size = 64;
  const canvas = document.createElement("canvas");
  canvas.width = size;
  canvas.height = size;
  const ctx = canvas.getContext("2d");
  if (!ctx) return;
  ctx.drawImage(iconImage, 0, 0, size, size);
  const r = label.length > 1 ? 24 : 20;
  ctx.beginPath();
  ctx.arc(size - r, r, r, 0, 2 * Math.PI);
  ctx.fillStyle = "#dc2626";
  ctx.fill();
  ctx.fillStyle = "#ffffff";
  ctx.font = `bold ${label.length > 2 ? 20 : label.length > 1 ? 28 : 34}px sans-serif`;
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  ctx.fillText(label, size - r, r + 2);
  iconLink.setAttribute("href", canvas.toDataURL("image/png"));
}

// ---- routes --------------------------------------------------------------------------------

function currentRoute() {
  const hash = location.hash.replace(/^#/, "");
  let m = /^\/requests\/(.+)$/.exec(hash);
  if (m) return { name: "pending", id: safeDecode(m[1]) };
  m = /^\/history\/(.+)$/.exec(hash);
  if (m) return { name: "history", id: safeDecode(m[1]) };
  if (hash === "/history") return { name: "history", id: null };
  return { name: "pending", id: null };
}

function safeDecode(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

let shownLayout = null;

function route() {
  if (!state.session) return;
  if (location.pathname === "/settings") {
    closeView();
    shownLayout = "settings";
    tabPending.setAttribute("aria-current", "false");
    tabHistory.setAttribute("aria-current", "false");
    if (tabSettings) tabSettings.setAttribute("aria-current", "page");
    document.title = "Settings · clarify";
    fill(app, settingsView(ended));
    return;
  }
  const r = currentRoute();
  tabPending.setAttribute("aria-current", r.name === "pending" ? "page" : "false");
  tabHistory.setAttribute("aria-current", r.name === "history" ? "page" : "false");
  if (shownLayout !== r.name || !document.getElementById(r.name === "pending" ? "pending-list" : "history-list")) {
    closeView();
    if (r.name === "pending") showPendingLayout();
    else showHistoryLayout();
    shownLayout = r.name;
  }
  const layout = document.getElementById("layout");
  layout.dataset.view = r.id ? "detail" : "list";
  if (r.name === "pending") {
    renderList();
    renderSuggestions();
  }
  else renderHistory();
  openDetail(r);
}

function showPendingLayout() {
  fill(
    app,
    h(
      "div",
      { class: "layout", id: "layout" },
      h(
        "section",
        { class: "panel list-panel", "aria-labelledby": "pending-title" },
        h("div", { class: "panel-head" }, h("h1", { id: "pending-title" }, "Pending")),
        filtersForm(),
        h("div", { id: "suggestions" }),
        h("div", { id: "pending-list" }),
      ),
      h("section", { class: "panel detail-panel", "aria-label": "Request" }, h("div", { class: "panel-body", id: "detail" })),
    ),
  );
}

function showHistoryLayout() {
  const select = h(
    "select",
    { id: "history-status", onchange: () => loadHistory() },
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
  if (!state.history) loadHistory();
}

function closeView() {
  if (state.view) state.view.destroy();
  state.view = null;
  state.viewId = null;
}

async function openDetail(r) {
  const detail = document.getElementById("detail");
  if (!detail) return;
  if (!r.id) {
    closeView();
    fill(detail, h("div", { class: "empty" }, r.name === "pending" ? "Choose a request to answer it." : "Choose a request to see its outcome."));
    return;
  }
  if (state.viewId === r.id) return;
  closeView();
  state.viewId = r.id;
  const seq = ++state.opening;
  const back = h("a", { class: "back", href: r.name === "pending" ? "#/" : "#/history" }, "← Back to the list");
  let record = state.pending.get(r.id);
  try {
    record = await call("GET", `/v1/requests/${encodeURIComponent(r.id)}`);
  } catch (e) {
    if (ended(e) || seq !== state.opening) return;
    fill(detail, back, h("div", { class: "alert", role: "alert" }, e.status === 404 ? "This request does not exist, or belongs to another tenant." : e.message));
    return;
  }
  if (seq !== state.opening) return;
  const view = requestView(record, {
    me: state.session.name,
    displayUrl: `/display/${encodeURIComponent(record.id)}`,
    // A high-risk request under step-up is confirmed with a passkey first.
    submit: (body) =>
      answerStepped(
        record,
        `/v1/requests/${encodeURIComponent(record.id)}`,
        (headers) => call("POST", `/v1/requests/${encodeURIComponent(record.id)}/answer`, body, headers),
        state.session.role === "admin" && (state.session.via === "key" || state.session.via === "link"),
      ),
    onSent: () => {
      state.pending.delete(record.id);
      renderList();
    },
    next: {
      label: "Next request",
      go: () => {
        const next = sortedPending()[0];
        location.hash = next ? `#/requests/${encodeURIComponent(next.id)}` : "#/";
      },
    },
  });
  state.view = view;
  fill(detail, back, view.el);
  view.heading.focus({ preventScroll: false });
}

// ---- history -----------------------------------------------------------------------------

function historyMatches(record) {
  const status = state.history ? state.history.status : "";
  return record.status !== "pending" && (!status || record.status === status);
}

async function loadHistory(cursor) {
  const select = document.getElementById("history-status");
  const status = select ? select.value : "";
  if (!cursor) state.history = { status, rows: [], more: null, loading: true, error: null };
  const q = new URLSearchParams({ limit: "50" });
  if (status) q.set("status", status);
  if (cursor) q.set("cursor", cursor);
  renderHistory();
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
  renderHistory();
}

function renderHistory() {
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
    ? h("div", { class: "more" }, h("button", { type: "button", class: "btn small", onclick: () => loadHistory(hist.more) }, "Load more"))
    : null;
  fill(list, content, more);
}

start();
