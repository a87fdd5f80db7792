//! A request that needs a passkey confirmation (`[decisions] step_up`, a high-risk request)
//! gets no answer buttons anywhere: every platform offers only "Open in clarify" (the answer
//! link) and says a passkey is needed; the same request without step-up keeps its buttons.

use clarify_model::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::notice::Notice;

const LINK: &str = "https://clarify.example/a/t";

fn record() -> RequestRecord {
    let raw = json!({
        "questions": [{"text": "Transfer 40,000 EUR to the supplier?", "kind": "approval",
                       "action": {"name": "wire_transfer", "arguments": {"amount": 40000}}}],
        "risk": "high",
    });
    crate::display_tests::pending(&raw)
}

fn notice(r: &RequestRecord, step_up: bool) -> Notice<'_> {
    Notice {
        record: r,
        event: EventKind::Created,
        answer_url: LINK,
        announcement: None,
        mention: Vec::new(),
        recipients: Vec::new(),
        action_key: b"test key",
        hook_url: "https://clarify.example/hooks/test/t",
        personal: vec![("alice".to_owned(), format!("{LINK}~alice"))],
        step_up,
    }
}

/// Every string in `value` (labels, texts, URLs), to look for buttons and lines.
fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

fn all(value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    strings(value, &mut out);
    out
}

/// What each platform sends for `notice`, as JSON.
fn rendered(n: &Notice<'_>) -> Vec<(&'static str, Value)> {
    let (text, blocks) = crate::slack::render::message(n, &[]);
    let (plain, html) = crate::email::bodies(n);
    vec![
        ("slack", json!({"text": text, "blocks": blocks})),
        ("discord", crate::discord::announcement(n)),
        ("telegram", crate::telegram::notice_keyboard(n)),
        ("teams", crate::teams::notice_card(n)),
        ("google_chat", crate::google_chat::notice_message(n)),
        ("mattermost", crate::mattermost::announcement(n, &[])),
        ("ntfy", json!(crate::ntfy::render::actions(n))),
        ("email", json!({"text": plain, "html": html})),
        (
            "whatsapp_cloud",
            crate::whatsapp_cloud::render::message(n, "+4930123456"),
        ),
    ]
}

#[test]
fn a_request_that_needs_a_passkey_offers_only_open_in_clarify() {
    let r = record();
    let n = notice(&r, true);
    assert!(crate::email::choices(&n).is_empty(), "e-mail answer links");
    for (platform, body) in rendered(&n) {
        let words = all(&body);
        for answer in ["Approve", "Deny", "Skip", "Request changes"] {
            assert!(
                !words.iter().any(|w| w.contains(answer)),
                "{platform} still offers {answer:?}: {body}"
            );
        }
        assert!(
            words.iter().any(|w| w.contains(LINK)),
            "{platform} has no link to clarify: {body}"
        );
        if platform != "ntfy" && platform != "telegram" {
            assert!(
                words.iter().any(|w| w.contains("passkey")),
                "{platform} does not say a passkey is needed: {body}"
            );
        }
    }
    let telegram = crate::telegram::notice_keyboard(&n);
    assert_eq!(
        telegram["inline_keyboard"],
        json!([[{"text": "Open in clarify", "url": LINK}]])
    );
    let ntfy = crate::ntfy::render::actions(&n);
    assert_eq!(ntfy.len(), 1, "{ntfy:?}");
    assert_eq!(ntfy[0]["label"], "Open in clarify");
    let discord = crate::discord::announcement(&n);
    assert_eq!(
        discord["components"][0]["components"][0]["label"],
        "Open in clarify"
    );
}

#[test]
fn without_step_up_the_same_request_keeps_its_buttons() {
    let r = record();
    let n = notice(&r, false);
    assert!(!crate::email::choices(&n).is_empty(), "e-mail answer links");
    for (platform, body) in rendered(&n) {
        if platform == "email" {
            continue;
        }
        let words = all(&body);
        assert!(
            words
                .iter()
                .any(|w| w.contains("Approve") || w.contains("Deny")),
            "{platform} lost its answer buttons: {body}"
        );
        assert!(
            !words.iter().any(|w| w.contains("passkey")),
            "{platform} asks for a passkey without step-up: {body}"
        );
    }
}
