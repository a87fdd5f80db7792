//! The JSON of a request and its outcome, the same at every door: `/v1` responses, the event
//! stream, webhook bodies, the answer link's JSON view and the record an error carries on a
//! conflict.
//!
//! The server writes these types and `clarify-client` reads them back into the same types, so a
//! field renamed on one side fails to compile on the other, and nothing above the client indexes
//! a record's JSON by hand. Each is converted explicitly from the store's and core's types, so
//! the domain can change without silently changing the wire, and each carries the OpenAPI schema
//! the document at `/openapi.json` is generated from. Each also keeps, in `extra`, the fields it
//! does not know: a newer server's fields survive a client's read and write unchanged, and the
//! server, which knows every field, leaves it empty. The bodies only one room speaks live in
//! that room of the server.

use chrono::{DateTime, SecondsFormat, Utc};
use clarify_core::display::{Block, Content, Fact};
use clarify_core::policy::{ApprovalError, ApprovalReply};
use clarify_core::quorum::Vote;
use clarify_core::{
    Context, Decision, Field, FieldKind, Limits, NewRequest, Outcome, Question, QuestionKind,
    Scope, Status, ValidationError,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::record::{EventKind, RequestRecord};

#[cfg(test)]
mod tests;

/// An RFC 3339 UTC time with milliseconds, as every time in the API is written.
pub fn time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A time as the API writes it, read back; `None` when it is not RFC 3339.
pub fn parse_time(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// A request as the API returns it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RecordBody {
    pub id: String,
    /// `pending`, `answered`, `skipped`, `expired` or `cancelled`.
    pub status: String,
    /// The questions as validated: ids filled in, options with ids.
    pub questions: Vec<QuestionBody>,
    /// Shown to the human: text, or a JSON object.
    pub context: Option<Value>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub tags: Vec<String>,
    pub tool_call_id: Option<String>,
    pub allow_skip: bool,
    /// Who may answer: names, and `group:NAME` for every member of a group.
    pub responders: Option<Vec<String>>,
    /// The person the agent acts for (four eyes keeps them from answering).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    pub callback_url: Option<String>,
    /// The durable workflow the outcome resumes (`{"restate": {"ingress", "awakeable"}}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub resume: Option<Value>,
    pub timeout_seconds: u64,
    /// What the outcome carries when nobody answers in time: `{"decision", "reason"?}`,
    /// `{"option"}` or `"recommended"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub on_timeout: Option<Value>,
    /// How many responders must approve; above 1 each answer is a vote.
    pub approvals_required: u32,
    /// A quorum request's votes so far, in the order cast.
    pub votes: Vec<VoteBody>,
    /// While pending, the request is announced again this often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_every_seconds: Option<u64>,
    /// When the next reminder is due, while pending.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_reminder_at: Option<String>,
    /// The responders are warned this long before the request expires (`0`: never); absent,
    /// the route's or the server's default applies (10 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_before_seconds: Option<u64>,
    /// After this long pending, `escalate_to` may answer too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_after_seconds: Option<u64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<String>,
    /// When the request escalated; absent before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalated_at: Option<String>,
    /// Each reading of the on-call schedules (`oncall:...`) among `responders` and
    /// `escalate_to`: when the request was created, and again at its escalation. Absent when it
    /// names none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_call: Vec<OnCallBody>,
    pub created_at: String,
    /// `null` when the request never expires.
    pub expires_at: Option<String>,
    pub resolved_at: Option<String>,
    /// The name of the key that resolved it; `null` for expiry and for answers through a link.
    pub answered_by: Option<String>,
    /// The signed single-use answer link; shown to agents and admins only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_url: Option<String>,
    /// Present once resolved.
    pub outcome: Option<OutcomeBody>,
    /// One line naming what is asked: given by the agent, or derived (an approval's action,
    /// else the first question's header and text).
    pub summary: String,
    /// What the person is shown above the questions, in order. An approval sent without any
    /// has blocks derived from its action. An image block carries the `url` it is served at
    /// (`/v1/requests/{id}/display/{n}`, same auth as the record) instead of its data.
    pub display: Vec<BlockBody>,
    /// The earlier request this one revises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revises: Option<String>,
    /// `low`, `normal` or `high`. With `[decisions] step_up = "high"`, a high-risk request is
    /// answered only after a passkey confirmation made for that answer.
    pub risk: String,
    /// Present (`true`) when answering needs a passkey confirmation made for that answer
    /// (`[decisions] step_up` and a high-risk request): `POST /v1/requests/{id}/step-up`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_up: bool,
    /// Only in the response that created the request, to the key that created it: what lets
    /// that key record the answer its MCP client's user gave (`POST /v1/requests/{id}/client-answer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_answer_token: Option<String>,
    /// Once resolved: the decision signed (a compact JWS, `EdDSA`), to check against
    /// `/.well-known/jwks.json` and spend at `POST /v1/receipts/spend`. Absent for a moment
    /// after the resolution on PostgreSQL, until the audit chain has numbered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

/// One reading of an on-call schedule a request names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OnCallBody {
    /// The responder as the request names it: `oncall:pagerduty:PSCHED1`.
    pub responder: String,
    /// Who was on call, by responder name: they may answer.
    pub people: Vec<String>,
    /// Why the schedule could not be read (the request's other responders were notified, and
    /// the schedule is read again at the escalation); absent when it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unreadable: Option<String>,
    /// When it was read.
    pub read_at: String,
}

impl RecordBody {
    pub fn new(record: &RequestRecord, answer_url: Option<String>) -> Self {
        let request = &record.request;
        let resolution = record.resolution.as_ref();
        Self {
            id: record.id.clone(),
            status: record.status.to_string(),
            questions: request.questions.iter().map(QuestionBody::from).collect(),
            context: request.context.as_ref().map(|c| match c {
                Context::Text(t) => Value::String(t.clone()),
                Context::Json(m) => Value::Object(m.clone()),
            }),
            session: request.session.clone(),
            agent: request.agent.clone(),
            tags: request.tags.clone(),
            tool_call_id: request.tool_call_id.clone(),
            allow_skip: request.allow_skip,
            responders: request.responders.clone(),
            on_behalf_of: request.on_behalf_of.clone(),
            callback_url: request.callback_url.clone(),
            resume: request
                .resume
                .as_ref()
                .and_then(|r| serde_json::to_value(r).ok()),
            timeout_seconds: request.timeout_seconds,
            on_timeout: request
                .on_timeout
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok()),
            approvals_required: request.approvals_required,
            votes: record.votes.iter().map(VoteBody::from).collect(),
            remind_every_seconds: request.remind_every_seconds,
            next_reminder_at: record.remind_at.map(time),
            warn_before_seconds: request.warn_before_seconds,
            escalate_after_seconds: request.escalate_after_seconds,
            escalate_to: request.escalate_to.clone(),
            escalated_at: record.escalated_at.map(time),
            on_call: record
                .on_call
                .iter()
                .map(|s| OnCallBody {
                    responder: s.responder.clone(),
                    people: s.people.clone(),
                    unreadable: s.unreadable.clone(),
                    read_at: time(s.read_at),
                })
                .collect(),
            created_at: time(record.created_at),
            expires_at: record.expires_at.map(time),
            resolved_at: resolution.map(|r| time(r.resolved_at)),
            answered_by: resolution.and_then(|r| r.actor.name.clone()),
            answer_url,
            outcome: record.outcome().as_ref().map(OutcomeBody::from),
            summary: request.summary.clone(),
            display: request
                .display
                .iter()
                .enumerate()
                .map(|(n, b)| BlockBody::new(&record.id, n, b))
                .collect(),
            revises: request.revises.clone(),
            risk: request.risk.as_str().to_owned(),
            step_up: false,
            client_answer_token: None,
            receipt: None,
            extra: Map::new(),
        }
    }

    /// Whether the request is resolved: any status but `pending`.
    pub fn is_resolved(&self) -> bool {
        !matches!(self.status.as_str(), "pending" | "")
    }

    /// The request as core validates it, for typed replies and answer checks on a client.
    /// Records are in canonical form, which parses back to the same request; the time limit is
    /// left out (the server keeps it), and the options are limited only by core's ceiling.
    pub fn request(&self) -> Result<NewRequest, ValidationError> {
        let mut canonical = Map::new();
        let mut put = |field: &str, value: Value| {
            if !value.is_null() {
                canonical.insert(field.to_owned(), value);
            }
        };
        put("questions", to_json(&self.questions));
        put("context", to_json(&self.context));
        put("session", to_json(&self.session));
        put("agent", to_json(&self.agent));
        put("tags", to_json(&self.tags));
        put("tool_call_id", to_json(&self.tool_call_id));
        put("allow_skip", Value::Bool(self.allow_skip));
        put("responders", to_json(&self.responders));
        put("timeout_seconds", Value::from(0));
        let limits = Limits::new(Limits::MAX_OPTIONS_CEILING, Limits::DEFAULT_TIMEOUT_SECONDS)
            .unwrap_or_default();
        clarify_core::parse_request(&Value::Object(canonical), &limits)
    }

    /// The display blocks as a client shows them: an image block has its `url` instead of its
    /// data (the data is read from there), and is kept with its alt text. A block of a type
    /// this version does not know is left out.
    pub fn blocks(&self) -> Vec<Block> {
        self.display.iter().filter_map(BlockBody::block).collect()
    }

    /// The same record with its receipt (`None` while pending), also on its outcome.
    pub fn with_receipt(mut self, receipt: Option<String>) -> Self {
        if let Some(outcome) = &mut self.outcome {
            outcome.receipt.clone_from(&receipt);
        }
        self.receipt = receipt;
        self
    }
}

/// One display block. `type` says which fields are present: `markdown` (`text`), `diff`
/// (`path`?, `diff`: a unified diff), `code` (`language`?, `text`), `fields` (`items`), `image`
/// (`alt`, `url`, `media_type`, `bytes`), `link` (`url`; `title` is its text).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BlockBody {
    /// `markdown`, `diff`, `code`, `fields`, `image` or `link`.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<FactBody>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// image: `image/png`, `image/jpeg`, `image/gif` or `image/webp`, as its bytes show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// image: its size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

/// One fact of a `fields` block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FactBody {
    pub label: String,
    pub value: String,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

impl BlockBody {
    /// Block `n` of request `id`.
    pub fn new(id: &str, n: usize, block: &Block) -> Self {
        use clarify_core::display::ImageData;
        let mut body = Self {
            kind: block.content.type_name().to_owned(),
            title: block.title.clone(),
            text: None,
            language: None,
            path: None,
            diff: None,
            items: None,
            alt: None,
            url: None,
            media_type: None,
            bytes: None,
            extra: Map::new(),
        };
        match &block.content {
            Content::Markdown { text } => body.text = Some(text.clone()),
            Content::Diff { path, diff } => {
                body.path.clone_from(path);
                body.diff = Some(diff.clone());
            }
            Content::Code { language, text } => {
                body.language.clone_from(language);
                body.text = Some(text.clone());
            }
            Content::Fields { items } => {
                body.items = Some(
                    items
                        .iter()
                        .map(|f| FactBody {
                            label: f.label.clone(),
                            value: f.value.clone(),
                            extra: Map::new(),
                        })
                        .collect(),
                );
            }
            Content::Image { data, alt } => {
                body.alt = Some(alt.clone());
                body.url = Some(image_path(id, n));
                if let Ok(image) = ImageData::parse(data) {
                    body.media_type = Some(image.media_type.to_owned());
                    body.bytes = Some(image.bytes.len());
                }
            }
            Content::Link { url } => body.url = Some(url.clone()),
        }
        body
    }
}

impl BlockBody {
    /// The block as core holds it, an image without its data; `None` for a type this version
    /// does not know or a block missing what its type needs.
    pub fn block(&self) -> Option<Block> {
        let text = || self.text.clone();
        let content = match self.kind.as_str() {
            "markdown" => Content::Markdown { text: text()? },
            "diff" => Content::Diff {
                path: self.path.clone(),
                diff: self.diff.clone()?,
            },
            "code" => Content::Code {
                language: self.language.clone(),
                text: text()?,
            },
            "fields" => Content::Fields {
                items: self
                    .items
                    .as_ref()?
                    .iter()
                    .map(|f| Fact {
                        label: f.label.clone(),
                        value: f.value.clone(),
                    })
                    .collect(),
            },
            "image" => Content::Image {
                data: String::new(),
                alt: self.alt.clone().unwrap_or_default(),
            },
            "link" => Content::Link {
                url: self.url.clone()?,
            },
            _ => return None,
        };
        Some(Block {
            title: self.title.clone(),
            content,
        })
    }
}

/// Where block `n` of request `id` (an image) is served.
pub fn image_path(id: &str, n: usize) -> String {
    format!("/v1/requests/{id}/display/{n}")
}

/// One question of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuestionBody {
    pub id: String,
    pub header: Option<String>,
    pub text: String,
    /// `open`, `single`, `multi`, `approval` or `form`.
    pub kind: String,
    /// single and multi only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<OptionBody>>,
    /// single and multi only: whether free text is accepted instead of an option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_other: Option<bool>,
    /// single and multi only: the id of the recommended option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recommended: Option<String>,
    /// approval only: what the agent wants to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionBody>,
    /// approval only: the scopes the human may grant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scopes: Option<Vec<String>>,
    /// approval only: whether the human may edit the arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_edit: Option<bool>,
    /// form only: the fields, in the order shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldBody>>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

/// One field of a form question; the limits present are those of its type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FieldBody {
    pub id: String,
    pub label: String,
    /// `text`, `number`, `integer`, `boolean`, `choice` or `choices`.
    #[serde(rename = "type")]
    pub kind: String,
    pub required: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The value used when the field is left empty; of the field's type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub default: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_length: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
    /// A regular expression the text must contain a match of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern: Option<String>,
    /// `email`, `url`, `date` (YYYY-MM-DD) or `datetime` (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<OptionBody>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_items: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_items: Option<usize>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

impl From<&Field> for FieldBody {
    fn from(f: &Field) -> Self {
        let mut body = Self {
            id: f.id.clone(),
            label: f.label.clone(),
            kind: f.kind.name().to_owned(),
            required: f.required,
            description: f.description.clone(),
            default: f.default.clone(),
            min_length: None,
            max_length: None,
            pattern: None,
            format: None,
            minimum: None,
            maximum: None,
            options: f.kind.options().map(options),
            min_items: None,
            max_items: None,
            extra: Map::new(),
        };
        match &f.kind {
            FieldKind::Text {
                min_length,
                max_length,
                pattern,
                format,
            } => {
                body.min_length = *min_length;
                body.max_length = *max_length;
                body.pattern.clone_from(pattern);
                body.format = format.map(|f| f.as_str().to_owned());
            }
            FieldKind::Number { minimum, maximum } => {
                body.minimum = *minimum;
                body.maximum = *maximum;
            }
            // Integers are exact in f64 up to 2^53, far beyond any bound a form needs.
            FieldKind::Integer { minimum, maximum } => {
                body.minimum = minimum.map(|m| m as f64);
                body.maximum = maximum.map(|m| m as f64);
            }
            FieldKind::Choices {
                min_items,
                max_items,
                ..
            } => {
                body.min_items = *min_items;
                body.max_items = *max_items;
            }
            FieldKind::Boolean | FieldKind::Choice { .. } => {}
        }
        body
    }
}

fn options(options: &[clarify_core::Choice]) -> Vec<OptionBody> {
    options
        .iter()
        .map(|o| OptionBody {
            id: o.id.clone(),
            label: o.label.clone(),
            description: o.description.clone(),
            extra: Map::new(),
        })
        .collect()
}

impl From<&Question> for QuestionBody {
    fn from(q: &Question) -> Self {
        let mut body = Self {
            id: q.id.clone(),
            header: q.header.clone(),
            text: q.text.clone(),
            kind: q.kind.name().to_owned(),
            options: None,
            allow_other: None,
            recommended: None,
            action: None,
            scopes: None,
            allow_edit: None,
            fields: None,
            extra: Map::new(),
        };
        match &q.kind {
            QuestionKind::Open => {}
            QuestionKind::Form(f) => {
                body.fields = Some(f.fields.iter().map(FieldBody::from).collect())
            }
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                body.options = Some(options(&c.options));
                body.allow_other = Some(c.allow_other);
                body.recommended = c.recommended.clone();
            }
            QuestionKind::Approval(a) => {
                body.action = Some(ActionBody {
                    name: a.action.name.clone(),
                    arguments: a.action.arguments.clone(),
                    extra: Map::new(),
                });
                body.scopes = Some(a.scopes.iter().map(|s| s.as_str().to_owned()).collect());
                body.allow_edit = Some(a.allow_edit);
            }
        }
        body
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OptionBody {
    pub id: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ActionBody {
    pub name: String,
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

/// What an agent and its model receive once a request is resolved.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OutcomeBody {
    pub request_id: String,
    pub status: String,
    pub questions: Vec<QuestionOutcomeBody>,
    pub answered_by: Option<String>,
    /// Where the answer came from: `inbox`, `api`, `link`, `personal_link`, `push`, `slack`,
    /// `telegram`, `discord`, `mcp`, `rust`, ...; `null` when nobody answered.
    pub answered_via: Option<String>,
    pub resolved_at: String,
    /// For statuses other than `answered`: what happened, for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Present and true when the request expired and its `on_timeout` default is the answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub default_applied: bool,
    /// A quorum request's votes, in the order cast.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<VoteBody>,
    /// The decision signed (a compact JWS, `EdDSA`): proof for an executor, checked against
    /// `/.well-known/jwks.json` and spent once at `POST /v1/receipts/spend`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receipt: Option<String>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

impl OutcomeBody {
    /// The same outcome with its receipt.
    pub fn with_receipt(mut self, receipt: Option<String>) -> Self {
        self.receipt = receipt;
        self
    }

    /// What the answer to its approval question says, as core's [`ApprovalReply::from_outcome`]
    /// reads a stored outcome: what a gate or a hook acts on.
    pub fn approval(&self) -> Result<ApprovalReply, ApprovalError> {
        let request_id = self.request_id.clone();
        let status: Status = self.status.parse().map_err(|_| {
            ApprovalError::Malformed(format!("status: unknown status {:?}", self.status))
        })?;
        if status == Status::Pending {
            return Err(ApprovalError::Pending { request_id });
        }
        let question = self
            .questions
            .iter()
            .find(|q| q.kind == "approval")
            .ok_or(ApprovalError::NotAnApproval { request_id })?;
        let decision = question
            .decision
            .as_deref()
            .map(|d| {
                Decision::parse(d)
                    .ok_or_else(|| ApprovalError::Malformed(format!("unknown decision {d:?}")))
            })
            .transpose()?;
        let scope = question
            .scope
            .as_deref()
            .map(|name| {
                Scope::parse(name)
                    .ok_or_else(|| ApprovalError::Malformed(format!("unknown scope {name:?}")))
            })
            .transpose()?;
        Ok(ApprovalReply {
            status,
            decision,
            scope,
            edited_arguments: question.edited_arguments.clone(),
            reason: question.reason.clone(),
            note: self.note.clone(),
        })
    }
}

/// One responder's vote on a quorum request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct VoteBody {
    pub by: String,
    /// `approve`, `deny` or `revise`.
    pub decision: String,
    /// The narrowest scope the vote approved (`once` for a deny).
    pub scope: String,
    pub reason: Option<String>,
    pub at: String,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

impl From<&Vote> for VoteBody {
    fn from(v: &Vote) -> Self {
        Self {
            by: v.by.clone(),
            decision: v.decision.as_str().to_owned(),
            scope: v.scope.as_str().to_owned(),
            reason: v.reason.clone(),
            at: time(v.at),
            extra: Map::new(),
        }
    }
}

impl From<&Outcome> for OutcomeBody {
    fn from(o: &Outcome) -> Self {
        Self {
            request_id: o.request_id.clone(),
            status: o.status.to_string(),
            questions: o
                .questions
                .iter()
                .map(|q| QuestionOutcomeBody {
                    id: q.id.clone(),
                    question: q.question.clone(),
                    kind: q.kind.to_owned(),
                    choices_offered: q.choices_offered.clone(),
                    answer: q.answer.clone(),
                    mode: q.mode.map(|m| m.as_str().to_owned()),
                    decision: q.decision.map(|d| d.as_str().to_owned()),
                    scope: q.scope.map(|s| s.as_str().to_owned()),
                    edited_arguments: q.edited_arguments.clone(),
                    reason: q.reason.clone(),
                    extra: Map::new(),
                })
                .collect(),
            answered_by: o.answered_by.clone(),
            answered_via: o.answered_via.clone(),
            resolved_at: time(o.resolved_at),
            note: o.note.clone(),
            default_applied: o.default_applied,
            votes: o.votes.iter().map(VoteBody::from).collect(),
            receipt: None,
            extra: Map::new(),
        }
    }
}

/// One question of an outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct QuestionOutcomeBody {
    pub id: String,
    pub question: String,
    pub kind: String,
    /// The labels offered (`approve`, `deny` and `revise` for an approval; empty for open
    /// text).
    pub choices_offered: Vec<String>,
    /// The chosen label, the labels (multi), the text, the decision, or a form's values object;
    /// `null` when unanswered.
    #[schema(value_type = Object)]
    pub answer: Value,
    /// `option`, `other`, `text`, `decision`, `form`, or `default` (an `on_timeout` default);
    /// `null` when unanswered.
    pub mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub edited_arguments: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten, default)]
    #[schema(ignore)]
    pub extra: Map<String, Value>,
}

/// A value as JSON; the wire types always serialize, and nothing here panics.
fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The name of an event kind, as the event stream's `event` and a webhook's `Clarify-Event`
/// write it.
pub fn event_name(kind: EventKind) -> &'static str {
    match kind {
        EventKind::Created => "request.created",
        EventKind::Answered => "request.answered",
        EventKind::Skipped => "request.skipped",
        EventKind::Expired => "request.expired",
        EventKind::Cancelled => "request.cancelled",
        EventKind::Voted => "request.voted",
        EventKind::Reminded => "request.reminded",
        EventKind::Escalated => "request.escalated",
        EventKind::Warned => "request.warned",
        EventKind::Extended => "request.extended",
        EventKind::Refused => "request.refused",
        EventKind::GrantSuggestedAccepted => "grant.suggested_accepted",
        EventKind::Unknown => "unknown",
    }
}
