//! Google Chat, against the fake Google of `fake_google_chat`: cards announced with a
//! service-account token, clicks in both event formats answered with the updated message,
//! inputs on the card, private refusals, tokens that are forged, expired, for another project
//! or from another issuer refused with nothing changed, rate limits, restarts, reminders and
//! escalations in the thread, and the message updated whichever way the request was resolved.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::google_chat::{GoogleChat, ServiceAccount};
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_google_chat::{
    FORGER_KEY, FakeGoogle, KID, PLATFORM_KEY, PROJECT, SPACE, credentials, token,
};
use crate::support::TestServer;

const ALICE: &str = "users/112233445566778899001";
const BOB: &str = "users/112233445566778899002";
const STRANGER: &str = "users/999999999999999999999";

async fn server_on(url: &str, options: StoreOptions, fake: &FakeGoogle) -> TestServer {
    let channel = Channel {
        name: "chat".to_owned(),
        platform: AnyPlatform::GoogleChat(GoogleChat::new(
            ServiceAccount::from_json(&credentials()).expect("credentials"),
            SPACE.to_owned(),
            PROJECT.to_owned(),
            fake.api_url().parse().expect("url"),
            fake.token_url().parse().expect("url"),
            fake.certs_url().parse().expect("url"),
        )),
        allow_unmapped: false,
    };
    TestServer::build(url, options, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            (format!("google_chat:{ALICE}"), "alice".to_owned()),
            (format!("google_chat:{BOB}"), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await
}

async fn server(fake: &FakeGoogle) -> TestServer {
    server_on("memory:", crate::support::announcing(&["chat"]), fake).await
}

async fn record_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// Creates a request and waits for its card: its id, the message body and its name.
async fn announce(s: &TestServer, fake: &FakeGoogle, body: Value) -> (String, Value, String) {
    let before = fake.posted().len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fake.posted().len() <= before {
        assert!(tokio::time::Instant::now() < deadline, "not announced");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let name = fake.posted()[before].clone();
    let (_, posted) = fake.calls("POST").pop().expect("posted");
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (id, posted, name)
}

/// A classic `CARD_CLICKED` event by `user` on `action` of request `id`, with form inputs.
fn click(user: &str, message: &str, id: &str, action: &str, inputs: &[(&str, &[&str])]) -> Value {
    let form: serde_json::Map<String, Value> = inputs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), json!({"stringInputs": {"value": v}})))
        .collect();
    json!({
        "type": "CARD_CLICKED", "eventTime": chrono::Utc::now().to_rfc3339(),
        "user": {"name": user, "displayName": "Someone", "type": "HUMAN"},
        "space": {"name": SPACE, "type": "ROOM"},
        "message": {"name": message},
        "action": {"actionMethodName": "clarify",
                   "parameters": [{"key": "request", "value": id}, {"key": "action", "value": action}]},
        "common": {"invokedFunction": "clarify",
                   "parameters": {"request": id, "action": action}, "formInputs": form},
    })
}

async fn deliver(
    s: &TestServer,
    event: &Value,
    authorization: Option<String>,
) -> (StatusCode, Value) {
    let mut request = s
        .client
        .post(format!("{}/hooks/google-chat/chat", s.url))
        .json(event);
    if let Some(a) = authorization {
        request = request.header("authorization", a);
    }
    let response = request.send().await.expect("event");
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn signed(s: &TestServer, event: &Value) -> Value {
    let (status, body) = deliver(
        s,
        event,
        Some(format!("Bearer {}", token(PLATFORM_KEY, KID, json!({})))),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The `action` parameters of a message's buttons, in order.
fn actions(message: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let widgets = &message["cardsV2"][0]["card"]["sections"][0]["widgets"];
    for w in widgets.as_array().into_iter().flatten() {
        for b in w["buttonList"]["buttons"].as_array().into_iter().flatten() {
            for p in b["onClick"]["action"]["parameters"]
                .as_array()
                .into_iter()
                .flatten()
            {
                if p["key"] == "action" {
                    out.push(p["value"].as_str().unwrap_or_default().to_owned());
                }
            }
        }
    }
    out
}

fn is_private(body: &Value, user: &str, containing: &str) -> bool {
    body["privateMessageViewer"]["name"] == user
        && body["text"]
            .as_str()
            .is_some_and(|t| t.contains(containing))
}

#[tokio::test]
async fn an_approval_is_announced_and_answered_and_bad_tokens_change_nothing() {
    let fake = FakeGoogle::start().await;
    let s = server(&fake).await;
    let (id, posted, message) = announce(
        &s,
        &fake,
        json!({"agent": "deployer",
               "questions": [{"text": "Deploy <b>now</b> & <a href=\"x\">go</a>?", "kind": "approval",
                              "action": {"name": "deploy", "arguments": {"env": "prod"}},
                              "scopes": ["once", "session"]}]}),
    )
    .await;
    assert_eq!(
        actions(&posted),
        [
            "a:once",
            "a:session",
            "d",
            "form:revise:0",
            "form:deny:0",
            "s"
        ]
    );
    let text = posted.to_string();
    assert!(
        text.contains("Deploy &lt;b&gt;now&lt;/b&gt; &amp; &lt;a href=\\\"x\\\"&gt;go&lt;/a&gt;?"),
        "{text}"
    );
    assert!(
        text.contains("env: prod"),
        "the arguments, as derived fields: {text}"
    );
    assert_eq!(fake.tokens_issued(), 1);

    let event = click(ALICE, &message, &id, "a:once", &[]);
    let now = chrono::Utc::now().timestamp();
    let bad = [
        None,
        Some("Bearer".to_owned()),
        Some("Bearer x.y.z".to_owned()),
        Some(format!("Bearer {}", token(FORGER_KEY, KID, json!({})))),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, "no-such-key", json!({}))
        )),
        Some(format!(
            "Bearer {}",
            token(
                PLATFORM_KEY,
                KID,
                json!({"exp": now - 400, "iat": now - 4000})
            )
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, KID, json!({"aud": "111111111111"}))
        )),
        Some(format!(
            "Bearer {}",
            token(
                PLATFORM_KEY,
                KID,
                json!({"iss": "https://accounts.google.com"})
            )
        )),
    ];
    for authorization in bad {
        let (status, body) = deliver(&s, &event, authorization.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{authorization:?}: {body}"
        );
    }
    assert_eq!(record_of(&s, &id).await["status"], "pending");

    let refused = signed(&s, &click(STRANGER, &message, &id, "a:once", &[])).await;
    assert!(
        is_private(&refused, STRANGER, &format!("google_chat:{STRANGER}")),
        "{refused}"
    );
    // ... with the one-time link that links their Google account to their clarify sign-in.
    assert!(
        is_private(&refused, STRANGER, &format!("{}/link/", s.url)),
        "{refused}"
    );
    let unknown = signed(&s, &click(ALICE, &message, &id, "zzz", &[])).await;
    assert!(
        is_private(&unknown, ALICE, "does not know this button"),
        "{unknown}"
    );
    assert_eq!(record_of(&s, &id).await["status"], "pending");

    let done = signed(&s, &click(ALICE, &message, &id, "a:session", &[])).await;
    assert_eq!(done["actionResponse"]["type"], "UPDATE_MESSAGE", "{done}");
    assert!(actions(&done).is_empty());
    assert!(
        done.to_string()
            .contains("Answered by alice: approved for this session")
    );
    assert_eq!(record_of(&s, &id).await["outcome"]["answered_by"], "alice");
    let patches = fake.wait_for("PATCH", 1).await;
    assert_eq!(patches[0].0, format!("/{message}"));
    assert!(actions(&patches[0].1).is_empty());

    let late = signed(&s, &click(BOB, &message, &id, "d", &[])).await;
    assert!(is_private(&late, BOB, "Too late"), "{late}");
}

#[tokio::test]
async fn inputs_on_the_card_answer_text_reasons_choices_and_fields_in_either_format() {
    let fake = FakeGoogle::start().await;
    let s = server(&fake).await;

    let (open, posted, message) = announce(&s, &fake, json!({"question": "Name it?"})).await;
    assert_eq!(actions(&posted), ["form:open:0", "s"]);
    signed(
        &s,
        &click(
            ALICE,
            &message,
            &open,
            "form:open:0",
            &[("q0", &[" Nova "])],
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &open).await["outcome"]["questions"][0]["answer"],
        "Nova"
    );

    // The Workspace add-on format, answered in its own shape.
    let (deny, _, message) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Drop?", "kind": "approval",
                              "action": {"name": "drop", "arguments": {}}}]}),
    )
    .await;
    let addon = json!({
        "commonEventObject": {"hostApp": "CHAT", "parameters": {"request": deny, "action": "form:deny:0"},
                              "formInputs": {"q0.reason": {"stringInputs": {"value": ["not on Fridays"]}}}},
        "chat": {"user": {"name": BOB}, "eventTime": chrono::Utc::now().to_rfc3339(),
                 "buttonClickedPayload": {"message": {"name": message}, "space": {"name": SPACE}}},
    });
    let done = signed(&s, &addon).await;
    assert!(
        done["hostAppDataAction"]["chatDataAction"]["updateMessageAction"]["message"]["cardsV2"]
            .is_array(),
        "{done}"
    );
    let q = &record_of(&s, &deny).await["outcome"]["questions"][0];
    assert_eq!(
        (q["decision"].clone(), q["reason"].clone()),
        (json!("deny"), json!("not on Fridays"))
    );

    let (multi, _, message) = announce(
        &s,
        &fake,
        json!({"question": "Checks?", "choices": ["lint", "unit", "e2e"], "multi_select": true}),
    )
    .await;
    signed(
        &s,
        &click(ALICE, &message, &multi, "multi", &[("q0", &["0", "2"])]),
    )
    .await;
    assert_eq!(
        record_of(&s, &multi).await["outcome"]["questions"][0]["answer"],
        json!(["lint", "e2e"])
    );

    let (form, _, message) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Plan the launch", "kind": "form", "fields": [
            {"id": "budget", "label": "Budget", "type": "integer", "maximum": 5000},
            {"id": "region", "label": "Region", "type": "choice", "options": ["eu", "us"]}]}]}),
    )
    .await;
    let too_much = signed(
        &s,
        &click(
            ALICE,
            &message,
            &form,
            "form:form:0",
            &[("q0.f.budget", &["9000"]), ("q0.f.region", &["us"])],
        ),
    )
    .await;
    assert!(is_private(&too_much, ALICE, "5000"), "{too_much}");
    assert_eq!(record_of(&s, &form).await["status"], "pending");
    signed(
        &s,
        &click(
            ALICE,
            &message,
            &form,
            "form:form:0",
            &[("q0.f.budget", &["4000"]), ("q0.f.region", &["us"])],
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &form).await["outcome"]["questions"][0]["answer"],
        json!({"budget": 4000, "region": "us"})
    );
}

#[tokio::test]
async fn a_restart_between_creation_and_announcement_posts_once_and_rate_limits_wait() {
    let fake = FakeGoogle::start().await;
    fake.throttle(1);
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let store = clarify_store::Store::open(&url, crate::support::announcing(&["chat"]))
        .await
        .expect("open");
    let created = store
        .create(
            "default",
            clarify_core::parse_request(
                &json!({"question": "Still there?"}),
                &clarify_core::Limits::default(),
            )
            .expect("valid"),
        )
        .await
        .expect("create");
    drop(store);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(fake.posted().is_empty());
    let s = server_on(&url, crate::support::announcing(&["chat"]), &fake).await;
    fake.wait_for("POST", 2).await;
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(&url, crate::support::announcing(&["chat"]), &fake).await;
    let id = &created.record.id;
    let (_, listed) = s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await;
    let attempts = listed["notifications"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .clone();
    assert_eq!(attempts[0]["status_code"], 429, "{listed}");
    let (status, _) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    fake.wait_for("PATCH", 1).await;
    assert_eq!(fake.posted().len(), 1, "announced exactly once");
}

#[tokio::test]
async fn reminders_and_escalations_reply_in_the_thread_mentioning_people() {
    use std::sync::Arc;
    let fake = FakeGoogle::start().await;
    let clock = Arc::new(clarify_store::ManualClock::new(chrono::Utc::now()));
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        ..crate::support::announcing(&["chat"])
    };
    let s = server_on("memory:", options, &fake).await;
    let (id, _, message) = announce(
        &s,
        &fake,
        json!({"question": "Still there?", "responders": ["alice"],
               "remind_every_seconds": 60, "escalate_after_seconds": 90, "escalate_to": ["bob"]}),
    )
    .await;
    let thread = message.replace("/messages/m", "/threads/t");
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    let posts = fake.wait_for("POST", 2).await;
    assert_eq!(posts[1].1["thread"]["name"], thread);
    assert!(
        posts[1].1["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Reminder"))
    );
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let posts = fake.wait_for("POST", 3).await;
    assert_eq!(posts[2].1["thread"]["name"], thread);
    assert!(
        posts[2].1["text"]
            .as_str()
            .is_some_and(|t| t.starts_with(&format!("<{BOB}> Escalated"))),
        "{}",
        posts[2].1
    );
    signed(
        &s,
        &click(BOB, &message, &id, "form:open:0", &[("q0", &["here"])]),
    )
    .await;
    assert_eq!(record_of(&s, &id).await["outcome"]["answered_by"], "bob");
}

/// Creation to announcement, and click to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeGoogle::start().await;
    let s = server(&fake).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, _, message) = announce(
            &s,
            &fake,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
        announced.push(started.elapsed());
        let waiting = {
            let client = s.client.clone();
            let url = format!("{}/v1/requests/{id}/wait?timeout_seconds=30", s.url);
            let key = s.admin.clone();
            tokio::spawn(async move {
                let r = client.get(url).bearer_auth(key).send().await.expect("wait");
                let woke = std::time::Instant::now();
                assert!(r.status().is_success());
                woke
            })
        };
        tokio::time::sleep(Duration::from_millis(5)).await;
        let event = click(ALICE, &message, &id, "o:0", &[]);
        let clicked = std::time::Instant::now();
        signed(&s, &event).await;
        let woke = waiting.await.expect("waiter");
        wake.push(woke.duration_since(clicked));
    }
    for (name, v) in [
        ("creation → announcement", announced),
        ("click → agent wakes", wake),
    ] {
        crate::support::print_percentiles(name, v);
    }
}
