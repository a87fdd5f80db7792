//! Answers, checked against the live request.
//!
//! [`parse_submission`] takes the body of an answer (`{"answers": {...}}`, `{"skip": true}`, or for
//! a one-question request the answer object itself) and either returns a [`Submission`] that fits
//! the request exactly, or an [`AnswerError`] saying why not. It never changes anything: the caller
//! keeps the request pending on error, so a corrected answer can still arrive.

use std::collections::BTreeMap;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use crate::error::json_type;
use crate::limits::Limits;
use crate::model::{Choices, NewRequest, Question, QuestionKind, Scope};
use crate::text::{chars, quoted};

/// A valid answer body: the request is either answered or skipped.
#[derive(Debug, Clone, PartialEq)]
pub enum Submission {
    Answered(Answers),
    Skipped,
}

/// One answer per question, in the request's question order.
#[derive(Debug, Clone, PartialEq)]
pub struct Answers(Vec<(String, Answer)>);

impl Answers {
    /// Answers already checked against their request, in its question order.
    pub(crate) fn from_parts(parts: Vec<(String, Answer)>) -> Self {
        Self(parts)
    }

    /// The answer to the question with this id.
    pub fn get(&self, question_id: &str) -> Option<&Answer> {
        self.0
            .iter()
            .find(|(id, _)| id == question_id)
            .map(|(_, a)| a)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Answer)> {
        self.0.iter().map(|(id, a)| (id.as_str(), a))
    }
}

/// Serialized as the canonical answer body: `{"<question id>": <answer>, ...}`.
impl Serialize for Answers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (id, answer) in &self.0 {
            map.serialize_entry(id, answer)?;
        }
        map.end()
    }
}

/// The answer to one question.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// `single`: the chosen option's id.
    Option(String),
    /// `single` with `allow_other`: free text instead of an option.
    Other(String),
    /// `multi`: the chosen option ids (in the request's option order) and optional free text; at
    /// least one of the two is present.
    Options {
        ids: Vec<String>,
        other: Option<String>,
    },
    /// `open`.
    Text(String),
    /// `approval`.
    Approval(ApprovalAnswer),
    /// `form`: each given (or defaulted) field's canonical value, in the form's field order.
    Form(Vec<(String, Value)>),
}

impl Answer {
    /// A form answer's values as a JSON object.
    pub fn form_values(&self) -> Option<Map<String, Value>> {
        match self {
            Self::Form(values) => Some(values.iter().cloned().collect()),
            _ => None,
        }
    }
}

/// The human's decision on a proposed action.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalAnswer {
    pub decision: Decision,
    pub scope: Scope,
    /// Replacement arguments, only when the question has `allow_edit` and the decision is approve.
    pub edited_arguments: Option<Value>,
    pub reason: Option<String>,
    /// A `session` or `always` approval's grant stops matching this many seconds after it is
    /// given.
    pub grant_ttl_seconds: Option<u64>,
    /// A `session` or `always` approval's grant lets this many calls through, then stops
    /// matching.
    pub grant_max_uses: Option<u32>,
}

/// The longest a grant's `grant_ttl_seconds` may be: ten years.
pub const MAX_GRANT_TTL_SECONDS: u64 = 10 * 366 * 24 * 3600;
/// The most uses `grant_max_uses` may allow.
pub const MAX_GRANT_USES: u32 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approve,
    Deny,
    /// Request changes: not an approval; the reason says what to change.
    Revise,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Deny => "deny",
            Self::Revise => "revise",
        }
    }

    /// Reads `approve`, `deny` or `revise`, ignoring case and surrounding space.
    pub fn parse(s: &str) -> Option<Self> {
        [Self::Approve, Self::Deny, Self::Revise]
            .into_iter()
            .find(|d| d.as_str().eq_ignore_ascii_case(s.trim()))
    }

    /// Whether this decision lets the action run.
    pub fn approves(self) -> bool {
        self == Self::Approve
    }
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match self {
            Self::Option(id) => map.serialize_entry("option", id)?,
            Self::Other(text) => map.serialize_entry("other", text)?,
            Self::Options { ids, other } => {
                map.serialize_entry("options", ids)?;
                if let Some(other) = other {
                    map.serialize_entry("other", other)?;
                }
            }
            Self::Text(text) => map.serialize_entry("text", text)?,
            Self::Approval(a) => {
                map.serialize_entry("decision", &a.decision)?;
                map.serialize_entry("scope", &a.scope)?;
                if let Some(args) = &a.edited_arguments {
                    map.serialize_entry("edited_arguments", args)?;
                }
                if let Some(reason) = &a.reason {
                    map.serialize_entry("reason", reason)?;
                }
                if let Some(ttl) = a.grant_ttl_seconds {
                    map.serialize_entry("grant_ttl_seconds", &ttl)?;
                }
                if let Some(uses) = a.grant_max_uses {
                    map.serialize_entry("grant_max_uses", &uses)?;
                }
            }
            Self::Form(_) => map.serialize_entry("values", &self.form_values())?,
        }
        map.end()
    }
}

/// Why an answer does not fit the request. The request stays pending.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    #[error("the answer must be a JSON object, got {got}")]
    NotAnObject { got: &'static str },
    #[error("{field}: expected {expected}, got {got}")]
    InvalidType {
        field: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("this request cannot be skipped; answer its questions")]
    SkipNotAllowed,
    #[error("answers: the request has no question {}; its questions are {known}", quoted(.id))]
    UnknownQuestion { id: String, known: String },
    #[error("answers: question {id:?} has no answer; every question must be answered")]
    MissingAnswer { id: String },
    #[error("answers.{id}: question {id:?} is {kind}; answer with {shape}")]
    WrongKind {
        id: String,
        kind: &'static str,
        shape: &'static str,
    },
    #[error(
        "answers.{id}: {} is not an option of this question; its options are {known}",
        quoted(.option)
    )]
    UnknownOption {
        id: String,
        option: String,
        known: String,
    },
    #[error("answers.{id}: a single question takes exactly one option or one other text")]
    NotSingle { id: String },
    #[error("answers.{id}: choose at least one option")]
    EmptySelection { id: String },
    #[error("answers.{id}: this question does not accept a free-text answer; choose an option")]
    OtherNotAllowed { id: String },
    #[error("answers.{id}.{field}: must not be empty")]
    EmptyText { id: String, field: &'static str },
    #[error("answers.{id}.{field}: at most {max} characters are allowed, got {got}")]
    TextTooLong {
        id: String,
        field: &'static str,
        max: usize,
        got: usize,
    },
    #[error("answers.{id}.decision: {} is not a decision; use approve, deny or revise", quoted(.got))]
    InvalidDecision { id: String, got: String },
    #[error("answers.{id}.scope: {} is not offered; choose one of {offered}", quoted(.scope))]
    ScopeNotOffered {
        id: String,
        scope: String,
        offered: String,
    },
    #[error("answers.{id}.edited_arguments: this action's arguments may not be edited")]
    EditNotAllowed { id: String },
    #[error("answers.{id}.edited_arguments: edited arguments come only with approve")]
    EditWithDeny { id: String },
    #[error("answers.{id}.reason: requesting changes needs a reason saying what to change")]
    ReasonRequired { id: String },
    #[error("answers.{id}.{field}: {message}")]
    InvalidGrantBound {
        id: String,
        field: &'static str,
        message: String,
    },
    #[error("answers.{id}.values.{field}: {message}")]
    InvalidValue {
        id: String,
        field: String,
        message: String,
    },
}

impl AnswerError {
    /// A stable snake_case code for clients to match on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAnObject { .. } => "not_an_object",
            Self::InvalidType { .. } => "invalid_type",
            Self::SkipNotAllowed => "skip_not_allowed",
            Self::UnknownQuestion { .. } => "unknown_question",
            Self::MissingAnswer { .. } => "missing_answer",
            Self::WrongKind { .. } => "wrong_kind",
            Self::UnknownOption { .. } => "unknown_option",
            Self::NotSingle { .. } => "not_single",
            Self::EmptySelection { .. } => "empty_selection",
            Self::OtherNotAllowed { .. } => "other_not_allowed",
            Self::EmptyText { .. } => "empty_text",
            Self::TextTooLong { .. } => "text_too_long",
            Self::InvalidDecision { .. } => "invalid_decision",
            Self::ScopeNotOffered { .. } => "scope_not_offered",
            Self::EditNotAllowed { .. } => "edit_not_allowed",
            Self::EditWithDeny { .. } => "edit_with_deny",
            Self::ReasonRequired { .. } => "reason_required",
            Self::InvalidGrantBound { .. } => "invalid_grant_bound",
            Self::InvalidValue { message, .. } if message == "is required" => "missing_value",
            Self::InvalidValue { .. } => "invalid_value",
        }
    }

    /// Where in the answer body the problem is (`answers.q1.values.budget`), for a surface that
    /// shows the error beside that input.
    pub fn path(&self) -> Option<String> {
        Some(match self {
            Self::InvalidValue { id, field, .. } => format!("answers.{id}.values.{field}"),
            Self::MissingAnswer { id }
            | Self::WrongKind { id, .. }
            | Self::UnknownOption { id, .. }
            | Self::NotSingle { id }
            | Self::EmptySelection { id }
            | Self::OtherNotAllowed { id } => format!("answers.{id}"),
            Self::EmptyText { id, field } | Self::TextTooLong { id, field, .. } => {
                format!("answers.{id}.{field}")
            }
            Self::InvalidDecision { id, .. } => format!("answers.{id}.decision"),
            Self::ReasonRequired { id } => format!("answers.{id}.reason"),
            Self::InvalidGrantBound { id, field, .. } => format!("answers.{id}.{field}"),
            Self::ScopeNotOffered { id, .. } => format!("answers.{id}.scope"),
            Self::EditNotAllowed { id } | Self::EditWithDeny { id } => {
                format!("answers.{id}.edited_arguments")
            }
            Self::InvalidType { field, .. } => field.clone(),
            Self::NotAnObject { .. } | Self::SkipNotAllowed | Self::UnknownQuestion { .. } => {
                return None;
            }
        })
    }
}

/// Checks an answer body against the live request.
pub fn parse_submission(request: &NewRequest, body: &Value) -> Result<Submission, AnswerError> {
    let Value::Object(obj) = body else {
        return Err(AnswerError::NotAnObject {
            got: json_type(body),
        });
    };
    match obj.get("skip") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => {}
        Some(Value::Bool(true)) if request.allow_skip => return Ok(Submission::Skipped),
        Some(Value::Bool(true)) => return Err(AnswerError::SkipNotAllowed),
        Some(other) => {
            return Err(AnswerError::InvalidType {
                field: "skip".to_owned(),
                expected: "true or false",
                got: json_type(other),
            });
        }
    }

    let answers = match obj.get("answers") {
        Some(Value::Object(answers)) => answers.clone(),
        Some(other) => {
            return Err(AnswerError::InvalidType {
                field: "answers".to_owned(),
                expected: "an object keyed by question id",
                got: json_type(other),
            });
        }
        // A one-question request accepts the answer object itself.
        None if request.questions.len() == 1 => {
            let mut single = Map::new();
            single.insert(request.questions[0].id.clone(), body.clone());
            single
        }
        None => {
            return Err(AnswerError::MissingAnswer {
                id: request.questions[0].id.clone(),
            });
        }
    };

    let known = request
        .questions
        .iter()
        .map(|q| q.id.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    // Unknown ids first, so a misspelt id is reported as such rather than as a missing answer.
    let sorted: BTreeMap<&String, &Value> = answers.iter().collect();
    for id in sorted.keys() {
        if request.question(id).is_none() {
            return Err(AnswerError::UnknownQuestion {
                id: (*id).clone(),
                known,
            });
        }
    }
    let mut out = Vec::with_capacity(request.questions.len());
    for q in &request.questions {
        let raw = answers
            .get(&q.id)
            .filter(|v| !v.is_null())
            .ok_or_else(|| AnswerError::MissingAnswer { id: q.id.clone() })?;
        out.push((q.id.clone(), answer(q, raw)?));
    }
    Ok(Submission::Answered(Answers(out)))
}

/// Checks the answer to one question.
pub fn answer(q: &Question, raw: &Value) -> Result<Answer, AnswerError> {
    let id = &q.id;
    let Value::Object(obj) = raw else {
        return Err(AnswerError::InvalidType {
            field: format!("answers.{id}"),
            expected: "an answer object",
            got: json_type(raw),
        });
    };
    let has = |k: &str| obj.get(k).is_some_and(|v| !v.is_null());
    let wrong_kind = || AnswerError::WrongKind {
        id: id.clone(),
        kind: q.kind.name(),
        shape: shape_hint(&q.kind),
    };
    match &q.kind {
        QuestionKind::Open => {
            if !has("text") || has("option") || has("options") || has("decision") {
                return Err(wrong_kind());
            }
            Ok(Answer::Text(free_text(id, obj, "text")?))
        }
        QuestionKind::Single(choices) => {
            if has("decision") || has("text") {
                return Err(wrong_kind());
            }
            match (obj.get("option"), obj.get("options"), has("other")) {
                (Some(v), None, false) if !v.is_null() => {
                    Ok(Answer::Option(option_id(id, choices, v, "option")?))
                }
                (None, None, true) => {
                    if !choices.allow_other {
                        return Err(AnswerError::OtherNotAllowed { id: id.clone() });
                    }
                    Ok(Answer::Other(free_text(id, obj, "other")?))
                }
                // A list with exactly one option is a harmless way to say the same thing.
                (None, Some(Value::Array(items)), false) if items.len() == 1 => Ok(Answer::Option(
                    option_id(id, choices, &items[0], "options")?,
                )),
                (None, None, false) => Err(wrong_kind()),
                _ => Err(AnswerError::NotSingle { id: id.clone() }),
            }
        }
        QuestionKind::Multi(choices) => {
            if has("decision") || has("text") {
                return Err(wrong_kind());
            }
            let mut picked: Vec<&str> = Vec::new();
            let mut raw_ids: Vec<&Value> = Vec::new();
            match obj.get("options") {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => raw_ids.extend(items),
                Some(other) => {
                    return Err(AnswerError::InvalidType {
                        field: format!("answers.{id}.options"),
                        expected: "a list of option ids",
                        got: json_type(other),
                    });
                }
            }
            if let Some(v) = obj.get("option").filter(|v| !v.is_null()) {
                raw_ids.push(v);
            }
            for v in raw_ids {
                let found = option_id(id, choices, v, "options")?;
                if let Some(choice) = choices.by_id(&found) {
                    if !picked.contains(&choice.id.as_str()) {
                        picked.push(&choice.id);
                    }
                }
            }
            let other = if has("other") {
                if !choices.allow_other {
                    return Err(AnswerError::OtherNotAllowed { id: id.clone() });
                }
                Some(free_text(id, obj, "other")?)
            } else {
                None
            };
            if picked.is_empty() && other.is_none() {
                return Err(AnswerError::EmptySelection { id: id.clone() });
            }
            // Keep the request's order, so equal selections compare equal.
            let ids = choices
                .options
                .iter()
                .filter(|o| picked.contains(&o.id.as_str()))
                .map(|o| o.id.clone())
                .collect();
            Ok(Answer::Options { ids, other })
        }
        QuestionKind::Form(form) => {
            let values = match obj.get("values") {
                Some(Value::Object(values)) if obj.len() == 1 => values,
                Some(Value::Object(_)) | None => return Err(wrong_kind()),
                Some(other) => {
                    return Err(AnswerError::InvalidType {
                        field: format!("answers.{id}.values"),
                        expected: "an object keyed by field id",
                        got: json_type(other),
                    });
                }
            };
            crate::form::check_values(form, values)
                .map(Answer::Form)
                .map_err(|(field, message)| AnswerError::InvalidValue {
                    id: id.clone(),
                    field,
                    message,
                })
        }
        QuestionKind::Approval(approval) => {
            if !has("decision") || has("option") || has("options") || has("text") {
                return Err(wrong_kind());
            }
            let decision = match &obj["decision"] {
                Value::String(s) => Decision::parse(s),
                _ => None,
            };
            let decision = match decision {
                Some(d) => d,
                None => {
                    let other = &obj["decision"];
                    return Err(AnswerError::InvalidDecision {
                        id: id.clone(),
                        got: match other {
                            Value::String(s) => s.clone(),
                            v => v.to_string(),
                        },
                    });
                }
            };
            let offered = || {
                approval
                    .scopes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let scope = match obj.get("scope") {
                None | Some(Value::Null) => Scope::Once,
                Some(Value::String(s)) => {
                    Scope::parse(s).ok_or_else(|| AnswerError::ScopeNotOffered {
                        id: id.clone(),
                        scope: s.clone(),
                        offered: offered(),
                    })?
                }
                Some(other) => {
                    return Err(AnswerError::InvalidType {
                        field: format!("answers.{id}.scope"),
                        expected: "a scope name",
                        got: json_type(other),
                    });
                }
            };
            // `once` is always acceptable for a refusal; a grant scope must have been offered,
            // and a request for changes grants nothing.
            let deny_once = !decision.approves() && scope == Scope::Once;
            let revise_wider = decision == Decision::Revise && scope != Scope::Once;
            if revise_wider {
                return Err(AnswerError::ScopeNotOffered {
                    id: id.clone(),
                    scope: scope.as_str().to_owned(),
                    offered: "once".to_owned(),
                });
            }
            if !(approval.scopes.contains(&scope) || deny_once) {
                return Err(AnswerError::ScopeNotOffered {
                    id: id.clone(),
                    scope: scope.as_str().to_owned(),
                    offered: offered(),
                });
            }
            let edited_arguments = match obj.get("edited_arguments") {
                None | Some(Value::Null) => None,
                Some(_) if !approval.allow_edit => {
                    return Err(AnswerError::EditNotAllowed { id: id.clone() });
                }
                Some(_) if !decision.approves() => {
                    return Err(AnswerError::EditWithDeny { id: id.clone() });
                }
                Some(v) => Some(v.clone()),
            };
            let reason = if has("reason") {
                Some(free_text(id, obj, "reason")?)
            } else {
                None
            };
            // Changes can only be made when the agent is told which.
            if decision == Decision::Revise && reason.as_deref().is_none_or(|r| r.trim().is_empty())
            {
                return Err(AnswerError::ReasonRequired { id: id.clone() });
            }
            let grants = decision == Decision::Approve && scope != Scope::Once;
            let bound = |field: &'static str, max: u64| -> Result<Option<u64>, AnswerError> {
                let fail = |message: String| AnswerError::InvalidGrantBound {
                    id: id.clone(),
                    field,
                    message,
                };
                match obj.get(field) {
                    None | Some(Value::Null) => Ok(None),
                    Some(_) if !grants => Err(fail(
                        "bounds a grant, which only approve with scope session or always gives"
                            .to_owned(),
                    )),
                    Some(v) => match v.as_u64() {
                        Some(n) if (1..=max).contains(&n) => Ok(Some(n)),
                        _ => Err(fail(format!(
                            "must be a whole number from 1 to {max}, got {v}"
                        ))),
                    },
                }
            };
            let grant_ttl_seconds = bound("grant_ttl_seconds", MAX_GRANT_TTL_SECONDS)?;
            let grant_max_uses = bound("grant_max_uses", u64::from(MAX_GRANT_USES))?
                .and_then(|n| u32::try_from(n).ok());
            Ok(Answer::Approval(ApprovalAnswer {
                decision,
                scope,
                edited_arguments,
                reason,
                grant_ttl_seconds,
                grant_max_uses,
            }))
        }
    }
}

fn shape_hint(kind: &QuestionKind) -> &'static str {
    match kind {
        QuestionKind::Open => r#"{"text": "..."}"#,
        QuestionKind::Single(_) => r#"{"option": "<option id>"} or {"other": "..."}"#,
        QuestionKind::Multi(_) => r#"{"options": ["<option id>", ...]}, optionally with "other""#,
        QuestionKind::Approval(_) => r#"{"decision": "approve" or "deny", "scope": ...}"#,
        QuestionKind::Form(_) => r#"{"values": {"<field id>": <value>, ...}}"#,
    }
}

/// The id of the option named by `v` (its id, or its label ignoring case).
fn option_id(id: &str, choices: &Choices, v: &Value, field: &str) -> Result<String, AnswerError> {
    let key = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        other => {
            return Err(AnswerError::InvalidType {
                field: format!("answers.{id}.{field}"),
                expected: "an option id",
                got: json_type(other),
            });
        }
    };
    choices
        .find(&key)
        .map(|c| c.id.clone())
        .ok_or_else(|| AnswerError::UnknownOption {
            id: id.to_owned(),
            option: key,
            known: choices
                .options
                .iter()
                .map(|o| o.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

fn free_text(
    id: &str,
    obj: &Map<String, Value>,
    field: &'static str,
) -> Result<String, AnswerError> {
    let text = match obj.get(field) {
        Some(Value::String(s)) => s.trim(),
        Some(other) => {
            return Err(AnswerError::InvalidType {
                field: format!("answers.{id}.{field}"),
                expected: "a string",
                got: json_type(other),
            });
        }
        None => "",
    };
    if text.is_empty() {
        return Err(AnswerError::EmptyText {
            id: id.to_owned(),
            field,
        });
    }
    let got = chars(text);
    if got > Limits::MAX_ANSWER_CHARS {
        return Err(AnswerError::TextTooLong {
            id: id.to_owned(),
            field,
            max: Limits::MAX_ANSWER_CHARS,
            got,
        });
    }
    Ok(text.to_owned())
}
