//! The words every platform says the same: how a request ended, a reminder's, a warning's and
//! an escalation's line, who asked, the headline, a vote's and an extension's note. Each platform escapes, cuts and
//! styles them its own way.

use clarify_model::{EventKind, RequestRecord};

/// How long before its deadline a request is warned when neither it nor a route says: 10
/// minutes (the store's default, which the store's crate cannot be asked from here).
pub const DEFAULT_WARN_BEFORE: u64 = 600;

/// The label of the one button a request that needs a passkey confirmation gets.
pub const OPEN_IN_CLARIFY: &str = "Open in clarify";

/// The line such a request's message carries, saying why there are no answer buttons.
pub const STEP_UP_LINE: &str =
    "High risk: answering needs a passkey confirmation. Open it in clarify to answer.";

/// How the request ended, in one line: `Answered by alice: approved (for this session)`,
/// `Expired: nobody answered`. Pending: how many approvals a quorum has, or that it waits.
pub fn outcome_text(record: &RequestRecord) -> String {
    use clarify_core::Status;
    let Some(outcome) = record.outcome() else {
        let request = &record.request;
        if request.is_quorum() {
            let by: Vec<&str> = record.votes.iter().map(|v| v.by.as_str()).collect();
            let mut line = format!(
                "{} of {} approvals",
                record.approvals(),
                request.approvals_required
            );
            if !by.is_empty() {
                line.push_str(&format!(" (voted: {})", by.join(", ")));
            }
            return line;
        }
        return "Waiting for an answer".to_owned();
    };
    let by = outcome
        .answered_by
        .as_deref()
        .map(|b| format!(" by {b}"))
        .unwrap_or_default();
    let head = match outcome.status {
        Status::Answered => format!("Answered{by}"),
        Status::Skipped => format!("Skipped{by}"),
        Status::Cancelled => format!("Cancelled{by}"),
        Status::Expired if outcome.default_applied => {
            "Expired: nobody answered; the default applies".to_owned()
        }
        Status::Expired | Status::Pending => "Expired: nobody answered".to_owned(),
    };
    let answers: Vec<String> = outcome
        .questions
        .iter()
        .filter(|q| !q.answer.is_null())
        .map(answer_words)
        .collect();
    if answers.is_empty() {
        head
    } else {
        format!("{head}: {}", answers.join("; "))
    }
}

/// One question's answer in words.
fn answer_words(q: &clarify_core::QuestionOutcome) -> String {
    use clarify_core::{Decision, Scope};
    use serde_json::Value;
    if let Some(decision) = q.decision {
        let mut words = match decision {
            Decision::Approve => "approved".to_owned(),
            Decision::Deny => "denied".to_owned(),
            Decision::Revise => "changes requested".to_owned(),
        };
        match q.scope {
            Some(Scope::Session) if decision == Decision::Approve => {
                words.push_str(" for this session");
            }
            Some(Scope::Always) if decision == Decision::Approve => words.push_str(" always"),
            _ => {}
        }
        if q.edited_arguments.is_some() {
            words.push_str(" with edited arguments");
        }
        if let Some(reason) = &q.reason {
            words.push_str(&format!(" ({reason})"));
        }
        return words;
    }
    match &q.answer {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map_or_else(|| i.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(values) => values
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {s}"),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        other => other.to_string(),
    }
}

/// The words of a reminder, a warning before expiry or an escalation replying to an
/// announcement, after the platform's own `mentions` of the people it concerns. A warning's
/// words say how long is left when they know the request ([`follow_up_words`]).
pub fn follow_up_text(event: EventKind, mentions: &[String]) -> String {
    let words = match event {
        EventKind::Escalated => {
            "Escalated: this request still waits for an answer, and now you may answer it too."
        }
        EventKind::Warned => {
            "Expires soon: this request still waits for an answer; extend it if you need more time."
        }
        _ => "Reminder: this request still waits for an answer.",
    };
    if mentions.is_empty() {
        words.to_owned()
    } else {
        format!("{} {words}", mentions.join(" "))
    }
}

/// The words of a follow-up about `record` (see [`follow_up_text`]): a warning before expiry
/// says how long is left, `Expires in 10 minutes: ...`. A warning is sent its request's
/// `warn_before_seconds` ahead of the deadline (the store keeps a route's period there), or
/// the default period, so that is how long is left.
pub fn follow_up_words(event: EventKind, record: &RequestRecord, mentions: &[String]) -> String {
    let left = Some(
        record
            .request
            .warn_before_seconds
            .unwrap_or(DEFAULT_WARN_BEFORE),
    )
    .filter(|s| *s > 0);
    match (event, left) {
        (EventKind::Warned, Some(seconds)) => {
            let words = format!(
                "Expires in {}: this request still waits for an answer; extend it if you need \
                 more time.",
                clarify_core::text::humanize_seconds(seconds)
            );
            if mentions.is_empty() {
                words
            } else {
                format!("{} {words}", mentions.join(" "))
            }
        }
        _ => follow_up_text(event, mentions),
    }
}

/// What a person who extended a request is told: `Extended: this request now expires at
/// 2026-12-07 14:30 UTC.`
pub fn extended_note(record: &RequestRecord) -> String {
    match record.expires_at {
        Some(at) => format!(
            "Extended: this request now expires at {}.",
            at.format("%Y-%m-%d %H:%M UTC")
        ),
        None => "Extended.".to_owned(),
    }
}

/// Who asked, in words: `Asked by deployer in session s1`, `Asked by deployer`, `Asked in
/// session s1`, or `None`. Each platform renders (escapes, cuts, styles) the names its way.
pub fn asked_by(
    request: &clarify_core::NewRequest,
    agent: impl Fn(&str) -> String,
    session: impl Fn(&str) -> String,
) -> Option<String> {
    match (&request.agent, &request.session) {
        (Some(a), Some(s)) => Some(format!("Asked by {} in session {}", agent(a), session(s))),
        (Some(a), None) => Some(format!("Asked by {}", agent(a))),
        (None, Some(s)) => Some(format!("Asked in session {}", session(s))),
        (None, None) => None,
    }
}

/// The headline of a request: its summary, given by the agent or derived (an approval's action,
/// or the first question's header and text).
pub fn headline(record: &RequestRecord) -> String {
    let request = &record.request;
    if !request.summary.is_empty() {
        return request.summary.clone();
    }
    match &request.agent {
        Some(agent) => format!("A question from {agent}"),
        None => "A question for you".to_owned(),
    }
}

/// The request's display blocks in a platform's `markup`, within `budget` of its length; cut,
/// they end with `more` (the platform's link to the rest on the answer page). `None` without
/// blocks.
pub fn display_text(
    record: &RequestRecord,
    markup: &dyn clarify_render::Markup,
    budget: usize,
    more: &str,
) -> Option<String> {
    let blocks = &record.request.display;
    (!blocks.is_empty()).then(|| clarify_render::render_blocks(blocks, markup, budget, more))
}

/// A one-line note for the person whose vote was counted but did not decide the request.
pub fn vote_note(record: &RequestRecord) -> Option<String> {
    (record.request.is_quorum() && !record.status.is_resolved())
        .then(|| format!("Your vote is counted: {}.", outcome_text(record)))
}
