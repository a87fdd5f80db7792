//! Validated domain values: a [`NewRequest`] and its [`Question`]s.
//!
//! Values of these types exist only after [`crate::parse_request`] has accepted them, so the rest
//! of the product never re-checks them. Their serde form is the canonical request shape, the one
//! the store persists and the API returns; feeding it back through `parse_request` yields the same
//! value.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::display::Block;
use crate::form::{Field, Form};

/// A validated request, ready to be stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewRequest {
    pub questions: Vec<Question>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Context>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The person the agent acts for; with four eyes on, that person may not answer or vote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Seconds until the request expires; `0` means never. The server default has already been
    /// applied when this value exists.
    pub timeout_seconds: u64,
    pub allow_skip: bool,
    /// Responder names allowed to answer; `None` lets every responder of the tenant answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responders: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub callback_url: Option<String>,
    /// A durable workflow the outcome resumes, besides `callback_url`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<Resume>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotency_key: Option<String>,
    /// Return an identical pending request of the same session instead of asking again.
    #[serde(default)]
    pub dedupe: bool,
    /// How many responders must approve (1 to 10); above 1 every question is an approval and
    /// each responder's decision is a vote.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub approvals_required: u32,
    /// While pending, announce the request again this often (at least 60 seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_every_seconds: Option<u64>,
    /// Warn the responders this many seconds before the request expires (`0`: no warning).
    /// Absent, the route's `warn_before` or the server's default (10 minutes) applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_before_seconds: Option<u64>,
    /// Escalation: after this many seconds of waiting, `escalate_to` may answer too and are
    /// notified. Both are set, or neither.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<String>,
    /// What the outcome carries when nobody answers in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
    /// What the person is shown above the questions; for an approval sent without any, derived
    /// from its action.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub display: Vec<Block>,
    /// One line naming what is asked (given, or derived), for list rows and notification titles.
    #[serde(default)]
    pub summary: String,
    /// The earlier request (same tenant, resolved) this one revises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revises: Option<String>,
    /// How much is at stake; with `[decisions] step_up = "high"`, a high-risk request is
    /// answered only after a passkey confirmation. Left out when normal, so requests stored
    /// before it read back unchanged.
    #[serde(default, skip_serializing_if = "Risk::is_normal")]
    pub risk: Risk,
}

/// What a request puts at stake (`risk`): `low`, `normal` (the default) or `high`.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Risk {
    Low,
    #[default]
    Normal,
    High,
}

impl Risk {
    /// The risk a word names: `low`, `normal` or `high`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "low" => Some(Self::Low),
            "normal" => Some(Self::Normal),
            "high" => Some(Self::High),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
        }
    }

    pub fn is_normal(&self) -> bool {
        *self == Self::Normal
    }
}

fn one() -> u32 {
    1
}

fn is_one(n: &u32) -> bool {
    *n == 1
}

/// How `responders` and `escalate_to` name a group: `group:sre` is every member of `sre`.
pub const GROUP_PREFIX: &str = "group:";

/// How `responders` and `escalate_to` name whoever is on call: `oncall:pagerduty:PSCHED1`,
/// `oncall:opsgenie:payments`, or `oncall:NAME` when one provider is configured. The server
/// reads the schedule when the request is created and at each escalation; the people it names
/// are kept with the request, so this name alone lets nobody in.
pub const ONCALL_PREFIX: &str = "oncall:";

/// The answer applied when a request expires unanswered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OnTimeout {
    /// Approvals: this decision for every approval question.
    Decision {
        decision: crate::answer::Decision,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// A one-question `single` request: this option.
    Option { option: String },
    /// Every `single` question: its recommended option.
    Recommended(RecommendedWord),
}

/// The word `"recommended"`, the only string `on_timeout` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecommendedWord {
    Recommended,
}

/// A durable workflow engine's wait that a request's outcome resumes: the outcome is POSTed there
/// once the request resolves, through the same outbox (retries, attempts, the outbound guard) as
/// a `callback_url`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Resume {
    /// A Restate awakeable, resolved through the Restate ingress with the outcome as its value.
    Restate {
        /// The ingress's base URL (`http://restate:8080`), without a trailing slash.
        ingress: String,
        /// The awakeable's id, as `ctx.awakeable()` gave it.
        awakeable: String,
    },
}

impl Resume {
    /// Where the outcome is POSTed.
    pub fn url(&self) -> String {
        match self {
            Self::Restate { ingress, awakeable } => {
                format!("{ingress}/restate/awakeables/{awakeable}/resolve")
            }
        }
    }
}

impl NewRequest {
    /// Where the outcome goes once the request resolves: its `callback_url`, then the workflow
    /// it resumes.
    pub fn outcome_urls(&self) -> Vec<String> {
        self.callback_url
            .iter()
            .cloned()
            .chain(self.resume.as_ref().map(Resume::url))
            .collect()
    }

    /// The tool an approval asks about: its first approval question's action name.
    pub fn tool(&self) -> Option<&str> {
        self.questions.iter().find_map(|q| match &q.kind {
            QuestionKind::Approval(a) => Some(a.action.name.as_str()),
            _ => None,
        })
    }

    /// The question with this id.
    pub fn question(&self, id: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.id == id)
    }

    /// Whether `responder`, a member of `groups`, may answer: always when the request names no
    /// responders. A name `group:NAME` lets every member of group `NAME` in. Once `escalated`,
    /// the escalation's responders may answer too.
    pub fn allows_responder(&self, responder: &str, groups: &[String], escalated: bool) -> bool {
        let names_them = |names: &[String]| {
            names.iter().any(|n| match n.strip_prefix(GROUP_PREFIX) {
                Some(group) => groups.iter().any(|g| g == group),
                None => n == responder,
            })
        };
        let escalated_to = || escalated && names_them(&self.escalate_to);
        match &self.responders {
            None => true,
            Some(names) => names_them(names) || escalated_to(),
        }
    }

    /// Whether `responder` is the person this request acts for (`on_behalf_of`), compared
    /// without regard to case, so `Alice@Example.com` is `alice@example.com`.
    pub fn acts_for(&self, responder: &str) -> bool {
        self.on_behalf_of
            .as_deref()
            .is_some_and(|p| p.to_lowercase() == responder.to_lowercase())
    }

    /// Whether answers are votes counted towards a quorum of approvals.
    pub fn is_quorum(&self) -> bool {
        self.approvals_required > 1
    }

    /// The timeout, or `None` when the request never expires.
    pub fn timeout(&self) -> Option<u64> {
        (self.timeout_seconds > 0).then_some(self.timeout_seconds)
    }
}

/// What the human is shown alongside the questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Context {
    Text(String),
    Json(Map<String, Value>),
}

/// One question of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "QuestionRepr", try_from = "QuestionRepr")]
pub struct Question {
    pub id: String,
    pub header: Option<String>,
    pub text: String,
    pub kind: QuestionKind,
}

/// What kind of answer a question takes, with what that kind needs.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionKind {
    /// Free text.
    Open,
    /// Exactly one option, or free text when `allow_other`.
    Single(Choices),
    /// One or more options, optionally with free text when `allow_other`.
    Multi(Choices),
    /// Approve or deny a proposed action.
    Approval(Approval),
    /// Typed fields answered together.
    Form(Form),
}

impl QuestionKind {
    /// The contract's name of this kind.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Single(_) => "single",
            Self::Multi(_) => "multi",
            Self::Approval(_) => "approval",
            Self::Form(_) => "form",
        }
    }

    /// The options of a `single` or `multi` question.
    pub fn choices(&self) -> Option<&Choices> {
        match self {
            Self::Single(c) | Self::Multi(c) => Some(c),
            Self::Open | Self::Approval(_) | Self::Form(_) => None,
        }
    }
}

/// The options of a `single` or `multi` question.
#[derive(Debug, Clone, PartialEq)]
pub struct Choices {
    pub options: Vec<Choice>,
    pub allow_other: bool,
    /// The id of the recommended option.
    pub recommended: Option<String>,
}

impl Choices {
    /// The option with this id.
    pub fn by_id(&self, id: &str) -> Option<&Choice> {
        self.options.iter().find(|o| o.id == id)
    }

    /// The option with this id or, failing that, this label (ignoring case).
    pub fn find(&self, id_or_label: &str) -> Option<&Choice> {
        self.by_id(id_or_label).or_else(|| {
            self.options
                .iter()
                .find(|o| o.label.to_lowercase() == id_or_label.to_lowercase())
        })
    }
}

/// One option of a choice question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// An approval question: the action the agent proposes and how the human may answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    pub action: Action,
    /// The scopes the human may grant, in the order `once`, `session`, `always`; never empty.
    pub scopes: Vec<Scope>,
    pub allow_edit: bool,
}

/// What the agent wants to do: a tool name and its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    pub name: String,
    #[serde(default = "empty_object")]
    pub arguments: Value,
}

fn empty_object() -> Value {
    Value::Object(Map::new())
}

/// How long an approval holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This one call.
    Once,
    /// The same tool with the same arguments for the rest of the session.
    Session,
    /// The same tool with the same arguments from now on.
    Always,
}

impl Scope {
    pub const ALL: [Scope; 3] = [Scope::Once, Scope::Session, Scope::Always];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Once => "once",
            Self::Session => "session",
            Self::Always => "always",
        }
    }

    /// Parses a scope name, ignoring case and surrounding space.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str().eq_ignore_ascii_case(s.trim()))
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a request is in its life: `pending`, then exactly one of the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Pending,
    Answered,
    Skipped,
    Expired,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Pending,
        Status::Answered,
        Status::Skipped,
        Status::Expired,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Answered => "answered",
            Self::Skipped => "skipped",
            Self::Expired => "expired",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the request has been resolved; a resolved request never changes again.
    pub fn is_resolved(self) -> bool {
        self != Self::Pending
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A status name that is not one of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown status {}; use pending, answered, skipped, expired or cancelled",
    crate::text::quoted(.0)
)]
pub struct StatusParseError(pub String);

impl FromStr for Status {
    type Err = StatusParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|status| status.as_str() == s)
            .ok_or_else(|| StatusParseError(s.to_owned()))
    }
}

/// The flat serde form of a [`Question`].
#[derive(Serialize, Deserialize)]
struct QuestionRepr {
    id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    header: Option<String>,
    text: String,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    options: Option<Vec<Choice>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allow_other: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    recommended: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    action: Option<Action>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scopes: Option<Vec<Scope>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    allow_edit: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<Field>>,
}

impl From<Question> for QuestionRepr {
    fn from(q: Question) -> Self {
        let mut repr = QuestionRepr {
            id: q.id,
            header: q.header,
            text: q.text,
            kind: q.kind.name().to_owned(),
            options: None,
            allow_other: None,
            recommended: None,
            action: None,
            scopes: None,
            allow_edit: None,
            fields: None,
        };
        match q.kind {
            QuestionKind::Open => {}
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                repr.options = Some(c.options);
                repr.allow_other = Some(c.allow_other);
                repr.recommended = c.recommended;
            }
            QuestionKind::Approval(a) => {
                repr.action = Some(a.action);
                repr.scopes = Some(a.scopes);
                repr.allow_edit = Some(a.allow_edit);
            }
            QuestionKind::Form(f) => repr.fields = Some(f.fields),
        }
        repr
    }
}

impl TryFrom<QuestionRepr> for Question {
    type Error = String;

    /// Reads back a question this crate serialized. Limits are not re-applied: a stored
    /// question stays readable after a server setting is lowered.
    fn try_from(r: QuestionRepr) -> Result<Self, Self::Error> {
        let choices = |options: Option<Vec<Choice>>| -> Result<Choices, String> {
            let options = options.filter(|o| !o.is_empty()).ok_or("options missing")?;
            Ok(Choices {
                options,
                allow_other: r.allow_other.unwrap_or(true),
                recommended: r.recommended.clone(),
            })
        };
        let kind = match r.kind.as_str() {
            "open" => QuestionKind::Open,
            "single" => QuestionKind::Single(choices(r.options)?),
            "multi" => QuestionKind::Multi(choices(r.options)?),
            "approval" => QuestionKind::Approval(Approval {
                action: r.action.ok_or("action missing")?,
                scopes: r
                    .scopes
                    .filter(|s| !s.is_empty())
                    .unwrap_or_else(|| vec![Scope::Once]),
                allow_edit: r.allow_edit.unwrap_or(false),
            }),
            "form" => QuestionKind::Form(Form {
                fields: r.fields.filter(|f| !f.is_empty()).ok_or("fields missing")?,
            }),
            other => return Err(format!("unknown question kind {other:?}")),
        };
        Ok(Question {
            id: r.id,
            header: r.header,
            text: r.text,
            kind,
        })
    }
}
