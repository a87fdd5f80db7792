//! Voice: a call's steps survive their URL, the keys a request gets, and the TwiML read to the
//! person (escaped, the keys inside the `<Gather>`).

use serde_json::json;

use super::inbound::Step;
use super::render::{self, keys};
use crate::act::Act;

const HOOK: &str = "https://clarify.example/hooks/voice/oncall";

#[test]
fn a_calls_step_and_request_travel_in_its_url() {
    for step in [
        Step::Ask { passkey: false },
        Step::Ask { passkey: true },
        Step::Press,
        Step::Confirm { choice: 2 },
        Step::Status,
    ] {
        let url = step.url(HOOK, "01jq7v3x9k2m4n6p8r0s2k7q2x");
        let query = url.split_once('?').map(|(_, q)| q);
        assert_eq!(
            Step::read(query),
            Ok(("01jq7v3x9k2m4n6p8r0s2k7q2x".to_owned(), step)),
            "{url}"
        );
    }
    assert!(Step::read(None).is_err());
    assert!(Step::read(Some("request=r1&step=dance")).is_err());
    assert!(Step::read(Some("request=r1&step=confirm")).is_err());
}

#[test]
fn an_approval_and_a_short_choice_have_keys_and_an_open_question_has_none() {
    let approval = crate::display_tests::pending(&json!({"questions": [{"text": "Deploy?",
        "kind": "approval", "action": {"name": "deploy"}, "scopes": ["session", "always"]}]}));
    let k = keys(&approval).expect("keys");
    assert_eq!(k.len(), 2);
    assert!(matches!(
        k[0].act,
        Act::Decide { decision: clarify_core::Decision::Approve, scope: clarify_core::Scope::Session, .. }
    ));
    let choice = crate::display_tests::pending(&json!({"question": "Region?", "choices": ["eu", "us"]}));
    assert_eq!(keys(&choice).expect("keys")[1].act, Act::Option { question: 0, index: 1 });
    let open = crate::display_tests::pending(&json!({"question": "Why?"}));
    assert!(keys(&open).is_err());
}

#[test]
fn the_request_is_read_inside_the_gather_and_escaped() {
    let r = crate::display_tests::pending(&json!({"agent": "deployer", "questions": [{
        "text": "Deploy <b>481</b> & more?", "kind": "approval", "action": {"name": "deploy"}}]}));
    let k = keys(&r).expect("keys");
    let press = Step::Press.url(HOOK, "r1");
    let xml = render::ask("en-US", &r, Ok(&k), &press);
    assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Gather numDigits=\"1\" action=\"https://clarify.example/hooks/voice/oncall?request=r1&amp;step=press\""), "{xml}");
    assert!(xml.contains("Deploy &lt;b&gt;481&lt;/b&gt; &amp; more?"), "{xml}");
    assert!(xml.contains("Press 1 to approve. Press 2 to deny.</Say></Gather>"), "{xml}");
    assert!(xml.ends_with("<Hangup/></Response>"), "{xml}");
    let refused = render::ask("en-US", &r, Err("Answering it needs a passkey confirmation."), "");
    assert!(!refused.contains("<Gather"), "{refused}");
    assert!(refused.contains("Open the link clarify sent you by text or e-mail"), "{refused}");
}
