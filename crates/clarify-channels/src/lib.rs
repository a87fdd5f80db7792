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
//! - [`sms`] and [`whatsapp`] text the person on call through Twilio (the request's short code,
//!   numbered options) and answer their replies; [`voice`] calls them, reads the request and
//!   takes a confirmed key press; what the three share of Twilio is [`twilio`];
//! - what a person does in a chat is read into an [`act::Act`], which makes the same answer
//!   body the API takes; the server's shared answer path maps the person to a responder and
//!   resolves the request by the same rules as every other path.
//!
//! Each platform is a folder with the same files: `mod.rs` (its client and its
//! [`platform::Platform`] implementation), `config.rs` (its `[[channels]]` keys, defaults and
//! checks), `render.rs` (its message format), `inbound.rs` (what it calls back with and how
//! clarify answers, for a platform that does) and `tests.rs`. The list below registers each
//! platform in one line; the configuration's `type`, the hook route `/hooks/<platform>/<name>`
//! and the `[identities]` prefixes all come from it, so a new platform is its folder and its
//! line (the handbook's development page walks through one).

pub mod act;
pub mod config;
#[cfg(test)]
mod display_tests;
mod form;
pub mod http;
pub mod inbound;
pub mod jwt;
mod layout;
pub mod notice;
mod oauth;
pub mod platform;
#[macro_use]
mod registry;
mod route;
#[cfg(test)]
mod step_up_tests;
mod text;
pub mod texting;
pub mod twilio;
pub mod window;

pub use http::RetryAfter;
pub use layout::words::{
    OPEN_IN_CLARIFY, STEP_UP_LINE, asked_by, display_text, follow_up_text, headline, outcome_text,
    vote_note,
};
pub use notice::{Notice, SendError, Sent};
pub use route::{Route, channels_for, warn_before_for};
pub use text::{cut, escape_markup};

platforms! {
    /// Messages with buttons and forms in a Slack conversation, answered in place.
    Slack("slack", slack::Slack),
    /// Messages with buttons in a Telegram chat, answered with a button or a reply.
    Telegram("telegram", telegram::Telegram),
    /// Messages with buttons, selects and forms in a Discord channel.
    Discord("discord", discord::Discord),
    /// Posts with buttons, menus and dialogs in a Mattermost channel.
    Mattermost("mattermost", mattermost::Mattermost),
    /// Adaptive Cards from an Azure Bot in a Microsoft Teams team, chat or channel.
    Teams("teams", teams::Teams),
    /// Cards from a Chat app in a Google Chat space.
    GoogleChat("google_chat", google_chat::GoogleChat),
    /// Mail over SMTP, answered through signed links.
    Email("email", email::Email),
    /// A push to a topic on ntfy.sh or your own ntfy server, with one button per answer.
    Ntfy("ntfy", ntfy::Ntfy),
    /// WhatsApp messages with reply buttons through Meta's Cloud API, answered by a tap or a
    /// reply.
    WhatsAppCloud("whatsapp_cloud", whatsapp_cloud::WhatsAppCloud),
    /// Text messages through Twilio, answered by a reply.
    Sms("sms", sms::Sms),
    /// WhatsApp messages through Twilio, answered by a reply.
    WhatsApp("whatsapp", whatsapp::WhatsApp),
    /// A phone call through Twilio that reads the request and takes a key press.
    Voice("voice", voice::Voice),
}

/// A configured channel: its name (unique; used by routes) and its platform.
#[derive(Debug, Clone)]
pub struct Channel {
    pub name: String,
    pub platform: AnyPlatform,
    /// Whether a chat user no `[identities]` entry maps may answer, recorded as
    /// `<platform>:<user id>`.
    pub allow_unmapped: bool,
}

impl Channel {
    /// The platform's name, as in the configuration's `type`.
    pub fn platform_name(&self) -> &'static str {
        self.platform.name()
    }

    /// How `[identities]` names the platform user `user`: `<prefix>:<user>`, the prefix being
    /// the platform's identity prefix (`phone` for the platforms that text or call a number) or,
    /// for one without, its name.
    pub fn identity_of(&self, user: &str) -> String {
        let prefix = self.platform.identity().unwrap_or(self.platform_name());
        format!("{prefix}:{user}")
    }

    /// The platform as its hook's URL spells it: `google-chat` for `google_chat`.
    pub fn url_platform(&self) -> String {
        self.platform_name().replace('_', "-")
    }

    /// Where the platform calls this channel: `<public_url>/hooks/<platform>/<name>`.
    pub fn hook_url(&self, public_url: &str) -> String {
        format!(
            "{}/hooks/{}/{}",
            public_url.trim_end_matches('/'),
            self.url_platform(),
            self.name
        )
    }

    /// Posts `notice` on this channel.
    pub async fn send(
        &self,
        client: &reqwest::Client,
        notice: &notice::Notice<'_>,
    ) -> Result<notice::Sent, notice::SendError> {
        if let Some(skipped) = Self::too_late(notice) {
            return Ok(skipped);
        }
        self.platform.send(client, notice).await
    }

    /// Posts `notice` on this channel with the server at hand (see
    /// [`platform::Platform::deliver`]): what the channel worker calls.
    pub async fn deliver<D: platform::Desk>(
        &self,
        desk: &D,
        client: &reqwest::Client,
        notice: &notice::Notice<'_>,
    ) -> Result<notice::Sent, notice::SendError> {
        if let Some(skipped) = Self::too_late(notice) {
            return Ok(skipped);
        }
        self.platform.deliver(desk, client, notice).await
    }

    /// A skip when `notice` announces or follows up a request already resolved.
    fn too_late(notice: &notice::Notice<'_>) -> Option<notice::Sent> {
        let follows = notice.resolves() || notice.event == clarify_model::EventKind::Voted;
        (notice.record.status.is_resolved() && !follows).then_some(notice::Sent::Skipped {
            why: "the request was resolved before this message went out",
        })
    }
}
