//! The configuration file: `clarify serve --config PATH` (or `CLARIFY_CONFIG`), and `clarify
//! config check PATH`.
//!
//! TOML, every part optional: `[server]` (what `serve`'s flags set; a flag or its environment
//! variable wins over the file), `[[channels]]`, `[[routes]]`, `[identities]`, `[oidc]`
//! (sign-in through an identity provider), `[groups]`, `[decisions]`, `[push]` (Web Push's
//! VAPID key pair), and the tool-name
//! policies `[claude_code]` (for every `clarify hook <agent>` and `clarify acp`) and `[gate]` (for
//! `clarify gate`).
//! A secret is given as a value (`bot_token = "..."`) or as the name of an environment variable
//! (`bot_token_env = "SLACK_BOT_TOKEN"`). Whatever is wrong (an unknown key, a wrong type, a
//! missing secret, a route to a channel that does not exist) stops the command with one line
//! naming the file, the key and the problem: nothing is silently ignored.
//!
//! `docs/clarify.example.toml` shows every key; a test parses it. The raw types below are the
//! single source of the handbook's configuration reference (`docs/src/reference/configuration.md`,
//! rendered from their JSON Schema by `reference`): each key's doc comment is its description
//! there, and a default the checks apply is named in a `default` the schema carries.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use clarify_core::policy::Policy;
use schemars::JsonSchema;
use serde::Deserialize;

use crate::duration::parse_duration;
use crate::logs::LogFormat;

/// A checked configuration file.
#[derive(Debug, Default)]
pub struct Config {
    pub server: Server,
    pub channels: Vec<Channel>,
    pub routes: Vec<Route>,
    /// `platform:user id` → responder name.
    pub identities: BTreeMap<String, String>,
    /// `[oidc]`, checked, its secret resolved.
    pub oidc: Option<clarify_server::state::OidcConfig>,
    /// `[groups]`: group name → member responder names.
    pub groups: BTreeMap<String, Vec<String>>,
    /// `[decisions] forbid_self_approval`.
    pub forbid_self_approval: bool,
    /// `[decisions] step_up`: the risk from which answers need a passkey confirmation.
    pub step_up: Option<clarify_core::Risk>,
    pub claude_code: Option<Policy>,
    pub gate: Option<Policy>,
    /// `[[rules]]`, compiled; `None` when the file has none.
    pub rules: Option<clarify_core::rules::Rules>,
    /// `[suggestions]`: when the inbox suggests always allowing an action.
    pub suggest: clarify_store::Suggest,
    /// `[a2a] enabled`.
    pub a2a: bool,
    /// `[[agui]]`, checked.
    pub agui: Vec<clarify_server::state::AguiAgent>,
    /// `[push]`, checked, its key resolved and read.
    pub push: clarify_server::state::push::PushConfig,
}

/// `[server]`: the settings `clarify serve` also takes as flags.
#[derive(Debug, Default)]
pub struct Server {
    pub listen: Option<SocketAddr>,
    pub db: Option<String>,
    pub public_url: Option<String>,
    pub max_options: Option<usize>,
    pub webhook_first_retry: Option<Duration>,
    pub webhook_timeout: Option<Duration>,
    pub max_waiters: Option<usize>,
    pub rate_limit: Option<std::num::NonZeroU32>,
    pub retain_resolved: Option<Duration>,
    pub durability: Option<crate::serve::Durability>,
    pub log_format: Option<LogFormat>,
    pub outbound_allow: Option<Vec<String>>,
    pub otlp_endpoint: Option<String>,
}

/// A secret read from the file or the environment; never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// One `[[channels]]` entry, its secrets resolved.
#[derive(Debug)]
pub struct Channel {
    /// Unique; used by routes and in inbound URLs (`/hooks/<type>/<name>`).
    pub name: String,
    pub kind: ChannelKind,
    /// Whether a chat user no `[identities]` entry maps may answer, recorded as
    /// `<platform>:<user id>` (Slack, Telegram, Discord).
    pub allow_unmapped: bool,
}

#[derive(Debug)]
pub enum ChannelKind {
    Slack {
        bot_token: Secret,
        signing_secret: Option<Secret>,
        channel: String,
        api_url: url::Url,
        socket_mode: bool,
        app_token: Option<Secret>,
        mention: Vec<String>,
    },
    Telegram {
        bot_token: Secret,
        chat_id: String,
        /// Set in webhook mode only: updates then arrive at `/hooks/telegram/<name>`.
        webhook_secret: Option<Secret>,
        api_url: url::Url,
    },
    Discord {
        bot_token: Secret,
        public_key: String,
        channel_id: String,
        api_url: url::Url,
    },
    Mattermost {
        url: url::Url,
        bot_token: Secret,
        channel_id: String,
    },
    GoogleChat {
        account: clarify_channels::google_chat::ServiceAccount,
        space: String,
        audience: String,
        api_url: url::Url,
        token_url: url::Url,
        certs_url: url::Url,
    },
    Teams {
        app_id: String,
        app_password: Secret,
        tenant_id: String,
        conversation: Option<clarify_channels::teams::Conversation>,
        login_url: url::Url,
        openid_url: url::Url,
    },
    Email {
        smtp_url: url::Url,
        password: Option<Secret>,
        from: String,
        to: Vec<String>,
    },
    Ntfy {
        url: url::Url,
        topic: String,
        token: Option<Secret>,
    },
}

#[cfg(test)]
impl ChannelKind {
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Slack { .. } => "slack",
            Self::Telegram { .. } => "telegram",
            Self::Discord { .. } => "discord",
            Self::Mattermost { .. } => "mattermost",
            Self::Teams { .. } => "teams",
            Self::GoogleChat { .. } => "google_chat",
            Self::Email { .. } => "email",
            Self::Ntfy { .. } => "ntfy",
        }
    }
}

pub use clarify_channels::Route;

impl Config {
    /// The channels `serve` announces on, built from the checked file.
    pub fn channels(&self) -> Vec<clarify_channels::Channel> {
        self.channels
            .iter()
            .map(|c| match &c.kind {
                ChannelKind::Ntfy { url, topic, token } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Ntfy(clarify_channels::ntfy::Ntfy {
                        url: url.clone(),
                        topic: topic.clone(),
                        token: token.as_ref().map(|t| t.expose().to_owned()),
                    }),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Slack {
                    bot_token,
                    signing_secret,
                    channel,
                    api_url,
                    socket_mode,
                    app_token,
                    mention,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Slack(clarify_channels::slack::Slack {
                        bot_token: bot_token.expose().to_owned(),
                        signing_secret: signing_secret.as_ref().map(|s| s.expose().to_owned()),
                        channel: channel.clone(),
                        api_url: api_url.clone(),
                        socket_mode: *socket_mode,
                        app_token: app_token.as_ref().map(|s| s.expose().to_owned()),
                        mention: mention.clone(),
                    }),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Telegram {
                    bot_token,
                    chat_id,
                    webhook_secret,
                    api_url,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Telegram(
                        clarify_channels::telegram::Telegram {
                            bot_token: bot_token.expose().to_owned(),
                            chat_id: chat_id.clone(),
                            api_url: api_url.clone(),
                            webhook_secret: webhook_secret.as_ref().map(|s| s.expose().to_owned()),
                        },
                    ),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Discord {
                    bot_token,
                    public_key,
                    channel_id,
                    api_url,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Discord(
                        clarify_channels::discord::Discord {
                            bot_token: bot_token.expose().to_owned(),
                            public_key: public_key.clone(),
                            channel_id: channel_id.clone(),
                            api_url: api_url.clone(),
                        },
                    ),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Mattermost {
                    url,
                    bot_token,
                    channel_id,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Mattermost(
                        clarify_channels::mattermost::Mattermost {
                            url: url.clone(),
                            bot_token: bot_token.expose().to_owned(),
                            channel_id: channel_id.clone(),
                        },
                    ),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Teams {
                    app_id,
                    app_password,
                    tenant_id,
                    conversation,
                    login_url,
                    openid_url,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Teams(
                        clarify_channels::teams::Teams::new(
                            app_id.clone(),
                            app_password.expose().to_owned(),
                            tenant_id.clone(),
                            login_url.clone(),
                            openid_url.clone(),
                            conversation.clone(),
                        ),
                    ),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::GoogleChat {
                    account,
                    space,
                    audience,
                    api_url,
                    token_url,
                    certs_url,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::GoogleChat(
                        clarify_channels::google_chat::GoogleChat::new(
                            account.clone(),
                            space.clone(),
                            audience.clone(),
                            api_url.clone(),
                            token_url.clone(),
                            certs_url.clone(),
                        ),
                    ),
                    allow_unmapped: c.allow_unmapped,
                },
                ChannelKind::Email {
                    smtp_url,
                    password,
                    from,
                    to,
                } => clarify_channels::Channel {
                    name: c.name.clone(),
                    platform: clarify_channels::Platform::Email(clarify_channels::email::Email {
                        smtp_url: smtp_url.clone(),
                        password: password.as_ref().map(|p| p.expose().to_owned()),
                        from: from.clone(),
                        to: to.clone(),
                    }),
                    allow_unmapped: c.allow_unmapped,
                },
            })
            .collect()
    }
}

/// `clarify config check PATH`: prints what the file holds and exits 0, or prints the one line
/// and exits 1.
pub fn check_command(path: &Path) -> std::process::ExitCode {
    match load(path) {
        Ok(c) => {
            println!(
                "{}: valid ({} channels, {} routes, {} identities, {} rules{}{})",
                path.display(),
                c.channels.len(),
                c.routes.len(),
                c.identities.len(),
                c.rules.as_ref().map_or(0, |r| r.len()),
                if c.claude_code.is_some() {
                    ", [claude_code]"
                } else {
                    ""
                },
                if c.gate.is_some() { ", [gate]" } else { "" },
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("clarify: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Reads and checks the file at `path`: one line naming the file, the key and the problem when
/// anything is wrong.
pub fn load(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration file {}: {e}", path.display()))?;
    parse(path, &text, &|name| std::env::var(name).ok())
}

/// Parses `text` (read from `path`), resolving `*_env` secrets through `env`.
pub fn parse(
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, String> {
    let file = path.display();
    let raw: RawConfig = {
        let de = toml::Deserializer::parse(text).map_err(|e| located(&file, text, None, &e))?;
        serde_path_to_error::deserialize(de).map_err(|e| {
            let key = e.path().to_string();
            located(&file, text, Some(key), e.inner())
        })?
    };
    let fail = |key: &str, problem: String| format!("{file}: {key}: {problem}");
    let server = raw.server.check(&fail)?;
    let mut channels = Vec::with_capacity(raw.channels.len());
    let mut names = BTreeSet::new();
    for (i, c) in raw.channels.into_iter().enumerate() {
        let at = format!("channels[{i}]");
        let channel = c.check(&at, env, &fail)?;
        if channel.name.starts_with(clarify_store::PUSH_CHANNEL_PREFIX) {
            return Err(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} starts with \"push:\", which names Web Push subscriptions; choose another name",
                    channel.name
                ),
            ));
        }
        if !names.insert(channel.name.clone()) {
            return Err(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} names two channels; each needs its own name",
                    channel.name
                ),
            ));
        }
        channels.push(channel);
    }
    for (i, route) in raw.routes.iter().enumerate() {
        let at = format!("routes[{i}]");
        if route.channels.is_empty() {
            return Err(fail(
                &format!("{at}.channels"),
                "is empty; name at least one channel".to_owned(),
            ));
        }
        if let Some(unknown) = route.channels.iter().find(|c| !names.contains(*c)) {
            return Err(fail(
                &format!("{at}.channels"),
                format!("{unknown:?} is not the name of any [[channels]] entry"),
            ));
        }
        if let Some(kind) = route.kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
            return Err(fail(
                &format!("{at}.kinds"),
                format!("{kind:?} is not a question kind; use {}", KINDS.join(", ")),
            ));
        }
        if route
            .agent
            .as_deref()
            .is_some_and(|a| a.is_empty() || a.strip_suffix('*').unwrap_or(a).contains('*'))
        {
            return Err(fail(
                &format!("{at}.agent"),
                "must be a name, a prefix followed by *, or *".to_owned(),
            ));
        }
    }
    for (who, responder) in &raw.identities {
        let key = format!("identities.{who:?}");
        let Some((platform, id)) = who.split_once(':') else {
            return Err(fail(
                &key,
                "must be `platform:user id`, e.g. \"slack:U012ABCDEF\"".to_owned(),
            ));
        };
        if !PLATFORMS.contains(&platform) || id.trim().is_empty() {
            return Err(fail(
                &key,
                format!(
                    "the platform must be one of {} with a user id after the colon",
                    PLATFORMS.join(", ")
                ),
            ));
        }
        if !valid_responder(responder) {
            return Err(fail(
                &key,
                format!("{responder:?} is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)"),
            ));
        }
    }
    let rules = if raw.rules.is_empty() {
        None
    } else {
        let mut specs = Vec::with_capacity(raw.rules.len());
        for (i, rule) in raw.rules.into_iter().enumerate() {
            specs.push(rule.check(&format!("rules[{i}]"), &fail)?);
        }
        Some(clarify_core::rules::Rules::compile(specs).map_err(|e| {
            let at = format!("rules[{}]", e.index);
            fail(&at, e.to_string())
        })?)
    };
    let suggest = raw.suggestions.check(&fail)?;
    for (group, members) in &raw.groups {
        let key = format!("groups.{group:?}");
        if !valid_responder(group) {
            return Err(fail(
                &key,
                "a group name is 1 to 64 of A-Z a-z 0-9 . _ @ -".to_owned(),
            ));
        }
        if let Some(bad) = members.iter().find(|m| !valid_responder(m)) {
            return Err(fail(
                &key,
                format!("{bad:?} is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)"),
            ));
        }
    }
    let oidc = raw.oidc.map(|o| o.check(env, &fail)).transpose()?;
    let push = raw
        .push
        .map(|p| p.check(env, &fail))
        .transpose()?
        .unwrap_or_default();
    let step_up = match raw.decisions.step_up.as_deref() {
        None => None,
        Some("high") => Some(clarify_core::Risk::High),
        Some(other) => {
            return Err(fail(
                "decisions.step_up",
                format!("{other:?} is not a risk step-up applies to; use \"high\""),
            ));
        }
    };
    let mut agui = Vec::with_capacity(raw.agui.len());
    for (i, entry) in raw.agui.into_iter().enumerate() {
        let agent = entry.check(&format!("agui[{i}]"), &fail)?;
        if agui
            .iter()
            .any(|a: &clarify_server::state::AguiAgent| a.name == agent.name)
        {
            return Err(fail(
                &format!("agui[{i}].name"),
                format!("{:?} is the name of another [[agui]] entry", agent.name),
            ));
        }
        agui.push(agent);
    }
    Ok(Config {
        agui,
        push,
        rules,
        suggest,
        a2a: raw.a2a.enabled,
        server,
        channels,
        routes: raw.routes,
        identities: raw.identities,
        oidc,
        groups: raw.groups,
        forbid_self_approval: raw.decisions.forbid_self_approval,
        step_up,
        claude_code: raw
            .claude_code
            .map(|p| p.check("claude_code", &fail))
            .transpose()?,
        gate: raw.gate.map(|p| p.check("gate", &fail)).transpose()?,
    })
}

const KINDS: [&str; 5] = ["open", "single", "multi", "approval", "form"];
const PLATFORMS: [&str; 7] = [
    "slack",
    "telegram",
    "discord",
    "teams",
    "google_chat",
    "mattermost",
    "email",
];

fn valid_responder(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

/// `file:line: key: message`, on one line.
fn located(
    file: &dyn std::fmt::Display,
    text: &str,
    key: Option<String>,
    e: &toml::de::Error,
) -> String {
    let line = e
        .span()
        .and_then(|span| text.get(..span.start))
        .map(|before| before.matches('\n').count() + 1);
    let at = line.map(|l| format!(":{l}")).unwrap_or_default();
    let key = key
        .filter(|k| !k.is_empty() && k != ".")
        .map(|k| format!(" {k}:"))
        .unwrap_or_default();
    let message = e.message().trim().replace('\n', "; ");
    format!("{file}{at}:{key} {message}")
}

type Fail<'a> = &'a dyn Fn(&str, String) -> String;

// ---------------------------------------------------------------------------------------------
// The file as written

// The default URLs of the platforms' APIs, named once for the checks and the reference.
const SLACK_API_URL: &str = "https://slack.com/api";
const TELEGRAM_API_URL: &str = "https://api.telegram.org";
const DISCORD_API_URL: &str = "https://discord.com/api/v10";
const NTFY_URL: &str = "https://ntfy.sh";
const TEAMS_LOGIN: &str = "https://login.microsoftonline.com";

/// The configuration file.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConfig {
    /// The settings `clarify serve` also takes as flags.
    #[serde(default)]
    server: RawServer,
    /// Where requests are announced and answered besides the inbox: Slack, Telegram, Discord,
    /// Microsoft Teams, Google Chat, Mattermost, e-mail and ntfy.
    #[serde(default)]
    channels: Vec<RawChannel>,
    /// Which requests are announced on which channels: a request is announced on the channels
    /// of every route it matches.
    #[serde(default)]
    routes: Vec<Route>,
    /// Who a person in a chat app or at an e-mail address is: `"platform:user id"` = the
    /// responder name they answer as. The platform is `slack`, `telegram`, `discord`, `teams`,
    /// `google_chat`, `mattermost` or `email`.
    #[serde(default)]
    identities: BTreeMap<String, String>,
    /// Sign-in to the inbox through an OpenID Connect identity provider (Google, Microsoft
    /// Entra ID, Okta, Keycloak, ...).
    #[serde(default)]
    oidc: Option<RawOidc>,
    /// Groups of responders: `sre = ["alice", "bob"]`. A request's `responders` and
    /// `escalate_to` may name `group:sre`; people signed in with OIDC are also in the groups
    /// their provider's groups claim lists.
    #[serde(default)]
    groups: BTreeMap<String, Vec<String>>,
    /// Rules every answer must keep.
    #[serde(default)]
    decisions: RawDecisions,
    /// The tool-name policy of `clarify hook claude-code` (its `--policy` wins over it).
    #[serde(default)]
    claude_code: Option<RawPolicy>,
    /// The tool-name policy of `clarify gate` (its `--policy` wins over it).
    #[serde(default)]
    gate: Option<RawPolicy>,
    /// The server's policy: every approval created by any path (HTTP, MCP, the hooks, the
    /// gate) is decided by the first rule that matches it, in order.
    #[serde(default)]
    rules: Vec<RawRule>,
    /// When the inbox offers "Always allow this" for an action people keep approving `once`.
    #[serde(default)]
    suggestions: RawSuggestions,
    /// clarify as an A2A agent: its agent card at `/.well-known/agent-card.json` and JSON-RPC
    /// at `/a2a`, where other agents ask people through tasks.
    #[serde(default)]
    a2a: RawA2a,
    /// AG-UI agents clarify proxies at `POST /agui/{name}`: their interrupts become requests,
    /// and clarify resumes a run once people answered them.
    #[serde(default)]
    agui: Vec<RawAgui>,
    /// Web Push: the VAPID key pair and contact notifications to people's browsers are signed
    /// with. Without it, a key pair is made once and kept in the store, shared by every
    /// instance on it.
    #[serde(default)]
    push: Option<RawPush>,
}

/// `[push]`: the VAPID key pair (RFC 8292) Web Push notifications are signed with, and the
/// contact push services may write to.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPush {
    /// The P-256 private key: its 32 bytes in URL-safe base64, as `npx web-push
    /// generate-vapid-keys` prints it. Keep it: browsers subscribed with its public key, and a
    /// new key leaves every subscription unreachable until people turn notifications on again.
    /// Without this or `vapid_private_key_env`, the key kept in the store is used.
    vapid_private_key: Option<String>,
    /// The environment variable holding the private key.
    vapid_private_key_env: Option<String>,
    /// Who runs this server, for the push services: `mailto:ops@example.com` or an `https:`
    /// URL. Default: the public URL when it is `https`, else `mailto:clarify@<its host>`
    /// (Apple's push service refuses a `localhost` contact: set one for Safari).
    subject: Option<String>,
}

impl RawPush {
    fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::push::PushConfig, String> {
        let secrets = Secrets {
            at: "push",
            env,
            fail,
        };
        let key = secrets
            .optional(
                "vapid_private_key",
                self.vapid_private_key,
                self.vapid_private_key_env,
            )?
            .map(|k| clarify_server::state::push::VapidKey::from_base64url(k.expose()))
            .transpose()
            .map_err(|e| fail("push.vapid_private_key", e))?;
        if let Some(subject) = &self.subject {
            let fits = subject
                .strip_prefix("mailto:")
                .is_some_and(|m| m.contains('@'))
                || url::Url::parse(subject).is_ok_and(|u| u.scheme() == "https" && u.has_host());
            if !fits {
                return Err(fail(
                    "push.subject",
                    format!(
                        "{subject:?} is neither a mailto: address nor an https: URL; use \"mailto:ops@example.com\""
                    ),
                ));
            }
        }
        Ok(clarify_server::state::push::PushConfig {
            key,
            subject: self.subject,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawAgui {
    /// The agent's name in the proxy's URL (`/agui/<name>`): 1 to 64 of A-Z a-z 0-9 - _.
    name: String,
    /// Where the agent takes runs (AG-UI's HTTP + SSE binding), `http` or `https`.
    url: String,
    /// Headers sent with every run to the agent, such as an `Authorization` it wants.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

impl RawAgui {
    fn check(self, at: &str, fail: Fail<'_>) -> Result<clarify_server::state::AguiAgent, String> {
        let valid = (1..=64).contains(&self.name.len())
            && self
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(fail(
                &format!("{at}.name"),
                format!(
                    "{:?} must be 1 to 64 of A-Z a-z 0-9 - _ (it is part of a URL)",
                    self.name
                ),
            ));
        }
        let url = match url::Url::parse(&self.url) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => u,
            _ => {
                return Err(fail(
                    &format!("{at}.url"),
                    format!("{:?} is not an http or https URL", self.url),
                ));
            }
        };
        for (name, value) in &self.headers {
            let fits = header_name(name) && !value.chars().any(char::is_control);
            if !fits {
                return Err(fail(
                    &format!("{at}.headers.{name}"),
                    "is not an HTTP header name with a printable value".to_owned(),
                ));
            }
        }
        Ok(clarify_server::state::AguiAgent::new(
            self.name,
            url,
            self.headers.into_iter().collect(),
        ))
    }
}

/// Whether `name` is an HTTP header name (RFC 9110 token characters).
fn header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawA2a {
    /// Serve the agent card and `/a2a` (with an agent key, as `/mcp`).
    #[serde(default)]
    enabled: bool,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawSuggestions {
    /// How many `once` approvals of the same action (tool and arguments) make a suggestion.
    #[schemars(extend("default" = 3))]
    approvals: Option<usize>,
    /// Within how long, a duration (`7d`, `12h`).
    #[schemars(extend("default" = "7d"))]
    within: Option<String>,
}

impl RawSuggestions {
    fn check(self, fail: Fail<'_>) -> Result<clarify_store::Suggest, String> {
        let mut suggest = clarify_store::Suggest::default();
        if let Some(n) = self.approvals {
            if !(2..=1000).contains(&n) {
                return Err(fail(
                    "suggestions.approvals",
                    format!("must be 2 to 1000, got {n}"),
                ));
            }
            suggest.approvals = n;
        }
        if let Some(text) = self.within {
            let within = parse_duration(&text)
                .ok()
                .and_then(|d| chrono::TimeDelta::from_std(d).ok())
                .filter(|d| !d.is_zero())
                .ok_or_else(|| {
                    fail(
                        "suggestions.within",
                        format!("{text:?} is not a duration such as 7d or 12h"),
                    )
                })?;
            suggest.within = within;
        }
        Ok(suggest)
    }
}

/// One rule: when a call of `tool` makes `when` true, `decide` says what follows.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRule {
    /// Unique among the rules; decisions it makes are recorded as `policy:<name>`.
    name: String,
    /// A tool-name pattern: an exact name, a `prefix*` or `*`, ignoring case.
    #[schemars(extend("default" = "*"))]
    tool: Option<String>,
    /// A CEL condition over `tool`, `args`, `agent`, `session`, `tags`, `cwd` and
    /// `on_behalf_of`, e.g. `args.amount > 1000`. Absent, every call of `tool` matches. One that
    /// fails while evaluating (a missing argument) does not match.
    when: Option<String>,
    /// `allow` or `deny` resolve the approval at once, as the rule; `ask` asks a person, with
    /// the settings below.
    decide: RawDecide,
    /// Why: told to the agent with an allow or a deny.
    reason: Option<String>,
    /// `ask`: who may answer, instead of the request's responders.
    responders: Option<Vec<String>>,
    /// `ask`: how many people must approve (1 to 10).
    approvals_required: Option<u32>,
    /// `ask`: `low`, `normal` or `high`.
    risk: Option<String>,
    /// `ask`: how long the person has, a duration (`30m`, `2h`, `1d`); `0` never expires.
    timeout: Option<String>,
    /// `ask`: the decision applied when nobody answers in time, e.g.
    /// `{ decision = "deny", reason = "nobody answered" }`.
    #[schemars(with = "Option<serde_json::Value>")]
    on_timeout: Option<clarify_core::OnTimeout>,
    /// `ask`: tags added to the request, which routes read.
    #[serde(default)]
    tags: Vec<String>,
}

/// What a matching rule does.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum RawDecide {
    /// Approve the call at once, as the rule.
    Allow,
    /// Deny the call at once, as the rule.
    Deny,
    /// Ask a person.
    Ask,
}

impl RawRule {
    fn check(self, at: &str, fail: Fail<'_>) -> Result<clarify_core::rules::RuleSpec, String> {
        use clarify_core::rules::{AskSettings, Decide, RuleSpec};
        let timeout_seconds = match self.timeout.as_deref().map(str::trim) {
            None => None,
            Some("0") => Some(0),
            Some(text) => Some(
                parse_duration(text)
                    .map_err(|e| fail(&format!("{at}.timeout"), e))?
                    .as_secs(),
            ),
        };
        Ok(RuleSpec {
            name: self.name,
            tool: self.tool,
            when: self.when,
            decide: match self.decide {
                RawDecide::Allow => Decide::Allow,
                RawDecide::Deny => Decide::Deny,
                RawDecide::Ask => Decide::Ask,
            },
            reason: self.reason,
            ask: AskSettings {
                responders: self.responders,
                approvals_required: self.approvals_required,
                risk: self.risk,
                timeout_seconds,
                on_timeout: self.on_timeout,
                tags: self.tags,
            },
        })
    }
}

/// `[oidc]`: signing people in to the inbox through an OpenID Connect provider, with the
/// authorization code flow and PKCE. Register clarify at the provider as a web application with
/// the redirect URI `<public_url>/auth/oidc/callback`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOidc {
    /// The provider's issuer URL, exactly as its discovery document
    /// (`<issuer>/.well-known/openid-configuration`) prints it: a trailing `/` matters.
    issuer: String,
    /// The client id clarify was registered with.
    client_id: String,
    /// The client secret. This or `client_secret_env` is required.
    client_secret: Option<String>,
    /// The environment variable holding the client secret.
    client_secret_env: Option<String>,
    /// On the inbox's button: "Sign in with <display_name>".
    #[serde(default = "default_display_name")]
    #[schemars(default = "default_display_name")]
    display_name: String,
    /// The scopes asked for; `openid` is always asked for.
    #[serde(default = "default_scopes")]
    #[schemars(default = "default_scopes")]
    scopes: Vec<String>,
    /// The claim whose value is the person's responder name (from the ID token, or else the
    /// userinfo endpoint).
    #[serde(default = "default_name_claim")]
    #[schemars(default = "default_name_claim")]
    name_claim: String,
    /// The claim listing the person's groups (a list of names, or one name).
    #[serde(default = "default_groups_claim")]
    #[schemars(default = "default_groups_claim")]
    groups_claim: String,
    /// Members of these groups (from the claim or `[groups]`) get the admin role; everyone
    /// else signed in is a responder.
    #[serde(default)]
    admin_groups: Vec<String>,
    /// The tenant people signed in this way belong to.
    #[serde(default = "default_tenant")]
    #[schemars(default = "default_tenant")]
    tenant: String,
    /// When given, only e-mail addresses in these domains may sign in (the `email` claim; an
    /// address the provider marks unverified is refused).
    #[serde(default)]
    allowed_domains: Vec<String>,
    /// Whether people may still sign in to the inbox with an API key or a one-time login
    /// link. `false` leaves only this provider for people; keys keep working over the API.
    #[serde(default = "default_true")]
    #[schemars(default = "default_true")]
    key_login: bool,
}

fn default_display_name() -> String {
    "single sign-on".to_owned()
}

fn default_scopes() -> Vec<String> {
    ["openid", "email", "profile"].map(str::to_owned).to_vec()
}

fn default_name_claim() -> String {
    "email".to_owned()
}

fn default_groups_claim() -> String {
    "groups".to_owned()
}

fn default_tenant() -> String {
    "default".to_owned()
}

fn default_true() -> bool {
    true
}

impl RawOidc {
    fn check(
        self,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<clarify_server::state::OidcConfig, String> {
        let secrets = Secrets {
            at: "oidc",
            env,
            fail,
        };
        let client_secret =
            secrets.required("client_secret", self.client_secret, self.client_secret_env)?;
        match url::Url::parse(&self.issuer) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.has_host() => {}
            _ => {
                return Err(fail(
                    "oidc.issuer",
                    format!("{:?} is not an http or https URL", self.issuer),
                ));
            }
        }
        let not_empty = |key: &str, value: &str| {
            if value.trim().is_empty() {
                Err(fail(&format!("oidc.{key}"), "is empty".to_owned()))
            } else {
                Ok(())
            }
        };
        not_empty("client_id", &self.client_id)?;
        not_empty("display_name", &self.display_name)?;
        not_empty("name_claim", &self.name_claim)?;
        not_empty("groups_claim", &self.groups_claim)?;
        not_empty("tenant", &self.tenant)?;
        if let Some(bad) = self.allowed_domains.iter().find(|d| {
            let d = d.trim_start_matches('@');
            d.is_empty() || d.contains(['@', '/', ' '])
        }) {
            return Err(fail(
                "oidc.allowed_domains",
                format!("{bad:?} is not an e-mail domain such as \"example.com\""),
            ));
        }
        let mut config = clarify_server::state::OidcConfig::new(self.issuer, self.client_id);
        config.client_secret = Some(client_secret.expose().to_owned());
        config.display_name = self.display_name;
        config.scopes = self.scopes;
        config.name_claim = self.name_claim;
        config.groups_claim = self.groups_claim;
        config.admin_groups = self.admin_groups;
        config.tenant = self.tenant;
        config.allowed_domains = self.allowed_domains;
        config.key_login = self.key_login;
        Ok(config)
    }
}

/// `[decisions]`: rules every answer must keep, on every path.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDecisions {
    /// Four eyes: the person a request acts for (its `on_behalf_of`) may not answer or vote on
    /// it (`403 self_approval`), and such a request takes no anonymous answer.
    #[serde(default)]
    forbid_self_approval: bool,
    /// Step-up: `"high"` makes every answer to a high-risk request (`risk: "high"`) need a
    /// passkey confirmation made for that answer within the last 5 minutes (inbox and link
    /// page); chat, e-mail and push offer only "Open in clarify" for it, and a responder key's
    /// answer is refused (`403 step_up_required`). Absent: no step-up.
    #[serde(default)]
    step_up: Option<String>,
}

/// Each key is the `clarify serve` option of the same name (`max_waiters` is `--max-waiters`);
/// the option, or its environment variable, wins over the key.
// The reference takes each key's meaning and default from that option's help, so they are
// written once; a doc comment here adds to it.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServer {
    listen: Option<SocketAddr>,
    db: Option<String>,
    public_url: Option<String>,
    max_options: Option<usize>,
    /// A duration: `500ms`, `10s`, `5m`, `2h`, `1d`.
    webhook_first_retry: Option<String>,
    /// A duration: `500ms`, `10s`, `5m`, `2h`, `1d`.
    webhook_timeout: Option<String>,
    max_waiters: Option<usize>,
    rate_limit: Option<std::num::NonZeroU32>,
    /// A duration: `12h`, `30d`.
    retain_resolved: Option<String>,
    durability: Option<crate::serve::Durability>,
    log_format: Option<LogFormat>,
    /// For example `["10.20.0.0/16", "hooks.internal"]`.
    outbound_allow: Option<Vec<String>>,
    /// The OTLP/HTTP collector's base URL, e.g. `http://127.0.0.1:4318`.
    otlp_endpoint: Option<String>,
}

impl RawServer {
    fn check(self, fail: Fail<'_>) -> Result<Server, String> {
        let duration = |key: &str, text: Option<String>| {
            text.map(|t| parse_duration(&t).map_err(|e| fail(&format!("server.{key}"), e)))
                .transpose()
        };
        Ok(Server {
            listen: self.listen,
            db: self.db,
            public_url: self.public_url,
            max_options: self.max_options,
            webhook_first_retry: duration("webhook_first_retry", self.webhook_first_retry)?,
            webhook_timeout: duration("webhook_timeout", self.webhook_timeout)?,
            max_waiters: self.max_waiters,
            rate_limit: self.rate_limit,
            retain_resolved: duration("retain_resolved", self.retain_resolved)?,
            durability: self.durability,
            log_format: self.log_format,
            outbound_allow: match self.outbound_allow {
                None => None,
                Some(allow) => {
                    clarify_server::OutboundGuard::allowing(&allow)
                        .map_err(|e| fail("server.outbound_allow", e.to_string()))?;
                    Some(allow)
                }
            },
            otlp_endpoint: match self.otlp_endpoint {
                None => None,
                Some(url) => {
                    clarify_server::OtlpConfig::new(&url)
                        .map_err(|e| fail("server.otlp_endpoint", e))?;
                    Some(url)
                }
            },
        })
    }
}

/// Tool-name patterns: an exact name, a `prefix*` or `*`, ignoring case. Deny wins; a call
/// neither list names asks a human.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    /// Calls that run without asking anyone.
    #[serde(default)]
    allow: Vec<String>,
    /// Calls that are refused without asking anyone.
    #[serde(default)]
    deny: Vec<String>,
}

impl RawPolicy {
    fn check(self, section: &str, fail: Fail<'_>) -> Result<Policy, String> {
        if self
            .allow
            .iter()
            .chain(&self.deny)
            .any(|p| p.trim().is_empty())
        {
            return Err(fail(
                section,
                "has an empty pattern; remove it or write a tool name".to_owned(),
            ));
        }
        Ok(Policy::new(&self.allow, &self.deny))
    }
}

/// A Telegram chat id (a number) or channel username, or a Discord snowflake, written either as
/// a number or as a string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
enum Id {
    Number(i64),
    Text(String),
}

impl Id {
    fn text(self) -> String {
        match self {
            Self::Number(n) => n.to_string(),
            Self::Text(s) => s,
        }
    }
}

/// One `[[channels]]` entry; `type` says which platform, and which keys it takes.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "lowercase")]
enum RawChannel {
    /// Messages with buttons and forms in a Slack conversation, answered in place.
    Slack(RawSlack),
    /// Messages with buttons in a Telegram chat, answered with a button or a reply.
    Telegram(RawTelegram),
    /// Messages with buttons, selects and forms in a Discord channel.
    Discord(RawDiscord),
    /// Posts with buttons, menus and dialogs in a Mattermost channel.
    Mattermost(RawMattermost),
    /// Adaptive Cards from an Azure Bot in a Microsoft Teams team, chat or channel.
    Teams(RawTeams),
    /// Cards from a Chat app in a Google Chat space.
    #[serde(rename = "google_chat")]
    GoogleChat(RawGoogleChat),
    /// Mail over SMTP, answered through signed links.
    Email(RawEmail),
    /// A push to a topic on ntfy.sh or your own ntfy server, with one button per answer.
    Ntfy(RawNtfy),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawSlack {
    /// Unique among the channels; routes name it, and Slack calls `/hooks/slack/<name>`.
    name: String,
    /// Let a Slack user `[identities]` does not name answer, recorded as `slack:<user id>`,
    /// instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token (`xoxb-...`, under OAuth & Permissions). This or `bot_token_env` is
    /// required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// Verifies Slack's calls to `/hooks/slack/<name>`; required unless `socket_mode` is true.
    signing_secret: Option<String>,
    /// The environment variable holding `signing_secret`.
    signing_secret_env: Option<String>,
    /// The id of the conversation requests are posted to (`C0123456789`).
    channel: String,
    /// Where Slack's Web API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = SLACK_API_URL))]
    api_url: Option<String>,
    /// Receive Slack's events over a WebSocket clarify opens, so no public URL is needed;
    /// needs `app_token`.
    #[serde(default)]
    socket_mode: bool,
    /// The app-level token (`xapp-...` with `connections:write`); required with `socket_mode`.
    app_token: Option<String>,
    /// The environment variable holding `app_token`.
    app_token_env: Option<String>,
    /// Users (`U...`) or user groups (`S...`) mentioned in each announcement.
    #[serde(default)]
    mention: Vec<String>,
}

/// How a Telegram bot receives its updates.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TelegramMode {
    /// clarify long-polls `getUpdates`: no public URL needed; run it on one instance.
    #[default]
    Polling,
    /// Telegram calls `/hooks/telegram/<name>` with `webhook_secret`; for several instances.
    Webhook,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTelegram {
    /// Unique among the channels; routes name it, and in webhook mode Telegram calls
    /// `/hooks/telegram/<name>`.
    name: String,
    /// Let a Telegram user `[identities]` does not name answer, recorded as
    /// `telegram:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token from @BotFather (`123456:ABC-...`). This or `bot_token_env` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The chat requests are posted to: a number (a group's is negative) or `"@channelusername"`.
    chat_id: Id,
    #[serde(default)]
    #[schemars(extend("default" = "polling"))]
    mode: TelegramMode,
    /// The secret Telegram sends with each webhook call; required with `mode = "webhook"`, refused
    /// with polling.
    webhook_secret: Option<String>,
    /// The environment variable holding `webhook_secret`.
    webhook_secret_env: Option<String>,
    /// Where the Bot API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = TELEGRAM_API_URL))]
    api_url: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawDiscord {
    /// Unique among the channels; routes name it, and Discord calls `/hooks/discord/<name>`.
    name: String,
    /// Let a Discord user `[identities]` does not name answer, recorded as
    /// `discord:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The bot's token. This or `bot_token_env` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The application's public key (64 hex digits, under General Information), which verifies
    /// Discord's calls.
    public_key: String,
    /// The id of the channel requests are posted to, as a number or a string.
    channel_id: Id,
    /// Where Discord's API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = DISCORD_API_URL))]
    api_url: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawMattermost {
    /// Unique among the channels; routes name it, and Mattermost's buttons and dialogs call
    /// `/hooks/mattermost/<name>`.
    name: String,
    /// Let a Mattermost user `[identities]` does not name answer, recorded as
    /// `mattermost:<user id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The Mattermost server, such as `https://chat.example.com`.
    url: String,
    /// The bot account's access token. This or `bot_token_env` is required.
    bot_token: Option<String>,
    /// The environment variable holding `bot_token`.
    bot_token_env: Option<String>,
    /// The id of the channel requests are posted to (26 characters, under View Info).
    channel_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawTeams {
    /// Unique among the channels; routes name it, and the bot's messaging endpoint is
    /// `/hooks/teams/<name>`.
    name: String,
    /// Let a Teams user `[identities]` does not name answer, recorded as
    /// `teams:<Entra object id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The Azure Bot's Microsoft App ID: the audience of the tokens Teams sends.
    app_id: String,
    /// A client secret of the app. This or `app_password_env` is required.
    app_password: Option<String>,
    /// The environment variable holding `app_password`.
    app_password_env: Option<String>,
    /// The Microsoft Entra tenant (directory) id the single-tenant bot is registered in.
    tenant_id: String,
    /// The Bot Connector URL of the conversation requests are posted to (the `serviceUrl` of
    /// its activities, such as `https://smba.trafficmanager.net/emea/`); with
    /// `conversation_id`. Absent: the conversation the bot is added to is captured.
    service_url: Option<String>,
    /// The id of the conversation requests are posted to (`19:...@thread.tacv2` for a
    /// channel); with `service_url`.
    conversation_id: Option<String>,
    /// The client-credentials token endpoint.
    #[schemars(extend("default" = "https://login.microsoftonline.com/<tenant_id>/oauth2/v2.0/token"))]
    login_url: Option<String>,
    /// The Bot Framework's OpenID metadata, whose keys verify Teams' calls.
    #[schemars(extend("default" = clarify_channels::teams::OPENID_URL))]
    openid_url: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawGoogleChat {
    /// Unique among the channels; routes name it, and the Chat app's HTTP endpoint is
    /// `/hooks/google-chat/<name>`.
    name: String,
    /// Let a Google Chat user `[identities]` does not name answer, recorded as
    /// `google_chat:users/<id>`, instead of refusing their answer.
    #[serde(default)]
    allow_unmapped: bool,
    /// The path of the service account's JSON key file. This or `credentials_json_env` is
    /// required.
    credentials_file: Option<String>,
    /// The environment variable holding the service account's JSON key.
    credentials_json_env: Option<String>,
    /// The space requests are posted to: `spaces/AAAA...` (the app must be a member).
    space: String,
    /// The Google Cloud project number: the audience of the tokens Google Chat sends (set the
    /// app's Authentication Audience to Project Number).
    audience: Id,
    /// Where the Chat API is; a proxy or a test may stand in for it.
    #[schemars(extend("default" = clarify_channels::google_chat::API_URL))]
    api_url: Option<String>,
    /// Where the service account's token is obtained.
    #[schemars(extend("default" = clarify_channels::google_chat::TOKEN_URL))]
    token_url: Option<String>,
    /// Google's certificates for the Chat system account, which verify Google Chat's calls.
    #[schemars(extend("default" = clarify_channels::google_chat::CERTS_URL))]
    certs_url: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawEmail {
    /// Unique among the channels; routes name it.
    name: String,
    /// `smtps://host[:port]` (TLS, port 465) or `smtp://host[:port]` (plain, port 25; add
    /// `?tls=required` for STARTTLS on port 587, or `?tls=opportunistic`), with the user (and
    /// password) in the URL; a path names the EHLO host.
    smtp_url: String,
    /// The SMTP password, when it is not in the URL.
    password: Option<String>,
    /// The environment variable holding `password`.
    password_env: Option<String>,
    /// The sender: `clarify@example.com` or `Clarify <clarify@example.com>`.
    from: String,
    /// The recipients. Absent: the addresses `[identities]` gives the request's responders
    /// (and, for an escalation, its `escalate_to`).
    #[serde(default)]
    to: Vec<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawNtfy {
    /// Unique among the channels; routes name it.
    name: String,
    /// The ntfy server.
    #[schemars(extend("default" = NTFY_URL))]
    url: Option<String>,
    /// The topic pushes go to; whoever subscribes to it in the ntfy app gets them.
    topic: String,
    /// An access token, when the topic needs one.
    token: Option<String>,
    /// The environment variable holding `token`.
    token_env: Option<String>,
}

/// Reads the secret `key` of a channel: its value, or the environment variable `<key>_env`
/// names; both at once is an error, and so is a named variable that is unset or empty.
struct Secrets<'a> {
    at: &'a str,
    env: &'a dyn Fn(&str) -> Option<String>,
    fail: Fail<'a>,
}

impl Secrets<'_> {
    fn optional(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
    ) -> Result<Option<Secret>, String> {
        match (value, var) {
            (Some(_), Some(_)) => Err((self.fail)(
                &format!("{}.{key}", self.at),
                format!("give either {key} or {key}_env, not both"),
            )),
            (Some(v), None) if v.is_empty() => Err((self.fail)(
                &format!("{}.{key}", self.at),
                "is empty".to_owned(),
            )),
            (Some(v), None) => Ok(Some(Secret(v))),
            (None, Some(name)) => match (self.env)(&name).filter(|v| !v.is_empty()) {
                Some(v) => Ok(Some(Secret(v))),
                None => Err((self.fail)(
                    &format!("{}.{key}_env", self.at),
                    format!("the environment variable {name} is not set"),
                )),
            },
            (None, None) => Ok(None),
        }
    }

    fn required(
        &self,
        key: &str,
        value: Option<String>,
        var: Option<String>,
    ) -> Result<Secret, String> {
        self.optional(key, value, var)?.ok_or_else(|| {
            (self.fail)(
                &format!("{}.{key}", self.at),
                format!("is missing; give {key} = \"...\" or {key}_env = \"VARIABLE\""),
            )
        })
    }
}

impl RawChannel {
    fn name(&self) -> &str {
        match self {
            Self::Slack(c) => &c.name,
            Self::Telegram(c) => &c.name,
            Self::Discord(c) => &c.name,
            Self::Mattermost(c) => &c.name,
            Self::Teams(c) => &c.name,
            Self::GoogleChat(c) => &c.name,
            Self::Email(c) => &c.name,
            Self::Ntfy(c) => &c.name,
        }
    }

    fn check(
        self,
        at: &str,
        env: &dyn Fn(&str) -> Option<String>,
        fail: Fail<'_>,
    ) -> Result<Channel, String> {
        let name = self.name().to_owned();
        let allow_unmapped = match &self {
            Self::Slack(c) => c.allow_unmapped,
            Self::Telegram(c) => c.allow_unmapped,
            Self::Discord(c) => c.allow_unmapped,
            Self::Mattermost(c) => c.allow_unmapped,
            Self::Teams(c) => c.allow_unmapped,
            Self::GoogleChat(c) => c.allow_unmapped,
            Self::Email(_) | Self::Ntfy(_) => false,
        };
        let valid = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(fail(
                &format!("{at}.name"),
                format!("{name:?} must be 1 to 64 of A-Z a-z 0-9 - _ (it is part of a URL)"),
            ));
        }
        let secrets = Secrets { at, env, fail };
        let url = |key: &str, given: Option<String>, default: &str, schemes: &[&str]| {
            let text = given.unwrap_or_else(|| default.to_owned());
            match url::Url::parse(&text) {
                Ok(u) if schemes.contains(&u.scheme()) && u.has_host() => Ok(u),
                Ok(_) | Err(_) => Err(fail(
                    &format!("{at}.{key}"),
                    format!("{text:?} is not a {} URL", schemes.join(" or ")),
                )),
            }
        };
        let web = ["http", "https"];
        let kind = match self {
            Self::Slack(c) => {
                let app_token = secrets.optional("app_token", c.app_token, c.app_token_env)?;
                let signing_secret =
                    secrets.optional("signing_secret", c.signing_secret, c.signing_secret_env)?;
                if c.socket_mode && app_token.is_none() {
                    return Err(fail(
                        &format!("{at}.app_token"),
                        "is needed with socket_mode = true (an xapp- token with connections:write)"
                            .to_owned(),
                    ));
                }
                if !c.socket_mode && signing_secret.is_none() {
                    return Err(fail(
                        &format!("{at}.signing_secret"),
                        "is needed to verify Slack's calls to /hooks/slack/<name>; or set socket_mode = true"
                            .to_owned(),
                    ));
                }
                ChannelKind::Slack {
                    bot_token: secrets.required("bot_token", c.bot_token, c.bot_token_env)?,
                    signing_secret,
                    channel: nonempty(at, "channel", c.channel, fail)?,
                    api_url: url("api_url", c.api_url, SLACK_API_URL, &web)?,
                    socket_mode: c.socket_mode,
                    app_token,
                    mention: c.mention,
                }
            }
            Self::Telegram(c) => {
                let webhook_secret =
                    secrets.optional("webhook_secret", c.webhook_secret, c.webhook_secret_env)?;
                if matches!(c.mode, TelegramMode::Webhook) && webhook_secret.is_none() {
                    return Err(fail(
                        &format!("{at}.webhook_secret"),
                        "is needed with mode = \"webhook\"".to_owned(),
                    ));
                }
                if matches!(c.mode, TelegramMode::Polling) && webhook_secret.is_some() {
                    return Err(fail(
                        &format!("{at}.webhook_secret"),
                        "is used with mode = \"webhook\" only; polling needs no secret".to_owned(),
                    ));
                }
                ChannelKind::Telegram {
                    bot_token: secrets.required("bot_token", c.bot_token, c.bot_token_env)?,
                    chat_id: nonempty(at, "chat_id", c.chat_id.text(), fail)?,
                    webhook_secret,
                    api_url: url("api_url", c.api_url, TELEGRAM_API_URL, &web)?,
                }
            }
            Self::Discord(c) => {
                let hex = c.public_key.len() == 64
                    && c.public_key.chars().all(|ch| ch.is_ascii_hexdigit());
                if !hex {
                    return Err(fail(
                        &format!("{at}.public_key"),
                        "must be the application's public key: 64 hex digits".to_owned(),
                    ));
                }
                ChannelKind::Discord {
                    bot_token: secrets.required("bot_token", c.bot_token, c.bot_token_env)?,
                    public_key: c.public_key.to_ascii_lowercase(),
                    channel_id: nonempty(at, "channel_id", c.channel_id.text(), fail)?,
                    api_url: url("api_url", c.api_url, DISCORD_API_URL, &web)?,
                }
            }
            Self::Mattermost(c) => ChannelKind::Mattermost {
                url: url("url", Some(c.url), "", &web)?,
                bot_token: secrets.required("bot_token", c.bot_token, c.bot_token_env)?,
                channel_id: nonempty(at, "channel_id", c.channel_id, fail)?,
            },
            Self::Teams(c) => {
                let conversation = match (c.service_url, c.conversation_id) {
                    (Some(service), Some(id)) => Some(clarify_channels::teams::Conversation {
                        service_url: url("service_url", Some(service), "", &web)?
                            .as_str()
                            .to_owned(),
                        conversation_id: nonempty(at, "conversation_id", id, fail)?,
                    }),
                    (None, None) => None,
                    (Some(_), None) | (None, Some(_)) => {
                        return Err(fail(
                            &format!("{at}.conversation_id"),
                            "give service_url and conversation_id together, or neither (the \
                             conversation the bot is added to is then captured)"
                                .to_owned(),
                        ));
                    }
                };
                let tenant_id = nonempty(at, "tenant_id", c.tenant_id, fail)?;
                let login = clarify_channels::teams::token_url(TEAMS_LOGIN, &tenant_id);
                ChannelKind::Teams {
                    app_id: nonempty(at, "app_id", c.app_id, fail)?,
                    app_password: secrets.required(
                        "app_password",
                        c.app_password,
                        c.app_password_env,
                    )?,
                    conversation,
                    login_url: url("login_url", c.login_url, &login, &web)?,
                    openid_url: url(
                        "openid_url",
                        c.openid_url,
                        clarify_channels::teams::OPENID_URL,
                        &web,
                    )?,
                    tenant_id,
                }
            }
            Self::GoogleChat(c) => {
                let (key, text) = match (c.credentials_file, c.credentials_json_env) {
                    (Some(_), Some(_)) => {
                        return Err(fail(
                            &format!("{at}.credentials_file"),
                            "give either credentials_file or credentials_json_env, not both"
                                .to_owned(),
                        ));
                    }
                    (Some(path), None) => (
                        "credentials_file",
                        std::fs::read_to_string(&path).map_err(|e| {
                            fail(
                                &format!("{at}.credentials_file"),
                                format!("cannot read {path}: {e}"),
                            )
                        })?,
                    ),
                    (None, Some(var)) => (
                        "credentials_json_env",
                        env(&var).filter(|v| !v.is_empty()).ok_or_else(|| {
                            fail(
                                &format!("{at}.credentials_json_env"),
                                format!("the environment variable {var} is not set"),
                            )
                        })?,
                    ),
                    (None, None) => {
                        return Err(fail(
                            &format!("{at}.credentials_file"),
                            "is missing; give credentials_file = \"key.json\" or \
                             credentials_json_env = \"VARIABLE\""
                                .to_owned(),
                        ));
                    }
                };
                let account = clarify_channels::google_chat::ServiceAccount::from_json(&text)
                    .map_err(|e| fail(&format!("{at}.{key}"), format!("the key {e}")))?;
                let space = nonempty(at, "space", c.space, fail)?;
                if !space.starts_with("spaces/") {
                    return Err(fail(
                        &format!("{at}.space"),
                        format!("{space:?} must be a space's name, spaces/..."),
                    ));
                }
                let audience = c.audience.text();
                if audience.is_empty() || !audience.chars().all(|ch| ch.is_ascii_digit()) {
                    return Err(fail(
                        &format!("{at}.audience"),
                        "must be the project number (digits)".to_owned(),
                    ));
                }
                ChannelKind::GoogleChat {
                    account,
                    space,
                    audience,
                    api_url: url(
                        "api_url",
                        c.api_url,
                        clarify_channels::google_chat::API_URL,
                        &web,
                    )?,
                    token_url: url(
                        "token_url",
                        c.token_url,
                        clarify_channels::google_chat::TOKEN_URL,
                        &web,
                    )?,
                    certs_url: url(
                        "certs_url",
                        c.certs_url,
                        clarify_channels::google_chat::CERTS_URL,
                        &web,
                    )?,
                }
            }
            Self::Email(c) => {
                let address = |key: &str, a: &str| {
                    let ok = a
                        .split_once('@')
                        .is_some_and(|(l, d)| !l.is_empty() && d.contains('.'));
                    if ok {
                        Ok(())
                    } else {
                        Err(fail(
                            &format!("{at}.{key}"),
                            format!("{a:?} is not an e-mail address"),
                        ))
                    }
                };
                address("from", &c.from)?;
                for a in &c.to {
                    address("to", a)?;
                }
                ChannelKind::Email {
                    smtp_url: url("smtp_url", Some(c.smtp_url), "", &["smtp", "smtps"])?,
                    password: secrets.optional("password", c.password, c.password_env)?,
                    from: c.from,
                    to: c.to,
                }
            }
            Self::Ntfy(c) => ChannelKind::Ntfy {
                url: url("url", c.url, NTFY_URL, &web)?,
                topic: nonempty(at, "topic", c.topic, fail)?,
                token: secrets.optional("token", c.token, c.token_env)?,
            },
        };
        Ok(Channel {
            name,
            kind,
            allow_unmapped,
        })
    }
}

fn nonempty(at: &str, key: &str, value: String, fail: Fail<'_>) -> Result<String, String> {
    if value.trim().is_empty() {
        return Err(fail(&format!("{at}.{key}"), "is empty".to_owned()));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "SLACK_BOT_TOKEN").then(|| "xoxb-from-env".to_owned())
    }

    fn check(text: &str) -> Result<Config, String> {
        parse(Path::new("clarify.toml"), text, &env)
    }

    #[test]
    fn the_example_file_in_the_repository_is_valid() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/clarify.example.toml");
        let text = std::fs::read_to_string(&path).expect("the example file exists");
        // Every variable the file names is set.
        let config =
            parse(&path, &text, &|_| Some("from-env".to_owned())).unwrap_or_else(|e| panic!("{e}"));
        let types: Vec<&str> = config.channels.iter().map(|c| c.kind.type_name()).collect();
        assert_eq!(
            types,
            [
                "slack",
                "telegram",
                "discord",
                "mattermost",
                "teams",
                "email",
                "ntfy"
            ]
        );
        assert!(!config.routes.is_empty());
        assert!(!config.identities.is_empty());
        assert!(config.claude_code.is_some() && config.gate.is_some());
        assert!(config.server.listen.is_some());
        assert_eq!(
            config.server.outbound_allow.as_deref(),
            Some(&["10.20.0.0/16".to_owned(), "hooks.internal".to_owned()][..])
        );
        assert_eq!(config.rules.as_ref().map(|r| r.len()), Some(2));
        assert_eq!(config.suggest.approvals, 3);
        assert!(config.a2a);
        assert_eq!(
            config
                .agui
                .iter()
                .map(|a| (a.name.as_str(), a.url.as_str(), a.headers.len()))
                .collect::<Vec<_>>(),
            [("deployer", "http://127.0.0.1:8000/agent", 1)]
        );
        let oidc = config.oidc.expect("[oidc]");
        assert_eq!(oidc.client_secret.as_deref(), Some("from-env"));
        assert_eq!(config.groups["sre"], ["alice", "bob"]);
        assert!(config.forbid_self_approval);
        assert_eq!(config.step_up, Some(clarify_core::Risk::High));
    }

    #[test]
    fn step_up_takes_only_high() {
        let config = check("[decisions]\n").expect("valid");
        assert_eq!(config.step_up, None);
        let e = check("[decisions]\nstep_up = \"normal\"\n").expect_err("refused");
        assert_eq!(
            e,
            "clarify.toml: decisions.step_up: \"normal\" is not a risk step-up applies to; use \"high\""
        );
    }

    /// The handbook's ten worked rules compile, and decide as the page says.
    #[test]
    fn the_worked_rules_of_the_handbook_compile() {
        use clarify_core::rules::{Call, Decide};
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/decisions/rules.md");
        let page = std::fs::read_to_string(&path).expect("the policy page exists");
        let after = page
            .split("## Ten worked rules")
            .nth(1)
            .expect("the worked rules section");
        let block = after
            .split("```toml\n")
            .nth(1)
            .and_then(|b| b.split("```").next())
            .expect("a toml block");
        let config = check(block).unwrap_or_else(|e| panic!("{e}"));
        let rules = config.rules.expect("rules");
        assert!(rules.len() >= 10, "{rules:?}");
        let decide = |tool: &str, args: serde_json::Value, cwd: Option<&str>| {
            let call = Call {
                tool: tool.to_owned(),
                args,
                cwd: cwd.map(str::to_owned),
                ..Call::default()
            };
            let verdict = rules.decide(&call);
            verdict.matched.map(|m| (m.name, m.decide))
        };
        let named = |name: &str, decide: Decide| Some((name.to_owned(), decide));
        assert_eq!(
            decide("refund", serde_json::json!({"amount": 20}), None),
            named("small-refunds", Decide::Allow)
        );
        assert_eq!(
            decide("refund", serde_json::json!({"amount": 9000}), None),
            named("large-refunds", Decide::Ask)
        );
        assert_eq!(
            decide(
                "Write",
                serde_json::json!({"file_path": "/etc/hosts"}),
                Some("/work/app")
            ),
            named("writes-outside-workspace", Decide::Deny)
        );
        assert_eq!(
            decide(
                "Write",
                serde_json::json!({"file_path": "/work/app/x.rs"}),
                Some("/work/app")
            ),
            None
        );
        assert_eq!(
            decide(
                "send_mail",
                serde_json::json!({"to": ["x@other.org"]}),
                None
            ),
            named("mail-outside-domain", Decide::Ask)
        );
        assert_eq!(
            decide("Bash", serde_json::json!({"command": "git log -5"}), None),
            named("read-only-git", Decide::Allow)
        );
        assert_eq!(
            decide(
                "Bash",
                serde_json::json!({"command": "git push --force"}),
                None
            ),
            named("no-force-push", Decide::Deny)
        );
        assert_eq!(
            decide(
                "kubectl_apply",
                serde_json::json!({"namespace": "prod-1"}),
                None
            ),
            named("prod-namespaces", Decide::Ask)
        );
        assert_eq!(
            decide(
                "mcp__db__query",
                serde_json::json!({"sql": "DROP TABLE users"}),
                None
            ),
            named("destructive-sql", Decide::Deny)
        );
        assert_eq!(
            decide(
                "mcp__db__query",
                serde_json::json!({"sql": "select dropped from t"}),
                None
            ),
            None
        );
    }

    #[test]
    fn the_push_key_and_subject_are_read_and_bad_ones_named() {
        let config = check(
            "[push]\nvapid_private_key = \"yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw\"\n\
             subject = \"mailto:ops@example.com\"\n",
        )
        .expect("valid");
        assert!(config.push.key.is_some());
        assert_eq!(
            config.push.subject.as_deref(),
            Some("mailto:ops@example.com")
        );
        assert!(check("").expect("valid").push.key.is_none());
        let e = check("[push]\nvapid_private_key = \"c2hvcnQ\"\n").expect_err("refused");
        assert_eq!(
            e,
            "clarify.toml: push.vapid_private_key: a VAPID private key is 32 bytes, got 5"
        );
        let e = check("[push]\nsubject = \"ops@example.com\"\n").expect_err("refused");
        assert!(e.starts_with("clarify.toml: push.subject: "), "{e}");
        let e = check("[push]\nvapid_private_key = \"x\"\nvapid_private_key_env = \"K\"\n")
            .expect_err("refused");
        assert!(e.contains("not both"), "{e}");
        let e = check("[push]\nvapid = \"x\"\n").expect_err("refused");
        assert!(e.contains("vapid"), "{e}");
    }

    #[test]
    fn a_rule_that_cannot_compile_stops_the_check_naming_it_and_the_column() {
        let e = check(
            "[[rules]]\nname = \"fine\"\nwhen = \"true\"\ndecide = \"allow\"\n\n\
             [[rules]]\nname = \"limits\"\nwhen = \"args.amount > limit\"\ndecide = \"deny\"\n",
        )
        .expect_err("refused");
        assert_eq!(
            e,
            "clarify.toml: rules[1]: rule \"limits\": when at column 15: unknown variable \
             \"limit\"; a rule reads tool, args, agent, session, tags, cwd, on_behalf_of"
        );
        let e = check("[[rules]]\nname = \"x\"\nwhen = \"args.n + 1\"\ndecide = \"deny\"\n")
            .expect_err("refused");
        assert!(e.contains("not a boolean"), "{e}");
        let e = check("[[rules]]\nname = \"x\"\ndecide = \"maybe\"\n").expect_err("refused");
        assert!(e.contains("decide"), "{e}");
        let e = check("[[rules]]\nname = \"x\"\ndecide = \"ask\"\ntimeout = \"soon\"\n")
            .expect_err("refused");
        assert!(e.contains("rules[0].timeout"), "{e}");
    }

    #[test]
    fn oidc_takes_its_defaults_and_names_what_is_wrong() {
        let config = check(
            "[oidc]\nissuer = \"https://id.example.com/realms/acme\"\nclient_id = \"clarify\"\n\
             client_secret = \"s\"\n",
        )
        .expect("valid");
        let oidc = config.oidc.expect("[oidc]");
        assert_eq!(oidc.scopes, ["openid", "email", "profile"]);
        assert_eq!(
            (oidc.name_claim.as_str(), oidc.groups_claim.as_str()),
            ("email", "groups")
        );
        assert_eq!(oidc.tenant, "default");
        assert!(oidc.key_login && oidc.allowed_domains.is_empty());
        for (text, says) in [
            (
                "[oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\n",
                "clarify.toml: oidc.client_secret: is missing; give client_secret = \"...\" or client_secret_env = \"VARIABLE\"",
            ),
            (
                "[oidc]\nissuer = \"id.example.com\"\nclient_id = \"c\"\nclient_secret = \"s\"\n",
                "clarify.toml: oidc.issuer: \"id.example.com\" is not an http or https URL",
            ),
            (
                "[oidc]\nissuer = \"https://id.example.com\"\nclient_id = \"c\"\nclient_secret = \"s\"\n\
                 allowed_domains = [\"https://example.com\"]\n",
                "clarify.toml: oidc.allowed_domains: \"https://example.com\" is not an e-mail domain such as \"example.com\"",
            ),
            (
                "[groups]\nsre = [\"al ice\"]\n",
                "clarify.toml: groups.\"sre\": \"al ice\" is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)",
            ),
        ] {
            assert_eq!(check(text).err().as_deref(), Some(says), "{text}");
        }
    }

    #[test]
    fn an_empty_file_is_a_valid_configuration() {
        let config = check("").expect("valid");
        assert!(config.channels.is_empty() && config.routes.is_empty());
        assert!(config.server.db.is_none());
    }

    #[test]
    fn secrets_come_from_the_file_or_the_environment() {
        let config = check(
            "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nbot_token_env = \"SLACK_BOT_TOKEN\"\n\
             signing_secret = \"s3cret\"\nchannel = \"C123\"\n",
        )
        .expect("valid");
        match &config.channels[0].kind {
            ChannelKind::Slack {
                bot_token,
                signing_secret,
                api_url,
                ..
            } => {
                assert_eq!(bot_token.expose(), "xoxb-from-env");
                assert_eq!(signing_secret.as_ref().map(Secret::expose), Some("s3cret"));
                assert_eq!(api_url.as_str(), "https://slack.com/api");
            }
            other => panic!("a slack channel, got {other:?}"),
        }
        assert!(
            !format!("{config:?}").contains("s3cret"),
            "secrets are not printed"
        );
    }

    /// Every mistake is one line naming the file, the key and the problem.
    #[test]
    fn mistakes_are_named_on_one_line() {
        let slack = "[[channels]]\nname = \"ops\"\ntype = \"slack\"\nsigning_secret = \"s\"\nchannel = \"C1\"\n";
        let cases: &[(&str, &str)] = &[
            (
                "[server]\nlisten = 7420\n",
                "clarify.toml:2: server.listen: invalid type: integer `7420`",
            ),
            (
                "[server]\nmax_waiter = 5\n",
                "clarify.toml:2: server.max_waiter: unknown field `max_waiter`",
            ),
            (
                "[server]\nretain_resolved = \"forever\"\n",
                "clarify.toml: server.retain_resolved:",
            ),
            (
                "[server]\notlp_endpoint = \"collector:4318\"\n",
                "clarify.toml: server.otlp_endpoint: \"collector:4318\" is not an http:// or https:// address",
            ),
            (
                "[server]\ndurability = \"maybe\"\n",
                "clarify.toml:2: server.durability: unknown variant `maybe`, expected `normal` or `full`",
            ),
            (
                "[server]\noutbound_allow = [\"10.20.0.0/16\", \"10.0.0.0/33\"]\n",
                "clarify.toml: server.outbound_allow: \"10.0.0.0/33\" is not a CIDR range",
            ),
            ("[sever]\n", "clarify.toml:1: sever: unknown field `sever`"),
            (
                slack,
                "clarify.toml: channels[0].bot_token: is missing; give bot_token = \"...\" or bot_token_env = \"VARIABLE\"",
            ),
            (
                &format!("{slack}bot_token_env = \"NOT_SET\"\n"),
                "clarify.toml: channels[0].bot_token_env: the environment variable NOT_SET is not set",
            ),
            (
                &format!("{slack}bot_token = \"x\"\nbot_token_env = \"SLACK_BOT_TOKEN\"\n"),
                "clarify.toml: channels[0].bot_token: give either bot_token or bot_token_env, not both",
            ),
            (
                &format!("{slack}bot_token = \"x\"\nbot_tokn = \"y\"\n"),
                "unknown field `bot_tokn`",
            ),
            (
                "[[channels]]\nname = \"x\"\ntype = \"slak\"\n",
                "unknown variant `slak`",
            ),
            (
                &format!("{slack}bot_token = \"x\"\n[[routes]]\nchannels = [\"opz\"]\n"),
                "clarify.toml: routes[0].channels: \"opz\" is not the name of any [[channels]] entry",
            ),
            (
                &format!(
                    "{slack}bot_token = \"x\"\n[[routes]]\nchannels = [\"ops\"]\nkinds = [\"aproval\"]\n"
                ),
                "clarify.toml: routes[0].kinds: \"aproval\" is not a question kind",
            ),
            (
                "[identities]\n\"slak:U1\" = \"alice\"\n",
                "clarify.toml: identities.\"slak:U1\": the platform must be one of",
            ),
            (
                "[[channels]]\nname = \"d\"\ntype = \"discord\"\nbot_token = \"t\"\npublic_key = \"abc\"\nchannel_id = 1\n",
                "clarify.toml: channels[0].public_key: must be the application's public key: 64 hex digits",
            ),
            (
                "[[channels]]\nname = \"m\"\ntype = \"email\"\nsmtp_url = \"http://mail\"\nfrom = \"a@b.c\"\n",
                "clarify.toml: channels[0].smtp_url: \"http://mail\" is not a smtp or smtps URL",
            ),
            (
                "[[channels]]\nname = \"n\"\ntype = \"ntfy\"\ntopic = \"t\"\n[[channels]]\nname = \"n\"\ntype = \"ntfy\"\ntopic = \"u\"\n",
                "clarify.toml: channels[1].name: \"n\" names two channels",
            ),
            (
                "[claude_code]\nallow = [\"\"]\n",
                "clarify.toml: claude_code: has an empty pattern",
            ),
            (
                "[[agui]]\nname = \"a b\"\nurl = \"http://x\"\n",
                "clarify.toml: agui[0].name: \"a b\" must be 1 to 64 of",
            ),
            (
                "[[agui]]\nname = \"a\"\nurl = \"ftp://x\"\n",
                "clarify.toml: agui[0].url: \"ftp://x\" is not an http or https URL",
            ),
            (
                "[[agui]]\nname = \"a\"\nurl = \"http://x\"\n[[agui]]\nname = \"a\"\nurl = \"http://y\"\n",
                "clarify.toml: agui[1].name: \"a\" is the name of another [[agui]] entry",
            ),
            (
                "[[agui]]\nname = \"a\"\nurl = \"http://x\"\nheaders = { \"Bad Name\" = \"v\" }\n",
                "clarify.toml: agui[0].headers.Bad Name: is not an HTTP header name",
            ),
        ];
        for (text, expected) in cases {
            let e = check(text).expect_err(text);
            assert!(
                e.contains(expected),
                "{text:?}\n  got:  {e}\n  want: {expected}"
            );
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }
}
