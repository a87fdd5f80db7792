//! Telegram: the buttons' callback data, the reading of updates, and the escaping of HTML.

use super::inbound::indexes;
use super::*;
use crate::act::Focus;
use clarify_core::Scope;
use serde_json::json;

#[test]
fn presses_round_trip_and_stay_short() {
    let all = [
        Press::Option(23),
        Press::Toggle(0x00ff_ffff),
        Press::Done(5),
        Press::Approve(Scope::Once),
        Press::Approve(Scope::Session),
        Press::Approve(Scope::Always),
        Press::Deny,
        Press::Reason,
        Press::Write,
        Press::Skip,
    ];
    for press in all {
        let data = press.encode();
        assert!(data.len() <= 64, "{data}");
        assert_eq!(Press::decode(&data), Some(press));
    }
    for junk in [
        "",
        "x",
        "o",
        "oX",
        "tz",
        "ab",
        "d1",
        "é",
        "o99999999999999999999",
    ] {
        assert_eq!(Press::decode(junk), None, "{junk}");
    }
    assert_eq!(indexes(0b101), [0, 2]);
}

#[test]
fn updates_are_read_and_prompts_only_from_the_bot() {
    let press = json!({"update_id": 7, "callback_query": {
        "id": "q1", "from": {"id": 5_000_000_000_i64, "is_bot": false},
        "message": {"message_id": 42, "chat": {"id": -1001}}, "data": "ao"}});
    assert_eq!(
        read(&press, Some("99")),
        Ok(Inbound::Press {
            query_id: "q1".to_owned(),
            user: "5000000000".to_owned(),
            message_ref: "-1001:42".to_owned(),
            data: "ao".to_owned(),
        })
    );
    let reply = |from: i64, text: &str| {
        json!({"update_id": 8, "message": {
            "message_id": 50, "from": {"id": 5, "is_bot": false}, "chat": {"id": -1001},
            "text": " no thanks ",
            "reply_to_message": {"message_id": 43, "from": {"id": from, "is_bot": true},
                                 "text": text}}})
    };
    let Ok(Inbound::Reply {
        prompt,
        text,
        reply_to,
        ..
    }) = read(&reply(99, "↩ #42 deny:0\nWhy deny?"), Some("99"))
    else {
        panic!("a reply");
    };
    assert_eq!(prompt, Some(("42".to_owned(), Focus::Deny(0))));
    assert_eq!(text, "no thanks");
    assert_eq!(reply_to, "-1001:43");
    let Ok(Inbound::Reply { prompt, .. }) = read(&reply(12, "↩ #42 deny:0"), Some("99")) else {
        panic!("a reply");
    };
    assert_eq!(prompt, None, "another bot's message is no prompt of ours");
    assert_eq!(
        read(
            &json!({"message": {"message_id": 1, "from": {"id": 5}, "chat": {"id": 5},
                                "text": "/start"}}),
            None
        ),
        Ok(Inbound::Start {
            user: "5".to_owned(),
            chat_id: "5".to_owned()
        })
    );
    assert!(read(&json!([1]), None).is_err());
    assert_eq!(
        read(&json!({"edited_message": {}}), None),
        Ok(Inbound::Ignore("an update clarify does not use"))
    );
}

#[test]
fn escaping_covers_what_html_mode_reads() {
    assert_eq!(escape("<b>&</b>"), "&lt;b&gt;&amp;&lt;/b&gt;");
    assert_eq!(fit("<<<<", 3), "&lt;&lt;…");
}

/// Telegram's cut-then-escape, as its message text uses it.
fn fit(text: &str, max: usize) -> String {
    crate::text::fit(&Html, text, max)
}
