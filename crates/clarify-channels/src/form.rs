//! A form field offered as typed text, on the platforms whose forms have only text inputs for
//! most kinds (Discord's modals, Mattermost's dialogs, Teams' cards, Google Chat's cards): the
//! id its value comes back under, the hint that says what fits, and its default as text. The
//! typed value is read back by core's `value_from_text` (numbers, yes/no, an option's number,
//! id or label), so these say the same thing on every platform.

use serde_json::Value;

use crate::act::input_id;

/// The input id a field of the request's one form comes back under: `q0.f.<field id>`.
pub(crate) fn field_id(field: &clarify_core::Field) -> String {
    input_id(0, Some(&format!("f.{}", field.id)))
}

/// What fits the field, with its options numbered when it has some: `one of: 1. EU, 2. US`.
pub(crate) fn typed_hint(field: &clarify_core::Field) -> String {
    let hint = field.hint();
    match field.kind.options() {
        Some(options) => {
            let listed: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}. {}", i + 1, o.label))
                .collect();
            format!("{hint}: {}", listed.join(", "))
        }
        None => hint,
    }
}

/// The field's default as the text a person would type for it (`yes`/`no` for a boolean),
/// a list's items joined by `separator`.
pub(crate) fn typed_default(field: &clarify_core::Field, separator: &str) -> Option<String> {
    match &field.default {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Bool(b)) => Some(if *b { "yes" } else { "no" }.to_owned()),
        Some(Value::Array(items)) => Some(
            items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(separator),
        ),
        Some(other) => Some(other.to_string()),
        None => None,
    }
}
