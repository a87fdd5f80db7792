//! Outcomes: what an agent and its LLM receive once a request is resolved.
//!
//! An outcome restates each question with what was offered and what was chosen, in labels and
//! text rather than ids, so a model can read it without the request at hand. A request that was not
//! answered carries a `note` telling the model plainly what happened and to go on with its own
//! judgement.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::answer::{Answer, Answers, ApprovalAnswer, Decision};
use crate::model::{NewRequest, OnTimeout, QuestionKind, Scope, Status};
use crate::quorum::Vote;
use crate::text::humanize_seconds;

/// How a request was resolved.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    Answered(Answers),
    Skipped,
    Expired,
    Cancelled,
}

impl Resolution {
    pub fn status(&self) -> Status {
        match self {
            Self::Answered(_) => Status::Answered,
            Self::Skipped => Status::Skipped,
            Self::Expired => Status::Expired,
            Self::Cancelled => Status::Cancelled,
        }
    }
}

/// The result of a resolved request, for the agent and its model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Outcome {
    pub request_id: String,
    pub status: Status,
    pub questions: Vec<QuestionOutcome>,
    /// The responder who answered or skipped; `null` for expiry, and for cancellation by the
    /// system.
    pub answered_by: Option<String>,
    /// Where the answer came from (`inbox`, `api`, `link`, `slack`, `mcp`, ...); `null` when
    /// nobody answered.
    pub answered_via: Option<String>,
    #[serde(serialize_with = "rfc3339")]
    pub resolved_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The request expired and its `on_timeout` default is the answer.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub default_applied: bool,
    /// A quorum request's votes, in the order cast.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<Vote>,
}

/// One question of an outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionOutcome {
    pub id: String,
    pub question: String,
    pub kind: &'static str,
    /// The option labels offered (`approve` and `deny` for an approval; empty for open text).
    pub choices_offered: Vec<String>,
    /// The chosen label, the labels (multi), the text, or the decision; `null` when unanswered.
    pub answer: Value,
    /// How the answer was given; `null` when unanswered.
    pub mode: Option<Mode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Scope>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edited_arguments: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// How a question was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One or more offered options.
    Option,
    /// Free text instead of (or, on multi, besides) the options.
    Other,
    /// An open question's text.
    Text,
    /// An approval decision.
    Decision,
    /// A form's values.
    Form,
    /// Nobody answered; the request's `on_timeout` default.
    Default,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Option => "option",
            Self::Other => "other",
            Self::Text => "text",
            Self::Decision => "decision",
            Self::Form => "form",
            Self::Default => "default",
        }
    }
}

impl Outcome {
    /// Builds the outcome of a resolved request.
    pub fn new(
        request_id: &str,
        request: &NewRequest,
        resolution: &Resolution,
        answered_by: Option<&str>,
        resolved_at: DateTime<Utc>,
    ) -> Self {
        let defaults = match resolution {
            Resolution::Expired => request.on_timeout.as_ref().map(|d| defaults(request, d)),
            _ => None,
        };
        let answers = match resolution {
            Resolution::Answered(a) => Some(a),
            _ => defaults.as_ref(),
        };
        let mode_of = |m: Mode| if defaults.is_some() { Mode::Default } else { m };
        let questions = request
            .questions
            .iter()
            .map(|q| {
                let choices_offered = match &q.kind {
                    QuestionKind::Open => Vec::new(),
                    QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                        c.options.iter().map(|o| o.label.clone()).collect()
                    }
                    QuestionKind::Approval(_) => {
                        vec!["approve".to_owned(), "deny".to_owned(), "revise".to_owned()]
                    }
                    QuestionKind::Form(f) => f.fields.iter().map(|f| f.label.clone()).collect(),
                };
                let mut out = QuestionOutcome {
                    id: q.id.clone(),
                    question: q.text.clone(),
                    kind: q.kind.name(),
                    choices_offered,
                    answer: Value::Null,
                    mode: None,
                    decision: None,
                    scope: None,
                    edited_arguments: None,
                    reason: None,
                };
                let label = |id: &str| {
                    q.kind
                        .choices()
                        .and_then(|c| c.by_id(id))
                        .map_or_else(|| id.to_owned(), |o| o.label.clone())
                };
                match answers.and_then(|a| a.get(&q.id)) {
                    None => {}
                    Some(Answer::Option(id)) => {
                        out.answer = Value::String(label(id));
                        out.mode = Some(mode_of(Mode::Option));
                    }
                    Some(Answer::Other(text)) => {
                        out.answer = Value::String(text.clone());
                        out.mode = Some(Mode::Other);
                    }
                    Some(Answer::Options { ids, other }) => {
                        let mut labels: Vec<Value> =
                            ids.iter().map(|id| Value::String(label(id))).collect();
                        labels.extend(other.iter().map(|t| Value::String(t.clone())));
                        out.answer = Value::Array(labels);
                        out.mode = Some(if other.is_some() {
                            Mode::Other
                        } else {
                            Mode::Option
                        });
                    }
                    Some(Answer::Text(text)) => {
                        out.answer = Value::String(text.clone());
                        out.mode = Some(Mode::Text);
                    }
                    Some(Answer::Approval(a)) => {
                        out.answer = Value::String(a.decision.as_str().to_owned());
                        out.mode = Some(mode_of(Mode::Decision));
                        out.decision = Some(a.decision);
                        out.scope = Some(a.scope);
                        out.edited_arguments = a.edited_arguments.clone();
                        out.reason = a.reason.clone();
                    }
                    Some(answer @ Answer::Form(_)) => {
                        out.answer = Value::Object(answer.form_values().unwrap_or_default());
                        out.mode = Some(Mode::Form);
                    }
                }
                out
            })
            .collect();

        Outcome {
            request_id: request_id.to_owned(),
            status: resolution.status(),
            questions,
            answered_by: answered_by.map(str::to_owned),
            answered_via: None,
            resolved_at,
            note: note(resolution, request.timeout(), request.on_timeout.as_ref()),
            default_applied: defaults.is_some(),
            votes: Vec::new(),
        }
    }

    /// The outcome with the surface the answer came through.
    pub fn answered_via(mut self, via: Option<&str>) -> Self {
        self.answered_via = via.map(str::to_owned);
        self
    }

    /// The outcome with a quorum request's votes.
    pub fn with_votes(mut self, votes: Vec<Vote>) -> Self {
        self.votes = votes;
        self
    }

    /// The values of form question `question_id`, once answered.
    pub fn form_values(&self, question_id: &str) -> Option<&Map<String, Value>> {
        self.questions
            .iter()
            .find(|q| q.id == question_id && q.mode == Some(Mode::Form))
            .and_then(|q| q.answer.as_object())
    }
}

/// The answers an `on_timeout` default gives (validation made sure it fits the request).
fn defaults(request: &NewRequest, default: &OnTimeout) -> Answers {
    let parts = request
        .questions
        .iter()
        .filter_map(|q| {
            let answer = match (default, &q.kind) {
                (OnTimeout::Decision { decision, reason }, QuestionKind::Approval(_)) => {
                    Answer::Approval(ApprovalAnswer {
                        decision: *decision,
                        scope: Scope::Once,
                        edited_arguments: None,
                        reason: reason.clone(),
                        grant_ttl_seconds: None,
                        grant_max_uses: None,
                    })
                }
                (OnTimeout::Option { option }, QuestionKind::Single(_)) => {
                    Answer::Option(option.clone())
                }
                (OnTimeout::Recommended(_), QuestionKind::Single(c)) => {
                    Answer::Option(c.recommended.clone()?)
                }
                _ => return None,
            };
            Some((q.id.clone(), answer))
        })
        .collect();
    Answers::from_parts(parts)
}

/// The plain-words note for a request that was not answered.
fn note(
    resolution: &Resolution,
    timeout: Option<u64>,
    default: Option<&OnTimeout>,
) -> Option<String> {
    const JUDGEMENT: &str = "use your best judgement and say which assumption you made.";
    let within = match timeout {
        Some(t) => format!("within {}", humanize_seconds(t)),
        None => "in time".to_owned(),
    };
    Some(match (resolution, default) {
        (Resolution::Answered(_), _) => return None,
        (Resolution::Expired, Some(d)) => {
            let what = match d {
                OnTimeout::Decision {
                    decision,
                    reason: Some(r),
                } => format!("{} ({r})", decision.as_str()),
                OnTimeout::Decision { decision, .. } => decision.as_str().to_owned(),
                OnTimeout::Option { option } => format!("the option {option:?}"),
                OnTimeout::Recommended(_) => "the recommended option".to_owned(),
            };
            format!(
                "The human did not answer {within}, so the default set for that case was applied: {what}. Treat it as the request's own fallback, not as a human's decision."
            )
        }
        (Resolution::Skipped, _) => format!("The human chose not to answer; {JUDGEMENT}"),
        (Resolution::Expired, None) => format!("The human did not answer {within}; {JUDGEMENT}"),
        (Resolution::Cancelled, _) => format!(
            "The question was cancelled before the human answered; do not wait for an answer, {JUDGEMENT}"
        ),
    })
}

pub(crate) fn rfc3339<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
}
