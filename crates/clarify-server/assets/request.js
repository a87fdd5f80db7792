// One request, as a form to answer or as what became of it.
//
// The inbox and the answer-link page both show requests through `requestView`; they differ only
// in where the answer is sent (`submit`). Every string from the request goes in as text (see
// dom.js). A failed submission shows the server's message and keeps everything typed; a request
// resolved elsewhere meanwhile says by whom and what the answer was.

import { h, put, fill, fragment, freshId, when, ago, timeLeft } from "./dom.js";
import { formControls, formAnswerLines } from "./fields.js";
import { fragmentText } from "./api.js";

const KIND_TITLES = {
  open: "Question",
  single: "Choose one",
  multi: "Choose any",
  approval: "Approval requested",
  form: "Please fill in",
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

/** The heading of a request: its summary (what is asked, in one line). */
export function requestTitle(record) {
  if (record.summary) return record.summary;
  const qs = record.questions || [];
  if (qs.length > 1) return `${qs.length} questions`;
  return KIND_TITLES[(qs[0] || {}).kind] || "Question";
}

/** A decision in words. */
const DECISION_WORDS = { approve: "Approved", deny: "Denied", revise: "Changes requested" };

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

/** Approvals so far and approvals needed, when a request needs more than one. */
export function quorumOf(record) {
  const required = record.approvals_required || 1;
  if (required <= 1) return null;
  const approvers = (record.votes || []).filter((v) => v.decision === "approve").map((v) => v.by);
  return { required, approvers, text: `${approvers.length} of ${required} approvals` };
}

/** The quorum line of a request: "1 of 2 approvals · approved by alice". */
function quorumLine(quorum) {
  return [
    h("strong", {}, quorum.text),
    quorum.approvers.length ? ` · approved by ${quorum.approvers.join(", ")}` : " · nobody has approved yet",
  ];
}

/** An outcome question's answer in words; `q` (the request's question) names form fields. */
export function answerText(oq, q) {
  if (oq.mode === null || oq.mode === undefined) return "No answer";
  if (oq.mode === "default") {
    const applied = answerText({ ...oq, mode: oq.decision ? "decision" : "default-value" }, q);
    return `${applied}\n(the default, applied because nobody answered in time)`;
  }
  if (oq.mode === "form" || (oq.answer && typeof oq.answer === "object" && !Array.isArray(oq.answer))) {
    return formAnswerLines(q && q.fields, oq.answer || {}).join("\n") || "Nothing filled in";
  }
  if (oq.mode === "decision") {
    let text = DECISION_WORDS[oq.decision] || oq.decision;
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

/** The outcome as a list of question and answer; `questions` are the request's. */
export function outcomeList(outcome, questions) {
  const list = h("dl", { class: "outcome" });
  for (const oq of (outcome && outcome.questions) || []) {
    const q = (questions || []).find((x) => x.id === oq.id);
    put(list, [h("dt", {}, oq.question), h("dd", {}, answerText(oq, q))]);
  }
  return list;
}

function contextBlock(context) {
  if (context === null || context === undefined || context === "") return null;
  const body =
    typeof context === "string" ? h("p", {}, context) : h("pre", {}, JSON.stringify(context, null, 2));
  return h("section", { class: "context" }, h("h3", {}, "Context"), body);
}

/**
 * "High risk", in words, for a request its sender marked `risk: high` (whatever step-up is set
 * to: it says what is at stake, not how the answer is checked); `null` for any other.
 */
export function riskMark(record) {
  if (record.risk !== "high") return null;
  return h("span", { class: "risk", title: "Its sender marked this request high-risk" }, "High risk");
}

/** Metadata of a request: risk, agent, session, tags, age, deadline (kept current by `tick`). */
function metaLine(record, deadline) {
  const meta = h("div", { class: "meta" });
  put(meta, riskMark(record));
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

/**
 * Approve, request changes or deny; the scope of an approval, edited arguments, a reason
 * (required to request changes). `displayed`: display blocks show what the action does, so its
 * arguments as sent are folded away.
 */
function approvalControls(q, displayed) {
  const action = q.action || { name: "", arguments: {} };
  const original = JSON.stringify(action.arguments, null, 2);
  let decision = null;
  const decide = (d) => {
    decision = d;
    approve.setAttribute("aria-pressed", String(d === "approve"));
    revise.setAttribute("aria-pressed", String(d === "revise"));
    deny.setAttribute("aria-pressed", String(d === "deny"));
    for (const r of scopeRadios) r.disabled = d !== "approve";
    reason.required = d === "revise";
    reason.placeholder = d === "revise" ? "Required: what should the agent change?" : "Optional; the agent sees it";
    if (d === "revise") reason.focus();
  };
  const approve = h("button", { type: "button", class: "choice approve", "aria-pressed": "false", onclick: () => decide("approve") }, "Approve");
  const revise = h("button", { type: "button", class: "choice revise", "aria-pressed": "false", onclick: () => decide("revise") }, "Request changes");
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
        editor ? null : displayed ? h("details", {}, h("summary", {}, "Arguments as sent"), h("pre", {}, original)) : h("pre", {}, original),
      ),
      h("div", { class: "decision", role: "group", "aria-label": "Decision" }, approve, revise, deny),
      scopeEl,
      editorEl,
      h("div", { class: "field" }, h("label", { for: reasonId }, "Reason"), reason),
    ],
    controls: [approve, revise, deny, ...scopeRadios, editor, reason].filter(Boolean),
    collect() {
      if (!decision) return null;
      if (decision === "revise" && !reason.value.trim()) {
        throw new LocalError("say what should change: the agent reads it and proposes again.", reason);
      }
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

function questionControls(q, labelId, displayed) {
  switch (q.kind) {
    case "single":
      return singleControls(q);
    case "multi":
      return multiControls(q);
    case "approval":
      return approvalControls(q, displayed);
    case "form":
      return formControls(q, (message, control) => new LocalError(message, control));
    default:
      return openControls(q, labelId);
  }
}

/**
 * A request view. `options.submit(body)` sends an answer body and resolves to the outcome (or,
 * for a vote that does not yet complete a quorum, to the record, still pending);
 * `options.onSent(outcome)` runs after a successful answer; `options.next` (optional) adds a
 * button after an answer, `{label, go}`; `options.me` is the signed-in responder's name, to
 * know whether they voted already; `options.anonymous` (the answer link) cannot vote, so a
 * request that needs several approvals is shown without a form; `options.displayUrl` is where
 * the request's display fragment is read (blocks and what it revises). Returns
 * `{el, heading, update(record), destroy()}`.
 */
export function requestView(record, options = {}) {
  const headingId = freshId("title");
  const heading = h("h2", { id: headingId, tabindex: "-1" }, requestTitle(record));
  const deadline = h("span", { class: "deadline" });
  const banner = h("div", { role: "status" });
  const quorumEl = h("p", { class: "quorum", role: "status" });
  const el = h("article", { class: "request", "aria-labelledby": headingId });
  const displayEl = h("div", { class: "display" });
  put(el, [
    h("header", { class: "request-head" }, heading, metaLine(record, record.status === "pending" ? deadline : null)),
    quorumEl,
    banner,
    contextBlock(record.context),
    displayEl,
  ]);
  const displayed = (record.display || []).length > 0;
  if ((displayed || record.revises) && options.displayUrl) {
    fragmentText(options.displayUrl)
      .then((html) => fill(displayEl, fragment(html || "")))
      .catch(() => fill(displayEl, h("p", { class: "meta" }, "What this request shows could not be loaded; reload the page to try again.")));
  }

  let timer = null;
  let current = record;
  const state = { resolved: record.status !== "pending", sent: false, busy: false, voted: false };

  function showQuorum(now) {
    const quorum = quorumOf(now);
    quorumEl.hidden = !quorum;
    if (quorum) fill(quorumEl, quorumLine(quorum));
  }
  showQuorum(record);

  if (state.resolved) {
    put(banner, resolvedNotice(record, false, false));
    showQuestionsRead(el, record);
    return { el, heading, update() {}, destroy() {} };
  }

  if (record.step_up) {
    put(
      banner,
      h(
        "div",
        { class: "notice", id: "step-up-notice" },
        h("strong", {}, "High risk: answering needs a passkey confirmation."),
        " When you answer, your browser asks you to confirm with your passkey. This shows it is you answering this request, now, and not someone holding your session, a chat button or a forwarded link. Chat and e-mail cannot answer it.",
      ),
    );
  }

  const quorum = quorumOf(record);
  if (quorum && options.anonymous) {
    put(
      banner,
      h(
        "div",
        { class: "notice" },
        h("strong", {}, `This request needs approvals from ${quorum.required} signed-in responders.`),
        " An answer link cannot vote: open the request in the inbox, signed in, to approve or deny it.",
      ),
    );
    showQuestionsRead(el, record);
    return {
      el,
      heading,
      update(now) {
        if (now.id !== record.id) return;
        current = now;
        showQuorum(now);
        if (now.status !== "pending") fill(banner, resolvedNotice(now, false, false));
      },
      destroy() {},
    };
  }

  const form = h("form", { class: "answer", novalidate: true });
  const parts = [];
  for (const q of record.questions || []) {
    const labelId = freshId("q");
    const part = questionControls(q, labelId, displayed);
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
  const mine = (now) => quorumOf(now) && options.me && (now.votes || []).some((v) => v.by === options.me);
  if (mine(record)) {
    showVoted(record, null, false);
  } else {
    put(el, form);
  }

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
      if (p.part.clearErrors) p.part.clearErrors();
    }
  }

  /** The question a server message is about (`answers.q2...` or `question "q2"`). */
  function questionIn(message) {
    const m = /answers\.([^.:\s]+)/.exec(message) || /question "([^"]+)"/.exec(message);
    return m ? m[1] : null;
  }

  /**
   * Marks the form field a refusal names (`field`: `answers.<question>.values.<field>`) next to
   * its input; the control to focus, or `null` when the error is not about one field.
   */
  function markField(error) {
    const where = error && typeof error.field === "string" ? error.field : "";
    const m = /^answers\.(.+?)\.values\.(.+)$/.exec(where);
    if (!m) return null;
    const p = parts.find((x) => x.q.id === m[1]);
    if (!p || !p.part.fieldError) return null;
    let message = String(error.message || "");
    if (message.startsWith(`${where}: `)) message = message.slice(where.length + 2);
    message = message.charAt(0).toUpperCase() + message.slice(1);
    return p.part.fieldError(m[2], message);
  }

  async function submit(skipping) {
    if (state.busy || state.resolved || state.voted) return;
    let body;
    try {
      clearError();
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
      const p = parts.find((x) => e.control && x.fieldset.contains(e.control));
      showError(p ? `“${questionName(p.q)}”: ${e.message}` : e.message, p ? p.q.id : null);
      if (e.control) e.control.focus();
      return;
    }
    state.busy = true;
    setDisabled(true);
    send.textContent = "Sending…";
    let focus = null;
    try {
      const result = await options.submit(body);
      if (result && result.status === "pending" && Array.isArray(result.questions)) {
        // A vote, recorded; the request waits for more approvals.
        showVoted(result, "Your approval is recorded.", true);
        return;
      }
      state.sent = true;
      state.resolved = true;
      stop();
      form.remove();
      fill(banner, sentNotice(result));
      showQuorum({ ...current, votes: result && result.votes ? result.votes : current.votes });
      if (options.onSent) options.onSent(result);
      const next = banner.querySelector("button");
      (next || heading).focus();
    } catch (e) {
      if (e.code === "already_resolved" && e.body && e.body.record) {
        resolveElsewhere(e.body.record, true);
      } else if (e.code === "already_voted") {
        showVoted(current, "You have already voted on this request.", true);
      } else {
        const about = questionIn(e.message || "");
        const q = parts.find((p) => p.q.id === about);
        const message = e.message || String(e);
        showError(q ? `“${questionName(q.q)}”: ${message}` : message, about);
        focus = markField(e.body && e.body.error);
        alert.scrollIntoView({ block: "nearest" });
      }
    } finally {
      state.busy = false;
      send.textContent = "Send answer";
      if (!state.resolved && !state.voted) setDisabled(false);
      if (focus) focus.focus();
    }
  }

  /** This person has voted: the form goes, the quorum stays in view and keeps counting. */
  function showVoted(now, said, focus) {
    // What the answer said ("Your approval is recorded.") stays when the event stream brings
    // the same vote a moment later, whichever of the two arrives first.
    said = said || state.said;
    state.said = said;
    state.voted = true;
    form.remove();
    current = now;
    showQuorum(now);
    const vote = (now.votes || []).find((v) => v.by === options.me);
    const VOTED = { approve: "You approved this request", deny: "You denied this request", revise: "You requested changes" };
    const what = vote ? VOTED[vote.decision] || "You voted on this request" : "You voted on this request";
    const quorum = quorumOf(now);
    const missing = quorum ? Math.max(0, quorum.required - quorum.approvers.length) : 0;
    fill(
      banner,
      h(
        "div",
        { class: "notice ok voted" },
        h("strong", {}, said || `${what}.`),
        ` ${said ? `${what}. ` : ""}It waits for ${missing === 1 ? "1 more approval" : `${missing} more approvals`} from other responders; this page shows the outcome when it comes.`,
      ),
    );
    if (focus) heading.focus();
  }

  function sentNotice(outcome) {
    const skipped = outcome && outcome.status === "skipped";
    const notice = h("div", { class: "notice ok" }, h("strong", {}, skipped ? "Skipped." : "Answer sent."), skipped ? null : outcomeList(outcome, record.questions));
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
    showQuorum(now);
    fill(banner, resolvedNotice(now, !state.voted, afterSubmit));
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
      if (now.id !== record.id || state.sent || state.resolved) return;
      if (now.status === "pending") {
        current = now;
        showQuorum(now);
        if (state.voted || mine(now)) showVoted(now, null, false);
        return;
      }
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
  const outcome = record.outcome;
  if (outcome && outcome.default_applied) put(notice, h("p", {}, "A default answer was applied."));
  if (outcome && (record.status === "answered" || outcome.default_applied)) put(notice, outcomeList(outcome, record.questions));
  if (outcome && outcome.note && record.status !== "answered") {
    put(notice, h("p", { class: "meta" }, `The agent was told: ${outcome.note}`));
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
    if (q.fields) {
      items.push(h("ul", { class: "field-list" }, q.fields.map((f) => h("li", {}, f.label, f.description ? h("span", { class: "choice-desc" }, ` — ${f.description}`) : null))));
    }
    if (q.action) {
      const args = h("pre", {}, JSON.stringify(q.action.arguments, null, 2));
      const shown = (record.display || []).length ? h("details", {}, h("summary", {}, "Arguments as sent"), args) : args;
      items.push(h("div", { class: "action" }, h("code", { class: "action-name" }, q.action.name), shown));
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
