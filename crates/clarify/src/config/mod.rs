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
//! missing secret, a route to a channel that does not exist) stops the command with a line per
//! problem naming the file, the line and column, the key and the problem, every problem found at
//! once: nothing is silently ignored.
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
mod located;
mod oidc;
mod oncall;
mod protocols;
mod push;
mod receipts;
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

use clarify_channels::RawChannel;
use oidc::RawOidc;
use oncall::RawOnCall;
use protocols::{RawA2a, RawAgui};
use push::RawPush;
use receipts::RawReceipts;
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
    /// `[decisions] max_extension`, in seconds: how far past its first deadline a request may
    /// be extended; `None` for the store's default.
    pub max_extension: Option<u64>,
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
    /// `[receipts]`, checked, its key resolved and read.
    pub receipts: clarify_server::state::receipts::ReceiptsConfig,
    /// `[oncall]`, checked, its keys resolved and read.
    pub oncall: clarify_server::state::oncall::OnCallConfig,
}

pub use clarify_channels::Route;

/// `clarify config check PATH`: prints what the file holds and exits 0, or prints every problem
/// found, one a line with the line and column it is at, and exits 1.
pub fn check_command(path: &Path) -> std::process::ExitCode {
    match read(path) {
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
            let problems: Vec<&str> = e.lines().collect();
            for problem in &problems {
                eprintln!("clarify: {problem}");
            }
            if problems.len() > 1 {
                eprintln!("clarify: {} problems in {}", problems.len(), path.display());
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// Reads and checks the file at `path`: a line for each problem, naming the file, where in it,
/// the key and the problem, each after the first starting `clarify: ` as the first does once
/// printed.
pub fn load(path: &Path) -> Result<Config, String> {
    read(path).map_err(|e| e.replace('\n', "\nclarify: "))
}

/// [`load`], its problems one a line as they are.
fn read(path: &Path) -> Result<Config, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read the configuration file {}: {e}", path.display()))?;
    parse(path, &text, &|name| std::env::var(name).ok())
}

/// Parses `text` (read from `path`), resolving `*_env` secrets through `env`. Every problem
/// it finds is a line of the error, in the file's order, each naming the file, the line and
/// column, the key and the problem: a file with several mistakes shows them all at once.
pub fn parse(
    path: &Path,
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, String> {
    let file = path.display();
    let document = located::Document::new(text);
    let mut problems = Problems::default();
    let fail = |key: &str, problem: String| format!("{file}{}: {key}: {problem}", document.at(key));
    // Every variable the file names, before any table is read: a table stops at its first
    // problem, and a newcomer should see every variable to set in one run.
    for (key, name) in document.unset_variables(env) {
        problems.add(fail(
            &key,
            format!("the environment variable {name} is not set"),
        ));
    }
    let raw: RawConfig = {
        let parsed = toml::Deserializer::parse(text)
            .map_err(|e| located(&file, text, None, &e))
            .and_then(|de| {
                serde_path_to_error::deserialize(de).map_err(|e| {
                    let key = e.path().to_string();
                    located(&file, text, Some(key), e.inner())
                })
            });
        match parsed {
            Ok(raw) => raw,
            Err(e) => {
                problems.add(e);
                return Err(problems.into_error());
            }
        }
    };
    let server = problems.keep(raw.server.check(&fail));
    let tables = raw.channels.len();
    let channels = channels::check(raw.channels, env, &fail, &mut problems);
    // A route naming a channel whose table has a problem is not a problem of its own.
    let every_channel_read = channels.len() == tables;
    let names: BTreeSet<&str> = channels.iter().map(|c| c.name.as_str()).collect();
    for (i, route) in raw.routes.iter().enumerate() {
        let at = format!("routes[{i}]");
        if let Some(Err(e)) = route
            .warn_before
            .as_deref()
            .map(clarify_core::text::parse_duration_seconds)
        {
            problems.add(fail(&format!("{at}.warn_before"), e));
        }
        if route.channels.is_empty() {
            problems.add(fail(
                &format!("{at}.channels"),
                "is empty; name at least one channel".to_owned(),
            ));
        }
        if let Some(unknown) = route
            .channels
            .iter()
            .find(|c| every_channel_read && !names.contains(c.as_str()))
        {
            problems.add(fail(
                &format!("{at}.channels"),
                format!("{unknown:?} is not the name of any [[channels]] entry"),
            ));
        }
        if let Some(kind) = route.kinds.iter().find(|k| !KINDS.contains(&k.as_str())) {
            problems.add(fail(
                &format!("{at}.kinds"),
                format!("{kind:?} is not a question kind; use {}", KINDS.join(", ")),
            ));
        }
        if route
            .agent
            .as_deref()
            .is_some_and(|a| a.is_empty() || a.strip_suffix('*').unwrap_or(a).contains('*'))
        {
            problems.add(fail(
                &format!("{at}.agent"),
                "must be a name, a prefix followed by *, or *".to_owned(),
            ));
        }
    }
    for (who, responder) in &raw.identities {
        let key = format!("identities.{who:?}");
        let Some((platform, id)) = who.split_once(':') else {
            problems.add(fail(
                &key,
                "must be `platform:user id`, e.g. \"slack:U012ABCDEF\"".to_owned(),
            ));
            continue;
        };
        let mut platforms = clarify_channels::identity_prefixes();
        platforms.extend(clarify_server::state::oncall::IDENTITY_PREFIXES);
        if !platforms.contains(&platform) || id.trim().is_empty() {
            problems.add(fail(
                &key,
                format!(
                    "the platform must be one of {} with a user id after the colon",
                    platforms.join(", ")
                ),
            ));
        }
        if !valid_responder(responder) {
            problems.add(fail(
                &key,
                format!("{responder:?} is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)"),
            ));
        }
    }
    let rules = if raw.rules.is_empty() {
        None
    } else {
        let count = raw.rules.len();
        let mut specs = Vec::with_capacity(count);
        for (i, rule) in raw.rules.into_iter().enumerate() {
            specs.extend(problems.keep(rule.check(&format!("rules[{i}]"), &fail)));
        }
        // Compiled only when every rule was read, so that an index names the file's rule.
        if specs.len() == count {
            problems.keep(clarify_core::rules::Rules::compile(specs).map_err(|e| {
                let at = format!("rules[{}]", e.index);
                fail(&at, e.to_string())
            }))
        } else {
            None
        }
    };
    let suggest = problems.keep(raw.suggestions.check(&fail));
    for (group, members) in &raw.groups {
        let key = format!("groups.{group:?}");
        if !valid_responder(group) {
            problems.add(fail(
                &key,
                "a group name is 1 to 64 of A-Z a-z 0-9 . _ @ -".to_owned(),
            ));
        }
        if let Some(bad) = members.iter().find(|m| !valid_responder(m)) {
            problems.add(fail(
                &key,
                format!("{bad:?} is not a responder name (1 to 64 of A-Z a-z 0-9 . _ @ -)"),
            ));
        }
    }
    let oidc = raw.oidc.and_then(|o| problems.keep(o.check(env, &fail)));
    let push = raw
        .push
        .and_then(|p| problems.keep(p.check(env, &fail)))
        .unwrap_or_default();
    let receipts = raw
        .receipts
        .and_then(|r| problems.keep(r.check(env, &fail)))
        .unwrap_or_default();
    let oncall = raw
        .oncall
        .and_then(|o| problems.keep(o.check(env, &fail)))
        .unwrap_or_default();
    let max_extension = match raw.decisions.max_extension.as_deref() {
        None => None,
        Some(text) => match clarify_core::text::parse_duration_seconds(text) {
            Ok(seconds) => Some(seconds),
            Err(e) => {
                problems.add(fail("decisions.max_extension", e));
                None
            }
        },
    };
    let step_up = match raw.decisions.step_up.as_deref() {
        None => None,
        Some("high") => Some(clarify_core::Risk::High),
        Some(other) => {
            problems.add(fail(
                "decisions.step_up",
                format!("{other:?} is not a risk step-up applies to; use \"high\""),
            ));
            None
        }
    };
    let mut agui = Vec::with_capacity(raw.agui.len());
    for (i, entry) in raw.agui.into_iter().enumerate() {
        let Some(agent) = problems.keep(entry.check(&format!("agui[{i}]"), &fail)) else {
            continue;
        };
        if agui
            .iter()
            .any(|a: &clarify_server::state::AguiAgent| a.name == agent.name)
        {
            problems.add(fail(
                &format!("agui[{i}].name"),
                format!("{:?} is the name of another [[agui]] entry", agent.name),
            ));
        }
        agui.push(agent);
    }
    let claude_code = raw
        .claude_code
        .and_then(|p| problems.keep(p.check("claude_code", &fail)));
    let gate = raw.gate.and_then(|p| problems.keep(p.check("gate", &fail)));
    let server = match server {
        Some(server) if problems.is_empty() => server,
        _ => return Err(problems.into_error()),
    };
    Ok(Config {
        agui,
        push,
        receipts,
        oncall,
        rules,
        suggest: suggest.unwrap_or_default(),
        a2a: raw.a2a.enabled,
        server,
        channels,
        routes: raw.routes,
        identities: raw.identities,
        oidc,
        groups: raw.groups,
        forbid_self_approval: raw.decisions.forbid_self_approval,
        max_extension,
        step_up,
        claude_code,
        gate,
    })
}

/// The problems found so far, each a line naming the file, where in it, the key and the
/// problem; one found twice (a variable both the first pass and its table name) counts once.
#[derive(Default)]
struct Problems(Vec<String>);

impl Problems {
    fn add(&mut self, problem: String) {
        if !self.0.contains(&problem) {
            self.0.push(problem);
        }
    }

    /// The value of a check that passed; a failed one's problem is kept.
    fn keep<T>(&mut self, checked: Result<T, String>) -> Option<T> {
        checked.map_err(|e| self.add(e)).ok()
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems in the order of the lines they name (those naming none last), one a line.
    fn into_error(mut self) -> String {
        self.0.sort_by_key(|p| line_of(p));
        self.0.join("\n")
    }
}

/// The line a problem names after the file's name (`clarify.toml:12:1: ...`), if any.
fn line_of(problem: &str) -> usize {
    problem
        .split(": ")
        .next()
        .and_then(|at| at.split(':').nth(1))
        .and_then(|l| l.parse().ok())
        .unwrap_or(usize::MAX)
}

const KINDS: [&str; 5] = ["open", "single", "multi", "approval", "form"];

fn valid_responder(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

/// `file:line:column: key: message`, on one line.
fn located(
    file: &dyn std::fmt::Display,
    text: &str,
    key: Option<String>,
    e: &toml::de::Error,
) -> String {
    let at = e
        .span()
        .map(|span| located::position(text, span.start))
        .unwrap_or_default();
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
    /// Receipts: the key decisions are signed with. Without it, a key is made once and kept
    /// in the store, shared by every instance on it.
    #[serde(default)]
    receipts: Option<RawReceipts>,
    /// On-call schedules as responders: `oncall:<schedule>` in a request's `responders` or
    /// `escalate_to` is whoever PagerDuty or Opsgenie says is on call.
    #[serde(default)]
    oncall: Option<RawOnCall>,
}
