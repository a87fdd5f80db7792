//! Channels: where requests are announced (and answered) besides clarify's own inbox, terminal
//! and links. The only crate that knows a platform's wire format.
//!
//! The pieces, and who does what:
//! - [`Route`]s say which requests go to which channels; the server matches them when a request
//!   is created and the store queues one notification per channel in the creating transaction
//!   (a durable outbox: a crash or a restart loses none);
//! - the server's channel worker claims due notifications with a lease, renders each through
//!   [`Channel::send`], and records the attempt, retrying failures with backoff (honouring a
//!   platform's `Retry-After`, see [`SendError::retry_after`]);
//! - each platform module turns a [`Notice`] into its own message. [`ntfy`] is a push with one
//!   action button per option or decision, each POSTing the answer to the request's signed
//!   answer link, plus a button that opens the link.

pub mod ntfy;
mod route;

use std::time::Duration;

use clarify_store::{EventKind, RequestRecord};

pub use route::{Route, channels_for};

/// A configured channel: its name (unique; used by routes) and its platform.
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub platform: Platform,
}

#[derive(Debug, Clone)]
pub enum Platform {
    Ntfy(ntfy::Ntfy),
}

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
}

/// What a send did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A message was posted; the platform's reference to it, when it gives one.
    Posted { message_ref: Option<String> },
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
        /// How long the platform asked to wait (`Retry-After`).
        retry_after: Option<Duration>,
    },
    /// No answer: the connection failed or timed out.
    #[error("{platform} could not be reached: {detail}")]
    Unreachable {
        platform: &'static str,
        detail: String,
    },
}

impl SendError {
    /// The HTTP status the platform answered, when it answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Refused { status, .. } => Some(*status),
            Self::Unreachable { .. } => None,
        }
    }

    /// Whether trying again may succeed: network failures, `408`, `429` and `5xx`. Any other
    /// refusal (a bad token, a missing topic) will fail the same way every time.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Refused { status, .. } => matches!(status, 408 | 429 | 500..=599),
            Self::Unreachable { .. } => true,
        }
    }

    /// How long the platform asked to wait before trying again.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Self::Refused { retry_after, .. } => *retry_after,
            Self::Unreachable { .. } => None,
        }
    }
}

impl Channel {
    /// The platform's name, as in the configuration's `type`.
    pub fn platform_name(&self) -> &'static str {
        match self.platform {
            Platform::Ntfy(_) => "ntfy",
        }
    }

    /// Posts `notice` on this channel.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        if notice.record.status.is_resolved() {
            return Ok(Sent::Skipped {
                why: "the request was resolved before this message went out",
            });
        }
        match &self.platform {
            Platform::Ntfy(ntfy) => ntfy.send(client, notice).await,
        }
    }
}

/// `Retry-After` in seconds (the only form the platforms here send), if present and sane.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds.min(3_600)))
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(crate) fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
        assert_eq!(cut("ééééé", 3), "éé…");
    }

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
