//! Mattermost: only a button or dialog clarify made gets through, and the escaping of markdown.

use super::token::dialog_token;
use super::*;
use crate::act::{Focus, Input};

const KEY: &[u8] = b"server key";

fn click(context: Value) -> Vec<u8> {
    json!({"user_id": "u1", "post_id": "p1", "trigger_id": "t1", "context": context})
        .to_string()
        .into_bytes()
}

#[test]
fn only_a_button_clarify_made_gets_through() {
    let token = button_token(KEY, "r1", "a:once");
    let ok = read(
        KEY,
        &click(json!({"request": "r1", "action": "a:once", "token": token})),
    );
    assert!(
        matches!(ok, Ok(Inbound::Click { ref request, .. }) if request == "r1"),
        "{ok:?}"
    );
    for forged in [
        json!({"request": "r2", "action": "a:once", "token": token}),
        json!({"request": "r1", "action": "d", "token": token}),
        json!({"request": "r1", "action": "a:once", "token": "x"}),
        json!({"request": "r1", "action": "a:once"}),
        json!({}),
    ] {
        assert!(read(KEY, &click(forged.clone())).is_err(), "{forged}");
    }
    assert!(
        read(
            b"another key",
            &click(json!({"request": "r1", "action": "a:once", "token": token}))
        )
        .is_err()
    );
    assert!(read(KEY, b"{not json").is_err());
}

#[test]
fn a_dialog_is_bound_to_the_person_it_was_opened_for() {
    let token = dialog_token(KEY, "r1", Focus::Deny(0), "u1");
    let submit = |user: &str| {
        json!({"type": "dialog_submission", "user_id": user, "callback_id": "deny:0",
               "state": format!("r1 deny:0 {token}"), "submission": {"q0.reason": "no"}})
        .to_string()
        .into_bytes()
    };
    let Ok(Inbound::Submit { focus, inputs, .. }) = read(KEY, &submit("u1")) else {
        panic!("a submission");
    };
    assert_eq!(focus, Focus::Deny(0));
    assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
    assert!(read(KEY, &submit("u2")).is_err());
}

#[test]
fn nothing_the_agent_wrote_mentions_or_formats() {
    let e = escape("@channel **x** ~town-square [a](b)");
    assert!(!e.contains("@channel"), "{e}");
    assert!(!e.contains("**"), "{e}");
    assert!(e.contains("\\~town\\-square"), "{e}");
}
