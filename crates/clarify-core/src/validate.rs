//! Validation of the canonical request shape into a [`NewRequest`].
//!
//! Input here has already been through [`crate::coerce::normalize`]. Every rule of the contract's
//! Domain section that concerns a request lives in this file; each failure is a
//! [`ValidationError`] naming the field by its path.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::answer::Decision;
use crate::error::{ValidationError, json_type};
use crate::limits::Limits;
use crate::model::{
    Action, Approval, Choice, Choices, Context, GROUP_PREFIX, NewRequest, OnTimeout, Question,
    QuestionKind, RecommendedWord, Resume, Risk, Scope,
};
use crate::text::{chars, is_valid_id, slug, strip_recommended_suffix};

/// Validates a canonical request body.
pub fn request(canonical: &Value, limits: &Limits) -> Result<NewRequest, ValidationError> {
    let Value::Object(obj) = canonical else {
        return Err(ValidationError::NotAnObject {
            got: json_type(canonical),
        });
    };
    let fields = Fields { obj, prefix: "" };

    let questions = match obj.get("questions") {
        None => return Err(ValidationError::NoQuestions),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(invalid_type("questions", "a list of questions", other)),
    };
    if questions.is_empty() {
        return Err(ValidationError::NoQuestions);
    }
    if questions.len() > Limits::MAX_QUESTIONS {
        return Err(ValidationError::TooManyQuestions {
            max: Limits::MAX_QUESTIONS,
            got: questions.len(),
        });
    }
    let questions = questions
        .iter()
        .enumerate()
        .map(|(i, q)| question(q, i, limits))
        .collect::<Result<Vec<_>, _>>()?;
    let mut ids = HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        if !ids.insert(q.id.as_str()) {
            return Err(ValidationError::DuplicateId {
                field: format!("questions[{i}].id"),
                id: q.id.clone(),
            });
        }
    }

    let timeout_seconds = match obj.get("timeout_seconds") {
        None => limits.default_timeout_seconds(),
        Some(v) => timeout(v)?,
    };
    let responders = responders(obj.get("responders"))?;
    let remind_every_seconds = seconds(
        obj.get("remind_every_seconds"),
        "remind_every_seconds",
        Limits::MIN_REMIND_SECONDS,
    )?;
    let warn_before_seconds = seconds(obj.get("warn_before_seconds"), "warn_before_seconds", 0)?;
    let escalate_after_seconds = seconds(
        obj.get("escalate_after_seconds"),
        "escalate_after_seconds",
        1,
    )?;
    let escalate_to = names(obj.get("escalate_to"), "escalate_to")?.unwrap_or_default();
    match (escalate_after_seconds, escalate_to.is_empty()) {
        (Some(_), true) if obj.get("escalate_to").is_none_or(Value::is_null) => {
            return Err(ValidationError::InvalidSchedule {
                field: "escalate_after_seconds".to_owned(),
                reason: "needs escalate_to, the responders to escalate to".to_owned(),
            });
        }
        (None, false) => {
            return Err(ValidationError::InvalidSchedule {
                field: "escalate_to".to_owned(),
                reason: "needs escalate_after_seconds, when to escalate".to_owned(),
            });
        }
        _ => {}
    }
    let approvals_required = quorum(
        obj.get("approvals_required"),
        &questions,
        responders.as_deref(),
        &escalate_to,
    )?;
    let on_timeout = on_timeout(obj.get("on_timeout"), &questions, timeout_seconds)?;
    let given_display = crate::display::blocks(obj.get("display"))?;
    let summary = crate::display::summary(obj.get("summary"))?;
    let revises = fields.name("revises")?;
    let risk = risk(obj.get("risk"))?;

    let mut request = NewRequest {
        questions,
        context: context(obj.get("context"))?,
        session: fields.name("session")?,
        agent: fields.name("agent")?,
        on_behalf_of: fields.name("on_behalf_of")?,
        tags: tags(obj.get("tags"))?,
        tool_call_id: fields.name("tool_call_id")?,
        timeout_seconds,
        allow_skip: fields.bool("allow_skip")?.unwrap_or(true),
        responders,
        callback_url: callback_url(obj.get("callback_url"))?,
        resume: resume(obj.get("resume"))?,
        idempotency_key: fields.name("idempotency_key")?,
        dedupe: fields.bool("dedupe")?.unwrap_or(false),
        approvals_required,
        remind_every_seconds,
        warn_before_seconds,
        escalate_after_seconds,
        escalate_to,
        on_timeout,
        display: given_display,
        summary: summary.unwrap_or_default(),
        revises,
        risk,
    };
    crate::display::complete(&mut request);
    Ok(request)
}

/// `risk`: `low`, `normal` or `high`; absent or null is normal.
fn risk(v: Option<&Value>) -> Result<Risk, ValidationError> {
    match v {
        None | Some(Value::Null) => Ok(Risk::Normal),
        Some(Value::String(s)) => {
            Risk::parse(s.trim()).ok_or_else(|| ValidationError::UnknownRisk { got: s.clone() })
        }
        Some(other) => Err(invalid_type("risk", "low, normal or high", other)),
    }
}

/// `approvals_required`: 1 to 10; above 1, only approvals without edits, and reachable by the
/// named responders (with those escalated to) when responders are named.
fn quorum(
    v: Option<&Value>,
    questions: &[Question],
    responders: Option<&[String]>,
    escalate_to: &[String],
) -> Result<u32, ValidationError> {
    let max = Limits::MAX_APPROVALS_REQUIRED;
    let required = match v {
        None | Some(Value::Null) => return Ok(1),
        Some(Value::Number(n)) => match n.as_u64().and_then(|n| u32::try_from(n).ok()) {
            Some(r) if (1..=max).contains(&r) => r,
            _ => {
                return Err(ValidationError::InvalidQuorum {
                    max,
                    got: n.to_string(),
                });
            }
        },
        Some(other) => return Err(invalid_type("approvals_required", "a whole number", other)),
    };
    if required == 1 {
        return Ok(1);
    }
    for (i, q) in questions.iter().enumerate() {
        match &q.kind {
            QuestionKind::Approval(a) if a.allow_edit => {
                return Err(ValidationError::QuorumWithEdit {
                    field: format!("questions[{i}].allow_edit"),
                });
            }
            QuestionKind::Approval(_) => {}
            other => {
                return Err(ValidationError::QuorumNeedsApprovals {
                    required,
                    field: format!("questions[{i}]"),
                    kind: other.name(),
                });
            }
        }
    }
    // A group's members are known only where the answer arrives, and who is on call only when
    // the schedule is read, so a quorum over either is not counted here.
    let names_a_group = |names: &[String]| {
        names
            .iter()
            .any(|n| n.starts_with(GROUP_PREFIX) || n.starts_with(crate::model::ONCALL_PREFIX))
    };
    if let Some(names) = responders.filter(|n| !names_a_group(n) && !names_a_group(escalate_to)) {
        let mut allowed: Vec<&String> = names.iter().chain(escalate_to).collect();
        allowed.sort();
        allowed.dedup();
        if allowed.len() < required as usize {
            return Err(ValidationError::QuorumUnreachable {
                required,
                allowed: allowed.len(),
            });
        }
    }
    Ok(required)
}

/// `on_timeout`: a decision for approval requests, an option (one-question `single` requests)
/// or `"recommended"` (every question `single` with a recommended option).
fn on_timeout(
    v: Option<&Value>,
    questions: &[Question],
    timeout_seconds: u64,
) -> Result<Option<OnTimeout>, ValidationError> {
    let invalid = |reason: String| ValidationError::InvalidOnTimeout { reason };
    let v = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
    if timeout_seconds == 0 {
        return Err(invalid(
            "the request never expires (timeout_seconds is 0), so no default can apply".to_owned(),
        ));
    }
    let kinds = || {
        questions
            .iter()
            .map(|q| q.kind.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    match v {
        Value::String(s) if s.trim().eq_ignore_ascii_case("recommended") => {
            for (i, q) in questions.iter().enumerate() {
                match &q.kind {
                    QuestionKind::Single(c) if c.recommended.is_some() => {}
                    QuestionKind::Single(_) => {
                        return Err(invalid(format!(
                            "\"recommended\" needs a recommended option, and questions[{i}] has none"
                        )));
                    }
                    other => {
                        return Err(invalid(format!(
                            "\"recommended\" applies to single questions; questions[{i}] is {}",
                            other.name()
                        )));
                    }
                }
            }
            Ok(Some(OnTimeout::Recommended(RecommendedWord::Recommended)))
        }
        Value::Object(obj) if obj.contains_key("decision") => {
            if let Some(key) = obj.keys().find(|k| !["decision", "reason"].contains(&k.as_str())) {
                return Err(invalid(format!("unknown key {key:?} beside decision; use decision and reason")));
            }
            if !questions.iter().all(|q| matches!(q.kind, QuestionKind::Approval(_))) {
                return Err(invalid(format!(
                    "a default decision applies to approval requests; the questions are {}",
                    kinds()
                )));
            }
            let decision = match &obj["decision"] {
                Value::String(s) if s.trim().eq_ignore_ascii_case("approve") => Decision::Approve,
                Value::String(s) if s.trim().eq_ignore_ascii_case("deny") => Decision::Deny,
                other => {
                    return Err(invalid(format!(
                        "decision must be approve or deny, got {}",
                        crate::text::quoted(&match other {
                            Value::String(s) => s.clone(),
                            v => v.to_string(),
                        })
                    )));
                }
            };
            let reason = match obj.get("reason") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) if s.trim().is_empty() => None,
                Some(Value::String(s)) => {
                    check_len("on_timeout.reason", s.trim(), Limits::MAX_ANSWER_CHARS)?;
                    Some(s.trim().to_owned())
                }
                Some(other) => return Err(invalid_type("on_timeout.reason", "a string", other)),
            };
            Ok(Some(OnTimeout::Decision { decision, reason }))
        }
        Value::Object(obj) if obj.contains_key("option") => {
            if let Some(key) = obj.keys().find(|k| k.as_str() != "option") {
                return Err(invalid(format!("unknown key {key:?} beside option")));
            }
            let [q] = questions else {
                return Err(invalid(format!(
                    "a default option needs a request of one single question; this one has {}",
                    questions.len()
                )));
            };
            let QuestionKind::Single(c) = &q.kind else {
                return Err(invalid(format!(
                    "a default option applies to single questions; the question is {}",
                    q.kind.name()
                )));
            };
            let wanted = match &obj["option"] {
                Value::String(s) => s.trim().to_owned(),
                Value::Number(n) => n.to_string(),
                other => return Err(invalid_type("on_timeout.option", "an option id", other)),
            };
            match c.find(&wanted) {
                Some(choice) => Ok(Some(OnTimeout::Option {
                    option: choice.id.clone(),
                })),
                None => Err(invalid(format!(
                    "{} is not an option of the question; its options are {}",
                    crate::text::quoted(&wanted),
                    c.options.iter().map(|o| o.id.as_str()).collect::<Vec<_>>().join(", ")
                ))),
            }
        }
        _ => Err(invalid(
            "use {\"decision\": \"approve\" or \"deny\", \"reason\": ...}, {\"option\": \"<id>\"} or \"recommended\"".to_owned(),
        )),
    }
}

/// A whole number of seconds from `min` to a year, or absent.
fn seconds(v: Option<&Value>, field: &str, min: u64) -> Result<Option<u64>, ValidationError> {
    let n = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Number(n)) => n,
        Some(other) => return Err(invalid_type(field, "a number of seconds", other)),
    };
    match n.as_u64() {
        Some(s) if (min..=Limits::MAX_TIMEOUT_SECONDS).contains(&s) => Ok(Some(s)),
        _ => Err(ValidationError::InvalidSchedule {
            field: field.to_owned(),
            reason: format!(
                "must be a whole number of seconds from {min} to {}, got {n}",
                Limits::MAX_TIMEOUT_SECONDS
            ),
        }),
    }
}

fn question(v: &Value, index: usize, limits: &Limits) -> Result<Question, ValidationError> {
    let prefix = format!("questions[{index}]");
    let Value::Object(obj) = v else {
        return Err(invalid_type(&prefix, "a question object", v));
    };
    let f = Fields {
        obj,
        prefix: &prefix,
    };

    let id = match f.string("id")? {
        None => format!("q{}", index + 1),
        Some(id) if is_valid_id(&id) => id,
        Some(id) => {
            return Err(ValidationError::InvalidId {
                field: f.path("id"),
                id,
            });
        }
    };
    let header = f.text("header", Limits::MAX_HEADER_CHARS)?;
    let text = f
        .text("text", Limits::MAX_TEXT_CHARS)?
        .ok_or_else(|| match obj.get("text") {
            Some(_) => ValidationError::Empty {
                field: f.path("text"),
            },
            None => ValidationError::Missing {
                field: f.path("text"),
            },
        })?;

    let kind_name = match obj.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(other) => return Err(invalid_type(&f.path("kind"), "a string", other)),
        None => "open",
    };
    if kind_name != "form" && obj.contains_key("fields") {
        return Err(ValidationError::FieldsNotAllowed {
            field: f.path("fields"),
            kind: kind_name.to_owned(),
        });
    }
    let kind = match kind_name {
        "form" => {
            if obj.contains_key("options") {
                return Err(ValidationError::OptionsNotAllowed {
                    field: f.path("options"),
                    kind: "form",
                });
            }
            QuestionKind::Form(crate::form::fields(obj.get("fields"), &prefix, limits)?)
        }
        "open" | "approval" => {
            if obj.contains_key("options") {
                return Err(ValidationError::OptionsNotAllowed {
                    field: f.path("options"),
                    kind: if kind_name == "open" {
                        "open"
                    } else {
                        "approval"
                    },
                });
            }
            if kind_name == "open" {
                QuestionKind::Open
            } else {
                QuestionKind::Approval(approval(&f)?)
            }
        }
        "single" => QuestionKind::Single(choices(&f, "single", limits)?),
        "multi" => QuestionKind::Multi(choices(&f, "multi", limits)?),
        other => {
            return Err(ValidationError::UnknownKind {
                field: f.path("kind"),
                got: other.to_owned(),
            });
        }
    };
    Ok(Question {
        id,
        header,
        text,
        kind,
    })
}

fn choices(
    f: &Fields<'_>,
    kind: &'static str,
    limits: &Limits,
) -> Result<Choices, ValidationError> {
    let options = options(f.obj.get("options"), &f.path("options"), kind, limits)?;
    let recommended = match f.string("recommended")? {
        None => None,
        Some(r) => {
            let choices = Choices {
                options: options.clone(),
                allow_other: true,
                recommended: None,
            };
            let found = choices.find(&r).or_else(|| {
                // A model may mark the recommendation on the label it wrote.
                let stripped = strip_recommended_suffix(&r);
                choices.find(stripped)
            });
            match found {
                Some(choice) => Some(choice.id.clone()),
                None => {
                    return Err(ValidationError::UnknownRecommended {
                        field: f.path("recommended"),
                        got: r,
                    });
                }
            }
        }
    };

    Ok(Choices {
        options,
        allow_other: f.bool("allow_other")?.unwrap_or(true),
        recommended,
    })
}

/// Validates a canonical options list (`questions[0].options`, or a form field's).
pub(crate) fn options(
    v: Option<&Value>,
    field: &str,
    kind: &'static str,
    limits: &Limits,
) -> Result<Vec<Choice>, ValidationError> {
    let field = field.to_owned();
    let items = match v {
        None | Some(Value::Null) => return Err(ValidationError::NoOptions { field, kind }),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(invalid_type(&field, "a list of options", other)),
    };
    if items.is_empty() {
        return Err(ValidationError::NoOptions { field, kind });
    }
    if items.len() > limits.max_options() {
        return Err(ValidationError::TooManyOptions {
            field,
            max: limits.max_options(),
            got: items.len(),
        });
    }

    let mut options: Vec<Choice> = Vec::with_capacity(items.len());
    let mut labels = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let prefix = format!("{field}[{i}]");
        let Value::Object(obj) = item else {
            return Err(invalid_type(&prefix, "an option object", item));
        };
        let of = Fields {
            obj,
            prefix: &prefix,
        };
        let label =
            of.text("label", Limits::MAX_LABEL_CHARS)?
                .ok_or_else(|| ValidationError::Missing {
                    field: of.path("label"),
                })?;
        if !labels.insert(label.to_lowercase()) {
            return Err(ValidationError::DuplicateLabel {
                field: field.clone(),
                label,
            });
        }
        let description = of.text("description", Limits::MAX_DESCRIPTION_CHARS)?;
        let id = match of.string("id")? {
            Some(id) if is_valid_id(&id) => id,
            Some(id) => {
                return Err(ValidationError::InvalidId {
                    field: of.path("id"),
                    id,
                });
            }
            None => String::new(),
        };
        options.push(Choice {
            id,
            label,
            description,
        });
    }
    assign_option_ids(&mut options, &field)?;
    Ok(options)
}

/// Gives every option without an explicit id one derived from its label (`slug`, or `option-N`
/// when the label has no ASCII letters or digits), made unique with a numeric suffix. Explicit
/// ids must already be unique.
fn assign_option_ids(options: &mut [Choice], field: &str) -> Result<(), ValidationError> {
    let mut taken: HashSet<String> = HashSet::new();
    for (i, o) in options.iter().enumerate() {
        if !o.id.is_empty() && !taken.insert(o.id.clone()) {
            return Err(ValidationError::DuplicateId {
                field: format!("{field}[{i}].id"),
                id: o.id.clone(),
            });
        }
    }
    for (i, o) in options.iter_mut().enumerate() {
        if !o.id.is_empty() {
            continue;
        }
        let base = match slug(&o.label) {
            s if s.is_empty() => format!("option-{}", i + 1),
            s => s,
        };
        let mut id = base.clone();
        let mut n = 2;
        while taken.contains(&id) {
            id = format!("{base}-{n}");
            n += 1;
        }
        taken.insert(id.clone());
        o.id = id;
    }
    Ok(())
}

fn approval(f: &Fields<'_>) -> Result<Approval, ValidationError> {
    let field = f.path("action");
    let action = match f.obj.get("action") {
        None => return Err(ValidationError::MissingAction { field }),
        Some(Value::Object(obj)) => {
            let af = Fields {
                obj,
                prefix: &field,
            };
            let name =
                af.text("name", Limits::MAX_NAME_CHARS)?
                    .ok_or(ValidationError::MissingAction {
                        field: field.clone(),
                    })?;
            let arguments = match obj.get("arguments") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
                    // Tool-call arguments often arrive as the JSON text the model produced.
                    Ok(v @ Value::Object(_)) => v,
                    _ => Value::String(s.clone()),
                },
                Some(v) => v.clone(),
            };
            json_size(
                &arguments,
                &af.path("arguments"),
                Limits::MAX_ARGUMENTS_JSON_BYTES,
            )?;
            Action { name, arguments }
        }
        Some(other) => return Err(invalid_type(&field, "an object {name, arguments}", other)),
    };

    let scopes = match f.obj.get("scopes") {
        None => vec![Scope::Once],
        Some(Value::Array(items)) => {
            let mut scopes = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let path = format!("{}[{i}]", f.path("scopes"));
                let Value::String(s) = item else {
                    return Err(invalid_type(&path, "a scope name", item));
                };
                let scope = Scope::parse(s).ok_or_else(|| ValidationError::UnknownScope {
                    field: path,
                    got: s.clone(),
                })?;
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
            if scopes.is_empty() {
                return Err(ValidationError::Empty {
                    field: f.path("scopes"),
                });
            }
            scopes.sort();
            scopes
        }
        Some(other) => return Err(invalid_type(&f.path("scopes"), "a list of scopes", other)),
    };

    Ok(Approval {
        action,
        scopes,
        allow_edit: f.bool("allow_edit")?.unwrap_or(false),
    })
}

fn context(v: Option<&Value>) -> Result<Option<Context>, ValidationError> {
    Ok(match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            let s = s.trim();
            if s.is_empty() {
                None
            } else {
                check_len("context", s, Limits::MAX_CONTEXT_TEXT_CHARS)?;
                Some(Context::Text(s.to_owned()))
            }
        }
        Some(v @ Value::Object(obj)) => {
            json_size(v, "context", Limits::MAX_CONTEXT_JSON_BYTES)?;
            Some(Context::Json(obj.clone()))
        }
        Some(other) => return Err(invalid_type("context", "a string or a JSON object", other)),
    })
}

fn tags(v: Option<&Value>) -> Result<Vec<String>, ValidationError> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(invalid_type("tags", "a list of strings", other)),
    };
    if items.len() > Limits::MAX_TAGS {
        return Err(ValidationError::TooManyTags {
            field: "tags".to_owned(),
            max: Limits::MAX_TAGS,
            got: items.len(),
        });
    }
    let mut tags: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("tags[{i}]");
        let tag = non_empty_string(item, &field)?;
        check_len(&field, &tag, Limits::MAX_TAG_CHARS)?;
        if !tags.contains(&tag) {
            tags.push(tag);
        }
    }
    Ok(tags)
}

fn responders(v: Option<&Value>) -> Result<Option<Vec<String>>, ValidationError> {
    names(v, "responders")
}

/// A non-empty list of responder names (`responders`, `escalate_to`), without repeats.
fn names(v: Option<&Value>, key: &str) -> Result<Option<Vec<String>>, ValidationError> {
    let items = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(invalid_type(key, "a list of names", other)),
    };
    if items.is_empty() {
        // An empty list would make the request unanswerable (or escalate to nobody).
        return Err(ValidationError::Empty {
            field: key.to_owned(),
        });
    }
    if items.len() > Limits::MAX_RESPONDERS {
        return Err(ValidationError::TooManyResponders {
            field: key.to_owned(),
            max: Limits::MAX_RESPONDERS,
            got: items.len(),
        });
    }
    let mut names: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let field = format!("{key}[{i}]");
        let name = non_empty_string(item, &field)?;
        check_len(&field, &name, Limits::MAX_NAME_CHARS)?;
        if !names.contains(&name) {
            names.push(name);
        }
    }
    Ok(Some(names))
}

fn callback_url(v: Option<&Value>) -> Result<Option<String>, ValidationError> {
    let field = "callback_url";
    let s = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
        Some(Value::String(s)) => s.trim(),
        Some(other) => return Err(invalid_type(field, "a URL string", other)),
    };
    check_len(field, s, Limits::MAX_URL_CHARS)?;
    let url = url::Url::parse(s).map_err(|e| ValidationError::InvalidUrl {
        field: field.to_owned(),
        reason: format!("not a valid URL ({e})"),
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ValidationError::InvalidUrl {
            field: field.to_owned(),
            reason: "must be an http or https URL with a host".to_owned(),
        });
    }
    Ok(Some(url.to_string()))
}

/// `resume`: `{"restate": {"ingress": URL, "awakeable": ID}}`. The awakeable id goes into the
/// URL's path as it is, so it may hold only what Restate's ids hold (letters, digits, `_`, `-`).
fn resume(v: Option<&Value>) -> Result<Option<Resume>, ValidationError> {
    let field = "resume";
    let engines = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(o)) => o,
        Some(other) => return Err(invalid_type(field, "an object", other)),
    };
    let mut keys = engines.keys();
    let (Some(engine), None) = (keys.next(), keys.next()) else {
        return Err(ValidationError::InvalidUrl {
            field: field.to_owned(),
            reason: "name exactly one engine: {\"restate\": {\"ingress\": URL, \"awakeable\": ID}}"
                .to_owned(),
        });
    };
    if engine != "restate" {
        return Err(ValidationError::UnknownField {
            field: format!("{field}.{engine}"),
            hint: Some("restate".to_owned()),
        });
    }
    let at = format!("{field}.restate");
    let Some(Value::Object(restate)) = engines.get("restate") else {
        return Err(invalid_type(&at, "an object", &engines["restate"]));
    };
    if let Some(unknown) = restate
        .keys()
        .find(|k| !["ingress", "awakeable"].contains(&k.as_str()))
    {
        return Err(ValidationError::UnknownField {
            field: format!("{at}.{unknown}"),
            hint: None,
        });
    }
    let ingress = match callback_url(restate.get("ingress")) {
        Ok(Some(url)) => url.trim_end_matches('/').to_owned(),
        Ok(None) => {
            return Err(ValidationError::InvalidUrl {
                field: format!("{at}.ingress"),
                reason: "the Restate ingress URL is missing".to_owned(),
            });
        }
        Err(ValidationError::InvalidUrl { reason, .. }) => {
            return Err(ValidationError::InvalidUrl {
                field: format!("{at}.ingress"),
                reason,
            });
        }
        Err(e) => return Err(e),
    };
    let awakeable = match restate.get("awakeable") {
        Some(Value::String(s))
            if !s.is_empty()
                && s.len() <= 256
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') =>
        {
            s.clone()
        }
        Some(Value::String(_)) | None => {
            return Err(ValidationError::InvalidUrl {
                field: format!("{at}.awakeable"),
                reason: "an awakeable id of 1 to 256 letters, digits, _ or - is needed".to_owned(),
            });
        }
        Some(other) => return Err(invalid_type(&format!("{at}.awakeable"), "a string", other)),
    };
    Ok(Some(Resume::Restate { ingress, awakeable }))
}

fn timeout(v: &Value) -> Result<u64, ValidationError> {
    let field = "timeout_seconds";
    let out_of_range = |got: String| ValidationError::TimeoutOutOfRange {
        field: field.to_owned(),
        max: Limits::MAX_TIMEOUT_SECONDS,
        got,
    };
    let Value::Number(n) = v else {
        return Err(invalid_type(field, "a number of seconds", v));
    };
    let seconds = match (n.as_u64(), n.as_f64()) {
        (Some(s), _) => s,
        // Whole floats such as `600.0` are fine; fractions and negatives are not.
        (None, Some(f))
            if f >= 0.0 && f.fract() == 0.0 && f <= Limits::MAX_TIMEOUT_SECONDS as f64 =>
        {
            f as u64
        }
        _ => return Err(out_of_range(n.to_string())),
    };
    if seconds > Limits::MAX_TIMEOUT_SECONDS {
        return Err(out_of_range(seconds.to_string()));
    }
    Ok(seconds)
}

/// Typed access to the fields of one object, naming fields by their full path in errors.
struct Fields<'a> {
    obj: &'a Map<String, Value>,
    prefix: &'a str,
}

impl Fields<'_> {
    fn path(&self, key: &str) -> String {
        if self.prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{}.{key}", self.prefix)
        }
    }

    /// A string field, trimmed; absent, null or blank is `None`.
    fn string(&self, key: &str) -> Result<Option<String>, ValidationError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                let s = s.trim();
                Ok((!s.is_empty()).then(|| s.to_owned()))
            }
            // Numbers are common where an id or a label is meant.
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(invalid_type(&self.path(key), "a string", other)),
        }
    }

    /// A trimmed string field with a length limit in characters.
    fn text(&self, key: &str, max: usize) -> Result<Option<String>, ValidationError> {
        let s = self.string(key)?;
        if let Some(s) = &s {
            check_len(&self.path(key), s, max)?;
        }
        Ok(s)
    }

    /// An identifier-like field (`session`, `agent`, ...).
    fn name(&self, key: &str) -> Result<Option<String>, ValidationError> {
        self.text(key, Limits::MAX_NAME_CHARS)
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, ValidationError> {
        match self.obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(invalid_type(&self.path(key), "true or false", other)),
        }
    }
}

fn non_empty_string(v: &Value, field: &str) -> Result<String, ValidationError> {
    match v {
        Value::String(s) if s.trim().is_empty() => Err(ValidationError::Empty {
            field: field.to_owned(),
        }),
        Value::String(s) => Ok(s.trim().to_owned()),
        other => Err(invalid_type(field, "a string", other)),
    }
}

fn check_len(field: &str, s: &str, max: usize) -> Result<(), ValidationError> {
    let got = chars(s);
    if got > max {
        return Err(ValidationError::TooLong {
            field: field.to_owned(),
            max,
            got,
        });
    }
    Ok(())
}

fn json_size(v: &Value, field: &str, max: usize) -> Result<(), ValidationError> {
    let got = serde_json::to_vec(v).map(|b| b.len()).unwrap_or(usize::MAX);
    if got > max {
        return Err(ValidationError::JsonTooLarge {
            field: field.to_owned(),
            max,
            got,
        });
    }
    Ok(())
}

fn invalid_type(field: &str, expected: &'static str, got: &Value) -> ValidationError {
    ValidationError::InvalidType {
        field: field.to_owned(),
        expected,
        got: json_type(got),
    }
}
