// Answering several approvals at once: a checkbox on each pending approval, and a bar to approve
// or deny the ticked ones in one `POST /v1/answers`.
//
// Only a request with a single approval question can be ticked; anything else needs its own form.
// The bar says how many were answered and names each one that was not, and why.

import { h, fill } from "./dom.js";
import { call } from "./api.js";

/**
 * Batch answers over the inbox's `state` (its `pending` requests, the `selected` ids and the
 * `batchNote`); `ended(e)` is told of a failure and says whether it means the session ended, and
 * `renderList()` redraws the pending list.
 */
export function batchAnswers(state, { ended, renderList }) {
  const announce = document.getElementById("announce");

  /** Whether a pending request can be answered in a batch: one approval question. */
  function batchable(record) {
    const questions = record.questions || [];
    return questions.length === 1 && questions[0].kind === "approval";
  }

  /**
   * The row's checkbox, for approvals only; other requests need their own form. A native
   * checkbox, named for screen readers by what the request asks, in a label that makes the
   * strip beside the row the place to tap.
   */
  function selectBox(record, selected) {
    if (!batchable(record)) return h("span", { class: "select-slot", "aria-hidden": "true" });
    const box = h("input", {
      type: "checkbox",
      class: "select-box",
      "aria-label": `Select: ${record.summary || (record.questions[0] || {}).text || record.id}`,
      onchange: (e) => {
        if (e.target.checked) state.selected.add(record.id);
        else state.selected.delete(record.id);
        state.batchNote = null;
        renderBar();
      },
    });
    box.checked = selected;
    box.dataset.id = record.id;
    return h("label", { class: "select" }, box);
  }

  function renderBar() {
    const list = document.getElementById("pending-list");
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
      renderBar();
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

  return { selectBox, renderBar };
}
