//! A clarify request as an MCP elicitation form, and the form's answer as a clarify answer.
//!
//! An MCP client that declares form elicitation can show its user a flat form: an object of
//! primitive properties (strings, numbers, booleans, enumerations, and from 2025-11-25 on,
//! arrays of an enumeration). [`form`] turns a request into such a form when every question
//! fits one: `single` is an enumeration of its options (plus an `other` text when the person may
//! type their own), `multi` an array of them, `open` a string, `approval` a decision
//! (approve, deny, request changes) with a reason (and a scope when more than one is offered),
//! `form` its fields with their own types and limits. One question's properties carry plain
//! names (`answer`, `decision`, the field ids); with several questions each is prefixed by its
//! question id (`q1`, `q2.reason`). A request that names its responders or needs several
//! approvals does not fit: the client's user is nobody the request can name.
//!
//! [`answer`] reads the form's content back into the answer body every other path sends, so the
//! store checks it with the same parser; [`declined`] says what an explicit "no" in the client
//! means. Nothing here does I/O.

use clarify_core::display::{Block, Content, cut};
use clarify_core::{FieldKind, NewRequest, Question, QuestionKind, Scope, TextFormat};
use serde_json::{Map, Value, json};

/// The longest message shown above the form, in characters.
const MAX_MESSAGE_CHARS: usize = 2_000;
/// The longest property title, in characters.
const MAX_TITLE_CHARS: usize = 120;

/// Which shapes of `requestedSchema` the client reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// 2025-06-18: primitives only; enumerations as `enum` with `enumNames`; no arrays.
    Primitives,
    /// 2025-11-25 and later: titled enumerations as `oneOf`, multi-select arrays as `anyOf`.
    Titled,
}

impl Dialect {
    /// The dialect of a protocol version (`None`: unknown, the oldest with elicitation).
    pub(crate) fn of(version: Option<&str>) -> Self {
        match version {
            Some(v) if v >= "2025-11-25" => Self::Titled,
            _ => Self::Primitives,
        }
    }
}

/// A request as the client shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Form {
    pub message: String,
    /// The `requestedSchema`: `{"type": "object", "properties", "required"}`.
    pub schema: Value,
}

/// The form for `request`, or `None` when it does not fit a flat form.
pub(crate) fn form(request: &NewRequest, dialect: Dialect) -> Option<Form> {
    if request.is_quorum() || request.responders.is_some() {
        return None;
    }
    let single = request.questions.len() == 1;
    let mut properties = Map::new();
    let mut required = Vec::new();
    for question in &request.questions {
        let names = Names::new(question, single);
        for (name, schema, needed) in question_properties(question, &names, single, dialect)? {
            if properties.insert(name.clone(), schema).is_some() {
                return None;
            }
            if needed {
                required.push(Value::String(name));
            }
        }
    }
    Some(Form {
        message: message(request),
        schema: json!({"type": "object", "properties": properties, "required": required}),
    })
}

/// The properties of one question: name, schema, required.
fn question_properties(
    question: &Question,
    names: &Names,
    single: bool,
    dialect: Dialect,
) -> Option<Vec<(String, Value, bool)>> {
    // With one question its text heads the message; with several, each property says it.
    let title = |fallback: &str| {
        if single {
            question
                .header
                .clone()
                .unwrap_or_else(|| fallback.to_owned())
        } else {
            cut(
                question.header.as_deref().unwrap_or(&question.text),
                MAX_TITLE_CHARS,
            )
        }
    };
    let described = |mut schema: Value| {
        if !single {
            schema["description"] = Value::String(cut(&question.text, MAX_MESSAGE_CHARS / 4));
        }
        schema
    };
    Some(match &question.kind {
        QuestionKind::Open => vec![(
            names.main(),
            described(json!({"type": "string", "title": title("Answer"), "minLength": 1})),
            true,
        )],
        QuestionKind::Single(choices) => {
            let options: Vec<(&str, &str)> = choices
                .options
                .iter()
                .map(|o| (o.id.as_str(), o.label.as_str()))
                .collect();
            let mut answer = described(one_of(&options, dialect));
            answer["title"] = Value::String(title("Choose one"));
            if let Some(recommended) = &choices.recommended {
                answer["default"] = Value::String(recommended.clone());
            }
            let mut out = vec![(names.main(), answer, !choices.allow_other)];
            if choices.allow_other {
                out.push((names.part("other"), other_text(), false));
            }
            out
        }
        QuestionKind::Multi(choices) => {
            let options: Vec<(&str, &str)> = choices
                .options
                .iter()
                .map(|o| (o.id.as_str(), o.label.as_str()))
                .collect();
            let mut answer = described(any_of(&options, dialect)?);
            answer["title"] = Value::String(title("Choose any"));
            if !choices.allow_other {
                answer["minItems"] = json!(1);
            }
            let mut out = vec![(names.main(), answer, !choices.allow_other)];
            if choices.allow_other {
                out.push((names.part("other"), other_text(), false));
            }
            out
        }
        QuestionKind::Approval(approval) => {
            let decisions = [
                ("approve", "Approve"),
                ("deny", "Deny"),
                ("revise", "Request changes"),
            ];
            let mut decision = described(one_of(&decisions, dialect));
            decision["title"] = Value::String(title("Decision"));
            let mut out = vec![
                (names.part("decision"), decision, true),
                (
                    names.part("reason"),
                    json!({"type": "string", "title": "Reason",
                           "description": "Why; required when you request changes."}),
                    false,
                ),
            ];
            if approval.scopes.len() > 1 {
                let scopes: Vec<(&str, &str)> = approval
                    .scopes
                    .iter()
                    .map(|s| (s.as_str(), scope_title(*s)))
                    .collect();
                let mut scope = one_of(&scopes, dialect);
                scope["title"] = Value::String("Approve for".to_owned());
                scope["default"] = Value::String(Scope::Once.as_str().to_owned());
                out.push((names.part("scope"), scope, false));
            }
            out
        }
        QuestionKind::Form(form) => {
            let mut out = Vec::with_capacity(form.fields.len());
            for field in &form.fields {
                let mut schema = match &field.kind {
                    FieldKind::Text {
                        min_length,
                        max_length,
                        pattern,
                        format,
                    } => {
                        let mut s = json!({"type": "string"});
                        if let Some(n) = min_length {
                            s["minLength"] = json!(n);
                        }
                        if let Some(n) = max_length {
                            s["maxLength"] = json!(n);
                        }
                        if let Some(f) = format {
                            s["format"] = json!(schema_format(*f));
                        }
                        // `pattern` is not in the elicitation schema's subset; the answer is
                        // checked against it all the same.
                        if let Some(p) = pattern {
                            s["description"] = Value::String(format!("must match {p}"));
                        }
                        s
                    }
                    FieldKind::Number { minimum, maximum } => {
                        let mut s = json!({"type": "number"});
                        if let Some(n) = minimum {
                            s["minimum"] = json!(n);
                        }
                        if let Some(n) = maximum {
                            s["maximum"] = json!(n);
                        }
                        s
                    }
                    FieldKind::Integer { minimum, maximum } => {
                        let mut s = json!({"type": "integer"});
                        if let Some(n) = minimum {
                            s["minimum"] = json!(n);
                        }
                        if let Some(n) = maximum {
                            s["maximum"] = json!(n);
                        }
                        s
                    }
                    FieldKind::Boolean => json!({"type": "boolean"}),
                    FieldKind::Choice { options } => {
                        let options: Vec<(&str, &str)> = options
                            .iter()
                            .map(|o| (o.id.as_str(), o.label.as_str()))
                            .collect();
                        one_of(&options, dialect)
                    }
                    FieldKind::Choices {
                        options,
                        min_items,
                        max_items,
                    } => {
                        let options: Vec<(&str, &str)> = options
                            .iter()
                            .map(|o| (o.id.as_str(), o.label.as_str()))
                            .collect();
                        let mut s = any_of(&options, dialect)?;
                        if let Some(n) = min_items {
                            s["minItems"] = json!(n);
                        }
                        if let Some(n) = max_items {
                            s["maxItems"] = json!(n);
                        }
                        s
                    }
                };
                schema["title"] = Value::String(cut(&field.label, MAX_TITLE_CHARS));
                if let Some(d) = &field.description {
                    schema["description"] = Value::String(d.clone());
                }
                if let Some(d) = &field.default {
                    schema["default"] = d.clone();
                }
                out.push((names.part(&field.id), schema, field.required));
            }
            out
        }
    })
}

fn other_text() -> Value {
    json!({"type": "string", "title": "Or type your own"})
}

fn scope_title(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "This call only",
        Scope::Session => "This session",
        Scope::Always => "Always",
    }
}

fn schema_format(format: TextFormat) -> &'static str {
    match format {
        TextFormat::Email => "email",
        TextFormat::Url => "uri",
        TextFormat::Date => "date",
        TextFormat::Datetime => "date-time",
    }
}

/// A single-select enumeration of `(value, title)`.
fn one_of(options: &[(&str, &str)], dialect: Dialect) -> Value {
    match dialect {
        Dialect::Primitives => json!({
            "type": "string",
            "enum": options.iter().map(|(v, _)| *v).collect::<Vec<_>>(),
            "enumNames": options.iter().map(|(_, t)| *t).collect::<Vec<_>>(),
        }),
        Dialect::Titled => json!({
            "type": "string",
            "oneOf": options.iter().map(|(v, t)| json!({"const": v, "title": t})).collect::<Vec<_>>(),
        }),
    }
}

/// A multi-select array of `(value, title)`; 2025-06-18 has no arrays.
fn any_of(options: &[(&str, &str)], dialect: Dialect) -> Option<Value> {
    match dialect {
        Dialect::Primitives => None,
        Dialect::Titled => Some(json!({
            "type": "array",
            "items": {"anyOf": options.iter().map(|(v, t)| json!({"const": v, "title": t})).collect::<Vec<_>>()},
        })),
    }
}

/// Property names of one question.
struct Names {
    /// `None` for the only question of a request (plain names).
    prefix: Option<String>,
}

impl Names {
    fn new(question: &Question, single: bool) -> Self {
        Self {
            prefix: (!single).then(|| question.id.clone()),
        }
    }

    /// The main answer of an open, single or multi question.
    fn main(&self) -> String {
        self.prefix.clone().unwrap_or_else(|| "answer".to_owned())
    }

    fn part(&self, part: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}.{part}"),
            None => part.to_owned(),
        }
    }
}

/// The message above the form: what is asked (the summary, or the question), the request's
/// context and display as plain text, cut to a length clients show whole.
pub(crate) fn message(request: &NewRequest) -> String {
    let mut parts: Vec<String> = Vec::new();
    match request.questions.as_slice() {
        [one] => parts.push(one.text.clone()),
        _ => {
            if !request.summary.is_empty() {
                parts.push(request.summary.clone());
            }
        }
    }
    if let Some(context) = &request.context {
        parts.push(match context {
            clarify_core::Context::Text(text) => text.clone(),
            clarify_core::Context::Json(map) => {
                serde_json::to_string_pretty(map).unwrap_or_default()
            }
        });
    }
    for block in &request.display {
        parts.push(plain_text(block));
    }
    if let Some(approval) = request.questions.iter().find_map(|q| match &q.kind {
        QuestionKind::Approval(a) => Some(a),
        _ => None,
    }) && request.display.is_empty()
    {
        parts.push(format!(
            "{} {}",
            approval.action.name,
            serde_json::to_string(&approval.action.arguments).unwrap_or_default()
        ));
    }
    cut(parts.join("\n\n").trim(), MAX_MESSAGE_CHARS)
}

/// A display block as plain text: its title, then what it shows.
fn plain_text(block: &Block) -> String {
    let body = match &block.content {
        Content::Markdown { text } | Content::Code { text, .. } => text.clone(),
        Content::Diff { path, diff } => match path {
            Some(p) => format!("{p}\n{diff}"),
            None => diff.clone(),
        },
        Content::Fields { items } => items
            .iter()
            .map(|f| format!("{}: {}", f.label, f.value))
            .collect::<Vec<_>>()
            .join("\n"),
        Content::Image { alt, .. } => format!("[image: {alt}]"),
        Content::Link { url } => url.clone(),
    };
    match &block.title {
        Some(title) => format!("{title}\n{body}"),
        None => body,
    }
}

/// The answer body (`{"answers": {...}}`) the form's `content` stands for. The store checks it
/// like every answer; this only reads the properties back, naming what is missing.
pub(crate) fn answer(request: &NewRequest, content: &Map<String, Value>) -> Result<Value, String> {
    let single = request.questions.len() == 1;
    let mut answers = Map::new();
    for question in &request.questions {
        let names = Names::new(question, single);
        let text = |name: String| {
            content
                .get(&name)
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let answer = match &question.kind {
            QuestionKind::Open => match text(names.main()) {
                Some(t) => json!({"text": t}),
                None => return Err(missing(question, "an answer")),
            },
            QuestionKind::Single(_) => match (text(names.main()), text(names.part("other"))) {
                (Some(option), _) => json!({"option": option}),
                (None, Some(other)) => json!({"other": other}),
                (None, None) => return Err(missing(question, "a choice")),
            },
            QuestionKind::Multi(_) => {
                let picked: Vec<Value> = match content.get(&names.main()) {
                    Some(Value::Array(items)) => items.clone(),
                    Some(Value::String(one)) => vec![Value::String(one.clone())],
                    _ => Vec::new(),
                };
                let mut a = json!({"options": picked});
                if let Some(other) = text(names.part("other")) {
                    a["other"] = Value::String(other);
                }
                a
            }
            QuestionKind::Approval(_) => {
                let Some(decision) = text(names.part("decision")) else {
                    return Err(missing(question, "a decision"));
                };
                let mut a = json!({"decision": decision});
                if let Some(reason) = text(names.part("reason")) {
                    a["reason"] = Value::String(reason);
                }
                if let Some(scope) = text(names.part("scope")) {
                    a["scope"] = Value::String(scope);
                }
                a
            }
            QuestionKind::Form(form) => {
                let values: Map<String, Value> = form
                    .fields
                    .iter()
                    .filter_map(|f| {
                        content
                            .get(&names.part(&f.id))
                            .filter(|v| !v.is_null())
                            .map(|v| (f.id.clone(), v.clone()))
                    })
                    .collect();
                json!({"values": values})
            }
        };
        answers.insert(question.id.clone(), answer);
    }
    Ok(json!({ "answers": answers }))
}

fn missing(question: &Question, what: &str) -> String {
    format!(
        "{}: {what} is needed",
        cut(
            question.header.as_deref().unwrap_or(&question.text),
            MAX_TITLE_CHARS
        )
    )
}

/// What an explicit "decline" in the client does.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Declined {
    /// Every question is an approval: each is denied, with this answer body.
    Deny(Value),
    /// The person declined to answer: the request is skipped.
    Skip,
    /// Skipping is not allowed: the request stays open for the other surfaces.
    Leave,
}

/// An explicit decline is a "no": a denial when every question is an approval, otherwise a skip
/// when the request allows one. (A dismissed form, `cancel`, decides nothing.)
pub(crate) fn declined(request: &NewRequest) -> Declined {
    let all_approvals = request
        .questions
        .iter()
        .all(|q| matches!(q.kind, QuestionKind::Approval(_)));
    if all_approvals {
        let answers: Map<String, Value> = request
            .questions
            .iter()
            .map(|q| {
                (
                    q.id.clone(),
                    json!({"decision": "deny", "reason": "declined in the MCP client"}),
                )
            })
            .collect();
        Declined::Deny(json!({ "answers": answers }))
    } else if request.allow_skip {
        Declined::Skip
    } else {
        Declined::Leave
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clarify_core::Limits;

    fn request(raw: Value) -> NewRequest {
        clarify_core::parse_request(&raw, &Limits::default()).expect("valid")
    }

    #[test]
    fn one_single_question_is_an_enumeration_with_other_text() {
        let r = request(json!({"question": "Which database?", "choices": ["Postgres", "SQLite"]}));
        let f = form(&r, Dialect::Titled).expect("fits");
        assert_eq!(f.message, "Which database?");
        assert_eq!(
            f.schema["properties"]["answer"]["oneOf"],
            json!([{"const": "postgres", "title": "Postgres"}, {"const": "sqlite", "title": "SQLite"}])
        );
        assert_eq!(f.schema["properties"]["other"]["type"], "string");
        assert_eq!(f.schema["required"], json!([]));
        let legacy = form(&r, Dialect::Primitives).expect("fits");
        assert_eq!(
            legacy.schema["properties"]["answer"]["enum"],
            json!(["postgres", "sqlite"])
        );
        assert_eq!(
            legacy.schema["properties"]["answer"]["enumNames"],
            json!(["Postgres", "SQLite"])
        );
        let content = json!({"answer": "sqlite"});
        assert_eq!(
            answer(&r, content.as_object().expect("object")),
            Ok(json!({"answers": {"q1": {"option": "sqlite"}}}))
        );
        let typed = json!({"other": "DuckDB"});
        assert_eq!(
            answer(&r, typed.as_object().expect("object")),
            Ok(json!({"answers": {"q1": {"other": "DuckDB"}}}))
        );
        assert!(answer(&r, &Map::new()).is_err());
    }

    #[test]
    fn multi_needs_arrays_which_2025_06_18_lacks() {
        let r =
            request(json!({"question": "Regions?", "choices": ["eu", "us"], "multi_select": true}));
        assert_eq!(form(&r, Dialect::Primitives), None);
        let f = form(&r, Dialect::Titled).expect("fits");
        assert_eq!(f.schema["properties"]["answer"]["type"], "array");
        let content = json!({"answer": ["eu", "us"]});
        assert_eq!(
            answer(&r, content.as_object().expect("object")),
            Ok(json!({"answers": {"q1": {"options": ["eu", "us"]}}}))
        );
    }

    #[test]
    fn approvals_offer_three_decisions_a_reason_and_the_scopes() {
        let r = request(
            json!({"questions": [{"question": "Run it?", "kind": "approval",
            "action": {"name": "Bash", "arguments": {"command": "ls"}},
            "scopes": ["once", "always"]}]}),
        );
        let f = form(&r, Dialect::Titled).expect("fits");
        let p = &f.schema["properties"];
        assert_eq!(
            p["decision"]["oneOf"],
            json!([{"const": "approve", "title": "Approve"}, {"const": "deny", "title": "Deny"},
                   {"const": "revise", "title": "Request changes"}])
        );
        assert_eq!(p["reason"]["type"], "string");
        assert_eq!(p["scope"]["default"], "once");
        assert_eq!(f.schema["required"], json!(["decision"]));
        let content = json!({"decision": "revise", "reason": "use -la"});
        assert_eq!(
            answer(&r, content.as_object().expect("object")),
            Ok(json!({"answers": {"q1": {"decision": "revise", "reason": "use -la"}}}))
        );
        assert!(matches!(declined(&r), Declined::Deny(_)));
    }

    #[test]
    fn several_questions_prefix_their_properties() {
        let r = request(json!({"questions": [
            {"id": "db", "question": "Which database?", "options": ["Postgres"], "allow_other": false},
            {"id": "why", "question": "Why?", "kind": "open"},
            {"id": "size", "question": "Sizing", "kind": "form", "fields": [
                {"id": "replicas", "label": "Replicas", "type": "integer", "minimum": 1}]}]}));
        let f = form(&r, Dialect::Titled).expect("fits");
        let names: Vec<&String> = f.schema["properties"]
            .as_object()
            .expect("properties")
            .keys()
            .collect();
        assert_eq!(names, ["db", "why", "size.replicas"]);
        assert_eq!(f.schema["required"], json!(["db", "why", "size.replicas"]));
        assert_eq!(f.schema["properties"]["size.replicas"]["minimum"], 1);
        let content = json!({"db": "postgres", "why": "joins", "size.replicas": 3});
        assert_eq!(
            answer(&r, content.as_object().expect("object")),
            Ok(
                json!({"answers": {"db": {"option": "postgres"}, "why": {"text": "joins"},
                                  "size": {"values": {"replicas": 3}}}})
            )
        );
        assert_eq!(declined(&r), Declined::Skip);
    }

    #[test]
    fn named_responders_and_quorums_do_not_fit() {
        let named = request(json!({"question": "Ok?", "responders": ["alice"]}));
        assert_eq!(form(&named, Dialect::Titled), None);
    }

    #[test]
    fn the_message_carries_the_display_as_text() {
        let r = request(json!({"question": "Ship it?", "context": "release 2",
            "display": [{"type": "fields", "title": "Release", "items": [{"label": "version", "value": "2.0"}]}]}));
        let f = form(&r, Dialect::Titled).expect("fits");
        assert_eq!(f.message, "Ship it?\n\nrelease 2\n\nRelease\nversion: 2.0");
    }
}
