// The inputs of a form question, one per field, and their values for the answer body.
//
// Each field type gets the browser's own control (a number input, a date picker, a checkbox, a
// select, checkboxes), its label bound to it, its description and its error tied to it with
// `aria-describedby`, and its default filled in. Before sending, the limits the page can see
// (required, minimum and maximum, lengths, item counts, the browser's own format checks) are
// checked here so a person learns of a slip at once; the server checks everything again, and a
// value it refuses is shown at the same place through `fieldError`.

import { h, fill, freshId } from "./dom.js";

/** A field value the page can check, refused: the message shown next to its input. */
function problem(field, input) {
  const v = input.validity;
  if (v && v.badInput) {
    if (field.type === "number" || field.type === "integer") return "Enter a number.";
    return "Enter a complete value.";
  }
  if (v && v.typeMismatch) {
    if (field.format === "email") return "Enter an e-mail address, like name@example.com.";
    if (field.format === "url") return "Enter a full address, like https://example.com.";
  }
  return null;
}

/** `"2026-12-01T10:30"` from a datetime-local input, as RFC 3339 with this browser's offset. */
function datetimeValue(local) {
  const t = new Date(local);
  if (Number.isNaN(t.getTime())) return null;
  const pad = (n) => String(n).padStart(2, "0");
  const offset = -t.getTimezoneOffset();
  const sign = offset >= 0 ? "+" : "-";
  const abs = Math.abs(offset);
  const seconds = local.length > 16 ? "" : ":00";
  return `${local}${seconds}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** An RFC 3339 default as a datetime-local value in this browser's time zone. */
function datetimeLocal(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${t.getFullYear()}-${pad(t.getMonth() + 1)}-${pad(t.getDate())}T${pad(t.getHours())}:${pad(t.getMinutes())}`;
}

const TEXT_TYPES = { email: "email", url: "url", date: "date", datetime: "datetime-local" };

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

/** The label's text, with the mark of a required field. */
function labelText(field) {
  return [field.label, field.required ? h("span", { class: "required", title: "required" }, " *") : h("span", { class: "optional" }, " (optional)")];
}

/** One field: its control(s), and how to read and check its value. */
function fieldControl(field) {
  const id = freshId("field");
  const descId = field.description ? freshId("desc") : null;
  const errorId = freshId("err");
  const error = h("p", { class: "field-error", id: errorId, hidden: true });
  const desc = descId ? h("p", { class: "field-desc", id: descId }, field.description) : null;
  const describedBy = [descId, errorId].filter(Boolean).join(" ");
  const has = (key) => field[key] !== undefined && field[key] !== null;

  let input = null;
  let inputs = [];
  let read;
  let el;
  switch (field.type) {
    case "number":
    case "integer": {
      input = h("input", {
        type: "number",
        id,
        inputmode: field.type === "integer" ? "numeric" : "decimal",
        step: field.type === "integer" ? "1" : "any",
        min: has("minimum") ? String(field.minimum) : null,
        max: has("maximum") ? String(field.maximum) : null,
        value: has("default") ? String(field.default) : null,
      });
      read = () => {
        if (input.value.trim() === "") return { empty: true };
        const n = Number(input.value);
        if (!Number.isFinite(n)) return { error: "Enter a number." };
        if (field.type === "integer" && !Number.isInteger(n)) return { error: "Enter a whole number." };
        if (has("minimum") && n < field.minimum) return { error: `Must be at least ${field.minimum}.` };
        if (has("maximum") && n > field.maximum) return { error: `Must be at most ${field.maximum}.` };
        return { value: n };
      };
      break;
    }
    case "boolean": {
      input = h("input", { type: "checkbox", id, checked: field.default === true });
      read = () => ({ value: input.checked });
      break;
    }
    case "choice": {
      const options = field.options || [];
      const hint = h("p", { class: "field-desc", "aria-live": "polite" });
      const showHint = () => {
        const o = options.find((x) => x.id === input.value);
        fill(hint, o && o.description ? o.description : "");
        hint.hidden = !(o && o.description);
      };
      input = h(
        "select",
        { id, onchange: showHint },
        h("option", { value: "" }, field.required ? "Choose…" : "None"),
        options.map((o) => h("option", { value: o.id }, o.label)),
      );
      input.value = has("default") ? field.default : "";
      showHint();
      read = () => (input.value === "" ? { empty: true } : { value: input.value });
      el = [input, hint];
      break;
    }
    case "choices": {
      const chosen = new Set(Array.isArray(field.default) ? field.default : []);
      const rows = (field.options || []).map((o) => {
        const boxId = freshId("opt");
        const box = h("input", { type: "checkbox", id: boxId, checked: chosen.has(o.id), "aria-describedby": errorId });
        box.dataset.option = o.id;
        inputs.push(box);
        return h(
          "div",
          { class: "check" },
          box,
          h("label", { for: boxId }, h("span", { class: "choice-label" }, o.label), o.description ? h("span", { class: "choice-desc" }, o.description) : null),
        );
      });
      read = () => {
        const picked = inputs.filter((b) => b.checked).map((b) => b.dataset.option);
        if (!picked.length) return { empty: true };
        if (has("min_items") && picked.length < field.min_items) return { error: `Choose at least ${plural(field.min_items, "option", "options")}.` };
        if (has("max_items") && picked.length > field.max_items) return { error: `Choose at most ${plural(field.max_items, "option", "options")}.` };
        return { value: picked };
      };
      const legendId = freshId("legend");
      el = h(
        "fieldset",
        { class: "field form-field", role: "group", "aria-labelledby": legendId, "aria-describedby": descId },
        h("legend", { class: "field-label", id: legendId }, labelText(field)),
        desc,
        h("div", { class: "choices" }, rows),
        error,
      );
      break;
    }
    default: {
      // text, with its format when it has one.
      const type = TEXT_TYPES[field.format] || "text";
      let value = has("default") ? String(field.default) : null;
      if (type === "datetime-local" && value !== null) value = datetimeLocal(value);
      input = h("input", {
        type,
        id,
        autocomplete: "off",
        spellcheck: type === "text" ? null : "false",
        maxlength: has("max_length") ? String(field.max_length) : null,
        minlength: has("min_length") ? String(field.min_length) : null,
        value,
      });
      read = () => {
        const text = input.value;
        if (text.trim() === "") return { empty: true };
        if (has("min_length") && [...text].length < field.min_length) return { error: `Enter at least ${plural(field.min_length, "character", "characters")}.` };
        if (has("max_length") && [...text].length > field.max_length) return { error: `Enter at most ${plural(field.max_length, "character", "characters")}.` };
        if (type === "datetime-local") {
          const v = datetimeValue(text);
          return v === null ? { error: "Enter a complete date and time." } : { value: v };
        }
        return { value: text };
      };
    }
  }

  if (input) {
    inputs = [input];
    input.setAttribute("aria-describedby", describedBy);
    if (field.required && field.type !== "boolean") {
      input.setAttribute("aria-required", "true");
      input.required = true;
    }
    const label = h("label", { for: id, class: "field-label" }, labelText(field));
    const control = el || input;
    el =
      field.type === "boolean"
        ? h("div", { class: "field form-field" }, h("div", { class: "check" }, input, label), desc, error)
        : h("div", { class: "field form-field" }, label, desc, control, error);
  }

  function showError(message) {
    fill(error, message);
    error.hidden = false;
    el.classList.add("invalid");
    for (const i of inputs) i.setAttribute("aria-invalid", "true");
  }
  function clearError() {
    fill(error);
    error.hidden = true;
    el.classList.remove("invalid");
    for (const i of inputs) i.removeAttribute("aria-invalid");
  }

  return {
    field,
    el,
    controls: inputs,
    showError,
    clearError,
    /** `{value}`, `{empty: true}`, or `{error}` (already shown next to the field). */
    check() {
      clearError();
      const found = input ? problem(field, input) : null;
      const result = found ? { error: found } : read();
      if (result.empty && field.required) {
        if (field.type === "choice") result.error = "Choose one.";
        else if (field.type === "choices") result.error = `Choose at least ${plural(has("min_items") ? field.min_items : 1, "option", "options")}.`;
        else result.error = "Fill this in.";
      }
      if (result.error) showError(result.error);
      return result;
    },
  };
}

/**
 * The controls of a form question, in the shape `requestView` uses: `collect()` returns
 * `{values}` or throws `invalid(message, control)` after marking every field at fault;
 * `fieldError(fieldId, message)` marks one field from a server error and returns its control.
 */
export function formControls(q, invalid) {
  const fields = (q.fields || []).map(fieldControl);
  return {
    el: [h("p", { class: "meta form-legend" }, "Fields marked * are required."), fields.map((f) => f.el)],
    controls: fields.flatMap((f) => f.controls),
    collect() {
      const values = {};
      let first = null;
      let bad = 0;
      for (const f of fields) {
        const result = f.check();
        if (result.error) {
          bad += 1;
          if (!first) first = f.controls[0];
        } else if (!result.empty) {
          values[f.field.id] = result.value;
        }
      }
      if (bad) throw invalid(bad === 1 ? "One field needs a correction; it is marked." : `${bad} fields need a correction; they are marked.`, first);
      return { values };
    },
    fieldError(fieldId, message) {
      const f = fields.find((x) => x.field.id === fieldId);
      if (!f) return null;
      f.showError(message);
      return f.controls[0] || null;
    },
    clearErrors() {
      for (const f of fields) f.clearError();
    },
  };
}

/** A value of the form's answer, in words, for the outcome. */
export function fieldValueText(field, value) {
  if (value === null || value === undefined) return "—";
  if (typeof value === "boolean") return value ? "Yes" : "No";
  const label = (id) => {
    const o = field && (field.options || []).find((x) => x.id === id);
    return o ? o.label : String(id);
  };
  if (Array.isArray(value)) return value.map(label).join(", ");
  if (field && field.type === "choice") return label(value);
  if (typeof value === "object") return JSON.stringify(value);
  return String(value);
}

/** The values of a form answer as "Label: value" lines, in the order of the fields. */
export function formAnswerLines(fields, values) {
  const known = fields || [];
  const lines = [];
  const seen = new Set();
  for (const f of known) {
    if (!Object.prototype.hasOwnProperty.call(values, f.id)) continue;
    seen.add(f.id);
    lines.push(`${f.label}: ${fieldValueText(f, values[f.id])}`);
  }
  for (const [id, v] of Object.entries(values)) if (!seen.has(id)) lines.push(`${id}: ${fieldValueText(null, v)}`);
  return lines;
}
