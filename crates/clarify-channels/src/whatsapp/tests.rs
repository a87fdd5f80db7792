//! WhatsApp through Twilio: the table takes numbers with or without `whatsapp:`, and the
//! platform names its people by phone number like SMS and voice.

use serde_json::json;

use super::*;

#[test]
fn numbers_are_taken_with_or_without_their_prefix() {
    let raw: crate::RawChannel = serde_json::from_value(json!({"type": "whatsapp",
        "name": "wa", "account_sid": "AC0123", "auth_token": "t",
        "from": "whatsapp:+14155238886", "to": ["+4930123456", "whatsapp:+4930654321"]}))
    .expect("a table");
    let channel = raw.check(&|_| None).expect("valid");
    assert_eq!(channel.identity_of("+4930123456"), "phone:+4930123456");
    let crate::AnyPlatform::WhatsApp(WhatsApp(sms)) = channel.platform else {
        panic!("not whatsapp")
    };
    assert_eq!(sms.from, crate::sms::Sender::Number("+14155238886".to_owned()));
    assert_eq!(sms.to, ["+4930123456", "+4930654321"]);
    let bad: crate::RawChannel = serde_json::from_value(json!({"type": "whatsapp",
        "name": "wa", "account_sid": "AC0123", "auth_token": "t", "from": "whatsapp:"}))
    .expect("a table");
    assert!(bad.check(&|_| None).is_err_and(|e| e.key == "from"));
}
