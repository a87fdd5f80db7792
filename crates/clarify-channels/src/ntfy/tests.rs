//! ntfy: titles, personal links, answer buttons and limits of the pushes.

use std::sync::Arc;

use clarify_model::RequestRecord;

use super::render::MAX_MESSAGE;
use super::*;
use serde_json::{Value, json};

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
        on_call: Vec::new(),
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
    assert_eq!(title(EventKind::Warned), "Expires soon: Refund order 1042?");
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
