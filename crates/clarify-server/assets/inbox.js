// The inbox: the live list of pending requests, answering them, and the page's routes.
//
// The list (and the request open beside it) is read from `/v1/requests` each time the event
// stream opens, and kept current by `/v1/events` in between: each event carries the request as
// it is now, so the list only has to file it (pending and matching the filters: shown; anything
// else: gone). The browser's EventSource reconnects by itself and resumes after the last event
// it saw; when it gives up (an error response), the page opens a new stream after a pause, so
// nothing is missed either way. The list is also read at once on sign-in, so it shows even when
// no stream can open.
//
// This module holds the session, the list and the routes, and the state they share; its parts
// live beside it and are handed that state and what they need of this module: the sign-in form
// (login.js), notifications, Web Push and the tab's icon (notifications.js), the suggested
// standing approvals (suggestions.js), answering several at once (batch.js) and the history
// (history.js).

import { h, fill, when, ago, timeLeft } from "./dom.js";
import { call, useCsrf } from "./api.js";
import { requestView, quorumOf, riskMark } from "./request.js";
import { answerStepped } from "./passkeys.js";
import { settingsView } from "./settings.js";
import { showLogin } from "./login.js";
import { setUpNotifications, resumePush, notify, closeNote, closeNotes, badgeIcon } from "./notifications.js";
import { suggestedGrants } from "./suggestions.js";
import { batchAnswers } from "./batch.js";
import { historyView } from "./history.js";

// Every event carries the request as it is now; a vote, a reminder, a warning, an extension or an
// escalation changes a pending request (its votes, its deadline, who may answer), so the list and
// the open view are refreshed.
const EVENTS = [
  "request.created",
  "request.answered",
  "request.skipped",
  "request.expired",
  "request.cancelled",
  "request.voted",
  "request.reminded",
  "request.warned",
  "request.extended",
  "request.escalated",
];
const PAGE = 100;

const app = document.getElementById("app");
const topbar = document.getElementById("topbar");
const liveEl = document.getElementById("live");
const liveText = document.getElementById("live-text");
const whoEl = document.getElementById("who");
const account = document.getElementById("account-menu");
const countEl = document.getElementById("pending-count");
const tabPending = document.getElementById("tab-pending");
const tabHistory = document.getElementById("tab-history");
const tabSettings = document.getElementById("tab-settings");
const announce = document.getElementById("announce");

// Everything the page knows, in one object that its parts are handed rather than a global.
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

// The parts beside this module, each given the state and what it may ask of this module.
const suggestions = suggestedGrants(state, ended);
const batch = batchAnswers(state, { ended, renderList });
const historyTab = historyView(state, { ended, currentRoute });

// ---- session ---------------------------------------------------------------------------

async function start() {
  registerWorker();
  document.getElementById("logout").addEventListener("click", logout);
  setUpNotifications(() => state.session);
  window.addEventListener("hashchange", route);
  // Log out on a page without script (Insights) is a link to here: it signs out, once.
  const leaving = location.hash === "#/logout";
  if (leaving) history.replaceState(null, "", location.pathname + location.search);
  try {
    const session = await call("GET", "/v1/session");
    if (leaving) {
      useCsrf(session.csrf_token);
      await logout();
      return;
    }
    signedIn(session);
  } catch (e) {
    if (e.status === 401) showLogin(null, signedIn);
    else showLogin(e.message, signedIn);
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
  resumePush(session);
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
  // The account menu (a popover, drawn above the page) would outlive the top bar it belongs to.
  if (account.hidePopover && account.matches(":popover-open")) account.hidePopover();
  disconnect();
  closeView();
  closeNotes();
  useCsrf(null);
  state.session = null;
  state.pending.clear();
  state.listing += 1;
  state.history = null;
  state.loaded = false;
  history.replaceState(null, "", location.pathname + location.search);
  showLogin(problem, signedIn);
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
    if (!cursor) suggestions.load();
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
    if (historyTab.matches(record)) state.history.rows.unshift(record);
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
  if (record.status !== "pending") closeNote(record.id);
  if (record.status === "answered") suggestions.loadSoon();
  renderList(arrived ? record.id : null);
  if (currentRoute().name === "history") historyTab.render();
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
      const item = h("li", { class: "row-item" }, batch.selectBox(record, selected), pendingRow(record, current, record.id === arrived));
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
  batch.renderBar();
  fillDatalists();
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
      riskMark(record),
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
    // The list and the open request are read (again) once the stream is open, so nothing that
    // happened before the stream's starting point can be missing from them: a request that
    // expired while the page was connecting says so instead of still offering its form.
    loadPending();
    refreshView();
    if (state.history && state.opens > 1) historyTab.load();
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
    else historyTab.showLayout();
    shownLayout = r.name;
  }
  const layout = document.getElementById("layout");
  layout.dataset.view = r.id ? "detail" : "list";
  if (r.name === "pending") {
    renderList();
    suggestions.render();
  }
  else historyTab.render();
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

/** Reads the open request again and shows what became of it since it was read. */
async function refreshView() {
  const id = state.viewId;
  if (!id || !state.view) return;
  let record;
  try {
    record = await call("GET", `/v1/requests/${encodeURIComponent(id)}`);
  } catch (e) {
    ended(e);
    return;
  }
  if (state.viewId === id && state.view) state.view.update(record);
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
  const opens = state.opens;
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
  // The stream (re)opened while the request was being read: what it missed before its starting
  // point may be newer than that reading.
  if (state.opens !== opens) refreshView();
}

start();
