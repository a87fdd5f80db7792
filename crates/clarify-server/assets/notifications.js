// Notifications, Web Push and the tab's icon: how the inbox tells someone who is not looking at
// it that a request is waiting.
//
// While the tab is hidden, each request that arrives raises a desktop notification, once the
// person has allowed them; with Web Push the browser is told even while the inbox is closed. The
// tab shows the pending count on its icon.

import { call } from "./api.js";

const notifyEl = document.getElementById("notify");
const notifyAsk = document.getElementById("notify-ask");
const notifyState = document.getElementById("notify-state");
const pushState = document.getElementById("push-state");
const pushToggle = document.getElementById("push-toggle");
const iconLink = document.querySelector('link[rel="icon"]');

// Permission is asked for only when "Notify me" is clicked, never on load: a prompt nobody asked
// for is one people refuse (and browsers hold against the site). The browser remembers the
// answer; the server knows nothing of it. Pages may notify only in a secure context (HTTPS, or
// this machine), so elsewhere the control is absent, as where the API is.

/** Notifications shown and not yet closed, by request id. */
const notes = new Map();

/**
 * Wires the "Notify me" and push controls and shows them; `session()` is the signed-in session,
 * or null, whose role says whether this browser may subscribe to push.
 */
export function setUpNotifications(session) {
  notifyAsk.addEventListener("click", () => askToNotify(session));
  pushToggle.addEventListener("click", () => togglePush(session));
  // The answer can change in the browser's settings meanwhile; show it again on coming back.
  document.addEventListener("visibilitychange", showNotifyControl);
  showNotifyControl();
}

/** Closes the notification for request `id`, if one is showing: it has been resolved. */
export function closeNote(id) {
  if (notes.has(id)) notes.get(id).close();
}

/** Closes every notification still showing: the person signed out. */
export function closeNotes() {
  for (const note of notes.values()) note.close();
}

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

async function askToNotify(session) {
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
    startPush(session());
  }
}

// Web Push: with notifications allowed, the browser also subscribes through the service worker,
// so new requests reach this device while the inbox is closed (phones and desktops alike).
// Where the browser has no service worker or push, or subscribing fails, the page says so and
// keeps notifying while it is open. "Turn off" removes this browser's subscription.

const PUSH_OFF = "clarify.push.off";

/**
 * On signing in: keeps this browser's subscription known to the server (the same endpoint
 * replaces it), unless the person turned push off here.
 */
export function resumePush(session) {
  const Note = notifications();
  if (Note && Note.permission === "granted" && localStorage.getItem(PUSH_OFF) !== "1") startPush(session);
}

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

async function startPush(session) {
  const role = session && session.role;
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

async function togglePush(session) {
  if (pushToggle.textContent === "Turn on") {
    localStorage.removeItem(PUSH_OFF);
    await startPush(session());
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
export function notify(record) {
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
export function badgeIcon(badge) {
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
