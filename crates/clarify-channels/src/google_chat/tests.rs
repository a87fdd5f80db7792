//! Google Chat: the reading of both event formats, and agent text escaped for the card.

use super::render::html;
use super::*;
use crate::act::{Act, Focus, Input};

#[test]
fn both_event_formats_are_read() {
    let classic = json!({"type": "CARD_CLICKED", "user": {"name": "users/1"},
        "common": {"parameters": {"request": "r1", "action": "multi"},
                   "formInputs": {"q0": {"stringInputs": {"value": ["0", "2"]}}}}});
    assert_eq!(
        read(&classic),
        Ok(Inbound::Click {
            user: "users/1".to_owned(),
            request: "r1".to_owned(),
            act: Act::Options {
                question: 0,
                indexes: vec![0, 2]
            },
            format: Format::Classic,
        })
    );
    let addon = json!({"chat": {"user": {"name": "users/2"},
                                "buttonClickedPayload": {"message": {"name": "spaces/a/messages/b"}}},
        "commonEventObject": {"parameters": {"request": "r1", "action": "form:deny:0"},
            "formInputs": {"q0.reason": {"stringInputs": {"value": ["no"]}}}}});
    let Ok(Inbound::Click {
        act: Act::Submit { focus, inputs },
        format,
        ..
    }) = read(&addon)
    else {
        panic!("a submit");
    };
    assert_eq!((focus, format), (Focus::Deny(0), Format::AddOn));
    assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
    assert_eq!(
        read(&json!({"type": "ADDED_TO_SPACE"})),
        Ok(Inbound::Ignore)
    );
}

#[test]
fn agent_text_is_escaped_for_the_cards_html() {
    assert_eq!(
        html("<b>x</b> & <a href=\"j\">", 100),
        "&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href=\"j\"&gt;"
    );
}
