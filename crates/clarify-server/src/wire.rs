//! The JSON only the `/v1` routes speak: pages, deliveries, notifications, keys, and the
//! documented shapes of request bodies. The record and outcome every door renders are in
//! [`crate::shared::wire`].

use clarify_store::{ApiKey, Attempt, Delivery};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::shared::wire::{ActionBody, RecordBody, time};

/// A page of requests, newest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct PageBody {
    pub requests: Vec<RecordBody>,
    /// Pass as `cursor` for the next page; `null` on the last page.
    pub next_cursor: Option<String>,
}

/// A webhook delivery and its attempts.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryBody {
    pub id: u64,
    pub url: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    /// The event it announces: `request.reminded` or `request.escalated` for a pending
    /// request; absent for the delivery of the resolution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    pub attempts: Vec<AttemptBody>,
}

impl From<&Delivery> for DeliveryBody {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id,
            url: d.url.clone(),
            status: d.status.as_str().to_owned(),
            created_at: time(d.created_at),
            next_attempt_at: d.next_attempt_at.map(time),
            event: d.event.map(|e| crate::events::event_name(e).to_owned()),
            attempts: d.attempts.iter().map(AttemptBody::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AttemptBody {
    pub number: u32,
    pub at: String,
    /// The receiver's HTTP status, when it answered.
    pub status_code: Option<u16>,
    pub error: Option<String>,
    pub duration_ms: u64,
}

impl From<&Attempt> for AttemptBody {
    fn from(a: &Attempt) -> Self {
        Self {
            number: a.number,
            at: time(a.at),
            status_code: a.status_code,
            error: a.error.clone(),
            duration_ms: a.duration_ms,
        }
    }
}

/// An announcement of a request on a channel, and its attempts.
#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationBody {
    pub id: u64,
    /// The channel's configured name.
    pub channel: String,
    /// `request.created` for the announcement, `request.reminded` or `request.escalated`.
    pub event: String,
    /// `pending`, `delivered` or `failed`.
    pub status: String,
    pub created_at: String,
    pub next_attempt_at: Option<String>,
    /// The platform's reference to the message posted (ntfy: the message id).
    pub message_ref: Option<String>,
    pub attempts: Vec<AttemptBody>,
}

impl From<&Delivery> for NotificationBody {
    fn from(d: &Delivery) -> Self {
        Self {
            id: d.id,
            channel: d.channel.clone().unwrap_or_default(),
            event: crate::events::event_name(d.event.unwrap_or(clarify_store::EventKind::Created))
                .to_owned(),
            status: d.status.as_str().to_owned(),
            created_at: time(d.created_at),
            next_attempt_at: d.next_attempt_at.map(time),
            message_ref: d.message_ref.clone(),
            attempts: d.attempts.iter().map(AttemptBody::from).collect(),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct NotificationsBody {
    pub notifications: Vec<NotificationBody>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveriesBody {
    pub deliveries: Vec<DeliveryBody>,
}

/// An API key, without its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyBody {
    pub id: String,
    pub name: String,
    /// `agent`, `responder` or `admin`.
    pub role: String,
    pub tenant: String,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

impl From<&ApiKey> for KeyBody {
    fn from(k: &ApiKey) -> Self {
        Self {
            id: k.id.clone(),
            name: k.name.clone(),
            role: k.role.as_str().to_owned(),
            tenant: k.tenant.clone(),
            created_at: time(k.created_at),
            revoked_at: k.revoked_at.map(time),
        }
    }
}

/// The body of `POST /v1/requests`, in its canonical shape. LLM-shaped variants (`question` with
/// `choices`, `prompt` with `options`, option objects with `title`, ...) are accepted too and
/// coerced before validation.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct CreateRequestBody {
    /// 1 to 5 questions answered together.
    pub questions: Vec<NewQuestionBody>,
    /// Text, or a JSON object, shown to the human.
    pub context: Option<Value>,
    pub session: Option<String>,
    pub agent: Option<String>,
    /// At most 10.
    pub tags: Option<Vec<String>>,
    /// The LLM's id for the tool call that raised this request.
    pub tool_call_id: Option<String>,
    /// Absent: the server default (3600); `0`: never expires.
    pub timeout_seconds: Option<u64>,
    /// Default true.
    pub allow_skip: Option<bool>,
    /// Names of the responders allowed to answer; absent lets every responder answer.
    pub responders: Option<Vec<String>>,
    /// Where the outcome is POSTed once resolved (signed; see `GET /v1/webhook-secret`).
    pub callback_url: Option<String>,
    /// Or the `Idempotency-Key` header: a repeated key returns the original request.
    pub idempotency_key: Option<String>,
    /// Return an identical pending request of the same session instead of asking again.
    pub dedupe: Option<bool>,
    /// 1 to 10 (default 1); above 1 every question must be an approval, each allowed
    /// responder's decision is a vote, and a deny is final.
    pub approvals_required: Option<u32>,
    /// At least 60: while pending, announce the request again this often.
    pub remind_every_seconds: Option<u64>,
    /// At least 1, with `escalate_to`: after this long pending, those responders may answer.
    pub escalate_after_seconds: Option<u64>,
    pub escalate_to: Option<Vec<String>>,
    /// The answer applied at expiry: `{"decision": "approve"|"deny", "reason"?}` for
    /// approvals, `{"option": id}` or `"recommended"` for a single choice.
    #[schema(value_type = Option<Object>)]
    pub on_timeout: Option<Value>,
}

#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct NewQuestionBody {
    /// Default `q1`, `q2`, ... by position.
    pub id: Option<String>,
    /// At most 32 characters.
    pub header: Option<String>,
    /// Required; at most 4,000 characters.
    pub text: String,
    /// `open`, `single`, `multi`, `approval` or `form`.
    pub kind: Option<String>,
    /// form: 1 to 20 fields, `{id, label, type, required?, description?, default?, ...}` with
    /// the limits of their type.
    #[schema(value_type = Option<Vec<Object>>)]
    pub fields: Option<Vec<Value>>,
    /// form, instead of `fields`: a flat JSON Schema object (MCP elicitation's
    /// `requestedSchema` shape), coerced into fields.
    #[schema(value_type = Option<Object>)]
    pub schema: Option<Value>,
    /// single and multi: `{id?, label, description?}` objects or bare label strings.
    #[schema(value_type = Option<Vec<Object>>)]
    pub options: Option<Vec<Value>>,
    pub allow_other: Option<bool>,
    pub recommended: Option<String>,
    pub action: Option<ActionBody>,
    pub scopes: Option<Vec<String>>,
    pub allow_edit: Option<bool>,
}

/// The body of an answer: per-question answers, `{"skip": true}`, or (for a one-question
/// request) the answer object itself.
#[derive(Debug, Serialize, ToSchema)]
#[allow(dead_code)]
pub struct AnswerRequestBody {
    /// Question id → `{"option": id}` | `{"other": text}` | `{"options": [ids], "other"?}` |
    /// `{"text": text}` | `{"decision": "approve"|"deny", "scope"?, "edited_arguments"?, "reason"?}`.
    #[schema(value_type = Option<Object>)]
    pub answers: Option<Value>,
    pub skip: Option<bool>,
}
