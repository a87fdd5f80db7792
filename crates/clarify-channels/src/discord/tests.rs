//! Discord: the signature check, the reading of interactions, and the escaping of markdown.

use super::render::code;
use super::*;
use crate::act::{Act, Focus, Input, control};
use chrono::Utc;
use ed25519_dalek::{Signer, SigningKey};
use serde_json::json;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn signatures_are_checked_over_timestamp_and_body() {
    let key = SigningKey::from_bytes(&[7; 32]);
    let public = hex(key.verifying_key().as_bytes());
    let now = Utc::now();
    let ts = now.timestamp().to_string();
    let body = br#"{"type":1}"#;
    let sign = |ts: &str, body: &[u8]| {
        let mut m = ts.as_bytes().to_vec();
        m.extend_from_slice(body);
        hex(&key.sign(&m).to_bytes())
    };
    let good = sign(&ts, body);
    assert_eq!(verify(&public, Some(&good), Some(&ts), body, now), Ok(()));
    assert!(verify(&public, Some(&good), Some(&ts), br#"{"type":2}"#, now).is_err());
    assert!(verify(&public, None, Some(&ts), body, now).is_err());
    assert!(verify(&public, Some("zz"), Some(&ts), body, now).is_err());
    let old = (now.timestamp() - 301).to_string();
    assert!(verify(&public, Some(&sign(&old, body)), Some(&old), body, now).is_err());
    let other = hex(SigningKey::from_bytes(&[8; 32]).verifying_key().as_bytes());
    assert!(verify(&other, Some(&good), Some(&ts), body, now).is_err());
}

#[test]
fn controls_are_read_and_unknown_ones_named() {
    assert_eq!(
        control("o:2", &[]),
        Control::Act(Act::Option {
            question: 0,
            index: 2
        })
    );
    assert_eq!(
        control("multi", &["0".to_owned(), "2".to_owned()]),
        Control::Act(Act::Options {
            question: 0,
            indexes: vec![0, 2]
        })
    );
    assert_eq!(control("r", &[]), Control::Form(Focus::Deny(0)));
    for junk in ["", "o:x", "a:forever", "sel", "zzz", "multi"] {
        let values = if junk == "multi" {
            vec!["x".to_owned()]
        } else {
            Vec::new()
        };
        assert!(
            matches!(control(junk, &values), Control::Unknown(_)),
            "{junk}"
        );
    }
    let modal = json!({"type": 5, "channel_id": "9", "member": {"user": {"id": "42"}},
        "data": {"custom_id": "deny:0@77", "components": [
            {"type": 1, "components": [{"type": 4, "custom_id": "q0.reason", "value": "no"}]},
            {"type": 18, "component": {"type": 4, "custom_id": "q0.other", "value": "x"}}]}});
    let Ok(Inbound::Use {
        user,
        message_ref,
        control,
        ..
    }) = read(&modal)
    else {
        panic!("a modal submit");
    };
    assert_eq!((user.as_str(), message_ref.as_str()), ("42", "9:77"));
    let Control::Act(Act::Submit { focus, inputs }) = control else {
        panic!("a submit");
    };
    assert_eq!(focus, Focus::Deny(0));
    assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
    assert_eq!(inputs.len(), 2);
    assert_eq!(read(&json!({"type": 1})), Ok(Inbound::Ping));
    assert!(read(&json!({"type": "x"})).is_err());
}

#[test]
fn markdown_and_mentions_are_escaped() {
    assert_eq!(
        escape("**hi** @everyone <@1>"),
        "\\*\\*hi\\*\\* \\@everyone \\<\\@1\\>"
    );
    assert!(!code("a```b", 100).contains("a```b"));
}
