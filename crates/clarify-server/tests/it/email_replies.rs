//! Answers by e-mail reply, against the SMTP sink of `fake_smtp` and a poster shaped like
//! Mailgun's inbound routing (`forward()`: form fields, signed with the webhook signing key):
//! a reply to the announcement answers it and wakes the agent, its first line read and the
//! quote left out; a stranger's reply, a forged, stale or replayed post change nothing (the
//! stranger's is kept as a `refused` event in the request's history).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::email::Email;
use clarify_channels::{AnyPlatform, Channel};
use hmac::{Hmac, Mac};
use mail_parser::MessageParser;
use reqwest::StatusCode;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::fake_smtp::FakeSmtp;
use crate::support::{TestServer, status_of, timed_wait, waiting};

const SIGNING_KEY: &str = "key-3ax6xnjp29jd6fds4gc373sgvjxteol0";

async fn server_on(smtp: &FakeSmtp) -> TestServer {
    let channel = Channel {
        name: "mail".to_owned(),
        platform: AnyPlatform::Email(Email {
            smtp_url: smtp.url.parse().expect("url"),
            password: None,
            from: "Clarify <clarify@example.com>".to_owned(),
            to: Vec::new(),
            mailgun_signing_key: Some(SIGNING_KEY.to_owned()),
        }),
        allow_unmapped: false,
    };
    TestServer::build("memory:", crate::support::announcing(&["mail"]), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            ("email:alice@example.com".to_owned(), "alice".to_owned()),
            ("email:bob@example.com".to_owned(), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await
}

/// Creates a request for alice and waits for its announcement's mail: the id and the mail's
/// Message-ID. The announcement is the mail whose Message-ID the channel recorded for the
/// request (not merely the newest mail: an earlier request's resolution may arrive meanwhile).
async fn announce(s: &TestServer, smtp: &FakeSmtp, mut body: Value) -> (String, String) {
    body["responders"] = json!(["alice"]);
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    // The reply may arrive only once the announcement's reference is recorded.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let message_ref = loop {
        let notifications = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await
            .1;
        if let Some(r) = notifications["notifications"][0]["message_ref"].as_str() {
            break r.to_owned();
        }
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(2)).await;
    };
    let bare = |m: &str| m.trim().trim_matches(['<', '>']).to_owned();
    let message_id = smtp
        .received()
        .iter()
        .filter_map(|mail| {
            let parsed = MessageParser::default().parse(mail.data.as_bytes())?;
            parsed.header_raw("Message-ID").map(|v| v.trim().to_owned())
        })
        .find(|m| bare(m) == bare(&message_ref))
        .expect("the announcement's mail, by its recorded Message-ID");
    (id, message_id)
}

/// Mailgun's `signature` of `timestamp` and `token`.
fn signature(key: &str, timestamp: &str, token: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key.as_bytes()).expect("key");
    mac.update(format!("{timestamp}{token}").as_bytes());
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A reply as Mailgun's `forward()` posts it, from `from` to the mail `message_id`.
fn reply(from: &str, message_id: &str, body_plain: &str) -> Vec<(String, String)> {
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    [
        ("recipient", "clarify@example.com"),
        ("sender", from),
        ("from", &format!("Someone <{from}>")),
        ("subject", "Re: Deploy?"),
        ("In-Reply-To", message_id),
        ("References", message_id),
        ("Message-Id", &format!("<reply-{n}@mail.example.com>")),
        ("body-plain", body_plain),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Posts `fields` signed with `key` at `timestamp` with `token`; the status.
async fn post_signed(
    s: &TestServer,
    mut fields: Vec<(String, String)>,
    key: &str,
    timestamp: i64,
    token: &str,
) -> StatusCode {
    let timestamp = timestamp.to_string();
    fields.push(("timestamp".to_owned(), timestamp.clone()));
    fields.push(("token".to_owned(), token.to_owned()));
    fields.push(("signature".to_owned(), signature(key, &timestamp, token)));
    s.client
        .post(format!("{}/hooks/email/mail", s.url))
        .form(&fields)
        .send()
        .await
        .expect("post")
        .status()
}

/// Posts `fields` as Mailgun does now, with a fresh token.
async fn post(s: &TestServer, fields: Vec<(String, String)>) -> StatusCode {
    let token = format!("{:050x}", rand::random::<u128>());
    post_signed(
        s,
        fields,
        SIGNING_KEY,
        chrono::Utc::now().timestamp(),
        &token,
    )
    .await
}

fn approval() -> Value {
    json!({"questions": [{"text": "Deploy to prod?", "kind": "approval",
                          "action": {"name": "deploy", "arguments": {"to": "prod"}}}]})
}

#[tokio::test]
async fn a_reply_answers_by_its_first_line_and_the_agent_wakes() {
    let smtp = FakeSmtp::start().await;
    let s = server_on(&smtp).await;
    let (id, message_id) = announce(&s, &smtp, approval()).await;
    let agent = waiting(&s, &id);
    tokio::time::sleep(Duration::from_millis(20)).await;
    // A mail client's reply: the answer on top, the announcement quoted below.
    let body = "deny too risky today\r\n\r\nOn Mon, 7 Dec 2026 at 05:00, Clarify \
                <clarify@example.com> wrote:\r\n> Deploy to prod?\r\n> approve\r\n";
    assert_eq!(
        post(&s, reply("alice@example.com", &message_id, body)).await,
        StatusCode::OK
    );
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent wakes")
        .expect("waiter");
    assert_eq!(outcome["status"], "answered", "{outcome}");
    let q = &outcome["outcome"]["questions"][0];
    assert_eq!(q["decision"], "deny", "{outcome}");
    assert_eq!(q["reason"], "too risky today", "{outcome}");
    assert_eq!(outcome["outcome"]["answered_by"], "alice");
}

#[tokio::test]
async fn a_reply_to_a_choice_and_mailguns_stripped_text_answer() {
    let smtp = FakeSmtp::start().await;
    let s = server_on(&smtp).await;
    let (id, message_id) = announce(
        &s,
        &smtp,
        json!({"question": "Which region?", "choices": ["eu", "us", "ap"]}),
    )
    .await;
    let mut fields = reply("alice@example.com", &message_id, "> quoted only");
    fields.push(("stripped-text".to_owned(), "2".to_owned()));
    assert_eq!(post(&s, fields).await, StatusCode::OK);
    let record = status_of(&s, &id).await;
    assert_eq!(
        record["outcome"]["questions"][0]["answer"], "us",
        "{record}"
    );
}

#[tokio::test]
async fn a_stranger_or_a_responder_not_asked_changes_nothing() {
    let smtp = FakeSmtp::start().await;
    let s = server_on(&smtp).await;
    let (id, message_id) = announce(&s, &smtp, approval()).await;
    for from in ["mallory@example.net", "bob@example.com"] {
        assert_eq!(
            post(&s, reply(from, &message_id, "approve")).await,
            StatusCode::OK,
            "{from}: taken, and refused"
        );
    }
    // A reply that names no announcement of this channel is refused the same way.
    assert_eq!(
        post(
            &s,
            reply("alice@example.com", "<nothing@example.com>", "approve")
        )
        .await,
        StatusCode::OK
    );
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    // Both refusals are in the request's history, in the audit chain: who sent them, by which
    // channel; the stranger answers as nobody, bob as himself.
    let refused = refusals(&s, &id).await;
    assert_eq!(
        refused,
        vec![
            (Value::Null, json!("email:mallory@example.net")),
            (json!("bob"), json!("email:bob@example.com")),
        ],
        "the refused replies, in order"
    );
    // Alice's still answers.
    assert_eq!(
        post(&s, reply("alice@example.com", &message_id, "approve")).await,
        StatusCode::OK
    );
    assert_eq!(status_of(&s, &id).await["status"], "answered");
}

/// The refused replies to request `id` in the audit chain: (actor, principal) of each, all by
/// the e-mail channel.
async fn refusals(s: &TestServer, id: &str) -> Vec<(Value, Value)> {
    crate::support::refusals(s, id)
        .await
        .into_iter()
        .map(|e| {
            assert_eq!(e["channel"], "email", "{e}");
            (e["actor"].clone(), e["principal"].clone())
        })
        .collect()
}

#[tokio::test]
async fn a_forged_stale_or_replayed_post_is_refused_and_changes_nothing() {
    let smtp = FakeSmtp::start().await;
    let s = server_on(&smtp).await;
    let (id, message_id) = approval_announced(&s, &smtp).await;
    let fields = || reply("alice@example.com", &message_id, "approve");
    let now = chrono::Utc::now().timestamp();
    let token = "f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9";
    assert_eq!(
        post_signed(&s, fields(), "not-the-signing-key", now, token).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        post_signed(&s, fields(), SIGNING_KEY, now - 3_600, token).await,
        StatusCode::UNAUTHORIZED
    );
    let unsigned = s
        .client
        .post(format!("{}/hooks/email/mail", s.url))
        .form(&fields())
        .send()
        .await
        .expect("post");
    assert_eq!(unsigned.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    assert_eq!(
        refusals(&s, &id).await,
        vec![],
        "an unverified post is not read, so not recorded either"
    );

    // A denial goes through once; the same post again is refused.
    let deny = reply("alice@example.com", &message_id, "deny");
    assert_eq!(
        post_signed(&s, deny.clone(), SIGNING_KEY, now, token).await,
        StatusCode::OK
    );
    assert_eq!(
        post_signed(&s, deny, SIGNING_KEY, now, token).await,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        status_of(&s, &id).await["outcome"]["questions"][0]["decision"],
        "deny"
    );
}

async fn approval_announced(s: &TestServer, smtp: &FakeSmtp) -> (String, String) {
    announce(s, smtp, approval()).await
}

/// Creation until the announcement's mail is accepted by the SMTP server and recorded, and a
/// signed reply until the waiting agent wakes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let smtp = FakeSmtp::start().await;
    let s = server_on(&smtp).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, message_id) = announce(&s, &smtp, approval()).await;
        announced.push(started.elapsed());
        let (agent, replied) = timed_wait(&s, &id).await;
        let status = post(&s, reply("alice@example.com", &message_id, "approve")).await;
        assert_eq!(status, StatusCode::OK);
        let woke = tokio::time::timeout(Duration::from_secs(10), agent)
            .await
            .expect("the agent wakes")
            .expect("waiter");
        let outcome = status_of(&s, &id).await;
        assert_eq!(outcome["status"], "answered", "{outcome}");
        wake.push(woke.duration_since(replied));
    }
    for (name, v) in [
        ("email creation → mail accepted", announced),
        ("email reply → agent wakes", wake),
    ] {
        crate::support::print_percentiles(name, v);
    }
}
