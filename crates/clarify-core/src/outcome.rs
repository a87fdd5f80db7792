//! Outcomes: what an agent and its LLM receive once a request is resolved.
//!
//! An outcome restates each question with what was offered and what was chosen, in labels and
//! text rather than ids, so a model can read it without the request at hand. A request that was not
//! answered carries a `note` telling the model plainly what happened and to go on with its own
//! judgement.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::answer::{Answer, Answers, Decision};
use crate::model::{NewRequest, QuestionKind, Scope, Status};
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
    #[serde(serialize_with = "rfc3339")]
    pub resolved_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Option => "option",
            Self::Other => "other",
            Self::Text => "text",
            Self::Decision => "decision",
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
        let answers = match resolution {
            Resolution::Answered(a) => Some(a),
            _ => None,
        };
        let questions = request
            .questions
            .iter()
            .map(|q| {
                let choices_offered = match &q.kind {
                    QuestionKind::Open => Vec::new(),
                    QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                        c.options.iter().map(|o| o.label.clone()).collect()
                    }
                    QuestionKind::Approval(_) => vec!["approve".to_owned(), "deny".to_owned()],
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
                        out.mode = Some(Mode::Option);
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
                        out.mode = Some(Mode::Decision);
                        out.decision = Some(a.decision);
                        out.scope = Some(a.scope);
                        out.edited_arguments = a.edited_arguments.clone();
                        out.reason = a.reason.clone();
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
            resolved_at,
            note: note(resolution, request.timeout()),
        }
    }
}

/// The plain-words note for a request that was not answered.
fn note(resolution: &Resolution, timeout: Option<u64>) -> Option<String> {
    const JUDGEMENT: &str = "use your best judgement and say which assumption you made.";
    Some(match resolution {
        Resolution::Answered(_) => return None,
        Resolution::Skipped => format!("The human chose not to answer; {JUDGEMENT}"),
        Resolution::Expired => match timeout {
            Some(t) => format!(
                "The human did not answer within {}; {JUDGEMENT}",
                humanize_seconds(t)
            ),
            None => format!("The human did not answer in time; {JUDGEMENT}"),
        },
        Resolution::Cancelled => format!(
            "The question was cancelled before the human answered; do not wait for an answer, {JUDGEMENT}"
        ),
    })
}

fn rfc3339<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&t.to_rfc3339_opts(SecondsFormat::Millis, true))
}
