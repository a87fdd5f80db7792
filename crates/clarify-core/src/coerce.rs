//! Coercion of LLM-shaped input into the canonical request shape: the one place that does it.
//!
//! Models and agent frameworks phrase the same request many ways. This module accepts them all and
//! produces one JSON shape, which [`crate::validate`] then checks. It reshapes and never judges:
//! limits, types and kinds are validation's business, with one exception: a list of options whose
//! every item reduces to nothing is refused here, because only here is it known that options were
//! given, and such a question must never silently become an open one.
//!
//! Accepted shapes:
//! - the canonical form: `questions: [{id, header, text, kind, options, ...}]`;
//! - the one-question shorthand: `question` or `prompt` at top level, with `choices` or `options`
//!   (which make it `single`; absent, it is `open`; `multi_select: true` makes it `multi`), and the
//!   question's other fields (`header`, `kind`, `recommended`, `allow_other`, `action`, `scopes`,
//!   `allow_edit`) beside it;
//! - in `questions[]`: `question` (or `prompt`) for `text`, `choices` for `options`, `type` for
//!   `kind`, a bare string for `{text}`; kind names such as `single_select` or `multiple_choice`;
//! - `questions` or `options` as a JSON string holding a list;
//! - options as strings, numbers, lists (joined with spaces), objects or JSON strings holding
//!   objects. An object keeps a non-empty `label` with its `id` and `description`; otherwise its
//!   label is the first non-empty of `description`, `text`, `title`. `name` and `value` hold
//!   identifiers: they become the option's id when it has none, never its label;
//! - a label ending in "(recommended)" loses the suffix and, when no `recommended` was named,
//!   becomes the recommended option;
//! - a question's `schema`, a flat JSON Schema object (MCP elicitation's `requestedSchema`),
//!   becomes its form `fields` (see [`crate::schema`]), and `fields` or `schema` without a kind
//!   make it a `form`;
//! - `null` anywhere means absent (strict-mode tool calls send every optional field as `null`).
//!
//! Any other key, at the top level or in a question, is refused with an `unknown_field` error
//! naming it (and the nearest known key, when it looks misspelt): keys the one-question
//! shorthand takes from the top level are known only when the shorthand is used.

use serde_json::{Map, Value};

use crate::error::ValidationError;
use crate::text::{is_valid_id, slug, strip_recommended_suffix};

/// Request fields passed through unchanged to validation.
const REQUEST_FIELDS: [&str; 22] = [
    "context",
    "on_behalf_of",
    "session",
    "agent",
    "tool_call_id",
    "timeout_seconds",
    "allow_skip",
    "callback_url",
    "resume",
    "idempotency_key",
    "dedupe",
    "tags",
    "approvals_required",
    "remind_every_seconds",
    "warn_before_seconds",
    "escalate_after_seconds",
    "escalate_to",
    "on_timeout",
    "display",
    "summary",
    "revises",
    "risk",
];

/// Question fields that the one-question shorthand takes from the top level.
const SHORTHAND_QUESTION_FIELDS: [&str; 11] = [
    "id",
    "header",
    "kind",
    "type",
    "allow_other",
    "recommended",
    "action",
    "scopes",
    "allow_edit",
    "fields",
    "schema",
];

/// Keys of the one-question shorthand beyond the question's own fields.
const SHORTHAND_KEYS: [&str; 5] = ["question", "prompt", "choices", "options", "multi_select"];

/// Refuses a key of `obj` outside `known`, naming it by `path` and suggesting the nearest known
/// name: a misspelt `approval_required` must never quietly mean one approval.
fn refuse_unknown<'a>(
    obj: &Map<String, Value>,
    path: &str,
    known: impl Iterator<Item = &'a str> + Clone,
) -> Result<(), ValidationError> {
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    match keys
        .into_iter()
        .find(|k| !known.clone().any(|n| n == k.as_str()))
    {
        None => Ok(()),
        Some(key) => Err(ValidationError::UnknownField {
            field: if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            },
            hint: suggestion(key, &known.collect::<Vec<_>>()),
        }),
    }
}

/// The known name nearest to `key` (ignoring case), when it is close enough to be a misspelling.
pub(crate) fn suggestion(key: &str, known: &[&str]) -> Option<String> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (distance(&key, k), *k))
        .filter(|(d, k)| *d <= (k.len() / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.to_owned())
}

/// Levenshtein distance, on characters.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Reshapes any accepted request shape into the canonical one.
pub fn normalize(raw: &Value) -> Result<Value, ValidationError> {
    let Value::Object(top) = raw else {
        return Err(ValidationError::NotAnObject {
            got: crate::error::json_type(raw),
        });
    };
    let top = without_nulls(top);
    let mut out = Map::new();

    let shorthand = ["question", "prompt"]
        .into_iter()
        .find(|k| top.contains_key(*k));
    let request_keys = REQUEST_FIELDS
        .into_iter()
        .chain(["questions", "responders"]);
    if shorthand.is_some() {
        refuse_unknown(
            &top,
            "",
            request_keys
                .chain(SHORTHAND_KEYS)
                .chain(SHORTHAND_QUESTION_FIELDS),
        )?;
    } else {
        refuse_unknown(&top, "", request_keys)?;
    }
    let questions = match (top.get("questions"), shorthand) {
        (Some(_), Some(shorthand)) => return Err(ValidationError::AmbiguousShape { shorthand }),
        (Some(questions), None) => normalize_questions(questions)?,
        (None, Some(_)) => {
            // The request's own keys, read once (see `pass_through`).
            let q: Map<String, Value> = top
                .iter()
                .filter(|(k, _)| {
                    SHORTHAND_KEYS.contains(&k.as_str())
                        || SHORTHAND_QUESTION_FIELDS.contains(&k.as_str())
                })
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Array(vec![normalize_question(&Value::Object(q), 0)?])
        }
        (None, None) => Value::Array(Vec::new()),
    };
    out.insert("questions".to_owned(), questions);

    pass_through(&top, &REQUEST_FIELDS, &mut out);
    if let Some(v) = top.get("responders") {
        out.insert("responders".to_owned(), one_as_list(v));
    }
    if let Some(Value::String(tag)) = top.get("tags") {
        out.insert(
            "tags".to_owned(),
            Value::Array(vec![Value::String(tag.clone())]),
        );
    }
    Ok(Value::Object(out))
}

fn normalize_questions(v: &Value) -> Result<Value, ValidationError> {
    match parse_json_string(v) {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| normalize_question(item, i))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        obj @ Value::Object(_) => Ok(Value::Array(vec![normalize_question(&obj, 0)?])),
        // Not a list: validation names the type problem.
        other => Ok(other),
    }
}

fn normalize_question(item: &Value, index: usize) -> Result<Value, ValidationError> {
    let q = match item {
        Value::String(text) => {
            let mut q = Map::new();
            q.insert("text".to_owned(), Value::String(text.clone()));
            q.insert("kind".to_owned(), Value::String("open".to_owned()));
            return Ok(Value::Object(q));
        }
        Value::Object(q) => without_nulls(q),
        other => return Ok(other.clone()),
    };
    let path = format!("questions[{index}]");
    // A question takes what the shorthand takes, with `text` for `question`.
    let question_keys = SHORTHAND_QUESTION_FIELDS
        .into_iter()
        .chain(SHORTHAND_KEYS)
        .chain(["text"]);
    refuse_unknown(&q, &path, question_keys)?;
    let mut out = Map::new();
    pass_through(
        &q,
        &[
            "id",
            "header",
            "allow_other",
            "recommended",
            "action",
            "scopes",
            "allow_edit",
            "fields",
        ],
        &mut out,
    );
    if let Some(text) = ["text", "question", "prompt"]
        .iter()
        .find_map(|k| q.get(*k))
    {
        out.insert("text".to_owned(), text.clone());
    }

    let options_key = ["options", "choices"]
        .into_iter()
        .find(|k| q.contains_key(*k));
    if let Some(key) = options_key {
        let field = format!("questions[{index}].{key}");
        let mut options = normalize_options(&q[key], &field)?;
        if let Some(marked) = strip_recommended_marks(&mut options) {
            out.entry("recommended").or_insert(Value::String(marked));
        }
        out.insert("options".to_owned(), options);
    }

    // Form fields' options take the same shapes as a question's.
    if let Some(Value::Array(fields)) = out.get_mut("fields") {
        for (i, field) in fields.iter_mut().enumerate() {
            if let Value::Object(f) = field {
                f.retain(|_, v| !v.is_null());
                if let Some(options) = f.get("options") {
                    let path = format!("{path}.fields[{i}].options");
                    let options = normalize_options(options, &path)?;
                    f.insert("options".to_owned(), options);
                }
            }
        }
    }
    if let Some(schema) = q.get("schema") {
        if q.contains_key("fields") {
            return Err(ValidationError::UnsupportedSchema {
                field: format!("{path}.schema"),
                reason: "give either fields or schema, not both".to_owned(),
            });
        }
        let fields = crate::schema::fields(&parse_json_string(schema), &format!("{path}.schema"))?;
        out.insert("fields".to_owned(), fields);
    }
    let is_form = q.contains_key("fields") || q.contains_key("schema");

    let kind = match q.get("kind").or_else(|| q.get("type")) {
        Some(Value::String(kind)) => Value::String(kind_alias(kind).unwrap_or(kind).to_owned()),
        Some(other) => other.clone(),
        None if q.get("multi_select") == Some(&Value::Bool(true)) => "multi".into(),
        None if options_key.is_some() => "single".into(),
        None if q.contains_key("action") => "approval".into(),
        None if is_form => "form".into(),
        None => "open".into(),
    };
    // Strict-mode models send `options: []` on every question, open ones included.
    let takes_no_options = matches!(kind.as_str(), Some("open" | "approval"));
    if takes_no_options && out.get("options") == Some(&Value::Array(Vec::new())) {
        out.remove("options");
    }
    out.insert("kind".to_owned(), kind);
    Ok(Value::Object(out))
}

/// The canonical kind for the names models commonly use.
fn kind_alias(kind: &str) -> Option<&'static str> {
    let k = kind.trim().to_ascii_lowercase().replace([' ', '-'], "_");
    Some(match k.as_str() {
        "open" | "text" | "free_text" | "freeform" | "free_form" | "input" => "open",
        "single" | "single_select" | "single_choice" | "select" | "choice" | "radio" => "single",
        "multi" | "multi_select" | "multiple" | "multiple_choice" | "multi_choice" | "checkbox"
        | "checkboxes" => "multi",
        "approval" | "approve" | "confirm" | "confirmation" => "approval",
        "form" | "fields" => "form",
        _ => return None,
    })
}

fn normalize_options(v: &Value, field: &str) -> Result<Value, ValidationError> {
    let items = match parse_json_string(v) {
        Value::Array(items) => items,
        other => return Ok(other),
    };
    let options: Vec<Value> = items.iter().filter_map(reduce_option).collect();
    if options.is_empty() && !items.is_empty() {
        return Err(ValidationError::AllOptionsDropped {
            field: field.to_owned(),
            given: items.len(),
        });
    }
    Ok(Value::Array(options))
}

/// One option item reduced to `{id?, label, description?}`, or `None` when nothing is left.
fn reduce_option(item: &Value) -> Option<Value> {
    let obj = match item {
        Value::Object(obj) => obj.clone(),
        Value::String(s) => match serde_json::from_str::<Value>(s.trim()) {
            Ok(Value::Object(obj)) if s.trim_start().starts_with('{') => obj,
            _ => return label_only(s),
        },
        other => return label_only(&reduce_text(other)?),
    };
    let mut out = Map::new();
    let description = obj.get("description").and_then(reduce_text);
    if let Some(label) = obj.get("label").and_then(reduce_text) {
        out.insert("label".to_owned(), Value::String(label));
        if let Some(d) = description {
            out.insert("description".to_owned(), Value::String(d));
        }
    } else {
        let label = description
            .or_else(|| obj.get("text").and_then(reduce_text))
            .or_else(|| obj.get("title").and_then(reduce_text))?;
        out.insert("label".to_owned(), Value::String(label));
    }
    if let Some(id) = obj.get("id").and_then(id_text) {
        out.insert("id".to_owned(), Value::String(id));
    } else if let Some(id) = ["value", "name"]
        .iter()
        .filter_map(|k| obj.get(*k).and_then(id_text))
        .map(|id| if is_valid_id(&id) { id } else { slug(&id) })
        .find(|id| !id.is_empty())
    {
        out.insert("id".to_owned(), Value::String(id));
    }
    Some(Value::Object(out))
}

/// Removes a "(recommended)" suffix from option labels, returning the first such label so it can
/// become the question's `recommended` when none was named.
fn strip_recommended_marks(options: &mut Value) -> Option<String> {
    let mut first = None;
    for option in options.as_array_mut()?.iter_mut() {
        let Some(Value::String(label)) = option.get_mut("label") else {
            continue;
        };
        let stripped = strip_recommended_suffix(label);
        if stripped.len() != label.len() && !stripped.is_empty() {
            *label = stripped.to_owned();
            first.get_or_insert_with(|| label.clone());
        }
    }
    first
}

fn label_only(s: &str) -> Option<Value> {
    let label = s.trim();
    (!label.is_empty()).then(|| {
        let mut out = Map::new();
        out.insert("label".to_owned(), Value::String(label.to_owned()));
        Value::Object(out)
    })
}

/// A scalar identifier as text (strings and numbers only).
fn id_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Any value as display text: strings trimmed, numbers in decimal, lists joined with spaces,
/// objects by the option-label rule. `None` when nothing is left.
fn reduce_text(v: &Value) -> Option<String> {
    let text = match v {
        Value::Null => return None,
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => items
            .iter()
            .filter_map(reduce_text)
            .collect::<Vec<_>>()
            .join(" "),
        Value::Object(_) => {
            let option = reduce_option(v)?;
            option.get("label")?.as_str()?.to_owned()
        }
    };
    (!text.is_empty()).then_some(text)
}

/// A string that holds a JSON list or object is parsed; anything else is returned as is.
fn parse_json_string(v: &Value) -> Value {
    if let Value::String(s) = v {
        let t = s.trim_start();
        if t.starts_with('[') || t.starts_with('{') {
            if let Ok(parsed @ (Value::Array(_) | Value::Object(_))) = serde_json::from_str(t) {
                return parsed;
            }
        }
    }
    v.clone()
}

fn one_as_list(v: &Value) -> Value {
    match v {
        Value::String(_) => Value::Array(vec![v.clone()]),
        other => other.clone(),
    }
}

/// Copies the entries of `from` named in `names` into `into`, in the order of `names`. Walks
/// `from`'s few keys once: a lookup per name hashed each of the two dozen names a request may
/// carry, for the two or three it does (a tenth of coercing a plain question).
fn pass_through(from: &Map<String, Value>, names: &[&str], into: &mut Map<String, Value>) {
    let mut passed: Vec<(usize, &String, &Value)> = from
        .iter()
        .filter_map(|(k, v)| {
            names
                .iter()
                .position(|n| *n == k.as_str())
                .map(|i| (i, k, v))
        })
        .collect();
    passed.sort_unstable_by_key(|(i, _, _)| *i);
    for (_, key, v) in passed {
        into.insert(key.clone(), v.clone());
    }
}

fn without_nulls(obj: &Map<String, Value>) -> Map<String, Value> {
    obj.iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
