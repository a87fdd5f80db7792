// The answer-link page `/a/<token>`, once script runs.
//
// The server sends a plain form that works without script. When this module runs, it reads the
// request as JSON from the same address and puts the inbox's request view in place of that form,
// answering with a JSON body to the same address: the same controls, inline errors that keep what
// was typed, and a clear word when someone else answered first.

import { h, fill } from "./dom.js";
import { call } from "./api.js";
import { requestView } from "./request.js";
import { answerStepped } from "./passkeys.js";

async function enhance() {
  const main = document.getElementById("link");
  if (!main) return;
  const address = location.pathname;
  let record;
  try {
    record = await call("GET", address);
  } catch {
    // The server-rendered page already says what is wrong, or still offers its form.
    return;
  }
  if (!record || record.status !== "pending") return;
  // Whoever holds an anonymous link is nobody in particular, so it cannot be one of several
  // approvers; a personal link answers (and votes) as the person it names.
  const person = document.getElementById("person")?.dataset.person || "";
  const view = requestView(record, {
    anonymous: !person,
    me: person || undefined,
    displayUrl: `${address}/display`,
    // A high-risk request needs a passkey confirmation first: on a personal link the person's
    // own passkey; on an anonymous link whoever's passkey it is answers, by name.
    submit: (body) => answerStepped(record, address, (headers) => call("POST", address, body, headers)),
  });
  const note = person
    ? `Someone asked for your answer. You answer as ${person}; only this request can be answered here.`
    : "Someone asked for your answer. Only this request can be answered here.";
  fill(main, h("p", { class: "meta" }, note), view.el);
  view.heading.focus();
}

enhance();
