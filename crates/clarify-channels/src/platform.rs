//! What every platform is, and what it may ask of the server.
//!
//! A platform is a folder (`mod.rs`, `config.rs`, `render.rs`, `inbound.rs` where it takes
//! calls, `tests.rs`) whose type implements [`Platform`]: how its `[[channels]]` table is
//! checked ([`crate::config::PlatformTable`]), how it posts a [`Notice`], how it answers a call
//! to `/hooks/<platform>/<name>` and what it runs in the background. The list in `lib.rs`
//! registers the platforms, one line each; everything that dispatches on the platform (the
//! configuration's `type`, the hook route, `[identities]` prefixes) is derived from it.
//!
//! An inbound call is answered through a [`Desk`], which the server implements: the shared
//! answer path (find the request, map the person, resolve it by the same rules as every other
//! door) and the few things a platform keeps in the store. What the platform answers with is a
//! [`HookReply`], data, so that only the server knows HTTP's types.

use std::future::Future;

use chrono::{DateTime, Utc};
use clarify_model::RequestRecord;
use futures_util::future::BoxFuture;
use reqwest::header::HeaderMap;
use serde_json::Value;

use crate::act::{Act, Focus};
use crate::config::PlatformTable;
use crate::notice::{Notice, SendError, Sent};

/// A chat platform, a mail or a push service that announces requests.
pub trait Platform: std::fmt::Debug + Clone + Send + Sync + Sized + 'static {
    /// Its `[[channels]]` table, checked into this platform.
    type Table: PlatformTable<Platform = Self>;

    /// The prefix of its people in `[identities]` (`slack` in `"slack:U012ABCDEF"`), or `None`
    /// for a platform answered only through signed links, which name their responder.
    const IDENTITY: Option<&'static str>;

    /// Posts `notice`: announces the request, follows it up, or shows how it ended.
    fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> impl Future<Output = Result<Sent, SendError>> + Send;

    /// Posts `notice` with the server at hand (`desk`), for a platform whose message depends on
    /// what it keeps (WhatsApp's 24-hour window, read from the last message a number sent).
    /// Others keep this, which is [`Platform::send`].
    fn deliver<D: Desk>(
        &self,
        desk: &D,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> impl Future<Output = Result<Sent, SendError>> + Send {
        let _ = desk;
        self.send(client, notice)
    }

    /// Answers a call to this channel's hook (`/hooks/<platform>/<channel>`): verifies it before
    /// anything else is read (`401` otherwise, nothing changed), reads it, acts through `desk`,
    /// and says what to answer the platform with. A platform that takes no calls keeps this.
    fn hook<D: Desk>(
        &self,
        desk: &D,
        channel: &str,
        call: Call<'_>,
    ) -> impl Future<Output = HookReply> + Send {
        let _ = (desk, channel, call);
        async { HookReply::NotFound("this channel takes no calls".to_owned()) }
    }

    /// Answers a `GET` to this channel's hook, with its query string as sent: the handshake by
    /// which a platform checks a webhook URL before it calls it (Meta's `hub.challenge`). A
    /// platform that makes none keeps this.
    fn handshake(&self, channel: &str, query: &str) -> HookReply {
        let _ = (channel, query);
        HookReply::NotFound("this channel takes no GET calls".to_owned())
    }

    /// What the channel loads before its first message goes out (Teams' captured
    /// conversation); the server's channel worker awaits it once at start.
    fn prepare<D: Desk>(&self, desk: &D, channel: &str) -> impl Future<Output = ()> + Send {
        let _ = (desk, channel);
        async {}
    }

    /// What this channel runs for as long as the server does (a socket it keeps, updates it
    /// polls), or `None`; the server stops it at shutdown.
    fn background<D: Desk>(&self, desk: D, channel: String) -> Option<BoxFuture<'static, ()>> {
        let _ = (desk, channel);
        None
    }

    /// What a person the channel does not know is told instead of a link-account link (which
    /// some platforms cannot show privately), or `None` for the link.
    fn unknown_person(&self, who: &str) -> Option<String> {
        let _ = who;
        None
    }
}

/// A call to a channel's hook, as it arrived: nothing in it is verified.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    pub headers: &'a HeaderMap,
    pub body: &'a [u8],
    /// The hook URL's query, as sent (`request=…&step=press`), when it has one: part of what
    /// Twilio signs, and where a call's next step carries which request it is about.
    pub query: Option<&'a str>,
}

impl<'a> Call<'a> {
    /// The header `name`, if present and text.
    pub fn header(&self, name: &str) -> Option<&'a str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What a hook answers the platform with; the server writes it as HTTP.
#[derive(Debug, Clone, PartialEq)]
pub enum HookReply {
    /// `200` with this JSON body.
    Json(Value),
    /// `200` with an empty body.
    Ok,
    /// `200` with this plain text body (a webhook handshake's echoed challenge).
    Text(String),
    /// `200` with this XML document as `text/xml` (Twilio's TwiML).
    Xml(String),
    /// `404`: no such channel, or it takes no calls of this kind.
    NotFound(String),
    /// `401`: the call's signature, token or secret is missing, wrong or too old; nothing read.
    Unauthorized(String),
    /// `400`: verified, but not something clarify reads; nothing changed.
    Malformed(String),
}

impl HookReply {
    /// A refused call, from the reader's error.
    pub fn refused(error: crate::inbound::InboundError) -> Self {
        match error {
            crate::inbound::InboundError::Unauthorized(m) => Self::Unauthorized(m.to_owned()),
            crate::inbound::InboundError::Malformed(m) => Self::Malformed(m),
        }
    }
}

/// Which request an act is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// By id (a button's block, a form's metadata).
    Request(String),
    /// By the platform's reference to the announcement it replies to.
    Message(String),
    /// A reply that names no announcement (a text message) from the platform user `from` (a
    /// phone number): the newest request announced on the channel that is still pending and
    /// that `from` may answer, or, with `code`, the one of that short code
    /// ([`clarify_model::short_code`]) among those announced on the channel.
    Latest { from: String, code: Option<String> },
}

/// What an act did.
#[derive(Debug)]
pub enum Done {
    /// The request was answered or skipped, or (a quorum) the vote was counted: the record now.
    Resolved(RequestRecord),
    /// A form should be opened for `focus`.
    Open {
        record: RequestRecord,
        focus: Focus,
        trigger: String,
    },
    /// Nothing changed and nothing needs saying; the request as it is (pending, and open to
    /// this person).
    Nothing(RequestRecord),
}

/// Why an act was refused, for the person only; nothing changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The form input the message belongs next to.
    pub input: Option<String>,
    pub message: String,
}

impl Refusal {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            input: None,
            message: message.into(),
        }
    }
}

/// What a platform's inbound side asks of the server. Channels are named by their configured
/// name; errors are for the log (the person is told in the platform's words).
pub trait Desk: Clone + Send + Sync + 'static {
    /// Acts for the platform user `user` (`U012ABCDEF`) on channel `channel`: finds the
    /// request (announced on this channel), maps the person to a responder and resolves it by
    /// the rules every path shares.
    fn act(
        &self,
        channel: &str,
        user: &str,
        target: Target,
        act: Act,
    ) -> impl Future<Output = Result<Done, Refusal>> + Send;

    /// The request `target` names, if it was announced on `channel`.
    fn find(
        &self,
        channel: &str,
        target: Target,
    ) -> impl Future<Output = Result<RequestRecord, Refusal>> + Send;

    /// Whether `message_ref` is this channel's announcement of a request.
    fn announced(
        &self,
        channel: &str,
        message_ref: &str,
    ) -> impl Future<Output = Result<bool, String>> + Send;

    /// A one-time link that links the chat account `who` (`telegram:42`) to the person who
    /// opens it signed in, with what it is for.
    fn link_text(&self, who: &str) -> impl Future<Output = String> + Send;

    /// The request's signed answer link.
    fn answer_url(&self, request: &str) -> String;

    /// Where the platform calls channel `channel`.
    fn hook_url(&self, channel: &str) -> String;

    /// The key of the tokens a platform carries back unsigned (Mattermost's context).
    fn action_key(&self) -> &[u8];

    /// The HTTP client for the platform's API.
    fn http(&self) -> &reqwest::Client;

    fn now(&self) -> DateTime<Utc>;

    /// A value the platform keeps under `key` for every instance (Teams' conversation).
    fn kept(&self, key: &str) -> impl Future<Output = Result<Option<Vec<u8>>, String>> + Send;

    fn keep(&self, key: &str, value: Vec<u8>) -> impl Future<Output = Result<(), String>> + Send;

    /// A position the platform keeps under `key` (Telegram's update offset).
    fn cursor(&self, key: &str) -> impl Future<Output = Result<Option<i64>, String>> + Send;

    fn set_cursor(&self, key: &str, value: i64) -> impl Future<Output = Result<(), String>> + Send;

    /// Wakes the channel worker: something it waited for (a captured conversation) is here.
    fn wake_channels(&self);
}
