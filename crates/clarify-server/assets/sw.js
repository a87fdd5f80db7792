// clarify's service worker, served at /sw.js so that its scope is the whole site.
//
// It keeps the inbox's shell (this build's assets, which never change under their versioned
// paths, and the offline page) so the installed app opens at once, and shows the offline page
// when a page cannot be loaded. It never answers for the API: a request's list, an answer or a
// sign-in goes to the network or fails where the person sees it, so nothing is queued to be
// sent later without them knowing.
//
// The server writes this build's asset version and paths into the two constants below; a new
// build is a new script, which the browser installs in place of the old one.

const VERSION = "{{version}}";
const SHELL = {{shell}};
const CACHE = "clarify-" + VERSION;
const OFFLINE = "/offline";

self.addEventListener("install", (event) => {
  event.waitUntil(
    caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()),
  );
});

self.addEventListener("activate", (event) => {
  event.waitUntil(
    caches.keys()
      .then((names) => Promise.all(
        names.filter((name) => name.startsWith("clarify-") && name !== CACHE)
          .map((name) => caches.delete(name)),
      ))
      .then(() => self.clients.claim()),
  );
});

self.addEventListener("fetch", (event) => {
  const request = event.request;
  if (request.method !== "GET") {
    return;
  }
  const url = new URL(request.url);
  if (url.origin !== self.location.origin) {
    return;
  }
  if (request.mode === "navigate") {
    // Pages always come from the server, so they are never stale; the offline page stands in
    // only when the server cannot be reached at all.
    event.respondWith(
      fetch(request).catch(() => caches.match(OFFLINE).then((page) => page || Response.error())),
    );
    return;
  }
  if (url.pathname.startsWith("/assets/" + VERSION + "/")) {
    event.respondWith(caches.match(request).then((hit) => hit || fetch(request)));
  }
});

// Web Push: a push carries only a request's title, id, inbox address, tag and actions (see the
// server's api/push.rs); everything else is read over the signed-in session once opened. An
// action POSTs its JSON body to its URL, the person's push link, without cookies: the link is
// what says who answers. A tap elsewhere opens the request in the inbox.

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  const title = typeof data.title === "string" && data.title ? data.title : "New request";
  const actions = Array.isArray(data.actions) ? data.actions : [];
  const options = {
    body: actions.length ? "Answer here, or tap to open it" : "Tap to open it",
    tag: typeof data.tag === "string" ? data.tag : undefined,
    data: { id: data.id, url: data.url, actions },
    actions: actions.map((a) => ({ action: String(a.action), title: String(a.title) })),
    requireInteraction: true,
  };
  event.waitUntil(self.registration.showNotification(title, options));
});

/** Focuses an open inbox at `url`, or opens one. */
async function openInbox(url) {
  const target = new URL(url || "/", self.location.origin);
  if (target.origin !== self.location.origin) return;
  const open = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of open) {
    if (new URL(client.url).origin === target.origin && "focus" in client) {
      await client.focus();
      if ("navigate" in client) await client.navigate(target.href);
      return;
    }
  }
  await self.clients.openWindow(target.href);
}

/** Answers through the action's link; a short confirmation, or the request opened on failure. */
async function answer(note, action) {
  const data = note.data || {};
  try {
    const url = new URL(action.url, self.location.origin);
    if (url.origin !== self.location.origin) throw new Error("not this server's link");
    const response = await fetch(url.href, {
      method: "POST",
      credentials: "omit",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify(action.body),
    });
    if (!response.ok) throw new Error(`answered ${response.status}`);
    await self.registration.showNotification(`${action.title}: done`, {
      body: note.title,
      tag: note.tag,
      data: { id: data.id, url: data.url, actions: [] },
    });
  } catch {
    await openInbox(data.url);
  }
}

self.addEventListener("notificationclick", (event) => {
  const note = event.notification;
  const data = note.data || {};
  note.close();
  const action = (data.actions || []).find((a) => String(a.action) === event.action);
  event.waitUntil(action ? answer(note, action) : openInbox(data.url));
});
