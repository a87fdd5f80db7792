// Building the page without parsing HTML, with one exception.
//
// Everything a request carries was written by an agent, so it is untrusted. `h` makes elements
// with createElement, puts text in as text nodes and sets attributes one by one, so no request
// text can become an element or a script. The one markup the page reads is a request's display
// fragment (`fragment`), which the server renders from the blocks and cleans with an allow-list
// (no script, no style, no event attribute, links only to http, https and mailto); it is parsed
// as an inert document (never assigned as markup to a live element), and the page's policy forbids inline
// script anyway.

/** An element `tag` with attributes `attrs` and `children` (nodes, or text). */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "class") {
      el.className = value;
    } else if (name === "value") {
      el.value = value;
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  put(el, children);
  return el;
}

/** Appends `children` (nodes, text, or nested lists of them) to `el`. */
export function put(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  return put(el, children);
}

/** The nodes of a server-sanitised HTML fragment, parsed inertly (no script runs). */
export function fragment(html) {
  const doc = new DOMParser().parseFromString(`<body>${html}</body>`, "text/html");
  return [...doc.body.childNodes].map((n) => document.importNode(n, true));
}

let uid = 0;
/** A fresh element id; ids never come from request data. */
export function freshId(prefix) {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** The server's clock minus ours, when they differ by more than the Date header's precision. */
let skew = 0;
export function noteServerDate(header) {
  const server = Date.parse(header || "");
  if (Number.isNaN(server)) return;
  const offset = server - Date.now();
  skew = Math.abs(offset) > 2000 ? offset : 0;
}
export function now() {
  return Date.now() + skew;
}

/** A local date and time for an RFC 3339 string. */
export function when(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return String(iso);
  return t.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

/** "just now", "5 min ago", "3 h ago", or the date. */
export function ago(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  const s = Math.round((now() - t) / 1000);
  if (s < 45) return "just now";
  if (s < 3600) return `${Math.max(1, Math.round(s / 60))} min ago`;
  if (s < 86400) return `${Math.round(s / 3600)} h ago`;
  return when(iso);
}

/** A duration in words: "4 min 12 s", "2 h 5 min", "3 days". */
export function span(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${s % 60} s`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return `${hours} h ${m % 60} min`;
  return `${Math.floor(hours / 24)} days`;
}

/** Like `span`, without the seconds past the first minute: for lists redrawn now and then. */
function roughSpan(ms) {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return "under a minute";
  const m = Math.ceil(s / 60);
  if (m < 60) return `${m} min`;
  const hours = Math.floor(m / 60);
  if (hours < 48) return m % 60 ? `${hours} h ${m % 60} min` : `${hours} h`;
  return `${Math.floor(hours / 24)} days`;
}

/** The time left before `expiresAt`, for a label: text and urgency; `rough` drops seconds. */
export function timeLeft(expiresAt, rough) {
  if (!expiresAt) return { text: "No deadline", urgency: "" };
  const left = Date.parse(expiresAt) - now();
  if (Number.isNaN(left)) return { text: "", urgency: "" };
  if (left <= 0) return { text: "Time is up", urgency: "over" };
  return { text: `${(rough ? roughSpan : span)(left)} left`, urgency: left < 5 * 60 * 1000 ? "soon" : "" };
}
