//! What a channel is asked to post ([`Notice`]) and what came of it ([`Sent`], [`SendError`]):
//! the one shape every platform's `send` takes and gives, so the server's channel worker retries
//! every platform by the same rules.

use std::time::Duration;

use clarify_model::{EventKind, RequestRecord};

use crate::http::RetryAfter;

/// What a channel is asked to post about a request.
#[derive(Debug)]
pub struct Notice<'a> {
    /// The request as it is now.
    pub record: &'a RequestRecord,
    /// `Created` for the announcement, `Reminded` or `Escalated` for a later message about a
    /// pending request.
    pub event: EventKind,
    /// The request's signed answer link.
    pub answer_url: &'a str,
    /// The platform's reference to this channel's announcement of the request, once posted:
    /// what a follow-up replies to or edits.
    pub announcement: Option<&'a str>,
    /// The platform's user ids of the people to mention: for an escalation, those of
    /// `escalate_to` that `[identities]` maps.
    pub mention: Vec<String>,
    /// The platform's addresses of the people the request is for: those `[identities]` maps to
    /// its `responders` (and, for an escalation, its `escalate_to`). E-mail and the channels that
    /// text or call a number read them, as the recipients of a channel without a fixed `to`.
    pub recipients: Vec<String>,
    /// The server's key for the tokens a platform carries back unsigned (Mattermost's
    /// integration context): only clarify can make them.
    pub action_key: &'a [u8],
    /// This channel's inbound URL (`Channel::hook_url`), for a platform whose buttons name
    /// where they call (Mattermost).
    pub hook_url: &'a str,
    /// Links signed for one person each (name, URL), for the people a request names (its
    /// responders, a group's configured members, and on escalation `escalate_to`): opening one
    /// answers or votes as that person. E-mail and ntfy carry them; chat platforms know who
    /// clicks.
    pub personal: Vec<(String, String)>,
    /// Whether answering the request needs a passkey confirmation (`[decisions] step_up` and
    /// a high-risk request; the store's `needs_step_up`).
    pub step_up: bool,
}

impl Notice<'_> {
    /// Whether this notice reports how the request ended (and edits its announcement).
    pub fn resolves(&self) -> bool {
        self.event.resolves()
    }

    /// Whether this notice offers only "Open in clarify" (the answer link) and no answer
    /// buttons: the request is pending and needs a passkey confirmation, which only the inbox
    /// and the link page can ask for. Every platform asks this one question.
    pub fn open_only(&self) -> bool {
        self.step_up && !self.record.status.is_resolved()
    }
}

/// What a send did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A message was posted; the platform's reference to it, when it gives one.
    Posted { message_ref: Option<String> },
    /// The announcement was edited to show the request as it is now.
    Edited,
    /// Nothing needed posting (the request was resolved before its announcement went out).
    Skipped { why: &'static str },
}

/// Why a send failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The platform answered with an error status.
    #[error("{platform} answered {status}: {detail}")]
    Refused {
        platform: &'static str,
        status: u16,
        detail: String,
        /// How long the platform asked to wait (`Retry-After`, or its own field).
        retry_after: Option<RetryAfter>,
    },
    /// No answer: the connection failed or timed out.
    #[error("{platform} could not be reached: {detail}")]
    Unreachable {
        platform: &'static str,
        detail: String,
    },
    /// The platform answered the call with an error of its own (Slack's `"ok": false`).
    #[error("{platform} refused the call: {error}")]
    Failed {
        platform: &'static str,
        error: String,
        /// Whether the platform says the error may pass (an internal error, a timeout).
        transient: bool,
    },
}

impl SendError {
    /// The HTTP status the platform answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. } => Some(*status),
            Self::Unreachable { .. } | Self::Failed { .. } => None,
        }
    }

    /// Whether trying again may succeed: network failures, `408`, `429` and `5xx`. Any other
    /// refusal (a bad token, a missing topic) will fail the same way every time.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Refused { status, .. } => matches!(status, 408 | 429 | 500..=599),
            Self::Unreachable { .. } => true,
            Self::Failed { transient, .. } => *transient,
        }
    }

    /// How long the platform asked to wait before trying again, from `now`.
    pub fn retry_after(&self, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
        match self {
            Self::Refused { retry_after, .. } => retry_after.map(|r| r.wait(now)),
            Self::Unreachable { .. } | Self::Failed { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_transient_failures_are_retried() {
        let refused = |status| SendError::Refused {
            platform: "ntfy",
            status,
            detail: String::new(),
            retry_after: None,
        };
        assert!(refused(429).retryable());
        assert!(refused(503).retryable());
        assert!(!refused(401).retryable());
        assert!(!refused(400).retryable());
        assert!(
            SendError::Unreachable {
                platform: "ntfy",
                detail: String::new()
            }
            .retryable()
        );
    }
}
