//! SMS: the message a request becomes (its code, its numbered options, the step-up link only,
//! the length Twilio takes), how addresses are written, and the table's checks.

use clarify_model::{EventKind, RequestRecord};
use serde_json::{Value, json};

use super::render::{MAX_BODY, body};
use super::*;
use crate::notice::Notice;

const LINK: &str = "https://clarify.example/a/t";

fn record(raw: &Value) -> RequestRecord {
    let mut r = crate::display_tests::pending(raw);
    r.id = "01jq7v3x9k2m4n6p8r0s2k7q2x".to_owned();
    r
}

fn notice(r: &RequestRecord, event: EventKind, step_up: bool) -> Notice<'_> {
    Notice {
        record: r,
        event,
        answer_url: LINK,
        announcement: None,
        mention: Vec::new(),
        recipients: vec!["+4930123456".to_owned()],
        action_key: b"test key",
        hook_url: "https://clarify.example/hooks/sms/oncall",
        personal: Vec::new(),
        step_up,
    }
}

#[test]
fn an_approval_names_its_code_and_how_to_answer() {
    let r = record(&json!({"agent": "deployer", "questions": [{
        "text": "Deploy build 481 to production?", "kind": "approval",
        "action": {"name": "deploy", "arguments": {"env": "prod"}}}]}));
    let text = body(&notice(&r, EventKind::Created, false));
    assert!(text.starts_with("[K7Q2X] deploy: env=prod\n"), "{text}");
    assert!(text.contains("Deploy build 481 to production?\nAction: deploy\n1. Approve\n2. Deny\n"), "{text}");
    assert!(
        text.contains("Reply 1 to approve, 2 to deny, or approve K7Q2X / deny K7Q2X <reason>"),
        "{text}"
    );
    assert!(text.ends_with(LINK), "{text}");
    let reminder = body(&notice(&r, EventKind::Reminded, false));
    assert!(reminder.starts_with("Reminder: still waiting for your answer.\n[K7Q2X]"), "{reminder}");
}

#[test]
fn a_choice_lists_numbered_options_and_marks_the_recommended_one() {
    let r = record(&json!({"questions": [{"text": "Which region?", "options": ["eu-west", "us-east"],
        "recommended": "us-east"}]}));
    let text = body(&notice(&r, EventKind::Created, false));
    assert!(text.contains("1. eu-west\n2. us-east (recommended)\n"), "{text}");
    assert!(text.contains("Reply with a number or an option's name (K7Q2X 2 names this request)"), "{text}");
}

#[test]
fn a_request_that_needs_a_passkey_sends_only_its_link() {
    let r = record(&json!({"questions": [{"text": "Wire 40,000 EUR?", "kind": "approval",
        "action": {"name": "wire_transfer", "arguments": {}}}]}));
    let text = body(&notice(&r, EventKind::Created, true));
    assert!(text.contains(crate::STEP_UP_LINE), "{text}");
    assert!(!text.contains("Reply"), "{text}");
    assert!(!text.contains("1. Approve"), "{text}");
    assert!(text.ends_with(LINK), "{text}");
}

#[test]
fn a_long_request_fits_one_twilio_message_and_keeps_how_to_answer() {
    let long = "x".repeat(4_000);
    let r = record(&json!({"context": long, "questions": [
        {"text": long, "options": (1..=4).map(|i| format!("option {i} {}", "y".repeat(150))).collect::<Vec<_>>()}]}));
    let text = body(&notice(&r, EventKind::Created, false));
    assert!(text.chars().count() <= MAX_BODY, "{}", text.chars().count());
    assert!(text.contains("\n4. option 4 yyy"), "{text}");
    assert!(text.contains("Reply with a number or an option's name"), "{text}");
    assert!(text.ends_with(LINK), "{text}");
}

#[test]
fn the_resolution_is_one_short_line() {
    let mut r = record(&json!({"question": "Ship?", "choices": ["yes", "no"]}));
    r.status = clarify_core::Status::Expired;
    let text = body(&notice(&r, EventKind::Expired, false));
    assert!(text.starts_with("[K7Q2X] "), "{text}");
    assert!(!text.contains(LINK), "{text}");
    assert!(text.lines().count() <= 2, "{text}");
}

#[test]
fn whatsapp_addresses_carry_their_prefix_and_sms_ones_do_not() {
    assert_eq!(Line::Sms.address("+4930123456"), "+4930123456");
    assert_eq!(Line::WhatsApp.address("+4930123456"), "whatsapp:+4930123456");
    assert_eq!(Line::WhatsApp.number("whatsapp:+4930123456").as_deref(), Some("+4930123456"));
    assert_eq!(Line::WhatsApp.number("+4930123456"), None);
    assert_eq!(Line::Sms.number("whatsapp:+4930123456"), None);
    assert_eq!(Line::Sms.number("+4930123456").as_deref(), Some("+4930123456"));
}

fn checked(table: Value) -> Result<crate::Channel, String> {
    let raw: crate::RawChannel = serde_json::from_value(table).map_err(|e| e.to_string())?;
    raw.check(&|name| (name == "TWILIO_TOKEN").then(|| "t0ken".to_owned()))
        .map_err(|e| e.to_string())
}

#[test]
fn the_table_needs_an_account_a_sender_and_numbers_in_e164() {
    let ok = checked(json!({"type": "sms", "name": "oncall", "account_sid": "AC0123",
        "auth_token_env": "TWILIO_TOKEN", "from": "+14155550100", "to": ["+4930123456"]}))
    .expect("valid");
    let crate::AnyPlatform::Sms(sms) = ok.platform else {
        panic!("not sms")
    };
    assert_eq!(sms.account.auth_token, "t0ken");
    assert_eq!(sms.account.api_url.as_str(), "https://api.twilio.com/");
    assert_eq!(sms.from, Sender::Number("+14155550100".to_owned()));
    assert!(!format!("{sms:?}").contains("t0ken"));
    let error = |table: Value| checked(table).err().unwrap_or_default();
    let base = |extra: Value| {
        let mut t = json!({"type": "sms", "name": "oncall", "account_sid": "AC0123",
            "auth_token": "t"});
        if let (Some(t), Some(extra)) = (t.as_object_mut(), extra.as_object()) {
            t.extend(extra.clone());
        }
        t
    };
    assert!(error(base(json!({}))).starts_with("from: is missing"));
    assert!(error(base(json!({"from": "+1415", "to": []}))).contains("E.164"));
    assert!(error(base(json!({"from": "+14155550100", "to": ["030 123456"]}))).starts_with("to: "));
    assert!(
        error(base(json!({"from": "+14155550100", "messaging_service_sid": "MG1"})))
            .contains("not both")
    );
    assert!(error(base(json!({"account_sid": "SK1", "from": "+14155550100"}))).starts_with("account_sid: "));
    let service = checked(base(json!({"messaging_service_sid": "MG0123"}))).expect("valid");
    assert!(matches!(service.platform, crate::AnyPlatform::Sms(Sms { from: Sender::Service(_), .. })));
}
