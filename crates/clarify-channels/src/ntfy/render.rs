//! How a request looks on ntfy: the push (title, plain message, tags, click) and its action
//! buttons, and the follow-up push saying how the request ended.

use clarify_core::{Context, QuestionKind};
use clarify_model::EventKind;
use serde_json::{Value, json};

use super::Ntfy;
use crate::layout::{self, ACTION, THE_REST};
use crate::notice::Notice;
use crate::text::cut;

/// ntfy's limit on a message's text, above which it turns the message into an attachment.
pub(super) const MAX_MESSAGE: usize = 4_000;
const MAX_TITLE: usize = 200;
/// Room for display blocks, as plain text, in a message.
const MAX_DISPLAY: usize = 1_500;
impl Ntfy {
    /// A follow-up push saying how the request ended, for those who saw the first one.
    pub fn resolved(&self, notice: &Notice<'_>) -> Value {
        let headline = crate::layout::words::headline(notice.record);
        json!({
            "topic": self.topic,
            "title": cut(&format!("Resolved: {headline}"), MAX_TITLE),
            "message": cut(&crate::layout::words::outcome_text(notice.record), MAX_MESSAGE),
            "priority": 2,
            "tags": ["white_check_mark"],
            "click": notice.answer_url,
        })
    }

    /// The JSON message for `notice`.
    pub fn message(&self, notice: &Notice<'_>) -> Value {
        let record = notice.record;
        let request = &record.request;
        let first = request.questions.first();
        let headline = crate::layout::words::headline(record);
        let title = match notice.event {
            EventKind::Reminded => format!("Reminder: {headline}"),
            EventKind::Warned => format!("Expires soon: {headline}"),
            EventKind::Escalated => format!("Escalated to you: {headline}"),
            _ => headline,
        };
        let mut text = String::new();
        match &request.context {
            Some(Context::Text(t)) => text.push_str(&format!("{t}\n\n")),
            Some(Context::Json(map)) => {
                let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
                text.push_str(&format!("{pretty}\n\n"));
            }
            None => {}
        }
        let more = format!("({THE_REST}: {})", notice.answer_url);
        if let Some(shown) =
            crate::layout::words::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
        {
            text.push_str(&shown);
            text.push_str("\n\n");
        }
        for q in &request.questions {
            text.push_str(&q.text);
            text.push('\n');
            match &q.kind {
                QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                    for o in &c.options {
                        let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                            " (recommended)"
                        } else {
                            ""
                        };
                        text.push_str(&format!("• {}{mark}\n", o.label));
                    }
                }
                QuestionKind::Approval(a) => {
                    text.push_str(&format!("{ACTION}{}\n", a.action.name));
                    if let Some(args) = layout::arguments(request, a) {
                        text.push_str(&format!("{args}\n"));
                    }
                }
                QuestionKind::Open | QuestionKind::Form(_) => {}
            }
        }
        if request.is_quorum() && notice.personal.is_empty() {
            text.push_str(&format!(
                "\nNeeds {} approvals from named responders: answer in the clarify inbox.\n",
                request.approvals_required
            ));
        }
        if !notice.personal.is_empty() {
            text.push_str("\nYour own link (it answers as you):\n");
            for (name, url) in &notice.personal {
                text.push_str(&format!("{name}: {url}\n"));
            }
        }
        let asked_by = match (&request.agent, &request.session) {
            (Some(a), Some(s)) => format!("Asked by {a} (session {s})."),
            (Some(a), None) => format!("Asked by {a}."),
            (None, Some(s)) => format!("Asked in session {s}."),
            (None, None) => String::new(),
        };
        if !asked_by.is_empty() {
            text.push_str(&format!("\n{asked_by}"));
        }
        if notice.open_only() {
            text.push_str(&format!("\n{}", crate::layout::words::STEP_UP_LINE));
        }
        let approval = first.is_some_and(|q| matches!(q.kind, QuestionKind::Approval(_)));
        json!({
            "topic": self.topic,
            "title": cut(&title, MAX_TITLE),
            "message": cut(text.trim_end(), MAX_MESSAGE),
            "priority": if approval { 4 } else { 3 },
            "tags": [if approval { "lock" } else { "question" }],
            "click": notice.answer_url,
            "actions": actions(notice),
        })
    }
}

/// One `http` button per answer when a tap can answer the whole request, then `view`.
pub(crate) fn actions(notice: &Notice<'_>) -> Vec<Value> {
    let request = &notice.record.request;
    let tap = |label: &str, answer: Value| {
        json!({
            "action": "http",
            "label": label,
            "url": notice.answer_url,
            "method": "POST",
            "headers": {"Content-Type": "application/json", "Accept": "application/json"},
            "body": answer.to_string(),
            "clear": true,
        })
    };
    let mut out = Vec::new();
    if notice.open_only() {
        // A passkey confirmation is needed: only the page in clarify can ask for it.
        out.push(
            json!({"action": "view", "label": crate::layout::words::OPEN_IN_CLARIFY, "url": notice.answer_url}),
        );
        return out;
    }
    if let ([q], false) = (request.questions.as_slice(), request.is_quorum()) {
        match &q.kind {
            QuestionKind::Approval(_) => {
                out.push(tap("Approve", json!({"decision": "approve"})));
                out.push(tap("Deny", json!({"decision": "deny"})));
            }
            QuestionKind::Single(c) if c.options.len() <= 2 => {
                for o in &c.options {
                    out.push(tap(&cut(&o.label, 40), json!({"option": o.id})));
                }
            }
            _ => {}
        }
    }
    let open = if out.is_empty() { "Answer" } else { "Open" };
    out.push(json!({"action": "view", "label": open, "url": notice.answer_url}));
    out
}
