//! Suggested standing rules: an action people keep approving `once` is offered as an `always`
//! grant, made only when a person accepts.
//!
//! [`Store::suggestions`] reads the tenant's answered requests of the last [`Suggest::within`]
//! (newest first, at most [`SCAN_LIMIT`]) and counts, per action (tool, lowercased, and canonical
//! arguments as they ran), the one-question approvals a person approved with scope `once`;
//! decisions made by rules (`policy`) do not count. An action approved at least
//! [`Suggest::approvals`] times, and not covered by a live `always` grant, is a suggestion.
//! [`Store::accept_suggestion`] records the `always` grant in the accepting person's name, with a
//! `grant.suggested_accepted` event on the latest of those requests, in one transaction.

use chrono::TimeDelta;
use clarify_core::policy::{Grant, canonical_json};
use clarify_core::{Action, Answer, Decision, QuestionKind, Resolution, Scope, Status};

use crate::Store;
use crate::error::StoreError;
use crate::grants::StoredGrant;
use crate::record::{Actor, ListQuery, RequestRecord};

/// The most answered requests one reading looks at.
pub const SCAN_LIMIT: usize = 2_000;

/// When an action is suggested.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suggest {
    /// How many `once` approvals of the same action make a suggestion.
    pub approvals: usize,
    /// Within how long.
    pub within: TimeDelta,
}

impl Default for Suggest {
    fn default() -> Self {
        Self {
            approvals: 3,
            within: TimeDelta::days(7),
        }
    }
}

/// An action offered as an `always` grant.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    pub action: Action,
    /// How many `once` approvals it had within the window.
    pub approvals: usize,
    /// The latest of those requests.
    pub request_id: String,
}

/// The action a person approved `once` in `record`, keyed for counting.
fn approved_once(record: &RequestRecord) -> Option<(String, Action)> {
    let [question] = record.request.questions.as_slice() else {
        return None;
    };
    let QuestionKind::Approval(approval) = &question.kind else {
        return None;
    };
    let resolution = record.resolution.as_ref()?;
    if resolution.actor.channel == "policy" || resolution.actor.name.is_none() {
        return None;
    }
    let Resolution::Answered(answers) = &resolution.resolution else {
        return None;
    };
    let Some(Answer::Approval(answer)) = answers.get(&question.id) else {
        return None;
    };
    if answer.decision != Decision::Approve || answer.scope != Scope::Once {
        return None;
    }
    let arguments = answer
        .edited_arguments
        .clone()
        .unwrap_or_else(|| approval.action.arguments.clone());
    let key = format!(
        "{}\n{}",
        approval.action.name.trim().to_lowercase(),
        canonical_json(&arguments)
    );
    Some((
        key,
        Action {
            name: approval.action.name.clone(),
            arguments,
        },
    ))
}

impl Store {
    /// The actions of `tenant` people keep approving `once`, most approved first.
    pub async fn suggestions(
        &self,
        tenant: &str,
        settings: Suggest,
    ) -> Result<Vec<Suggestion>, StoreError> {
        let since = self.now() - settings.within;
        let mut counted: Vec<(String, Suggestion)> = Vec::new();
        let mut query = ListQuery {
            status: Some(Status::Answered),
            limit: Some(200),
            ..ListQuery::default()
        };
        let mut read = 0;
        'pages: loop {
            let page = self.list(tenant, &query).await?;
            for record in &page.records {
                read += 1;
                if record.created_at < since || read > SCAN_LIMIT {
                    break 'pages;
                }
                let Some((key, action)) = approved_once(record) else {
                    continue;
                };
                match counted.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, s)) => s.approvals += 1,
                    None => counted.push((
                        key,
                        Suggestion {
                            action,
                            approvals: 1,
                            request_id: record.id.clone(),
                        },
                    )),
                }
            }
            match page.next_cursor {
                Some(cursor) => query.cursor = Some(cursor),
                None => break,
            }
        }
        let grants = self.list_grants(tenant, None).await?;
        let now = self.now();
        let mut out: Vec<Suggestion> = counted
            .into_iter()
            .map(|(_, s)| s)
            .filter(|s| s.approvals >= settings.approvals)
            .filter(|s| {
                !grants.iter().any(|g| {
                    g.grant.scope == Scope::Always
                        && g.live(now)
                        && g.grant.covers(&s.action.name, &s.action.arguments, None)
                })
            })
            .collect();
        out.sort_by_key(|b| std::cmp::Reverse(b.approvals));
        Ok(out)
    }

    /// Accepts the suggestion for the action request `request_id` approved: records an
    /// `always` grant in `actor`'s name, with a `grant.suggested_accepted` event. `None` when
    /// that action is not suggested (any more).
    pub async fn accept_suggestion(
        &self,
        tenant: &str,
        request_id: &str,
        settings: Suggest,
        actor: &Actor,
    ) -> Result<Option<StoredGrant>, StoreError> {
        let Some(record) = self.get(tenant, request_id).await? else {
            return Ok(None);
        };
        let Some((_, action)) = approved_once(&record) else {
            return Ok(None);
        };
        let suggested = self
            .suggestions(tenant, settings)
            .await?
            .into_iter()
            .find(|s| {
                s.action
                    .name
                    .trim()
                    .eq_ignore_ascii_case(action.name.trim())
                    && canonical_json(&s.action.arguments) == canonical_json(&action.arguments)
            });
        let Some(suggestion) = suggested else {
            return Ok(None);
        };
        let Some(grant) = Grant::new(&action.name, &action.arguments, Scope::Always, None) else {
            return Ok(None);
        };
        let at = self.now();
        let stored = StoredGrant {
            id: self.inner.ids.grant_id(),
            grant,
            request_id: Some(suggestion.request_id.clone()),
            granted_by: actor.name.clone(),
            created_at: at,
            expires_at: None,
            max_uses: None,
            uses: 0,
        };
        self.inner
            .backend
            .grant_suggested(tenant, &suggestion.request_id, &stored, actor, at)
            .await?;
        Ok(self.list_grants(tenant, None).await?.into_iter().find(|g| {
            g.grant.scope == Scope::Always && g.grant.covers(&action.name, &action.arguments, None)
        }))
    }
}
