//! Why a request was refused.
//!
//! Each variant has a stable snake_case [`code`](ValidationError::code) that clients may match
//! on, and a message that names the field (as a path such as `questions[1].options`) and the
//! limit, for the person or model that has to fix the input.

use crate::text::quoted;

/// A create-request body that cannot become a [`crate::NewRequest`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    #[error("the request must be a JSON object, got {got}")]
    NotAnObject { got: &'static str },
    #[error("{field}: expected {expected}, got {got}")]
    InvalidType {
        field: String,
        expected: &'static str,
        got: &'static str,
    },
    #[error("{field}: is required")]
    Missing { field: String },
    #[error("{field}: must not be empty")]
    Empty { field: String },
    #[error("{field}: at most {max} characters are allowed, got {got}")]
    TooLong {
        field: String,
        max: usize,
        got: usize,
    },
    #[error(
        "both `questions` and the one-question shorthand `{shorthand}` were given; send one of them"
    )]
    AmbiguousShape { shorthand: &'static str },
    #[error("questions: at least 1 question is required")]
    NoQuestions,
    #[error("questions: at most {max} questions are allowed, got {got}")]
    TooManyQuestions { max: usize, got: usize },
    #[error("{field}: unknown kind {}; use open, single, multi, approval or form", quoted(.got))]
    UnknownKind { field: String, got: String },
    #[error("{field}: a {kind} question needs at least 1 option")]
    NoOptions { field: String, kind: &'static str },
    #[error(
        "{field}: none of the {given} options has a usable label (label, description, text or title); give each option a label"
    )]
    AllOptionsDropped { field: String, given: usize },
    #[error("{field}: at most {max} options are allowed, got {got}")]
    TooManyOptions {
        field: String,
        max: usize,
        got: usize,
    },
    #[error("{field}: {kind} questions take no options; use kind single or multi")]
    OptionsNotAllowed { field: String, kind: &'static str },
    #[error("{field}: the label {} appears twice (labels must differ ignoring case)", quoted(.label))]
    DuplicateLabel { field: String, label: String },
    #[error("{field}: the id {} appears twice", quoted(.id))]
    DuplicateId { field: String, id: String },
    #[error("{field}: {} is not a valid id; use 1 to 64 letters, digits, '-', '_' or '.'", quoted(.id))]
    InvalidId { field: String, id: String },
    #[error("{field}: {} is neither the id nor the label of an option", quoted(.got))]
    UnknownRecommended { field: String, got: String },
    #[error("{field}: an approval question needs an action with a name")]
    MissingAction { field: String },
    #[error("{field}: unknown scope {}; use once, session or always", quoted(.got))]
    UnknownScope { field: String, got: String },
    #[error("risk: unknown risk {}; use low, normal or high", quoted(.got))]
    UnknownRisk { got: String },
    #[error("{field}: at most {max} tags are allowed, got {got}")]
    TooManyTags {
        field: String,
        max: usize,
        got: usize,
    },
    #[error("{field}: at most {max} responders are allowed, got {got}")]
    TooManyResponders {
        field: String,
        max: usize,
        got: usize,
    },
    #[error("{field}: at most {max} bytes of JSON are allowed, got {got}")]
    JsonTooLarge {
        field: String,
        max: usize,
        got: usize,
    },
    #[error(
        "{field}: must be a whole number of seconds from 0 (never expires) to {max}, got {got}"
    )]
    TimeoutOutOfRange {
        field: String,
        max: u64,
        got: String,
    },
    #[error("{field}: {reason}")]
    InvalidUrl { field: String, reason: String },
    #[error("{field}: unknown field{}", .hint.as_ref().map(|h| format!("; did you mean {h}?")).unwrap_or_default())]
    UnknownField { field: String, hint: Option<String> },
    #[error("{field}: {kind} questions take no fields; use kind form")]
    FieldsNotAllowed { field: String, kind: String },
    #[error("{field}: a form question needs at least 1 field")]
    NoFields { field: String },
    #[error("{field}: at most {max} fields are allowed, got {got}")]
    TooManyFields {
        field: String,
        max: usize,
        got: usize,
    },
    #[error(
        "{field}: unknown field type {}; use text, number, integer, boolean, choice or choices",
        quoted(.got)
    )]
    UnknownFieldType { field: String, got: String },
    #[error("{field}: a {kind} field takes no such limit")]
    LimitNotAllowed { field: String, kind: String },
    #[error("{field}: must be at most {max}, got {got}")]
    LimitTooLarge { field: String, max: u64, got: u64 },
    #[error("{field}: {low} is above {high}")]
    InvalidRange {
        field: String,
        low: String,
        high: String,
    },
    #[error("{field}: {reason}")]
    InvalidPattern { field: String, reason: String },
    #[error("{field}: unknown format {}; use email, url, date or datetime", quoted(.got))]
    UnknownFormat { field: String, got: String },
    #[error("{field}: the default does not fit its own field: {reason}")]
    InvalidDefault { field: String, reason: String },
    #[error("{field}: {reason}")]
    UnsupportedSchema { field: String, reason: String },
    #[error("approvals_required: must be a whole number from 1 to {max}, got {got}")]
    InvalidQuorum { max: u32, got: String },
    #[error(
        "approvals_required: a quorum of {required} needs every question to be an approval; {field} is {kind}"
    )]
    QuorumNeedsApprovals {
        required: u32,
        field: String,
        kind: &'static str,
    },
    #[error(
        "{field}: allow_edit cannot be combined with approvals_required above 1 (each approver must see the same action)"
    )]
    QuorumWithEdit { field: String },
    #[error(
        "approvals_required: {required} approvals can never be reached with only {allowed} allowed responders"
    )]
    QuorumUnreachable { required: u32, allowed: usize },
    #[error("{field}: {reason}")]
    InvalidSchedule { field: String, reason: String },
    #[error("on_timeout: {reason}")]
    InvalidOnTimeout { reason: String },
    #[error("{field}: {reason}")]
    InvalidDisplay { field: String, reason: String },
    #[error("revises: {reason}")]
    InvalidRevises { reason: String },
}

impl ValidationError {
    /// A stable snake_case code for clients to match on.
    pub fn code(&self) -> &'static str {
        match self {
            Self::NotAnObject { .. } => "not_an_object",
            Self::InvalidType { .. } => "invalid_type",
            Self::Missing { .. } => "missing_field",
            Self::Empty { .. } => "empty_field",
            Self::TooLong { .. } => "too_long",
            Self::AmbiguousShape { .. } => "ambiguous_shape",
            Self::NoQuestions => "no_questions",
            Self::TooManyQuestions { .. } => "too_many_questions",
            Self::UnknownKind { .. } => "unknown_kind",
            Self::NoOptions { .. } => "no_options",
            Self::AllOptionsDropped { .. } => "all_options_dropped",
            Self::TooManyOptions { .. } => "too_many_options",
            Self::OptionsNotAllowed { .. } => "options_not_allowed",
            Self::DuplicateLabel { .. } => "duplicate_label",
            Self::DuplicateId { .. } => "duplicate_id",
            Self::InvalidId { .. } => "invalid_id",
            Self::UnknownRecommended { .. } => "unknown_recommended",
            Self::MissingAction { .. } => "missing_action",
            Self::UnknownScope { .. } => "unknown_scope",
            Self::UnknownRisk { .. } => "invalid_risk",
            Self::TooManyTags { .. } => "too_many_tags",
            Self::TooManyResponders { .. } => "too_many_responders",
            Self::JsonTooLarge { .. } => "json_too_large",
            Self::TimeoutOutOfRange { .. } => "invalid_timeout",
            Self::InvalidUrl { .. } => "invalid_url",
            Self::UnknownField { .. } => "unknown_field",
            Self::FieldsNotAllowed { .. } => "fields_not_allowed",
            Self::NoFields { .. } => "no_fields",
            Self::TooManyFields { .. } => "too_many_fields",
            Self::UnknownFieldType { .. } => "unknown_field_type",
            Self::LimitNotAllowed { .. } => "limit_not_allowed",
            Self::LimitTooLarge { .. } => "limit_too_large",
            Self::InvalidRange { .. } => "invalid_range",
            Self::InvalidPattern { .. } => "invalid_pattern",
            Self::UnknownFormat { .. } => "unknown_format",
            Self::InvalidDefault { .. } => "invalid_default",
            Self::UnsupportedSchema { .. } => "unsupported_schema",
            Self::InvalidQuorum { .. } => "invalid_quorum",
            Self::QuorumNeedsApprovals { .. } => "quorum_needs_approvals",
            Self::QuorumWithEdit { .. } => "quorum_with_edit",
            Self::QuorumUnreachable { .. } => "quorum_unreachable",
            Self::InvalidSchedule { .. } => "invalid_schedule",
            Self::InvalidOnTimeout { .. } => "invalid_on_timeout",
            Self::InvalidDisplay { .. } => "invalid_display",
            Self::InvalidRevises { .. } => "invalid_revises",
        }
    }
}

/// The JSON type of a value, for messages.
pub(crate) fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "an object",
    }
}
