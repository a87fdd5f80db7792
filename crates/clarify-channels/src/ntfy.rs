//! ntfy (<https://ntfy.sh>, or a self-hosted server): a push to a topic, answered from the
//! notification.
//!
//! A message is published as JSON to the server's root URL (`{"topic", "title", "message",
//! "priority", "tags", "click", "actions"}`), with `Authorization: Bearer <token>` when the
//! channel has a token. ntfy allows three action buttons per message. A request whose one
//! question can be answered by a tap gets one `http` button per answer (Approve and Deny for an
//! approval; the options of a `single` question with at most two options), each POSTing the
//! answer as JSON to the request's signed answer link, and a `view` button opening the link; any
//! other request gets the `view` button only. A quorum request counts votes by person, which an
//! anonymous link cannot cast, so it gets the `view` button too. ntfy cannot edit a message
//! once sent, so a resolution is a follow-up push saying how the request ended.

use clarify_core::{Context, QuestionKind};
use clarify_store::EventKind;
use serde_json::{Value, json};

use crate::{Notice, SendError, Sent, cut};

/// ntfy's limit on a message's text, above which it turns the message into an attachment.
const MAX_MESSAGE: usize = 4_000;
const MAX_TITLE: usize = 200;
/// Room for display blocks, as plain text, in a message.
const MAX_DISPLAY: usize = 1_500;

/// An ntfy channel: the server, the topic, and the access token if the topic needs one.
#[derive(Clone)]
pub struct Ntfy {
    pub url: url::Url,
    pub topic: String,
    pub token: Option<String>,
}

impl std::fmt::Debug for Ntfy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ntfy")
            .field("url", &self.url.as_str())
            .field("topic", &self.topic)
            .field("token", &self.token.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Ntfy {
    pub(crate) async fn send(
        &self,
        client: &reqwest::Client,
        notice: &Notice<'_>,
    ) -> Result<Sent, SendError> {
        if notice.event == EventKind::Voted {
            // A push cannot be edited, and a vote is no news to wake a phone for.
            return Ok(Sent::Skipped {
                why: "ntfy cannot edit a push; votes show in the inbox",
            });
        }
        let body = if notice.resolves() {
            self.resolved(notice)
        } else {
            self.message(notice)
        };
        let mut post = client.post(self.url.clone()).json(&body);
        if let Some(token) = &self.token {
            post = post.bearer_auth(token);
        }
        let response = post.send().await.map_err(|e| SendError::Unreachable {
            platform: "ntfy",
            detail: if e.is_timeout() {
                "no answer in time".to_owned()
            } else {
                e.to_string()
            },
        })?;
        let status = response.status();
        let retry_after = crate::retry_after(response.headers());
        let text = response.text().await.unwrap_or_default();
        if !status.is_success() {
            // ntfy's errors are JSON: {"code": 40101, "http": 401, "error": "unauthorized", ...}.
            let detail = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"].as_str().map(str::to_owned))
                .unwrap_or_else(|| cut(text.trim(), 200));
            return Err(SendError::Refused {
                platform: "ntfy",
                status: status.as_u16(),
                detail,
                retry_after,
            });
        }
        let message_ref = serde_json::from_str::<Value>(&text)
            .ok()
            .and_then(|v| v["id"].as_str().map(str::to_owned));
        Ok(Sent::Posted { message_ref })
    }

    /// A follow-up push saying how the request ended, for those who saw the first one.
    pub fn resolved(&self, notice: &Notice<'_>) -> Value {
        let headline = crate::headline(notice.record);
        json!({
            "topic": self.topic,
            "title": cut(&format!("Resolved: {headline}"), MAX_TITLE),
            "message": cut(&crate::outcome_text(notice.record), MAX_MESSAGE),
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
        let headline = crate::headline(record);
        let title = match notice.event {
            EventKind::Reminded => format!("Reminder: {headline}"),
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
        let more = format!("(The rest is on the answer page: {})", notice.answer_url);
        if let Some(shown) =
            crate::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
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
                // The display blocks above show what the action does.
                QuestionKind::Approval(a) if !request.display.is_empty() => {
                    text.push_str(&format!("Action: {}\n", a.action.name));
                }
                QuestionKind::Approval(a) => {
                    let args =
                        serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                    text.push_str(&format!("Action: {}\n{args}\n", a.action.name));
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
            text.push_str(&format!("\n{}", crate::STEP_UP_LINE));
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
            json!({"action": "view", "label": crate::OPEN_IN_CLARIFY, "url": notice.answer_url}),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use clarify_store::RequestRecord;

    use super::*;

    fn record(raw: Value) -> RequestRecord {
        let request = match clarify_core::parse_request(&raw, &clarify_core::Limits::default()) {
            Ok(r) => r,
            Err(e) => panic!("test request: {e}"),
        };
        RequestRecord {
            id: "r1".to_owned(),
            tenant: "default".to_owned(),
            request: Arc::new(request),
            status: clarify_core::Status::Pending,
            created_at: chrono::Utc::now(),
            expires_at: None,
            resolution: None,
            votes: Vec::new(),
            remind_at: None,
            escalated_at: None,
        }
    }

    fn ntfy() -> Ntfy {
        Ntfy {
            url: "https://ntfy.example/".parse().expect("url"),
            topic: "ops".to_owned(),
            token: None,
        }
    }

    fn labels(message: &Value) -> Vec<String> {
        message["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a["label"].as_str().map(str::to_owned))
            .collect()
    }

    #[test]
    fn reminders_and_escalations_say_so_in_the_title() {
        let r = record(json!({"question": "Refund order 1042?", "choices": ["yes", "no"]}));
        let title = |event| {
            let notice = Notice {
                record: &r,
                event,
                answer_url: "https://clarify.example/a/t",
                announcement: None,
                mention: Vec::new(),
                recipients: Vec::new(),
                action_key: b"test key",
                hook_url: "https://clarify.example/hooks/test/t",
                personal: Vec::new(),
                step_up: false,
            };
            ntfy().message(&notice)["title"].clone()
        };
        assert_eq!(title(EventKind::Created), "Refund order 1042?");
        assert_eq!(title(EventKind::Reminded), "Reminder: Refund order 1042?");
        assert_eq!(
            title(EventKind::Escalated),
            "Escalated to you: Refund order 1042?"
        );
    }

    #[test]
    fn a_push_for_a_group_lists_each_members_own_link() {
        let r = record(
            json!({"questions": [{"text": "Rotate the keys?", "kind": "approval",
                                             "action": {"name": "rotate"}}],
                              "responders": ["group:sre"], "approvals_required": 2}),
        );
        let notice = Notice {
            record: &r,
            event: EventKind::Created,
            answer_url: "https://clarify.example/a/t",
            announcement: None,
            mention: Vec::new(),
            recipients: Vec::new(),
            action_key: b"test key",
            hook_url: "https://clarify.example/hooks/test/t",
            personal: vec![
                (
                    "bob".to_owned(),
                    "https://clarify.example/a/p-bob".to_owned(),
                ),
                (
                    "dave".to_owned(),
                    "https://clarify.example/a/p-dave".to_owned(),
                ),
            ],
            step_up: false,
        };
        let text = ntfy().message(&notice)["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(
            text.contains("Your own link (it answers as you):\nbob: https://clarify.example/a/p-bob\ndave: https://clarify.example/a/p-dave"),
            "{text}"
        );
    }

    #[test]
    fn only_what_one_tap_can_answer_gets_answer_buttons() {
        let cases = [
            (
                json!({"question": "Ship?", "choices": ["yes", "no"]}),
                vec!["yes", "no", "Open"],
            ),
            (
                json!({"question": "Which?", "choices": ["a", "b", "c"]}),
                vec!["Answer"],
            ),
            (json!({"question": "Why?"}), vec!["Answer"]),
            (
                json!({"questions": [{"text": "Drop?", "kind": "approval",
                                      "action": {"name": "drop"}}],
                       "approvals_required": 2}),
                vec!["Answer"],
            ),
            (
                json!({"questions": [{"text": "Drop?", "kind": "approval",
                                      "action": {"name": "drop"}}]}),
                vec!["Approve", "Deny", "Open"],
            ),
        ];
        for (raw, expected) in cases {
            let r = record(raw.clone());
            let notice = Notice {
                record: &r,
                event: EventKind::Created,
                answer_url: "https://clarify.example/a/t",
                announcement: None,
                mention: Vec::new(),
                recipients: Vec::new(),
                action_key: b"test key",
                hook_url: "https://clarify.example/hooks/test/t",
                personal: Vec::new(),
                step_up: false,
            };
            assert_eq!(labels(&ntfy().message(&notice)), expected, "{raw}");
        }
    }

    #[test]
    fn what_the_agent_wrote_is_cut_to_ntfys_limit() {
        let r = record(json!({"question": "x".repeat(4_000), "context": "y".repeat(3_000)}));
        let notice = Notice {
            record: &r,
            event: EventKind::Created,
            answer_url: "https://clarify.example/a/t",
            announcement: None,
            mention: Vec::new(),
            recipients: Vec::new(),
            action_key: b"test key",
            hook_url: "https://clarify.example/hooks/test/t",
            personal: Vec::new(),
            step_up: false,
        };
        let message = ntfy().message(&notice);
        assert_eq!(
            message["message"].as_str().map(|m| m.chars().count()),
            Some(MAX_MESSAGE)
        );
        // The title is the request's summary, itself one line of at most 120 characters.
        assert_eq!(
            message["title"].as_str().map(|m| m.chars().count()),
            Some(clarify_core::display::MAX_SUMMARY_CHARS)
        );
    }
}
