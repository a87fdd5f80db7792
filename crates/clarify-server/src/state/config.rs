//! How the server behaves: what the binary reads from flags and the configuration file, handed
//! to [`AppState::new`](crate::state::AppState::new).

use std::time::Duration;

use chrono::TimeDelta;
use clarify_core::Limits;

/// How the server behaves.
#[derive(Debug, Clone)]
pub struct Config {
    /// The base URL people reach this server at, for answer and login links.
    pub public_url: String,
    pub limits: Limits,
    /// The largest request body accepted (then `413`).
    pub body_limit: usize,
    /// The most long-polls, event streams and `/mcp` requests at once (then
    /// `503 too_many_waiters`).
    pub max_waiters: usize,
    /// Requests per second per key (then `429 rate_limited`); `None`: no limit.
    pub rate_limit: Option<std::num::NonZeroU32>,
    /// How often the event log is checked for events written by other instances.
    pub event_poll: Duration,
    /// The event streams' stall rule: a stream whose client has taken nothing for this long
    /// while events wait for it is closed.
    pub stream_stall: Duration,
    pub webhooks: WebhookConfig,
    /// How long an inbox session lasts.
    pub session_ttl: chrono::TimeDelta,
    /// The `/mcp` endpoint (its body limit is `body_limit`).
    pub mcp: clarify_mcp::HttpOptions,
    /// The channels requests are announced on (the store's `announce` picks which).
    pub channels: Vec<clarify_channels::Channel>,
    /// Chat users (`slack:U012ABCDEF`) and the responder names they answer as.
    pub identities: std::collections::BTreeMap<String, String>,
    /// What outbound calls to addresses others chose (a request's `callback_url`) may reach:
    /// public addresses, and what `[server] outbound_allow` adds.
    pub outbound: crate::shared::outbound::OutboundGuard,
    /// When the inbox suggests always allowing an action people keep approving once.
    pub suggest: clarify_store::Suggest,
    /// OpenID Connect sign-in for the inbox (`[oidc]`); `None`: people sign in with keys and
    /// login links only.
    pub oidc: Option<OidcConfig>,
    /// `[a2a] enabled`: serve `/a2a` and the agent card.
    pub a2a: bool,
    /// `--otlp-endpoint`: OpenTelemetry sent to a collector; `None`: nothing is sent.
    pub otlp: Option<crate::state::telemetry::OtlpConfig>,
    /// `[[agui]]`: the AG-UI agents `POST /agui/{name}` proxies.
    pub agui: Vec<std::sync::Arc<AguiAgent>>,
    /// `[push]`: the VAPID key pair and contact of Web Push.
    pub push: crate::state::push::PushConfig,
    /// `[receipts]`: the key receipts are signed with and how long retired keys are published.
    pub receipts: crate::state::receipts::ReceiptsConfig,
}

/// One `[[agui]]` entry: an AG-UI agent the proxy serves at `/agui/{name}`.
pub struct AguiAgent {
    pub name: String,
    /// Where its runs are POSTed (the AG-UI HTTP + SSE binding).
    pub url: url::Url,
    /// Headers sent with every run (an `Authorization` the agent wants, say).
    pub headers: Vec<(String, String)>,
    /// Its HTTP client, made at first use.
    pub client: std::sync::OnceLock<reqwest::Client>,
}

impl AguiAgent {
    pub fn new(name: impl Into<String>, url: url::Url, headers: Vec<(String, String)>) -> Self {
        Self {
            name: name.into(),
            url,
            headers,
            client: std::sync::OnceLock::new(),
        }
    }
}

impl std::fmt::Debug for AguiAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values may be credentials: only their names are shown.
        f.debug_struct("AguiAgent")
            .field("name", &self.name)
            .field("url", &self.url.as_str())
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish_non_exhaustive()
    }
}

/// `[oidc]`: signing people in to the inbox through an OpenID Connect provider.
#[derive(Clone)]
pub struct OidcConfig {
    /// Exactly as the provider's discovery document prints it (a trailing `/` matters).
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// On the sign-in button: "Sign in with <display_name>".
    pub display_name: String,
    /// The scopes asked for; `openid` is always among them.
    pub scopes: Vec<String>,
    /// The claim whose value is the person's responder name.
    pub name_claim: String,
    /// The claim listing the person's groups.
    pub groups_claim: String,
    /// Members of these groups are admins; everyone else signed in is a responder.
    pub admin_groups: Vec<String>,
    /// The tenant people signed in this way belong to.
    pub tenant: String,
    /// When not empty, only e-mail addresses in these domains may sign in.
    pub allowed_domains: Vec<String>,
    /// Whether people may still sign in with a key or a login link (keys always work over the
    /// API).
    pub key_login: bool,
    /// How far the provider's clock may be ahead of or behind this server's.
    pub clock_skew: chrono::TimeDelta,
}

impl OidcConfig {
    /// `[oidc]` with its defaults for a provider at `issuer` and a client `client_id`.
    pub fn new(issuer: impl Into<String>, client_id: impl Into<String>) -> Self {
        Self {
            issuer: issuer.into(),
            client_id: client_id.into(),
            client_secret: None,
            display_name: "single sign-on".to_owned(),
            scopes: ["openid", "email", "profile"].map(str::to_owned).to_vec(),
            name_claim: "email".to_owned(),
            groups_claim: "groups".to_owned(),
            admin_groups: Vec::new(),
            tenant: "default".to_owned(),
            allowed_domains: Vec::new(),
            key_login: true,
            clock_skew: chrono::TimeDelta::seconds(60),
        }
    }
}

impl std::fmt::Debug for OidcConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OidcConfig")
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("display_name", &self.display_name)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

impl Config {
    /// Whether people may sign in to the inbox with a key or a login link.
    pub fn key_login(&self) -> bool {
        self.oidc.as_ref().is_none_or(|o| o.key_login)
    }

    pub fn new(public_url: impl Into<String>) -> Self {
        Self {
            public_url: public_url.into().trim_end_matches('/').to_owned(),
            limits: Limits::default(),
            body_limit: 256 * 1024,
            max_waiters: 10_000,
            rate_limit: None,
            event_poll: Duration::from_millis(100),
            stream_stall: Duration::from_secs(60),
            webhooks: WebhookConfig::default(),
            session_ttl: chrono::TimeDelta::days(7),
            mcp: clarify_mcp::HttpOptions::default(),
            channels: Vec::new(),
            identities: std::collections::BTreeMap::new(),
            outbound: crate::shared::outbound::OutboundGuard::public_only(),
            suggest: clarify_store::Suggest::default(),
            oidc: None,
            a2a: false,
            otlp: None,
            agui: Vec::new(),
            push: crate::state::push::PushConfig::default(),
            receipts: crate::state::receipts::ReceiptsConfig::default(),
        }
    }
}

/// How deliveries are tried.
#[derive(Debug, Clone)]
pub struct WebhookConfig {
    /// How often due deliveries are looked for, besides wake-ups after local resolutions.
    pub poll: Duration,
    /// How long one POST may take.
    pub timeout: Duration,
    /// The wait before the second attempt; it doubles after each failure.
    pub first_backoff: TimeDelta,
    pub max_backoff: TimeDelta,
    /// How long after the resolution attempts continue.
    pub retry_for: TimeDelta,
}

impl Default for WebhookConfig {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
            first_backoff: TimeDelta::seconds(10),
            max_backoff: TimeDelta::hours(1),
            retry_for: TimeDelta::hours(25),
        }
    }
}
