//! Quorum approvals: several responders each vote on a request, and their votes decide it.
//!
//! A request with `approvals_required` above 1 holds only approval questions. Each allowed
//! responder's answer is a [`Vote`]; [`decide`] says what the votes so far make of the request:
//! still open, or answered. A deny is final at once; otherwise the request is approved once
//! enough distinct responders approved, each question with the narrowest scope any of them
//! granted (two people agreeing to "once" and "always" agreed to "once").

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::answer::{Answer, Answers, Decision};
use crate::model::{NewRequest, Scope};

/// One responder's decision on a quorum request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Vote {
    pub by: String,
    /// `deny` when any of the request's questions was denied.
    pub decision: Decision,
    /// The narrowest scope of the vote's approvals (`once` for a deny).
    pub scope: Scope,
    pub reason: Option<String>,
    #[serde(serialize_with = "crate::outcome::rfc3339")]
    pub at: DateTime<Utc>,
    /// The full answer the vote was cast with.
    #[serde(skip)]
    pub answers: Answers,
}

impl Vote {
    /// The vote `answers` (already checked against the request) make.
    pub fn new(by: impl Into<String>, answers: Answers, at: DateTime<Utc>) -> Self {
        let approvals = || {
            answers.iter().filter_map(|(_, a)| match a {
                Answer::Approval(a) => Some(a),
                _ => None,
            })
        };
        // A deny outweighs a request for changes within one vote: it asks for nothing to run.
        let refused = approvals()
            .find(|a| a.decision == Decision::Deny)
            .or_else(|| approvals().find(|a| a.decision == Decision::Revise));
        let (decision, scope, reason) = match refused {
            Some(d) => (d.decision, Scope::Once, d.reason.clone()),
            None => (
                Decision::Approve,
                approvals().map(|a| a.scope).min().unwrap_or(Scope::Once),
                approvals().find_map(|a| a.reason.clone()),
            ),
        };
        Self {
            by: by.into(),
            decision,
            scope,
            reason,
            at,
            answers,
        }
    }
}

/// The answers that settle `request` given its `votes` (in the order cast), or `None` while it
/// stays open: the first deny's answers, or the approvals combined once enough responders
/// approved.
pub fn decide(request: &NewRequest, votes: &[Vote]) -> Option<Answers> {
    // A deny or a request for changes is final: the action as asked will not run.
    if let Some(refusal) = votes.iter().find(|v| !v.decision.approves()) {
        return Some(refusal.answers.clone());
    }
    let approving: Vec<&Vote> = votes.iter().collect();
    if approving.len() < request.approvals_required as usize {
        return None;
    }
    let combined = request
        .questions
        .iter()
        .filter_map(|q| {
            let mut answers = approving.iter().filter_map(|v| match v.answers.get(&q.id) {
                Some(Answer::Approval(a)) => Some(a),
                _ => None,
            });
            let mut merged = answers.next()?.clone();
            for a in answers {
                merged.scope = merged.scope.min(a.scope);
                if merged.reason.is_none() {
                    merged.reason.clone_from(&a.reason);
                }
            }
            Some((q.id.clone(), Answer::Approval(merged)))
        })
        .collect();
    Some(Answers::from_parts(combined))
}
