//! Slack's tests: what it sends is read, what clarify posts is drawn, and the Socket Mode
//! connection keeps its promises.

mod inbound {
    use chrono::{DateTime, Utc};
    use serde_json::json;

    use super::super::inbound::*;
    use crate::act::Act;

    /// Slack's documented example: this secret, timestamp and body have this signature.
    const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    const SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(seconds, 0).unwrap_or_default()
    }

    #[test]
    fn slacks_own_example_verifies() {
        let now = at(1_531_420_618 + 10);
        assert_eq!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                now
            ),
            Ok(())
        );
    }

    #[test]
    fn a_changed_body_a_stale_timestamp_or_no_signature_is_refused() {
        let now = at(1_531_420_618);
        let changed = BODY.replace("roadrunner", "coyote");
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                changed.as_bytes(),
                now
            )
            .is_err()
        );
        let later = at(1_531_420_618 + MAX_SKEW_SECONDS + 1);
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                later
            )
            .is_err()
        );
        assert!(verify(SECRET, None, Some(SIGNATURE), BODY.as_bytes(), now).is_err());
        assert!(
            verify(
                SECRET,
                Some("1531420618"),
                Some("v0=zz"),
                BODY.as_bytes(),
                now
            )
            .is_err()
        );
        assert!(
            verify(
                "other",
                Some("1531420618"),
                Some(SIGNATURE),
                BODY.as_bytes(),
                now
            )
            .is_err()
        );
    }

    #[test]
    fn a_button_names_the_request_question_and_option() {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": "U1"},
            "trigger_id": "t1",
            "channel": {"id": "C1"},
            "actions": [{"action_id": "option:2", "block_id": "clarify:req_9:0", "value": "2"}],
        });
        let Ok(Inbound::Act(i)) = read_interaction(&payload) else {
            panic!("an act");
        };
        assert_eq!(i.on, On::Request("req_9".to_owned()));
        assert_eq!(
            i.act,
            Act::Option {
                question: 0,
                index: 2
            }
        );
        assert_eq!(i.channel.as_deref(), Some("C1"));
    }

    #[test]
    fn the_warnings_extend_button_extends_its_request() {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": "U1"},
            "channel": {"id": "C1"},
            "actions": [{"action_id": "extend:1800", "block_id": "clarify:req_9:request"}],
        });
        let Ok(Inbound::Act(i)) = read_interaction(&payload) else {
            panic!("an act");
        };
        assert_eq!(i.on, On::Request("req_9".to_owned()));
        assert_eq!(i.act, Act::Extend { seconds: 1800 });
        assert_eq!(crate::act::extend_label(1800), "Extend 30 min");
        assert_eq!(crate::act::extend_label(7200), "Extend 2 h");
    }

    #[test]
    fn unknown_actions_and_foreign_blocks_are_malformed() {
        for (action, block) in [
            ("explode", "clarify:req_9:0"),
            ("extend:0", "clarify:req_9:request"),
            ("extend:soon", "clarify:req_9:request"),
            ("option:1", "someone-else"),
            ("option:x", "clarify:req_9:0"),
        ] {
            let payload = json!({
                "type": "block_actions", "user": {"id": "U1"},
                "actions": [{"action_id": action, "block_id": block}],
            });
            assert!(
                matches!(read_interaction(&payload), Err(InboundError::Malformed(_))),
                "{action} {block}"
            );
        }
        assert!(read(b"payload=%7Bnot-json").is_err());
        assert!(read(b"nothing=here").is_err());
    }

    #[test]
    fn thread_replies_answer_and_the_bots_own_messages_do_not() {
        let reply = json!({"type": "event_callback", "event": {
            "type": "message", "channel": "C1", "user": "U1", "text": "2",
            "ts": "2.0", "thread_ts": "1.0"}});
        let Ok(Inbound::Act(i)) = read_event(&reply) else {
            panic!("an act")
        };
        assert_eq!(i.on, On::Thread("C1:1.0".to_owned()));
        assert_eq!(i.act, Act::Typed("2".to_owned()));
        let mut bot = reply.clone();
        bot["event"]["bot_id"] = json!("B1");
        assert!(matches!(read_event(&bot), Ok(Inbound::Ignore(_))));
        let challenge = json!({"type": "url_verification", "challenge": "abc"});
        assert_eq!(
            read_event(&challenge),
            Ok(Inbound::Challenge("abc".to_owned()))
        );
    }
}

mod render {
    use super::super::render::*;
    use crate::act::Focus;

    #[test]
    fn escaping_covers_what_slack_parses() {
        assert_eq!(
            escape("a < b & c > <!channel>"),
            "a &lt; b &amp; c &gt; &lt;!channel&gt;"
        );
    }

    #[test]
    fn fitting_counts_escapes_and_never_splits_one() {
        let text = "<".repeat(1_000);
        let fitted = fit(&text, MAX_SECTION);
        assert!(fitted.chars().count() <= MAX_SECTION, "{}", fitted.len());
        assert!(
            fitted.ends_with("&lt;…"),
            "{}",
            &fitted[fitted.len() - 10..]
        );
        assert_eq!(fit("short & sweet", 100), "short &amp; sweet");
    }

    #[test]
    fn metadata_round_trips() {
        for focus in [
            Focus::Request,
            Focus::Other(2),
            Focus::Edit(0),
            Focus::Form(1),
        ] {
            let text = metadata("req_1", focus);
            assert_eq!(read_metadata(&text), Some(("req_1".to_owned(), focus)));
        }
        assert_eq!(read_metadata("req_1 bogus:1"), None);
    }
}

mod socket {
    use super::super::socket::*;

    #[test]
    fn duplicates_are_recognized_and_old_ids_forgotten() {
        let mut seen = Seen::default();
        assert!(seen.first_time("a"));
        assert!(!seen.first_time("a"));
        for i in 0..REMEMBERED {
            seen.first_time(&i.to_string());
        }
        assert!(seen.first_time("a"), "forgotten after {REMEMBERED} others");
    }
}
