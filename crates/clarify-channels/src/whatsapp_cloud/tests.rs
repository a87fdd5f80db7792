//! WhatsApp Cloud API: buttons, lists and text by the request's shape, the template's
//! parameters, the signature and the webhook check, and what a notification is read as.

use chrono::TimeDelta;
use clarify_model::{EventKind, RequestRecord, short_code};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::inbound::{Inbound, read, verify};
use super::render::{MAX_BUTTON_TITLE, message, read_button, template};
use super::*;
use crate::inbound::InboundError;
use crate::notice::Notice;
use crate::telegram::Press;

const LINK: &str = "https://clarify.example/a/t";
const TO: &str = "+4930123456";

/// A pending request of `raw`, allowing as many options as a server may (24).
fn record(raw: Value) -> RequestRecord {
    let limits = clarify_core::Limits::new(24, 0).expect("limits");
    let request = match clarify_core::parse_request(&raw, &limits) {
        Ok(r) => r,
        Err(e) => panic!("test request: {e}"),
    };
    let mut record = crate::display_tests::pending(&json!({"question": "?", "kind": "open"}));
    record.request = std::sync::Arc::new(request);
    record
}

fn notice(r: &RequestRecord) -> Notice<'_> {
    Notice {
        record: r,
        event: EventKind::Created,
        answer_url: LINK,
        announcement: None,
        mention: Vec::new(),
        recipients: vec![TO.to_owned()],
        action_key: b"test key",
        hook_url: "https://clarify.example/hooks/whatsapp-cloud/wa",
        personal: Vec::new(),
        step_up: false,
    }
}

fn single(n: usize) -> RequestRecord {
    let options: Vec<String> = (1..=n).map(|i| format!("Option number {i} of many")).collect();
    record(json!({"question": "Which one?", "choices": options}))
}

fn channel() -> WhatsAppCloud {
    WhatsAppCloud {
        access_token: "token".to_owned(),
        app_secret: "app-secret".to_owned(),
        verify_token: Some("verify-me".to_owned()),
        phone_number_id: "1065".to_owned(),
        template: None,
        to: Vec::new(),
        api_version: "v21.0".to_owned(),
        api_url: "https://graph.facebook.com".parse().expect("url"),
    }
}

#[test]
fn three_options_are_buttons_more_are_a_list_and_ids_name_the_request() {
    let r = single(3);
    let m = message(&notice(&r), TO);
    assert_eq!(m["to"], "4930123456");
    assert_eq!(m["interactive"]["type"], "button");
    let buttons = m["interactive"]["action"]["buttons"].as_array().expect("buttons");
    assert_eq!(buttons.len(), 3);
    for (i, b) in buttons.iter().enumerate() {
        let title = b["reply"]["title"].as_str().expect("title");
        assert!(title.chars().count() <= MAX_BUTTON_TITLE, "{title}");
        let id = b["reply"]["id"].as_str().expect("id");
        assert_eq!(read_button(id), Some((r.id.clone(), Press::Option(i))));
    }
    let body = m["interactive"]["body"]["text"].as_str().expect("body");
    assert!(body.contains(&format!("code {}", short_code(&r.id))), "{body}");
    assert!(body.contains(LINK), "{body}");

    let r = single(7);
    let m = message(&notice(&r), TO);
    assert_eq!(m["interactive"]["type"], "list");
    let rows = &m["interactive"]["action"]["sections"][0]["rows"];
    assert_eq!(rows.as_array().map(Vec::len), Some(7));

    // More than a list holds, or a question a tap cannot answer: text, answered by typing.
    for r in [
        single(11),
        record(json!({"question": "Why?", "kind": "open"})),
    ] {
        let m = message(&notice(&r), TO);
        assert_eq!(m["type"], "text", "{m}");
        assert!(m["text"]["body"].as_str().unwrap_or_default().contains(LINK));
    }
}

#[test]
fn an_approval_gets_approve_and_deny() {
    let r = record(json!({"questions": [{"text": "Deploy?", "kind": "approval",
        "action": {"name": "deploy", "arguments": {"to": "prod"}}}]}));
    let m = message(&notice(&r), TO);
    let titles: Vec<&str> = m["interactive"]["action"]["buttons"]
        .as_array()
        .expect("buttons")
        .iter()
        .filter_map(|b| b["reply"]["title"].as_str())
        .collect();
    assert_eq!(titles, ["Approve", "Deny"]);
}

#[test]
fn the_template_carries_the_headline_and_the_code_on_one_line() {
    let r = record(json!({"question": "Ship?", "choices": ["yes", "no"],
                          "summary": "Ship\nthe   release?"}));
    let t = Template {
        name: "clarify_request".to_owned(),
        language: "de".to_owned(),
    };
    let m = template(&r, &t, TO);
    assert_eq!(m["template"]["name"], "clarify_request");
    assert_eq!(m["template"]["language"]["code"], "de");
    let params = &m["template"]["components"][0]["parameters"];
    assert_eq!(params[0]["text"], "Ship the release?");
    assert_eq!(params[1]["text"], short_code(&r.id));
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    let hex: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256={hex}")
}

#[test]
fn only_the_app_secrets_signature_of_the_exact_body_passes() {
    let body = br#"{"object":"whatsapp_business_account","entry":[]}"#;
    assert_eq!(verify("app-secret", Some(&sign("app-secret", body)), body), Ok(()));
    for (header, why) in [
        (None, "required"),
        (Some("sha1=abcd".to_owned()), "not sha256"),
        (Some(sign("another", body)), "does not match"),
        (Some(sign("app-secret", b"{}")), "does not match"),
    ] {
        let e = verify("app-secret", header.as_deref(), body).expect_err(why);
        assert!(matches!(e, InboundError::Unauthorized(_)), "{why}: {e:?}");
    }
}

#[test]
fn the_webhook_check_echoes_the_challenge_only_for_the_verify_token() {
    let w = channel();
    let ok = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=verify-me";
    assert_eq!(
        inbound::handshake(&w, "wa", ok),
        HookReply::Text("1158201444".to_owned())
    );
    let wrong = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess";
    assert!(matches!(
        inbound::handshake(&w, "wa", wrong),
        HookReply::Unauthorized(_)
    ));
    assert!(matches!(
        inbound::handshake(&w, "wa", "hub.challenge=1"),
        HookReply::Unauthorized(_)
    ));
}

fn notification(messages: Value) -> Value {
    json!({"object": "whatsapp_business_account", "entry": [{"id": "WABA", "changes": [{
        "field": "messages",
        "value": {"messaging_product": "whatsapp",
                  "metadata": {"display_phone_number": "15550001", "phone_number_id": "1065"},
                  "messages": messages,
                  "statuses": [{"id": "wamid.S", "status": "delivered", "recipient_id": "4930123456"}]}
    }]}]})
}

#[test]
fn taps_replies_and_texts_are_read_and_statuses_left_out() {
    let n = notification(json!([
        {"from": "4930123456", "id": "wamid.1", "timestamp": "1", "type": "interactive",
         "interactive": {"type": "button_reply", "button_reply": {"id": "R1:o0", "title": "yes"}}},
        {"from": "4930123456", "id": "wamid.2", "timestamp": "1", "type": "interactive",
         "interactive": {"type": "list_reply", "list_reply": {"id": "R1:o5", "title": "six"}}},
        {"from": "4930123456", "id": "wamid.3", "timestamp": "1", "type": "text",
         "text": {"body": " deny too risky "}, "context": {"from": "15550001", "id": "wamid.A"}},
        {"from": "4930123456", "id": "wamid.4", "timestamp": "1", "type": "button",
         "button": {"payload": "Approve", "text": "Approve"}, "context": {"id": "wamid.T"}},
        {"from": "4930123456", "id": "wamid.5", "timestamp": "1", "type": "image",
         "image": {"id": "img"}},
    ]));
    let from = "+4930123456".to_owned();
    assert_eq!(
        read(&n).expect("read"),
        vec![
            Inbound::Tap { from: from.clone(), id: "R1:o0".to_owned() },
            Inbound::Tap { from: from.clone(), id: "R1:o5".to_owned() },
            Inbound::Text {
                from: from.clone(),
                text: "deny too risky".to_owned(),
                context: Some("wamid.A".to_owned())
            },
            Inbound::Text {
                from: from.clone(),
                text: "Approve".to_owned(),
                context: Some("wamid.T".to_owned())
            },
            Inbound::Ignore {
                from: Some(from),
                why: "a message that is not text or a button"
            },
        ]
    );
    assert!(read(&json!({"object": "x"})).is_err());
    let no_sender = notification(json!([{"type": "text", "text": {"body": "hi"}}]));
    assert!(matches!(read(&no_sender), Err(InboundError::Malformed(_))));
}

#[test]
fn numbers_are_read_in_international_form_and_the_window_is_a_day() {
    assert_eq!(number("+49 30 1234-567"), Some("+49301234567".to_owned()));
    assert_eq!(number("030 1234567"), None);
    assert_eq!(number("+12"), None);
    let now = chrono::Utc::now();
    assert!(crate::window::in_window(Some(now - TimeDelta::hours(23)), now));
    assert!(!crate::window::in_window(Some(now - TimeDelta::hours(25)), now));
    assert!(!crate::window::in_window(None, now));
}
