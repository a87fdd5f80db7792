//! The configuration file: `clarify serve --config PATH` (or `CLARIFY_CONFIG`), and `clarify
//! config check PATH`.
//!
//! TOML, every part optional: `[server]` (what `serve`'s flags set; a flag or its environment
//! variable wins over the file), `[[channels]]`, `[[routes]]`, `[identities]`, `[oidc]`
//! (sign-in through an identity provider), `[groups]`, `[decisions]`, `[push]` (Web Push's
//! VAPID key pair), and the tool-name
//! policies `[claude_code]` (for every `clarify hook <agent>` and `clarify acp`) and `[gate]` (for
//! `clarify gate`).
//! A secret is given as a value (`bot_token = "..."`), as the name of an environment variable
//! (`bot_token_env = "SLACK_BOT_TOKEN"`) or as the path of a file holding it (`bot_token_file =
//! "/run/secrets/slack"`). Whatever is wrong (an unknown key, a wrong type, a
//! missing secret, a route to a channel that does not exist) stops the command with one line
//! naming the file, the key and the problem: nothing is silently ignored.
//!
//! `docs/clarify.example.toml` shows every key; a test parses it. The raw types (here, and each
//! chat platform's in its folder of `clarify-channels`) are the single source of the handbook's
//! configuration reference (`docs/src/reference/configuration.md`, rendered from their JSON
//! Schema by `reference`): each key's doc comment is its description there, and a default the
//! checks apply is named in a `default` the schema carries.
//!
//! Each part of the file has a module here with its raw type and checks: [`server`], [`secrets`]
//! (how a secret is given), [`channels`] (the list; each `[[channels]]` table is its platform's,
//! see [`clarify_channels::config`]), [`rules`] (`[[rules]]`, the tool-name policies,
//! `[decisions]` and `[suggestions]`), [`oidc`], [`push`] and [`protocols`] (`[a2a]` and
//! `[[agui]]`). This module reads the file and checks what crosses parts: channel names, routes,
//! identities and groups.

mod channels;
mod oidc;
mod protocols;
mod push;
mod rules;
mod secrets;
mod server;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clarify_core::policy::Policy;
use schemars::JsonSchema;
use serde::Deserialize;

use clarify_channels::config::RawChannel;
use oidc::RawOidc;
use protocols::{RawA2a, RawAgui};
use push::RawPush;
use rules::{RawDecisions, RawPolicy, RawRule, RawSuggestions};
use server::RawServer;
pub use server::Server;

/// A checked configuration file.
#[derive(Debug, Default)]
pub struct Config {
    pub server: Server,
    pub channels: Vec<clarify_channels::Channel>,
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

pub use clarify_channels::Route;

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
    let channels = channels::check(raw.channels, env, &fail)?;
    let names: BTreeSet<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    for (i, route) in raw.routes.iter().enumerate() {
        let at = format!("routes[{i}]");
        if route.channels.is_empty() {
            return Err(fail(
                &format!("{at}.channels"),
                "is empty; name at least one channel".to_owned(),
            ));
        }
        if let Some(unknown) = route.channels.iter().find(|c| !names.contains(c.as_str())) {
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
