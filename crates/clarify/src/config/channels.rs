//! `[[channels]]`: each platform's keys as written, their checks and defaults, and the checked
//! entry `serve` turns into the channels it announces on.

use schemars::JsonSchema;
use serde::Deserialize;

use super::secrets::{Secret, Secrets};
use super::{Config, Fail};

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

// The default URLs of the platforms' APIs, named once for the checks and the reference.
const SLACK_API_URL: &str = "https://slack.com/api";
const TELEGRAM_API_URL: &str = "https://api.telegram.org";
const DISCORD_API_URL: &str = "https://discord.com/api/v10";
const NTFY_URL: &str = "https://ntfy.sh";
const TEAMS_LOGIN: &str = "https://login.microsoftonline.com";

/// A Telegram chat id (a number) or channel username, or a Discord snowflake, written either as
/// a number or as a string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum Id {
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
pub(super) enum RawChannel {
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
pub(super) struct RawSlack {
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
pub(super) enum TelegramMode {
    /// clarify long-polls `getUpdates`: no public URL needed; run it on one instance.
    #[default]
    Polling,
    /// Telegram calls `/hooks/telegram/<name>` with `webhook_secret`; for several instances.
    Webhook,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTelegram {
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
pub(super) struct RawDiscord {
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
pub(super) struct RawMattermost {
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
pub(super) struct RawTeams {
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
pub(super) struct RawGoogleChat {
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
pub(super) struct RawEmail {
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
pub(super) struct RawNtfy {
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

    pub(super) fn check(
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
