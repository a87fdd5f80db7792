// One request, as a form to answer or as what became of it.
//
// The inbox and the answer-link page both show requests through `requestView`; they differ only
// in where the answer is sent (`submit`). Every string from the request goes in as text (see
// dom.js). A failed submission shows the server's message and keeps everything typed; a request
// resolved elsewhere meanwhile says by whom and what the answer was.

import { h, put, fill, freshId, when, ago, timeLeft } from "./dom.js";

const KIND_TITLES = {
  open: "Question",
  single: "Choose one",
  multi: "Choose any",
  approval: "Approval requested",
};

const SCOPE_LABELS = {
  once: "Just this once",
  session: "For this session",
  always: "Always",
};

/** A problem found before sending, with the control to fix it. */
class LocalError extends Error {
  constructor(message, control) {
    super(message);
    this.control = control;
  }
}

/** JSON with object keys sorted, so equal values compare equal as text. */
function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(value);
}

/** A label for the question in messages: its header, or the start of its text. */
function questionName(q) {
  if (q.header) return q.header;
  return q.text.length > 60 ? `${q.text.slice(0, 57)}…` : q.text;
}

/** The heading of a request. */
export function requestTitle(record) {
  const qs = record.questions || [];
  if (qs.length > 1) return `${qs.length} questions`;
  return KIND_TITLES[(qs[0] || {}).kind] || "Question";
}

/** Who resolved a request, in words, or `null` when nobody did (expiry). */
export function resolvedBy(record) {
  if (record.answered_by) return record.answered_by;
  if (record.status === "answered" || record.status === "skipped") return "someone with its answer link";
  return null;
}

/** One sentence on what became of a resolved request. */
export function resolutionSentence(record) {
  const by = resolvedBy(record);
  const at = record.resolved_at ? ` ${when(record.resolved_at)}` : "";
  switch (record.status) {
    case "answered":
      return `Answered by ${by},${at}.`;
    case "skipped":
      return `Skipped by ${by},${at}.`;
    case "expired":
      return `Expired${at}: nobody answered in time.`;
    case "cancelled":
      return by ? `Cancelled by ${by},${at}.` : `Cancelled${at}.`;
    default:
      return `It is ${record.status}.`;
  }
}

/** An outcome question's answer in words. */
export function answerText(oq) {
  if (oq.mode === null || oq.mode === undefined) return "No answer";
  if (oq.mode === "decision") {
    let text = oq.decision === "approve" ? "Approved" : "Denied";
    if (oq.decision === "approve" && oq.scope && oq.scope !== "once") text += ` (${oq.scope})`;
    if (oq.reason) text += `\nReason: ${oq.reason}`;
    if (oq.edited_arguments !== undefined && oq.edited_arguments !== null) {
      text += `\nWith edited arguments: ${JSON.stringify(oq.edited_arguments)}`;
    }
    return text;
  }
  if (Array.isArray(oq.answer)) return oq.answer.join(", ");
  return String(oq.answer);
}

/** The outcome as a list of question and answer. */
export function outcomeList(outcome) {
  const list = h("dl", { class: "outcome" });
  for (const oq of (outcome && outcome.questions) || []) {
    put(list, [h("dt", {}, oq.question), h("dd", {}, answerText(oq))]);
  }
  return list;
}

function contextBlock(context) {
  if (context === null || context === undefined || context === "") return null;
  const body =
    typeof context === "string" ? h("p", {}, context) : h("pre", {}, JSON.stringify(context, null, 2));
  return h("section", { class: "context" }, h("h3", {}, "Context"), body);
}

/** Metadata of a request: agent, session, tags, age, deadline (kept current by `tick`). */
function metaLine(record, deadline) {
  const meta = h("div", { class: "meta" });
  if (record.agent) put(meta, h("span", {}, "from ", h("strong", {}, record.agent)));
  if (record.session) put(meta, h("span", {}, `session ${record.session}`));
  for (const tag of record.tags || []) put(meta, h("span", { class: "chip tag" }, tag));
  if (record.responders && record.responders.length) {
    put(meta, h("span", {}, `only ${record.responders.join(", ")} may answer`));
  }
  put(meta, h("span", { title: when(record.created_at) }, `asked ${ago(record.created_at)}`));
  if (deadline) put(meta, deadline);
  return meta;
}

function optionContent(option, recommended) {
  return [
    h(
      "span",
      { class: "choice-label" },
      option.label,
      option.id === recommended ? h("span", { class: "recommended" }, "Recommended") : null,
    ),
    option.description ? h("span", { class: "choice-desc" }, option.description) : null,
  ];
}

function otherField(q, onInput) {
  const id = freshId("other");
  const input = h("input", { type: "text", id, autocomplete: "off", placeholder: "Type your own answer", oninput: onInput });
  return { input, el: h("div", { class: "field" }, h("label", { for: id }, "Other"), input) };
}

/** Options as buttons; pressing one un-presses the rest and clears Other. */
function singleControls(q) {
  let chosen = null;
  const buttons = [];
  let other = null;
  const choose = (id) => {
    chosen = id;
    for (const b of buttons) b.setAttribute("aria-pressed", String(b.dataset.option === id));
    if (id !== null && other) other.input.value = "";
  };
  for (const option of q.options || []) {
    const b = h("button", { type: "button", class: "choice", "aria-pressed": "false", onclick: () => choose(option.id) }, optionContent(option, q.recommended));
    b.dataset.option = option.id;
    buttons.push(b);
  }
  if (q.allow_other) {
    other = otherField(q, () => {
      if (other.input.value.trim()) choose(null);
    });
  }
  return {
    el: [h("div", { class: "choices", role: "group", "aria-label": "Options" }, buttons), other && other.el],
    controls: [...buttons, other && other.input].filter(Boolean),
    collect() {
      if (chosen !== null) return { option: chosen };
      if (other && other.input.value.trim()) return { other: other.input.value };
      return null;
    },
  };
}

/** Options as checkboxes, plus Other. */
function multiControls(q) {
  const boxes = [];
  const rows = (q.options || []).map((option) => {
    const id = freshId("opt");
    const box = h("input", { type: "checkbox", id });
    box.dataset.option = option.id;
    boxes.push(box);
    return h("div", { class: "check" }, box, h("label", { for: id }, optionContent(option, q.recommended)));
  });
  const other = q.allow_other ? otherField(q, () => {}) : null;
  return {
    el: [h("div", { class: "choices", role: "group", "aria-label": "Options" }, rows), other && other.el],
    controls: [...boxes, other && other.input].filter(Boolean),
    collect() {
      const options = boxes.filter((b) => b.checked).map((b) => b.dataset.option);
      const text = other ? other.input.value : "";
      if (!options.length && !text.trim()) return null;
      const answer = { options };
      if (text.trim()) answer.other = text;
      return answer;
    },
  };
}

function openControls(q, labelId) {
  const area = h("textarea", { rows: "4", "aria-labelledby": labelId, placeholder: "Your answer" });
  return {
    el: [area],
    controls: [area],
    collect() {
      return area.value.trim() ? { text: area.value } : null;
    },
  };
}

/** Approve or deny, the scope of an approval, edited arguments, a reason. */
function approvalControls(q) {
  const action = q.action || { name: "", arguments: {} };
  const original = JSON.stringify(action.arguments, null, 2);
  let decision = null;
  const decide = (d) => {
    decision = d;
    approve.setAttribute("aria-pressed", String(d === "approve"));
    deny.setAttribute("aria-pressed", String(d === "deny"));
    for (const r of scopeRadios) r.disabled = d === "deny";
  };
  const approve = h("button", { type: "button", class: "choice approve", "aria-pressed": "false", onclick: () => decide("approve") }, "Approve");
  const deny = h("button", { type: "button", class: "choice deny", "aria-pressed": "false", onclick: () => decide("deny") }, "Deny");

  const scopes = q.scopes && q.scopes.length ? q.scopes : ["once"];
  const scopeRadios = [];
  let scopeEl = null;
  if (scopes.length > 1) {
    const name = freshId("scope");
    const labels = scopes.map((s, i) => {
      const id = freshId("scope");
      const radio = h("input", { type: "radio", name, id, value: s, checked: i === 0 });
      scopeRadios.push(radio);
      return h("label", { for: id }, radio, SCOPE_LABELS[s] || s);
    });
    scopeEl = h("fieldset", { class: "field scopes" }, h("legend", { class: "section-label" }, "If approved, remember it"), labels);
  } else if (scopes[0] !== "once") {
    scopeEl = h("p", { class: "field meta" }, `Approving grants this ${SCOPE_LABELS[scopes[0]] ? SCOPE_LABELS[scopes[0]].toLowerCase() : scopes[0]}.`);
  }

  let editor = null;
  let editorEl = null;
  if (q.allow_edit) {
    const id = freshId("args");
    editor = h("textarea", { id, class: "code", rows: String(Math.min(14, original.split("\n").length + 1)), spellcheck: "false", value: original });
    editorEl = h("div", { class: "field" }, h("label", { for: id }, "Arguments (edit them before approving, if needed)"), editor);
  }
  const reasonId = freshId("reason");
  const reason = h("input", { type: "text", id: reasonId, autocomplete: "off", placeholder: "Optional; the agent sees it" });

  return {
    el: [
      h(
        "div",
        { class: "action" },
        h("span", { class: "section-label" }, "Action "),
        h("code", { class: "action-name" }, action.name),
        editor ? null : h("pre", {}, original),
      ),
      h("div", { class: "decision", role: "group", "aria-label": "Decision" }, approve, deny),
      scopeEl,
      editorEl,
      h("div", { class: "field" }, h("label", { for: reasonId }, "Reason"), reason),
    ],
    controls: [approve, deny, ...scopeRadios, editor, reason].filter(Boolean),
    collect() {
      if (!decision) return null;
      const answer = { decision };
      if (decision === "approve") {
        const picked = scopeRadios.find((r) => r.checked);
        answer.scope = picked ? picked.value : scopes[0];
        if (editor && editor.value !== original) {
          let edited;
          try {
            edited = JSON.parse(editor.value);
          } catch (e) {
            throw new LocalError(`“${questionName(q)}”: the edited arguments are not valid JSON (${e.message}). Correct them, or restore the original arguments.`, editor);
          }
          if (canonical(edited) !== canonical(action.arguments)) answer.edited_arguments = edited;
        }
      }
      if (reason.value.trim()) answer.reason = reason.value;
      return answer;
    },
  };
}

function questionControls(q, labelId) {
  switch (q.kind) {
    case "single":
      return singleControls(q);
    case "multi":
      return multiControls(q);
    case "approval":
      return approvalControls(q);
    default:
      return openControls(q, labelId);
  }
}

/**
 * A request view. `options.submit(body)` sends an answer body and resolves to the outcome;
 * `options.onSent(outcome)` runs after a successful answer; `options.next` (optional) adds a
 * button after an answer, `{label, go}`. Returns `{el, heading, update(record), destroy()}`.
 */
export function requestView(record, options = {}) {
  const headingId = freshId("title");
  const heading = h("h2", { id: headingId, tabindex: "-1" }, requestTitle(record));
  const deadline = h("span", { class: "deadline" });
  const banner = h("div", { role: "status" });
  const el = h("article", { class: "request", "aria-labelledby": headingId });
  put(el, [h("header", { class: "request-head" }, heading, metaLine(record, record.status === "pending" ? deadline : null)), banner, contextBlock(record.context)]);

  let timer = null;
  const state = { resolved: record.status !== "pending", sent: false, busy: false };

  if (state.resolved) {
    put(banner, resolvedNotice(record, false, false));
    showQuestionsRead(el, record);
    return { el, heading, update() {}, destroy() {} };
  }

  const form = h("form", { class: "answer", novalidate: true });
  const parts = [];
  for (const q of record.questions || []) {
    const labelId = freshId("q");
    const part = questionControls(q, labelId);
    const fieldset = h(
      "fieldset",
      { class: "question" },
      h("legend", {}, q.header ? h("span", { class: "chip" }, q.header) : null, h("span", { class: "question-text", id: labelId }, q.text)),
      part.el,
    );
    fieldset.dataset.question = q.id;
    parts.push({ q, part, fieldset });
    put(form, fieldset);
  }
  const alert = h("div", { class: "alert", role: "alert", hidden: true });
  const send = h("button", { type: "submit", class: "btn primary" }, "Send answer");
  const skip = record.allow_skip ? h("button", { type: "button", class: "btn", onclick: () => submit(true) }, "Skip") : null;
  put(form, [alert, h("div", { class: "actions" }, send, skip)]);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(false);
  });
  put(el, form);

  const controls = () => [send, skip, ...parts.flatMap((p) => p.part.controls)].filter(Boolean);
  const setDisabled = (disabled) => {
    for (const c of controls()) c.disabled = disabled;
  };

  function showError(message, questionId) {
    fill(alert, message);
    alert.hidden = false;
    for (const p of parts) {
      const bad = p.q.id === questionId;
      p.fieldset.classList.toggle("invalid", bad);
      if (bad) p.fieldset.setAttribute("aria-invalid", "true");
      else p.fieldset.removeAttribute("aria-invalid");
    }
  }

  function clearError() {
    alert.hidden = true;
    fill(alert);
    for (const p of parts) {
      p.fieldset.classList.remove("invalid");
      p.fieldset.removeAttribute("aria-invalid");
    }
  }

  /** The question a server message is about (`answers.q2...` or `question "q2"`). */
  function questionIn(message) {
    const m = /answers\.([^.:\s]+)/.exec(message) || /question "([^"]+)"/.exec(message);
    return m ? m[1] : null;
  }

  async function submit(skipping) {
    if (state.busy || state.resolved) return;
    let body;
    try {
      if (skipping) {
        body = { skip: true };
      } else {
        const answers = {};
        for (const { q, part } of parts) {
          const a = part.collect();
          if (a) answers[q.id] = a;
        }
        body = { answers };
      }
    } catch (e) {
      if (!(e instanceof LocalError)) throw e;
      showError(e.message, null);
      if (e.control) e.control.focus();
      return;
    }
    clearError();
    state.busy = true;
    setDisabled(true);
    send.textContent = "Sending…";
    try {
      const outcome = await options.submit(body);
      state.sent = true;
      state.resolved = true;
      stop();
      form.remove();
      fill(banner, sentNotice(outcome));
      if (options.onSent) options.onSent(outcome);
      const next = banner.querySelector("button");
      (next || heading).focus();
    } catch (e) {
      if (e.code === "already_resolved" && e.body && e.body.record) {
        resolveElsewhere(e.body.record, true);
      } else {
        const about = questionIn(e.message || "");
        const q = parts.find((p) => p.q.id === about);
        const message = e.message || String(e);
        showError(q ? `“${questionName(q.q)}”: ${message}` : message, about);
        alert.scrollIntoView({ block: "nearest" });
      }
    } finally {
      state.busy = false;
      send.textContent = "Send answer";
      if (!state.resolved) setDisabled(false);
    }
  }

  function sentNotice(outcome) {
    const skipped = outcome && outcome.status === "skipped";
    const notice = h("div", { class: "notice ok" }, h("strong", {}, skipped ? "Skipped." : "Answer sent."), skipped ? null : outcomeList(outcome));
    if (options.next) {
      put(notice, h("div", { class: "actions" }, h("button", { type: "button", class: "btn primary", onclick: options.next.go }, options.next.label)));
    }
    return notice;
  }

  /** Someone else resolved it: say who and with what, keep the form visible but inert. */
  function resolveElsewhere(now, afterSubmit) {
    if (state.resolved) return;
    state.resolved = true;
    stop();
    setDisabled(true);
    clearError();
    fill(banner, resolvedNotice(now, true, afterSubmit));
    banner.setAttribute("role", "alert");
  }

  function tick() {
    const left = timeLeft(record.expires_at);
    deadline.textContent = left.text;
    deadline.className = `deadline ${left.urgency}`;
    if (left.urgency === "over" && !state.busy) {
      setDisabled(true);
    }
  }
  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    deadline.hidden = true;
  }
  tick();
  if (record.expires_at) timer = setInterval(tick, 1000);

  return {
    el,
    heading,
    /** A newer version of this request (from the event stream). */
    update(now) {
      if (now.id !== record.id || now.status === "pending" || state.sent) return;
      resolveElsewhere(now, false);
    },
    destroy: stop,
  };
}

/** What became of a request; `elsewhere` when that happened while it was open here. */
function resolvedNotice(record, elsewhere, afterSubmit) {
  const kind = elsewhere || record.status !== "answered" ? "notice warn" : "notice";
  const notice = h("div", { class: kind }, h("strong", {}, resolutionSentence(record)));
  if (afterSubmit) put(notice, " Your answer was not sent.");
  if (record.outcome && record.status === "answered") put(notice, outcomeList(record.outcome));
  if (record.outcome && record.outcome.note && record.status !== "answered") {
    put(notice, h("p", { class: "meta" }, `The agent was told: ${record.outcome.note}`));
  }
  return notice;
}

/** The questions of a resolved request, read-only. */
function showQuestionsRead(el, record) {
  for (const q of record.questions || []) {
    const items = [];
    if (q.options) {
      items.push(h("ul", {}, q.options.map((o) => h("li", {}, o.label, o.id === q.recommended ? h("span", { class: "recommended" }, "Recommended") : null))));
    }
    if (q.action) {
      items.push(h("div", { class: "action" }, h("code", { class: "action-name" }, q.action.name), h("pre", {}, JSON.stringify(q.action.arguments, null, 2))));
    }
    put(
      el,
      h(
        "section",
        { class: "question" },
        q.header ? h("span", { class: "chip" }, q.header) : null,
        h("p", { class: "question-text" }, q.text),
        items,
      ),
    );
  }
}
