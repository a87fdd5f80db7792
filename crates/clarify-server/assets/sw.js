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
