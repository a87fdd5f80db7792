//! E-mail: answer links, escaping, threading of follow-ups, recipients, the hidden password, and
//! replies (their signature, their first line, their thread).

use std::sync::Arc;

use clarify_model::RequestRecord;

use super::*;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

fn record(raw: Value) -> RequestRecord {
    let request = match clarify_core::parse_request(&raw, &clarify_core::Limits::default()) {
        Ok(r) => r,
        Err(e) => panic!("test request: {e}"),
    };
    RequestRecord {
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
    }
}

fn notice(r: &RequestRecord) -> Notice<'_> {
    Notice {
        record: r,
        event: EventKind::Created,
        answer_url: "https://clarify.example/a/t",
        announcement: None,
        mention: Vec::new(),
        recipients: Vec::new(),
        action_key: b"test key",
        hook_url: "https://clarify.example/hooks/test/t",
        personal: Vec::new(),
        step_up: false,
    }
}

fn labels(r: &RequestRecord) -> Vec<String> {
    choices(&notice(r)).into_iter().map(|c| c.label).collect()
}

#[test]
fn one_link_per_option_or_decision_and_none_for_the_rest() {
    let single = record(json!({"question": "Ship?", "choices": ["yes", "no", "later"]}));
    assert_eq!(labels(&single), ["yes", "no", "later"]);
    let approval = record(json!({"questions": [{"text": "Drop?", "kind": "approval",
        "action": {"name": "drop"}, "scopes": ["once", "session"]}]}));
    assert_eq!(
        labels(&approval),
        ["Approve", "Approve for this session", "Deny"]
    );
    let quorum = record(json!({"questions": [{"text": "Drop?", "kind": "approval",
        "action": {"name": "drop"}}], "approvals_required": 2}));
    assert!(labels(&quorum).is_empty());
    let open = record(json!({"question": "Why?"}));
    assert!(labels(&open).is_empty());
}

#[test]
fn a_link_carries_its_answer_as_base64_json() {
    let r = record(json!({"question": "Ship?", "choices": ["yes", "no"]}));
    let first = choices(&notice(&r)).remove(0);
    let (base, encoded) = first.url.split_once("?answer=").expect("answer parameter");
    assert_eq!(base, "https://clarify.example/a/t");
    let decoded = URL_SAFE_NO_PAD.decode(encoded).expect("base64");
    let answer: Value = serde_json::from_slice(&decoded).expect("json");
    let q = r.request.questions[0].id.clone();
    assert_eq!(answer, json!({"answers": {q: {"option": "yes"}}}));
}

#[test]
fn the_html_escapes_what_the_agent_wrote() {
    let r = record(json!({"question": "<script>alert(1)</script> & \"q\"",
                          "context": "a < b"}));
    let (text, html) = bodies(&notice(&r));
    assert!(text.contains("<script>alert(1)</script> & \"q\""), "{text}");
    assert!(!html.contains("<script>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"),
        "{html}"
    );
    assert!(html.contains("a &lt; b"), "{html}");
}

#[test]
fn a_follow_up_replies_to_the_announcement() {
    let r = record(json!({"question": "Ship?", "choices": ["yes", "no"]}));
    let email = Email {
        smtp_url: "smtp://127.0.0.1:2525".parse().expect("url"),
        password: None,
        from: "Clarify <clarify@example.com>".to_owned(),
        to: vec!["alice@example.com".to_owned()],
        mailgun_signing_key: None,
    };
    let mut n = notice(&r);
    let first = email.compose(&n).expect("composed").expect("a recipient");
    assert!(first.message_id.starts_with("<r1."), "{}", first.message_id);
    assert!(first.message_id.ends_with("@example.com>"));
    n.event = EventKind::Reminded;
    n.announcement = Some(&first.message_id);
    let reply = email.compose(&n).expect("composed").expect("a recipient");
    let raw = String::from_utf8_lossy(&reply.message.formatted()).into_owned();
    assert!(
        raw.contains(&format!("In-Reply-To: {}", first.message_id)),
        "{raw}"
    );
    // The subject is the request's summary.
    assert!(raw.contains("Subject: Re: Ship?"), "{raw}");
    assert_ne!(reply.message_id, first.message_id);
}

#[test]
fn without_to_or_responders_there_is_no_one_to_write_to() {
    let r = record(json!({"question": "Ship?"}));
    let email = Email {
        smtp_url: "smtp://127.0.0.1:2525".parse().expect("url"),
        password: None,
        from: "clarify@example.com".to_owned(),
        to: Vec::new(),
        mailgun_signing_key: None,
    };
    assert!(email.compose(&notice(&r)).expect("composed").is_none());
    let mut n = notice(&r);
    n.recipients = vec!["bob@example.com".to_owned()];
    assert!(email.compose(&n).expect("composed").is_some());
}

#[test]
fn the_password_is_not_shown() {
    let email = Email {
        smtp_url: "smtps://me:hunter2@mail.example.com".parse().expect("url"),
        password: Some("other".to_owned()),
        from: "clarify@example.com".to_owned(),
        to: Vec::new(),
        mailgun_signing_key: None,
    };
    let shown = format!("{email:?}");
    assert!(
        !shown.contains("hunter2") && !shown.contains("other"),
        "{shown}"
    );
}

mod replies {
    use chrono::{TimeZone, Utc};
    use hmac::{Hmac, Mac};
    use sha2::Sha256;

    use super::super::inbound::{Reply, address, fields, first_line, read, verify};
    use crate::inbound::InboundError;

    const KEY: &str = "key-mailgun-signing";

    fn signed(timestamp: i64, token: &str, key: &str) -> Vec<(String, String)> {
        let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("key");
        mac.update(format!("{timestamp}{token}").as_bytes());
        let signature: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        vec![
            ("timestamp".to_owned(), timestamp.to_string()),
            ("token".to_owned(), token.to_owned()),
            ("signature".to_owned(), signature),
        ]
    }

    #[test]
    fn the_signature_must_be_the_keys_and_the_timestamp_recent() {
        let now = Utc.timestamp_opt(1_764_000_000, 0).single().expect("time");
        let t = now.timestamp();
        assert_eq!(verify(KEY, &signed(t, "tok", KEY), now), Ok(()));
        assert_eq!(verify(KEY, &signed(t - 200, "tok", KEY), now), Ok(()));
        for (fields, why) in [
            (signed(t, "tok", "another key"), "another key"),
            (signed(t - 301, "tok", KEY), "stale"),
            (Vec::new(), "unsigned"),
        ] {
            let e = verify(KEY, &fields, now).expect_err(why);
            assert!(matches!(e, InboundError::Unauthorized(_)), "{why}: {e:?}");
        }
        // A signature moved onto another token does not pass.
        let mut moved = signed(t, "tok", KEY);
        moved[1].1 = "other".to_owned();
        assert!(verify(KEY, &moved, now).is_err());
    }

    #[test]
    fn the_first_line_of_the_reply_is_read_and_the_quote_left_out() {
        let check = |text: &str, expected: Option<&str>| {
            assert_eq!(first_line(text).as_deref(), expected, "{text:?}");
        };
        check("approve\n\nthanks", Some("approve"));
        check("\n  deny too risky  \r\nOn Mon, Dec 7 Clarify wrote:\n> Deploy?", Some("deny too risky"));
        check("> Deploy?\n> approve", None);
        check("On Mon, 7 Dec 2026 at 04:00, Clarify <c@example.com> wrote:\n> Deploy?", None);
        check("-- \nAlice", None);
        check("2\n-----Original Message-----\nFrom: Clarify", Some("2"));
    }

    #[test]
    fn a_post_is_read_as_form_or_multipart_with_its_thread() {
        let form = "from=Alice+%3Calice%40example.com%3E&In-Reply-To=%3Cr1.a%40example.com%3E\
                    &References=%3Cr0%40x.org%3E+%3Cr1.a%40example.com%3E\
                    &stripped-text=approve&body-plain=approve%0A%3E+quoted";
        let f = fields("application/x-www-form-urlencoded", form.as_bytes()).expect("form");
        assert_eq!(
            read(&f).expect("read"),
            Reply {
                from: "alice@example.com".to_owned(),
                thread: vec!["<r1.a@example.com>".to_owned(), "<r0@x.org>".to_owned()],
                answer: "approve".to_owned(),
            }
        );
        let multipart = "--XyZ\r\nContent-Disposition: form-data; name=\"from\"\r\n\r\nbob@example.com\r\n\
                         --XyZ\r\nContent-Disposition: form-data; name=\"References\"\r\n\r\n<r1.a@example.com>\r\n\
                         --XyZ\r\nContent-Disposition: form-data; name=\"attachment-1\"; filename=\"a.txt\"\r\n\
                         Content-Type: text/plain\r\n\r\nfile\r\n\
                         --XyZ\r\nContent-Disposition: form-data; name=\"body-plain\"\r\n\r\n\r\ndeny not now\r\n> Deploy?\r\n\
                         --XyZ--\r\n";
        let f = fields("multipart/form-data; boundary=\"XyZ\"", multipart.as_bytes()).expect("multipart");
        assert!(!f.iter().any(|(k, _)| k == "attachment-1"), "{f:?}");
        let reply = read(&f).expect("read");
        assert_eq!(reply.from, "bob@example.com");
        assert_eq!(reply.thread, ["<r1.a@example.com>"]);
        assert_eq!(reply.answer, "deny not now");
        assert!(fields("application/json", b"{}").is_err());
        assert_eq!(address("Not an address"), None);
        assert_eq!(address("<a@b.io>"), Some("a@b.io".to_owned()));
    }
}
