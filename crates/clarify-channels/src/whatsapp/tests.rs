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
    let crate::AnyPlatform::WhatsApp(WhatsApp { sms, content_sid }) = channel.platform else {
        panic!("not whatsapp")
    };
    assert_eq!(content_sid, None, "free-form only, without a template");
    assert_eq!(sms.from, crate::sms::Sender::Number("+14155238886".to_owned()));
    assert_eq!(sms.to, ["+4930123456", "+4930654321"]);
    let bad: crate::RawChannel = serde_json::from_value(json!({"type": "whatsapp",
        "name": "wa", "account_sid": "AC0123", "auth_token": "t", "from": "whatsapp:"}))
    .expect("a table");
    assert!(bad.check(&|_| None).is_err_and(|e| e.key == "from"));
}

#[test]
fn a_template_is_a_twilio_content_sid() {
    let table = |sid: &str| -> crate::RawChannel {
        serde_json::from_value(json!({"type": "whatsapp", "name": "wa",
            "account_sid": "AC0123", "auth_token": "t", "from": "+14155238886",
            "content_sid": sid}))
        .expect("a table")
    };
    let sid = "HXb5b62575e6e4ff6129ad7c8efe1f983e";
    let channel = table(sid).check(&|_| None).expect("valid");
    let crate::AnyPlatform::WhatsApp(whatsapp) = channel.platform else {
        panic!("not whatsapp")
    };
    assert_eq!(whatsapp.content_sid.as_deref(), Some(sid));
    for bad in ["", "HX123", "MGb5b62575e6e4ff6129ad7c8efe1f983e", "HXzzb62575e6e4ff6129ad7c8efe1f983e"] {
        let refused = table(bad).check(&|_| None);
        assert!(
            refused.as_ref().is_err_and(|e| e.key == "content_sid"),
            "{bad:?}: {refused:?}"
        );
    }
}
