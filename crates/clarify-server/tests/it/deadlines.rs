//! Warnings before expiry and extensions over HTTP and from a chat: `POST
//! /v1/requests/{id}/extend` moves the deadline for someone who may answer, within the
//! server's bound, in the audit chain, and a waiting agent reads the new `expires_at`; a
//! Telegram warning carries an "Extend 30 min" button that does the same.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, TimeDelta, Utc};
use clarify_channels::telegram::Telegram;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_telegram::{BOT_TOKEN, CHAT, FakeTelegram};
use crate::support::{TestServer, code};

const ALICE: i64 = 5_000_000_001;

fn time(record: &Value, field: &str) -> DateTime<Utc> {
    record[field]
        .as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_else(|| panic!("{field} is a time: {record}"))
}

#[tokio::test]
async fn an_extension_moves_the_deadline_for_a_responder_within_the_bound() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = TestServer::with_clock(Arc::clone(&clock)).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let agent = s.key(Role::Agent, "deployer", "default").await;
    let record = s
        .ask(
            &agent,
            json!({"question": "Deploy?", "choices": ["yes", "no"], "responders": ["alice"],
                   "timeout_seconds": 1800}),
        )
        .await;
    assert!(record["warn_before_seconds"].is_null(), "{record}");
    let id = record["id"].as_str().expect("id").to_owned();
    let first = time(&record, "expires_at");
    let path = format!("/v1/requests/{id}/extend");

    // A waiting agent reads the deadline as it is when its wait ends.
    let waiting = {
        let (client, url, agent, id) = (s.client.clone(), s.url.clone(), agent.clone(), id.clone());
        tokio::spawn(async move {
            let response = client
                .get(format!("{url}/v1/requests/{id}/wait?timeout_seconds=2"))
                .bearer_auth(agent)
                .send()
                .await
                .expect("wait");
            response.json::<Value>().await.expect("json")
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, extended) = s.post(&path, &alice, json!({"by": "30m"})).await;
    assert_eq!(status, StatusCode::OK, "{extended}");
    assert_eq!(
        time(&extended, "expires_at"),
        first + TimeDelta::minutes(30)
    );
    assert_eq!(extended["status"], "pending");
    let waited = waiting.await.expect("the waiter");
    assert_eq!(time(&waited, "expires_at"), first + TimeDelta::minutes(30));

    // Who may not answer may not extend; nor may an agent's key; nothing changes.
    let (status, err) = s.post(&path, &bob, json!({"by": "30m"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::FORBIDDEN, "not_a_responder")
    );
    let (status, _) = s.post(&path, &agent, json!({"by": "30m"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // Bad bodies name the problem.
    for (body, problem) in [
        (json!({"by": "soon"}), "not a duration"),
        (json!({"by": 0}), "at least one second"),
        (json!({}), "by is required"),
        (json!({"by": "1h", "reason": "x"}), "unknown field"),
        (json!({"by": -5}), "whole number"),
    ] {
        let (status, err) = s.post(&path, &alice, body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {err}");
        assert_eq!(code(&err), "invalid_extension", "{body}");
        let message = err["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(problem), "{body}: {message}");
    }
    // The default bound: a day past the first deadline, in all.
    let (status, err) = s.post(&path, &alice, json!({"by": "1d"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::BAD_REQUEST, "extension_too_long")
    );
    let message = err["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("at most 23 hours 30 minutes"), "{message}");
    let (_, now) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(time(&now, "expires_at"), first + TimeDelta::minutes(30));

    // The extension is in the audit chain, by alice.
    let (status, audit) = s.get("/v1/audit?limit=1000", &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let extended: Vec<&Value> = audit["events"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["request_id"] == id.as_str() && e["kind"] == "extended")
        .collect();
    assert_eq!(extended.len(), 1, "{audit}");
    assert_eq!(extended[0]["actor"], "alice");

    // Resolved: nothing to extend.
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (status, err) = s.post(&path, &alice, json!({"by": "30m"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::CONFLICT, "already_resolved")
    );
    let forever = s
        .ask(
            &agent,
            json!({"question": "Whenever?", "timeout_seconds": 0}),
        )
        .await;
    let forever = forever["id"].as_str().expect("id");
    let (status, err) = s
        .post(
            &format!("/v1/requests/{forever}/extend"),
            &alice,
            json!({"by": 60}),
        )
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::CONFLICT, "never_expires")
    );
}

#[tokio::test]
async fn a_telegram_warning_says_how_long_is_left_and_its_button_extends() {
    let fake = FakeTelegram::start().await;
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        ..crate::support::announcing(&["phone"])
    };
    let channel = Channel {
        name: "phone".to_owned(),
        platform: AnyPlatform::Telegram(Telegram {
            bot_token: BOT_TOKEN.to_owned(),
            chat_id: CHAT.to_string(),
            api_url: fake.api_url.parse().expect("url"),
            webhook_secret: None,
        }),
        allow_unmapped: false,
    };
    let s = TestServer::build("memory:", options, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([(format!("telegram:{ALICE}"), "alice".to_owned())]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Deploy?", "choices": ["yes", "no"], "timeout_seconds": 3600}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let first = time(&record, "expires_at");
    sent(&fake, 1).await;

    clock.advance(TimeDelta::minutes(50));
    assert_eq!(s.store.warn_due().await.expect("warn"), 1);
    assert_eq!(s.store.warn_due().await.expect("warn"), 0, "warned once");
    s.state.channels_due.notify_one();
    sent(&fake, 2).await;
    let warning = fake.calls_to("sendMessage").pop().expect("the warning");
    let text = warning["text"].as_str().expect("text");
    assert!(text.contains("Expires in 10 minutes"), "{text}");
    let data = warning["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .expect("an extend button")
        .to_owned();
    assert_eq!(
        warning["reply_markup"]["inline_keyboard"][0][0]["text"],
        "Extend 30 min"
    );
    assert!(data.len() <= 64, "{data}");
    let warning_id = *fake.sent_ids().last().expect("its id");

    fake.press(ALICE, warning_id, &data);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (_, now) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        if time(&now, "expires_at") == first + TimeDelta::minutes(30) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never extended: {now}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answered = fake.calls_to("answerCallbackQuery");
    assert!(
        answered.iter().any(|a| a["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Extended"))),
        "{answered:?}"
    );
}

/// Waits until the fake has been sent `n` messages.
async fn sent(fake: &FakeTelegram, n: usize) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fake.sent_ids().len() < n {
        assert!(
            tokio::time::Instant::now() < deadline,
            "message {n} never sent"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
