//! WhatsApp through the Cloud API, against the fake Graph API of `fake_whatsapp_cloud`:
//! announcements with reply buttons or a list to a person inside the 24-hour window, the
//! template outside it (known from the person's last message, or learnt from error 131047),
//! answers by tap and by typed reply waking the waiting agent, the signature on every
//! notification, and Meta's webhook check.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::whatsapp_cloud::{Template, WhatsAppCloud};
use clarify_channels::{AnyPlatform, Channel};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_whatsapp_cloud::{
    ACCESS_TOKEN, APP_SECRET, FakeWhatsAppCloud, PHONE_NUMBER_ID, VERSION, notification, post,
};
use crate::support::{TestServer, status_of, timed_wait, waiting};

const ALICE: &str = "+4930111111";
const STRANGER: &str = "+4930999999";
const VERIFY: &str = "verify-token-42";

async fn server_on(fake: &FakeWhatsAppCloud) -> TestServer {
    let channel = Channel {
        name: "wa".to_owned(),
        platform: AnyPlatform::WhatsAppCloud(WhatsAppCloud {
            access_token: ACCESS_TOKEN.to_owned(),
            app_secret: APP_SECRET.to_owned(),
            verify_token: Some(VERIFY.to_owned()),
            phone_number_id: PHONE_NUMBER_ID.to_owned(),
            template: Some(Template {
                name: "clarify_request".to_owned(),
                language: "en_US".to_owned(),
            }),
            to: Vec::new(),
            api_version: VERSION.to_owned(),
            api_url: fake.api_url.parse().expect("url"),
        }),
        allow_unmapped: false,
    };
    TestServer::build("memory:", crate::support::announcing(&["wa"]), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([(format!("phone:{ALICE}"), "alice".to_owned())]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await
}

fn hook(s: &TestServer) -> String {
    format!("{}/hooks/whatsapp-cloud/wa", s.url)
}

/// `from` sends `message` (its type's fields), signed.
async fn send(s: &TestServer, from: &str, message: Value) {
    let status = post(&hook(s), &notification(from, message), Some(APP_SECRET)).await;
    assert_eq!(status, StatusCode::OK);
}

fn text(body: &str) -> Value {
    json!({"type": "text", "text": {"body": body}})
}

fn tap(id: &str) -> Value {
    json!({"type": "interactive",
           "interactive": {"type": "button_reply", "button_reply": {"id": id, "title": "x"}}})
}

/// Opens `from`'s window: they write first, and are told nothing waits for them.
async fn say_hello(s: &TestServer, fake: &FakeWhatsAppCloud, from: &str) {
    let before = fake.sent().len();
    send(s, from, text("hello")).await;
    let told = fake.wait_for(before + 1).await.pop().expect("told");
    assert_eq!(told["type"], "text");
}

/// Creates a request for alice and waits for its announcement: the record and the message.
async fn announce(s: &TestServer, fake: &FakeWhatsAppCloud, mut body: Value) -> (String, Value) {
    body["responders"] = json!(["alice"]);
    let before = fake.sent().len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let message = fake.wait_for(before + 1).await.pop().expect("announced");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (id, message)
}

fn short_code(id: &str) -> String {
    clarify_model::short_code(id)
}

#[tokio::test]
async fn an_approval_is_announced_with_buttons_and_a_tap_wakes_the_agent() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    let (id, message) = announce(
        &s,
        &fake,
        json!({"agent": "deployer", "questions": [{"text": "Deploy to prod?", "kind": "approval",
               "action": {"name": "deploy", "arguments": {"to": "prod"}}}]}),
    )
    .await;
    assert_eq!(message["to"], "4930111111");
    assert_eq!(message["interactive"]["type"], "button");
    let buttons = message["interactive"]["action"]["buttons"]
        .as_array()
        .expect("buttons")
        .clone();
    let titles: Vec<&str> = buttons
        .iter()
        .filter_map(|b| b["reply"]["title"].as_str())
        .collect();
    assert_eq!(titles, ["Approve", "Deny"]);
    let body = message["interactive"]["body"]["text"]
        .as_str()
        .expect("body");
    assert!(body.contains(&short_code(&id)), "{body}");

    let agent = waiting(&s, &id);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let approve = buttons[0]["reply"]["id"].as_str().expect("id");
    // A stranger's tap changes nothing, and they are told why.
    let before = fake.sent().len();
    send(&s, STRANGER, tap(approve)).await;
    let told = fake.wait_for(before + 1).await.pop().expect("told");
    assert_eq!(told["to"], "4930999999");
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    send(&s, ALICE, tap(approve)).await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent wakes")
        .expect("waiter");
    assert_eq!(outcome["status"], "answered", "{outcome}");
    assert_eq!(
        outcome["outcome"]["questions"][0]["decision"], "approve",
        "{outcome}"
    );
    assert_eq!(outcome["outcome"]["answered_by"], "alice");
    let sent = fake.wait_for(before + 2).await;
    let to_alice: Vec<&Value> = sent[before + 1..]
        .iter()
        .filter(|m| m["to"] == "4930111111" && m["type"] == "text")
        .collect();
    assert!(
        to_alice.iter().any(|m| m["text"]["body"]
            .as_str()
            .unwrap_or_default()
            .contains("Answered by alice")),
        "alice is told: {sent:?}"
    );
}

#[tokio::test]
async fn four_options_are_a_list_and_a_row_answers() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    let (id, message) = announce(
        &s,
        &fake,
        json!({"question": "Which region?", "choices": ["eu-west", "eu-central", "us-east", "us-west"]}),
    )
    .await;
    assert_eq!(message["interactive"]["type"], "list");
    let rows = message["interactive"]["action"]["sections"][0]["rows"]
        .as_array()
        .expect("rows")
        .clone();
    assert_eq!(rows.len(), 4);
    let agent = waiting(&s, &id);
    send(
        &s,
        ALICE,
        json!({"type": "interactive", "interactive": {"type": "list_reply",
               "list_reply": {"id": rows[3]["id"], "title": rows[3]["title"]}}}),
    )
    .await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent wakes")
        .expect("waiter");
    assert_eq!(
        outcome["outcome"]["questions"][0]["answer"], "us-west",
        "{outcome}"
    );
}

#[tokio::test]
async fn outside_the_window_the_template_goes_out_and_a_typed_reply_with_the_code_answers() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    // Alice never wrote: only the template may reach her.
    let (id, message) = announce(
        &s,
        &fake,
        json!({"summary": "Ship the\nrelease?", "question": "Ship?", "choices": ["yes", "no"]}),
    )
    .await;
    assert_eq!(message["type"], "template", "{message}");
    assert_eq!(message["template"]["name"], "clarify_request");
    let params = &message["template"]["components"][0]["parameters"];
    assert_eq!(params[0]["text"], "Ship the release?");
    assert_eq!(params[1]["text"], short_code(&id));
    assert!(fake.refused().is_empty(), "no free-form message was tried");

    let agent = waiting(&s, &id);
    send(
        &s,
        ALICE,
        text(&format!("2 {}", short_code(&id).to_lowercase())),
    )
    .await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent wakes")
        .expect("waiter");
    assert_eq!(
        outcome["outcome"]["questions"][0]["answer"], "no",
        "{outcome}"
    );
}

#[tokio::test]
async fn a_reengagement_refusal_falls_back_to_the_template() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    // WhatsApp knows better: the window closed (the person's app was offline, say).
    fake.outside_window(ALICE);
    let (id, message) = announce(
        &s,
        &fake,
        json!({"question": "Ship?", "choices": ["yes", "no"]}),
    )
    .await;
    assert_eq!(
        fake.refused().len(),
        1,
        "the free-form message was tried first"
    );
    assert_eq!(message["type"], "template");
    assert_eq!(
        message["template"]["components"][0]["parameters"][1]["text"],
        short_code(&id)
    );
}

#[tokio::test]
async fn a_reply_to_the_announcement_answers_that_request() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    let approval = json!({"questions": [{"text": "Drop the table?", "kind": "approval",
                          "action": {"name": "drop", "arguments": {}}}]});
    let (first, announced) = announce(&s, &fake, approval.clone()).await;
    // A newer request waits too: a reply without context would mean that one.
    let (second, _) = announce(&s, &fake, approval).await;
    let agent = waiting(&s, &first);
    send(
        &s,
        ALICE,
        json!({"type": "text", "text": {"body": "deny too risky"},
               "context": {"from": "15550783881", "id": announced["id"]}}),
    )
    .await;
    let outcome = tokio::time::timeout(Duration::from_secs(10), agent)
        .await
        .expect("the agent wakes")
        .expect("waiter");
    assert_eq!(
        outcome["outcome"]["questions"][0]["decision"], "deny",
        "{outcome}"
    );
    assert_eq!(
        outcome["outcome"]["questions"][0]["reason"], "too risky",
        "{outcome}"
    );
    assert_eq!(status_of(&s, &second).await["status"], "pending");
}

#[tokio::test]
async fn a_forged_or_unsigned_notification_is_refused_and_changes_nothing() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    let (id, message) = announce(
        &s,
        &fake,
        json!({"question": "Ship?", "choices": ["yes", "no"]}),
    )
    .await;
    let yes = message["interactive"]["action"]["buttons"][0]["reply"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let sent = fake.sent().len();
    let body = notification(ALICE, tap(&yes));
    assert_eq!(post(&hook(&s), &body, None).await, StatusCode::UNAUTHORIZED);
    assert_eq!(
        post(&hook(&s), &body, Some("not-the-app-secret")).await,
        StatusCode::UNAUTHORIZED
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    assert_eq!(fake.sent().len(), sent, "nobody was written to");
}

#[tokio::test]
async fn metas_webhook_check_gets_the_challenge_with_the_verify_token_only() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    let check = |token: &str| {
        format!(
            "{}?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token={token}",
            hook(&s)
        )
    };
    let ok = s.client.get(check(VERIFY)).send().await.expect("check");
    assert_eq!(ok.status(), StatusCode::OK);
    assert_eq!(ok.text().await.expect("text"), "1158201444");
    let wrong = s.client.get(check("guess")).send().await.expect("check");
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
}

/// Creation to the message at the fake, and tap to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeWhatsAppCloud::start().await;
    let s = server_on(&fake).await;
    say_hello(&s, &fake, ALICE).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, message) = announce(
            &s,
            &fake,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
        announced.push(started.elapsed());
        let yes = message["interactive"]["action"]["buttons"][0]["reply"]["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let (agent, tapped) = timed_wait(&s, &id).await;
        send(&s, ALICE, tap(&yes)).await;
        let woke = agent.await.expect("waiter");
        wake.push(woke.duration_since(tapped));
    }
    for (name, v) in [
        ("whatsapp_cloud creation → message", announced),
        ("whatsapp_cloud tap → agent wakes", wake),
    ] {
        crate::support::print_percentiles(name, v);
    }
}
