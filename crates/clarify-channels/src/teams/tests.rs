//! Teams: the reading of activities, and agent text kept out of markdown.

use super::*;
use crate::act::{Act, Focus, Input};
use clarify_model::RequestRecord;

#[test]
fn clicks_and_forms_are_read_and_the_bot_being_added_is_captured() {
    let invoke = |verb: &str, data: Value| {
        json!({"type": "invoke", "name": "adaptiveCard/action", "channelId": "msteams",
               "serviceUrl": "https://smba.example/teams/",
               "from": {"id": "29:1", "aadObjectId": "aad-1"},
               "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data}}})
    };
    assert_eq!(
        read(&invoke("o:1", json!({"request": "r1"}))),
        Ok(Inbound::Execute {
            user: "aad-1".to_owned(),
            request: "r1".to_owned(),
            act: Act::Option {
                question: 0,
                index: 1
            },
        })
    );
    assert_eq!(
        read(&invoke("multi", json!({"request": "r1", "q0": "0,2"}))),
        Ok(Inbound::Execute {
            user: "aad-1".to_owned(),
            request: "r1".to_owned(),
            act: Act::Options {
                question: 0,
                indexes: vec![0, 2]
            },
        })
    );
    let Ok(Inbound::Execute {
        act: Act::Submit { focus, inputs },
        ..
    }) = read(&invoke(
        "form:deny:0",
        json!({"request": "r1", "q0.reason": "no"}),
    ))
    else {
        panic!("a form");
    };
    assert_eq!(focus, Focus::Deny(0));
    assert_eq!(inputs.get("q0.reason"), Some(&Input::Text("no".to_owned())));
    assert!(matches!(
        read(&invoke("zzz", json!({"request": "r1"}))),
        Ok(Inbound::Unknown(_))
    ));
    let added = json!({"type": "conversationUpdate", "serviceUrl": "https://smba.example/teams/",
        "recipient": {"id": "28:app"}, "membersAdded": [{"id": "28:app"}],
        "conversation": {"id": "19:abc@thread.tacv2"}});
    assert_eq!(
        read(&added),
        Ok(Inbound::Added(Conversation {
            service_url: "https://smba.example/teams/".to_owned(),
            conversation_id: "19:abc@thread.tacv2".to_owned(),
        }))
    );
    let someone = json!({"type": "conversationUpdate", "recipient": {"id": "28:app"},
        "membersAdded": [{"id": "29:person"}]});
    assert_eq!(read(&someone), Ok(Inbound::Ignore));
}

#[test]
fn agent_text_never_reaches_markdown() {
    let raw = json!({"questions": [{"text": "**bold** [x](https://evil) @everyone",
                                    "kind": "open"}]});
    let request =
        clarify_core::parse_request(&raw, &clarify_core::Limits::default()).expect("request");
    let record = RequestRecord {
        id: "r1".to_owned(),
        tenant: "default".to_owned(),
        request: Arc::new(request),
        status: clarify_core::Status::Pending,
        created_at: chrono::Utc::now(),
        expires_at: None,
        resolution: None,
        votes: Vec::new(),
        remind_at: None,
        escalated_at: None,
        on_call: Vec::new(),
    };
    let card = card(&record, "https://clarify.example/a/t");
    let text = card.to_string();
    assert!(!text.contains("\"TextBlock\""), "only TextRuns: {text}");
    assert_eq!(card["version"], "1.5");
}
