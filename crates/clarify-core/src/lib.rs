//! The clarify domain, with no I/O and no async runtime.
//!
//! A **request** holds 1 to 5 **questions** that one human answers together. Everything that
//! reaches clarify from outside (HTTP bodies, MCP tool calls, command-line flags) is raw JSON
//! shaped by whoever wrote it, often an LLM. It enters the domain through exactly one door:
//!
//! 1. [`coerce`] reshapes LLM-shaped input (`question` + `choices`, `prompt` + `options`,
//!    option objects with `title`, options as JSON strings, ...) into the one canonical shape;
//! 2. [`validate`] checks the canonical shape against the [`Limits`] and builds a
//!    [`NewRequest`], the only type the rest of the product accepts.
//!
//! [`parse_request`] runs both. Answers go the same way: [`parse_submission`] checks a raw answer
//! against the live request and either returns a [`Submission`] or says why it does not fit (the
//! request stays pending). [`Outcome`] is what the agent and its LLM receive once a request is
//! resolved, [`reply`] turns a typed reply (`2`, `b`, `1,3`, a label) into an answer, [`policy`]
//! decides whether a proposed tool call needs a human (and what a human's approval means for it),
//! [`tool`] derives the LLM-facing `ask_human` tool definitions from the types, and
//! [`transcript`] keeps an agent's OpenAI-style chat history valid for the model.

pub mod agui;
pub mod answer;
pub mod coerce;
pub mod display;
mod error;
pub mod form;
mod limits;
mod model;
pub mod outcome;
pub mod policy;
pub mod quorum;
pub mod reply;
pub mod rules;
mod schema;
pub mod text;
pub mod tool;
pub mod transcript;
pub mod validate;

pub use answer::{
    Answer, AnswerError, Answers, ApprovalAnswer, Decision, Submission, parse_submission,
};
pub use error::ValidationError;
pub use form::{Field, FieldKind, Form, TextFormat};
pub use limits::{Limits, LimitsError};
pub use model::{
    Action, Approval, Choice, Choices, Context, GROUP_PREFIX, NewRequest, ONCALL_PREFIX, OnTimeout,
    Question, QuestionKind, RecommendedWord, Resume, Risk, Scope, Status, StatusParseError,
};
pub use outcome::{Mode, Outcome, QuestionOutcome, Resolution};
pub use quorum::Vote;
pub use text::{humanize_seconds, quoted, slug};

/// Parses a raw create-request body (any of the accepted shapes) into a validated [`NewRequest`].
///
/// This is [`coerce::normalize`] followed by [`validate::request`].
pub fn parse_request(
    raw: &serde_json::Value,
    limits: &Limits,
) -> Result<NewRequest, ValidationError> {
    let canonical = coerce::normalize(raw)?;
    validate::request(&canonical, limits)
}
