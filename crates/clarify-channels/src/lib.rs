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
//!   answer link, plus a button that opens the link. [`slack`] posts Block Kit messages with
//!   buttons, selects and modals, edits them when the request is resolved, and reads Slack's
//!   signed interactions (over HTTP or Socket Mode). [`telegram`] posts messages with inline
//!   keyboards, asks for typed answers with ForceReply, and reads updates (polled or pushed).
//!   [`discord`] posts messages with buttons and selects and reads Ed25519-signed interactions,
//!   answering them with an updated message, a modal or a note only the clicker sees;
//!   [`mattermost`] posts messages with buttons and menus whose integration context carries a
//!   clarify-signed token (Mattermost signs nothing), opens interactive dialogs for text, and
//!   edits the post when the request is resolved;
//!   [`teams`] posts Adaptive Cards through the Bot Framework, reads its JWT-signed activities
//!   (verified against Microsoft's published keys, see [`jwt`]) and refreshes the card in place;
//!   [`google_chat`] posts cards v2 through the Chat API as a service account, reads the events
//!   Google signs for the Chat system account, and updates the message to the outcome;
//! - [`email`] sends a multipart message over SMTP with one signed link per option or decision
//!   (each opens a confirmation page; only its POST answers), and replies in the same thread
//!   for reminders, escalations, votes and the resolution;
//! - what a person does in a chat is read into an [`answer::Act`], which makes the same answer
//!   body the API takes; the server's shared answer path maps the person to a responder and
//!   resolves the request by the same rules as every other path.
//!
//! Each platform is a folder with the same files: `mod.rs` (its client), `config.rs` (its
//! `[[channels]]` keys, defaults and checks), `render.rs` (its message format), `inbound.rs`
//! (what it calls back with, for a platform that does) and `tests.rs`. [`config::RawChannel`]
//! dispatches a table on its `type`, so a new platform is a new folder plus one arm there and
//! one in [`Platform`] (whose matches the compiler then lists).

pub mod answer;
pub mod config;
pub mod discord;
#[cfg(test)]
mod display_tests;
pub mod email;
mod form;
pub mod google_chat;
pub mod http;
pub mod inbound;
pub mod jwt;
mod layout;
pub mod mattermost;
pub mod ntfy;
mod oauth;
mod route;
pub mod slack;
#[cfg(test)]
mod step_up_tests;
pub mod teams;
pub mod telegram;
mod text;

use std::time::Duration;

use clarify_model::{EventKind, RequestRecord};

pub use http::RetryAfter;
pub use route::{Route, channels_for};
pub(crate) use text::decode_hex;
pub use text::{cut, escape_markup};

/// A configured channel: its name (unique; used by routes) and its platform.
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub platform: Platform,
    /// Whether a chat user no `[identities]` entry maps may answer, recorded as
    /// `<platform>:<user id>`.
    pub allow_unmapped: bool,
}

#[derive(Debug, Clone)]
pub enum Platform {
    Email(email::Email),
    Ntfy(ntfy::Ntfy),
    Slack(slack::Slack),
    Telegram(telegram::Telegram),
    Discord(discord::Discord),
    Mattermost(mattermost::Mattermost),
    Teams(teams::Teams),
    GoogleChat(google_chat::GoogleChat),
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
    /// The platform's reference to this channel's announcement of the request, once posted:
    /// what a follow-up replies to or edits.
    pub announcement: Option<&'a str>,
    /// The platform's user ids of the people to mention: for an escalation, those of
    /// `escalate_to` that `[identities]` maps.
    pub mention: Vec<String>,
    /// The platform's addresses of the people the request is for: those `[identities]` maps to
    /// its `responders` (and, for an escalation, its `escalate_to`). Only e-mail reads them,
    /// as the recipients of a channel without a fixed `to`.
    pub recipients: Vec<String>,
    /// The server's key for the tokens a platform carries back unsigned (Mattermost's
    /// integration context): only clarify can make them.
    pub action_key: &'a [u8],
    /// This channel's inbound URL ([`Channel::hook_url`]), for a platform whose buttons name
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

/// The label of the one button a request that needs a passkey confirmation gets.
pub const OPEN_IN_CLARIFY: &str = "Open in clarify";

/// The line such a request's message carries, saying why there are no answer buttons.
pub const STEP_UP_LINE: &str =
    "High risk: answering needs a passkey confirmation. Open it in clarify to answer.";

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

impl Channel {
    /// The platform's name, as in the configuration's `type` and in `[identities]`.
    pub fn platform_name(&self) -> &'static str {
        match self.platform {
            Platform::Email(_) => "email",
            Platform::Ntfy(_) => "ntfy",
            Platform::Slack(_) => "slack",
            Platform::Telegram(_) => "telegram",
            Platform::Discord(_) => "discord",
            Platform::Mattermost(_) => "mattermost",
            Platform::Teams(_) => "teams",
            Platform::GoogleChat(_) => "google_chat",
        }
    }

    /// Where the platform calls this channel: `<public_url>/hooks/<platform>/<name>` (the
    /// platform spelt as in a URL: `google-chat`).
    pub fn hook_url(&self, public_url: &str) -> String {
        format!(
            "{}/hooks/{}/{}",
            public_url.trim_end_matches('/'),
            self.platform_name().replace('_', "-"),
            self.name
        )
    }

    /// Posts `notice` on this channel.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        let follows = notice.resolves() || notice.event == EventKind::Voted;
        if notice.record.status.is_resolved() && !follows {
            return Ok(Sent::Skipped {
                why: "the request was resolved before this message went out",
            });
        }
        match &self.platform {
            Platform::Email(email) => email.send(notice).await,
            Platform::Ntfy(ntfy) => ntfy.send(client, notice).await,
            Platform::Slack(slack) => slack.send(client, notice).await,
            Platform::Telegram(telegram) => telegram.send(client, notice).await,
            Platform::Discord(discord) => discord.send(client, notice).await,
            Platform::Mattermost(mattermost) => mattermost.send(client, notice).await,
            Platform::Teams(teams) => teams.send(client, notice).await,
            Platform::GoogleChat(chat) => chat.send(client, notice).await,
        }
    }
}

/// How the request ended, in one line: `Answered by alice: approved (for this session)`,
/// `Expired: nobody answered`. Pending: how many approvals a quorum has, or that it waits.
pub fn outcome_text(record: &RequestRecord) -> String {
    use clarify_core::Status;
    let Some(outcome) = record.outcome() else {
        let request = &record.request;
        if request.is_quorum() {
            let by: Vec<&str> = record.votes.iter().map(|v| v.by.as_str()).collect();
            let mut line = format!(
                "{} of {} approvals",
                record.approvals(),
                request.approvals_required
            );
            if !by.is_empty() {
                line.push_str(&format!(" (voted: {})", by.join(", ")));
            }
            return line;
        }
        return "Waiting for an answer".to_owned();
    };
    let by = outcome
        .answered_by
        .as_deref()
        .map(|b| format!(" by {b}"))
        .unwrap_or_default();
    let head = match outcome.status {
        Status::Answered => format!("Answered{by}"),
        Status::Skipped => format!("Skipped{by}"),
        Status::Cancelled => format!("Cancelled{by}"),
        Status::Expired if outcome.default_applied => {
            "Expired: nobody answered; the default applies".to_owned()
        }
        Status::Expired | Status::Pending => "Expired: nobody answered".to_owned(),
    };
    let answers: Vec<String> = outcome
        .questions
        .iter()
        .filter(|q| !q.answer.is_null())
        .map(answer_words)
        .collect();
    if answers.is_empty() {
        head
    } else {
        format!("{head}: {}", answers.join("; "))
    }
}

/// One question's answer in words.
fn answer_words(q: &clarify_core::QuestionOutcome) -> String {
    use clarify_core::{Decision, Scope};
    use serde_json::Value;
    if let Some(decision) = q.decision {
        let mut words = match decision {
            Decision::Approve => "approved".to_owned(),
            Decision::Deny => "denied".to_owned(),
            Decision::Revise => "changes requested".to_owned(),
        };
        match q.scope {
            Some(Scope::Session) if decision == Decision::Approve => {
                words.push_str(" for this session");
            }
            Some(Scope::Always) if decision == Decision::Approve => words.push_str(" always"),
            _ => {}
        }
        if q.edited_arguments.is_some() {
            words.push_str(" with edited arguments");
        }
        if let Some(reason) = &q.reason {
            words.push_str(&format!(" ({reason})"));
        }
        return words;
    }
    match &q.answer {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(values) => values
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// The words of a reminder or an escalation replying to an announcement, after the platform's
/// own `mentions` of the people it concerns.
pub fn follow_up_text(event: EventKind, mentions: &[String]) -> String {
    let words = match event {
        EventKind::Escalated => {
            "Escalated: this request still waits for an answer, and now you may answer it too."
        }
        _ => "Reminder: this request still waits for an answer.",
    };
    if mentions.is_empty() {
        words.to_owned()
    } else {
        format!("{} {words}", mentions.join(" "))
    }
}

/// Who asked, in words: `Asked by deployer in session s1`, `Asked by deployer`, `Asked in
/// session s1`, or `None`. Each platform renders (escapes, cuts, styles) the names its way.
pub fn asked_by(
    request: &clarify_core::NewRequest,
    agent: impl Fn(&str) -> String,
    session: impl Fn(&str) -> String,
) -> Option<String> {
    match (&request.agent, &request.session) {
        (Some(a), Some(s)) => Some(format!("Asked by {} in session {}", agent(a), session(s))),
        (Some(a), None) => Some(format!("Asked by {}", agent(a))),
        (None, Some(s)) => Some(format!("Asked in session {}", session(s))),
        (None, None) => None,
    }
}

/// The headline of a request: its summary, given by the agent or derived (an approval's action,
/// or the first question's header and text).
pub fn headline(record: &RequestRecord) -> String {
    let request = &record.request;
    if !request.summary.is_empty() {
        return request.summary.clone();
    }
    match &request.agent {
        Some(agent) => format!("A question from {agent}"),
        None => "A question for you".to_owned(),
    }
}

/// The request's display blocks in a platform's `markup`, within `budget` of its length; cut,
/// they end with `more` (the platform's link to the rest on the answer page). `None` without
/// blocks.
pub fn display_text(
    record: &RequestRecord,
    markup: &dyn clarify_render::Markup,
    budget: usize,
    more: &str,
) -> Option<String> {
    let blocks = &record.request.display;
    (!blocks.is_empty()).then(|| clarify_render::render_blocks(blocks, markup, budget, more))
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
