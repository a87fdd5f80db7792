//! Discord, against the fake REST API of `fake_discord` and interactions signed with its test
//! key: announcements with buttons and selects, clicks answered with the updated message, modals
//! for text, reasons and edited arguments, refusals only the clicker sees, signatures, rate
//! limits, restarts, and messages edited whichever way the request was resolved.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::discord::Discord;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_discord::{BOT_TOKEN, CHANNEL, FakeDiscord, public_key, signature};
use crate::support::TestServer;

const ALICE: &str = "80351110224678912";
const BOB: &str = "80351110224678913";
const STRANGER: &str = "80351110224678999";

fn options() -> StoreOptions {
    crate::support::announcing(&["dev"])
}

async fn server_on(url: &str, fake: &FakeDiscord) -> TestServer {
    let channel = Channel {
        name: "dev".to_owned(),
        platform: AnyPlatform::Discord(Discord {
            bot_token: BOT_TOKEN.to_owned(),
            public_key: public_key(),
            channel_id: CHANNEL.to_owned(),
            api_url: fake.api_url.parse().expect("url"),
        }),
        allow_unmapped: false,
    };
    TestServer::build(url, options(), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            (format!("discord:{ALICE}"), "alice".to_owned()),
            (format!("discord:{BOB}"), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        c.limits = clarify_core::Limits::new(12, clarify_core::Limits::DEFAULT_TIMEOUT_SECONDS)
            .expect("limits");
    })
    .await
}

async fn status_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// Creates a request and waits for its announcement: its id, the posted body and message id.
async fn announce(s: &TestServer, fake: &FakeDiscord, body: Value) -> (String, Value, String) {
    let before = fake.posted().len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fake.posted().len() <= before {
        assert!(tokio::time::Instant::now() < deadline, "not announced");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let message_id = fake.posted()[before].clone();
    let (_, posted) = fake.calls("POST").pop().expect("posted");
    // A click needs the announcement's reference recorded.
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (id, posted, message_id)
}

/// Posts `body` to the interactions endpoint signed at `timestamp` with `sig`.
async fn call(
    s: &TestServer,
    body: &str,
    timestamp: i64,
    sig: Option<&str>,
) -> (StatusCode, Value) {
    let mut request = s
        .client
        .post(format!("{}/hooks/discord/dev", s.url))
        .header("content-type", "application/json")
        .header("x-signature-timestamp", timestamp.to_string())
        .body(body.to_owned());
    if let Some(sig) = sig {
        request = request.header("x-signature-ed25519", sig);
    }
    let response = request.send().await.expect("interaction");
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// A correctly signed interaction; Discord's answer.
async fn interact(s: &TestServer, interaction: Value) -> Value {
    let body = interaction.to_string();
    let now = chrono::Utc::now().timestamp();
    let (status, answer) = call(s, &body, now, Some(&signature(&now.to_string(), &body))).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    answer
}

/// A click by `user` on component `custom_id` (with select `values`) of message `message_id`.
fn click(user: &str, message_id: &str, custom_id: &str, values: &[&str]) -> Value {
    json!({
        "id": "1400000000000000001", "application_id": "1", "type": 3, "token": "t", "version": 1,
        "channel_id": CHANNEL, "guild_id": "1",
        "member": {"user": {"id": user, "username": "someone"}, "roles": []},
        "message": {"id": message_id, "channel_id": CHANNEL},
        "data": {"custom_id": custom_id, "component_type": if values.is_empty() { 2 } else { 3 },
                 "values": values},
    })
}

/// A submitted modal.
fn submit(user: &str, custom_id: &str, inputs: &[(&str, &str)]) -> Value {
    let rows: Vec<Value> = inputs
        .iter()
        .map(|(id, value)| {
            json!({"type": 1, "components": [{"type": 4, "custom_id": id, "value": value}]})
        })
        .collect();
    json!({
        "id": "1400000000000000002", "application_id": "1", "type": 5, "token": "t", "version": 1,
        "channel_id": CHANNEL, "member": {"user": {"id": user}},
        "data": {"custom_id": custom_id, "components": rows},
    })
}

fn custom_ids(components: &Value) -> Vec<String> {
    components
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
        .filter_map(|c| c["custom_id"].as_str().map(str::to_owned))
        .collect()
}

fn is_private_note(answer: &Value, containing: &str) -> bool {
    answer["type"] == 4
        && answer["data"]["flags"] == 64
        && answer["data"]["content"]
            .as_str()
            .is_some_and(|c| c.contains(containing))
}

#[tokio::test]
async fn an_approval_is_announced_answered_by_a_click_and_unverified_calls_change_nothing() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;
    let (id, posted, message_id) = announce(
        &s,
        &fake,
        json!({"agent": "deployer",
               "questions": [{"text": "Deploy **now** @everyone?", "kind": "approval",
                              "action": {"name": "deploy", "arguments": {"env": "prod"}},
                              "scopes": ["once", "session"]}]}),
    )
    .await;
    let content = posted["content"].as_str().expect("content");
    assert!(
        content.contains("Deploy \\*\\*now\\*\\* \\@everyone?"),
        "{content}"
    );
    // The arguments as the facts they are, not as JSON.
    assert!(content.contains("**env:** prod"), "{content}");
    assert!(!content.contains("\"env\""), "{content}");
    assert_eq!(posted["allowed_mentions"]["parse"], json!([]));
    assert_eq!(
        custom_ids(&posted["components"]),
        ["a:once", "a:session", "d", "c", "r", "s", "l"]
    );

    // Discord's endpoint check, and calls that are not Discord's.
    let ping = json!({"type": 1, "id": "1", "application_id": "1", "token": "t", "version": 1});
    assert_eq!(interact(&s, ping.clone()).await, json!({"type": 1}));
    let body = click(ALICE, &message_id, "a:once", &[]).to_string();
    let now = chrono::Utc::now().timestamp();
    let good = signature(&now.to_string(), &body);
    for (timestamp, sig) in [
        (now, None),
        (now, Some("00".repeat(64))),
        (now, Some(signature(&now.to_string(), &ping.to_string()))),
        (now - 400, Some(signature(&(now - 400).to_string(), &body))),
        (now + 1, Some(good.clone())),
    ] {
        let (status, _) = call(&s, &body, timestamp, sig.as_deref()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let garbage = "{not json";
    let (status, _) = call(
        &s,
        garbage,
        now,
        Some(&signature(&now.to_string(), garbage)),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    // Someone [identities] does not name, a control clarify did not make, a message clarify
    // did not post: notes only the clicker sees, nothing answered.
    let refused = interact(&s, click(STRANGER, &message_id, "a:once", &[])).await;
    assert!(
        is_private_note(&refused, &format!("discord:{STRANGER}")),
        "{refused}"
    );
    // Their "Link account" gets them, privately, the link that makes them known.
    let offered = interact(&s, click(STRANGER, &message_id, "l", &[])).await;
    assert!(is_private_note(&offered, "/link/"), "{offered}");
    let unknown = interact(&s, click(ALICE, &message_id, "o:DROP", &[])).await;
    assert!(
        is_private_note(&unknown, "does not know this control"),
        "{unknown}"
    );
    let elsewhere = interact(&s, click(ALICE, "1300000000000000999", "a:once", &[])).await;
    assert!(
        is_private_note(&elsewhere, "no such request"),
        "{elsewhere}"
    );
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    // A click answers and the response updates the message in place.
    let (status, answer) = call(&s, &body, now, Some(&good)).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(answer["type"], 7, "{answer}");
    assert_eq!(answer["data"]["components"], json!([]));
    assert!(
        answer["data"]["content"]
            .as_str()
            .is_some_and(|c| c.contains("Answered by alice: approved")),
        "{answer}"
    );
    let record = status_of(&s, &id).await;
    assert_eq!(record["status"], "answered");
    assert_eq!(record["outcome"]["answered_by"], "alice");
    // The outbox's follow-up edits it too (the same outcome, after a restart as well).
    let edits = fake.wait_for("PATCH", 1).await;
    assert_eq!(
        edits[0].0,
        format!("/channels/{CHANNEL}/messages/{message_id}")
    );
    assert_eq!(edits[0].1["components"], json!([]));

    let late = interact(&s, click(BOB, &message_id, "d", &[])).await;
    assert!(is_private_note(&late, "alice"), "{late}");
}

#[tokio::test]
async fn modals_take_text_reasons_and_edited_arguments() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;

    let (open, posted, message_id) = announce(&s, &fake, json!({"question": "Name it?"})).await;
    assert_eq!(custom_ids(&posted["components"]), ["w", "s", "l"]);
    let modal = interact(&s, click(ALICE, &message_id, "w", &[])).await;
    assert_eq!(modal["type"], 9, "{modal}");
    let custom_id = modal["data"]["custom_id"]
        .as_str()
        .expect("custom id")
        .to_owned();
    assert_eq!(custom_id, format!("open:0@{message_id}"));
    assert_eq!(custom_ids(&modal["data"]["components"]), ["q0"]);
    // A stranger does not even get the form.
    let refused = interact(&s, click(STRANGER, &message_id, "w", &[])).await;
    assert_eq!(refused["type"], 4);
    let done = interact(&s, submit(ALICE, &custom_id, &[("q0", "  Nova ")])).await;
    assert_eq!(done["type"], 7, "{done}");
    let record = status_of(&s, &open).await;
    assert_eq!(record["outcome"]["questions"][0]["answer"], "Nova");

    let (edit, _, message_id) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Scale?", "kind": "approval", "allow_edit": true,
                              "action": {"name": "scale", "arguments": {"replicas": 3}}}]}),
    )
    .await;
    let modal = interact(&s, click(BOB, &message_id, "e", &[])).await;
    assert_eq!(modal["type"], 9);
    let prefilled = modal["data"]["components"][0]["components"][0]["value"]
        .as_str()
        .expect("prefilled");
    assert!(prefilled.contains("\"replicas\": 3"), "{prefilled}");
    let custom_id = format!("edit:0@{message_id}");
    let bad = interact(&s, submit(BOB, &custom_id, &[("q0.arguments", "[1, 2]")])).await;
    assert!(is_private_note(&bad, "JSON object"), "{bad}");
    assert_eq!(status_of(&s, &edit).await["status"], "pending");
    interact(
        &s,
        submit(BOB, &custom_id, &[("q0.arguments", "{\"replicas\": 5}")]),
    )
    .await;
    let q = &status_of(&s, &edit).await["outcome"]["questions"][0];
    assert_eq!(q["decision"], "approve");
    assert_eq!(q["edited_arguments"], json!({"replicas": 5}));

    let (deny, _, message_id) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Drop?", "kind": "approval",
                              "action": {"name": "drop", "arguments": {}}}]}),
    )
    .await;
    let modal = interact(&s, click(ALICE, &message_id, "r", &[])).await;
    assert_eq!(modal["data"]["custom_id"], format!("deny:0@{message_id}"));
    interact(
        &s,
        submit(
            ALICE,
            &format!("deny:0@{message_id}"),
            &[("q0.reason", "not on Fridays")],
        ),
    )
    .await;
    let q = &status_of(&s, &deny).await["outcome"]["questions"][0];
    assert_eq!(q["decision"], "deny");
    assert_eq!(q["reason"], "not on Fridays");
}

#[tokio::test]
async fn a_form_is_filled_in_a_modal_and_a_value_that_does_not_fit_is_named() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;
    let (id, posted, message_id) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Plan the launch", "kind": "form", "fields": [
            {"id": "budget", "label": "Budget", "type": "integer", "maximum": 5000},
            {"id": "region", "label": "Region", "type": "choice", "options": ["eu", "us"]},
            {"id": "urgent", "label": "Urgent", "type": "boolean", "required": false}]}]}),
    )
    .await;
    assert_eq!(custom_ids(&posted["components"]), ["f", "s", "l"]);
    let modal = interact(&s, click(ALICE, &message_id, "f", &[])).await;
    assert_eq!(modal["type"], 9, "{modal}");
    let inputs: Vec<Value> = modal["data"]["components"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["components"][0].clone())
        .collect();
    let ids: Vec<&str> = inputs
        .iter()
        .filter_map(|i| i["custom_id"].as_str())
        .collect();
    assert_eq!(ids, ["q0.f.budget", "q0.f.region", "q0.f.urgent"]);
    assert!(
        inputs[0]["placeholder"]
            .as_str()
            .is_some_and(|p| p.contains("whole number") && p.contains("5000")),
        "{}",
        inputs[0]
    );
    assert!(
        inputs[1]["placeholder"]
            .as_str()
            .is_some_and(|p| p.contains("1. eu") && p.contains("2. us")),
        "{}",
        inputs[1]
    );
    assert_eq!(inputs[2]["required"], false);
    let custom_id = format!("form:0@{message_id}");
    let too_much = interact(
        &s,
        submit(
            ALICE,
            &custom_id,
            &[
                ("q0.f.budget", "9000"),
                ("q0.f.region", "2"),
                ("q0.f.urgent", ""),
            ],
        ),
    )
    .await;
    assert!(is_private_note(&too_much, "budget"), "{too_much}");
    assert!(is_private_note(&too_much, "5000"), "{too_much}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    let done = interact(
        &s,
        submit(
            ALICE,
            &custom_id,
            &[
                ("q0.f.budget", "4000"),
                ("q0.f.region", "2"),
                ("q0.f.urgent", "yes"),
            ],
        ),
    )
    .await;
    assert_eq!(done["type"], 7, "{done}");
    assert_eq!(
        status_of(&s, &id).await["outcome"]["questions"][0]["answer"],
        json!({"budget": 4000, "region": "us", "urgent": true})
    );
}

#[tokio::test]
async fn selects_answer_long_single_and_multi_questions() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;
    let (single, posted, message_id) = announce(
        &s,
        &fake,
        json!({"question": "Region?", "choices": ["eu", "us", "ap", "sa", "af", "me"]}),
    )
    .await;
    assert_eq!(custom_ids(&posted["components"]), ["sel", "x", "s", "l"]);
    let select = &posted["components"][0]["components"][0];
    assert_eq!(select["type"], 3);
    assert_eq!(select["options"].as_array().map(Vec::len), Some(6));
    interact(&s, click(ALICE, &message_id, "sel", &["3"])).await;
    assert_eq!(
        status_of(&s, &single).await["outcome"]["questions"][0]["answer"],
        "sa"
    );

    let (multi, posted, message_id) = announce(
        &s,
        &fake,
        json!({"question": "Checks?", "choices": ["lint", "unit", "e2e"], "multi_select": true}),
    )
    .await;
    assert_eq!(custom_ids(&posted["components"]), ["multi", "x", "s", "l"]);
    assert_eq!(posted["components"][0]["components"][0]["max_values"], 3);
    let bad = interact(&s, click(ALICE, &message_id, "multi", &["0", "9"])).await;
    assert!(is_private_note(&bad, "no longer exists"), "{bad}");
    interact(&s, click(ALICE, &message_id, "multi", &["0", "2"])).await;
    assert_eq!(
        status_of(&s, &multi).await["outcome"]["questions"][0]["answer"],
        json!(["lint", "e2e"])
    );
}

#[tokio::test]
async fn a_rate_limited_post_waits_and_an_answer_elsewhere_edits_the_message() {
    let fake = FakeDiscord::start().await;
    fake.throttle(1);
    let s = server_on("memory:", &fake).await;
    let (id, _, message_id) = announce(&s, &fake, json!({"question": "Go?"})).await;
    let (_, listed) = s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await;
    let attempts = listed["notifications"][0]["attempts"]
        .as_array()
        .expect("attempts")
        .clone();
    assert_eq!(attempts.len(), 2, "{listed}");
    assert_eq!(attempts[0]["status_code"], 429);
    let at = |a: &Value| {
        chrono::DateTime::parse_from_rfc3339(a["at"].as_str().expect("at")).expect("time")
    };
    assert!(at(&attempts[1]) - at(&attempts[0]) >= TimeDelta::milliseconds(900));

    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "yes, go"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let edits = fake.wait_for("PATCH", 1).await;
    assert!(edits[0].0.ends_with(&message_id));
    assert!(
        edits[0].1["content"]
            .as_str()
            .is_some_and(|c| c.contains("yes, go")),
        "{:?}",
        edits[0]
    );
}

#[tokio::test]
async fn a_restart_between_creation_and_announcement_announces_once() {
    let fake = FakeDiscord::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let store = clarify_store::Store::open(&url, options())
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

    let s = server_on(&url, &fake).await;
    fake.wait_for("POST", 1).await;
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(&url, &fake).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{}/cancel", created.record.id),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    fake.wait_for("PATCH", 1).await;
    assert_eq!(fake.posted().len(), 1, "announced exactly once");
}

/// Creation to announcement, and click to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, _, message_id) = announce(
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
        let clicked = std::time::Instant::now();
        interact(&s, click(ALICE, &message_id, "o:0", &[])).await;
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

#[tokio::test]
async fn a_long_diff_arrives_as_a_diff_block_within_the_content_limit_with_a_link_to_the_rest() {
    let fake = FakeDiscord::start().await;
    let s = server_on("memory:", &fake).await;
    let (id, posted, _) = announce(&s, &fake, crate::display::big_edit()).await;
    let link = status_of(&s, &id).await["answer_url"]
        .as_str()
        .map(str::to_owned);
    let content = posted["content"].as_str().expect("content");
    assert!(
        content.chars().count() <= clarify_channels::discord::MAX_CONTENT,
        "over Discord's limit: {} chars",
        content.chars().count()
    );
    assert!(
        content.contains("```diff\nbig.txt  +2000 \u{2212}2000\n@@ -1,2000 +1,2000 @@\n-old line 0\n+new line 0\n"),
        "{content}"
    );
    assert!(
        content.contains("\n```\n[The rest is on the answer page](<"),
        "the block is closed, then the link to the rest: {content}"
    );
    if let Some(link) = link {
        assert!(content.contains(&link), "{content}");
    }
    assert_eq!(posted["allowed_mentions"]["parse"], json!([]));
}
