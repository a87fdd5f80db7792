//! The parts that decide: `[[rules]]`, the tool-name policies `[claude_code]` and `[gate]`,
//! `[decisions]` and `[suggestions]`, as written and checked.

use clarify_core::policy::Policy;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Fail;
use crate::duration::parse_duration;

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSuggestions {
    /// How many `once` approvals of the same action (tool and arguments) make a suggestion.
    #[schemars(extend("default" = 3))]
    approvals: Option<usize>,
    /// Within how long, a duration (`7d`, `12h`).
    #[schemars(extend("default" = "7d"))]
    within: Option<String>,
}

impl RawSuggestions {
    pub(super) fn check(self, fail: Fail<'_>) -> Result<clarify_store::Suggest, String> {
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
pub(super) struct RawRule {
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
pub(super) enum RawDecide {
    /// Approve the call at once, as the rule.
    Allow,
    /// Deny the call at once, as the rule.
    Deny,
    /// Ask a person.
    Ask,
}

impl RawRule {
    pub(super) fn check(
        self,
        at: &str,
        fail: Fail<'_>,
    ) -> Result<clarify_core::rules::RuleSpec, String> {
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

/// `[decisions]`: rules every answer must keep, on every path.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDecisions {
    /// Four eyes: the person a request acts for (its `on_behalf_of`) may not answer or vote on
    /// it (`403 self_approval`), and such a request takes no anonymous answer.
    #[serde(default)]
    pub(super) forbid_self_approval: bool,
    /// Step-up: `"high"` makes every answer to a high-risk request (`risk: "high"`) need a
    /// passkey confirmation made for that answer within the last 5 minutes (inbox and link
    /// page); chat, e-mail and push offer only "Open in clarify" for it, and a responder key's
    /// answer is refused (`403 step_up_required`). Absent: no step-up.
    #[serde(default)]
    pub(super) step_up: Option<String>,
    /// How far past its first deadline a request may be extended, in all (`POST
    /// /v1/requests/{id}/extend`, a chat's "Extend" button, `extend 30m` by text): a duration
    /// (`1d`, `12h`). Absent: one day. An extension beyond it is refused, not shortened.
    #[serde(default)]
    pub(super) max_extension: Option<String>,
}

/// Tool-name patterns: an exact name, a `prefix*` or `*`, ignoring case. Deny wins; a call
/// neither list names asks a human.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPolicy {
    /// Calls that run without asking anyone.
    #[serde(default)]
    allow: Vec<String>,
    /// Calls that are refused without asking anyone.
    #[serde(default)]
    deny: Vec<String>,
}

impl RawPolicy {
    pub(super) fn check(self, section: &str, fail: Fail<'_>) -> Result<Policy, String> {
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
