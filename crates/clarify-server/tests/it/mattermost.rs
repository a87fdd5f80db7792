//! Mattermost, against the fake server of `fake_mattermost`, which calls clarify's integration
//! URL with each button's stored context as Mattermost does: announcements with buttons and
//! menus, clicks answered with the updated post, dialogs for text, reasons, changes, edited
//! arguments, forms and several options, private refusals, forged and altered tokens refused
//! with nothing changed, rate limits, restarts, reminders and escalations in the thread, and the
//! post edited whichever way the request was resolved.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::mattermost::Mattermost;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_mattermost::{BOT_TOKEN, CHANNEL, FakeMattermost};
use crate::support::TestServer;

const ALICE: &str = "alice0000000000000000000aa";
const BOB: &str = "bob000000000000000000000bb";
const STRANGER: &str = "stranger0000000000000000zz";

fn channel(fake: &FakeMattermost) -> Channel {
    Channel {
        name: "team".to_owned(),
        platform: AnyPlatform::Mattermost(Mattermost {
            url: fake.url.parse().expect("url"),
            bot_token: BOT_TOKEN.to_owned(),
            channel_id: CHANNEL.to_owned(),
        }),
        allow_unmapped: false,
    }
}

fn identities() -> BTreeMap<String, String> {
    BTreeMap::from([
        (format!("mattermost:{ALICE}"), "alice".to_owned()),
        (format!("mattermost:{BOB}"), "bob".to_owned()),
    ])
}

async fn server_on(url: &str, options: StoreOptions, fake: &FakeMattermost) -> TestServer {
    let channel = channel(fake);
    TestServer::build(url, options, move |c| {
        c.channels = vec![channel];
        c.identities = identities();
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        c.limits = clarify_core::Limits::new(12, clarify_core::Limits::DEFAULT_TIMEOUT_SECONDS)
            .expect("limits");
    })
    .await
}

async fn server(fake: &FakeMattermost) -> TestServer {
    server_on("memory:", crate::support::announcing(&["team"]), fake).await
}

async fn record_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// Creates a request and waits for its announcement to be recorded: its id and post id.
async fn announce(s: &TestServer, fake: &FakeMattermost, body: Value) -> (String, String) {
    let before = fake.posted().len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fake.posted().len() <= before {
        assert!(tokio::time::Instant::now() < deadline, "not announced");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let post = fake.posted()[before].clone();
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (id, post)
}

fn note(answer: &crate::fake_mattermost::Answer) -> String {
    answer.body["ephemeral_text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn an_approval_is_announced_answered_by_a_click_and_forged_calls_change_nothing() {
    let fake = FakeMattermost::start().await;
    let s = server(&fake).await;
    let (id, post) = announce(
        &s,
        &fake,
        json!({"agent": "deployer",
               "questions": [{"text": "Deploy **now** @channel?", "kind": "approval",
                              "action": {"name": "deploy", "arguments": {"env": "prod"}},
                              "scopes": ["once", "session"]}]}),
    )
    .await;
    let message = fake.post(&post)["message"]
        .as_str()
        .expect("message")
        .to_owned();
    assert!(!message.contains("@channel"), "{message}");
    assert!(message.contains("\\*\\*now\\*\\*"), "{message}");
    // The action's arguments, as display fields derived from the approval.
    assert!(message.contains("**env:** prod"), "{message}");
    assert_eq!(
        fake.actions(&post),
        ["aonce", "asession", "d", "c", "r", "s"]
    );

    // Calls that are not Mattermost's pressing clarify's buttons: a forged token, a token of
    // another button, another request's id, no context at all, garbage.
    let hook = format!("{}/hooks/mattermost/team", s.url);
    let stored =
        fake.post(&post)["props"]["attachments"][0]["actions"][0]["integration"]["context"].clone();
    let deny_token = fake.post(&post)["props"]["attachments"][0]["actions"][2]["integration"]
        ["context"]["token"]
        .clone();
    for context in [
        json!({"request": id, "action": "a:once", "token": "AAAA"}),
        json!({"request": id, "action": "a:once", "token": deny_token}),
        json!({"request": "r_other", "action": "a:once", "token": stored["token"]}),
        json!({"request": id, "action": "a:always", "token": stored["token"]}),
        json!({"action": "a:once"}),
    ] {
        let answer = fake
            .integration(
                &hook,
                &json!({"user_id": ALICE, "post_id": post, "trigger_id": "t", "context": context}),
            )
            .await;
        assert_eq!(answer.status, 401, "{context}: {:?}", answer.body);
    }
    let garbage = s
        .client
        .post(&hook)
        .body("{not json")
        .send()
        .await
        .expect("call");
    assert_eq!(garbage.status(), StatusCode::UNAUTHORIZED);
    let forged_dialog = fake
        .integration(
            &hook,
            &json!({"type": "dialog_submission", "user_id": ALICE, "callback_id": "deny:0",
                    "state": format!("{id} deny:0 AAAA"), "submission": {"q0.reason": "x"}}),
        )
        .await;
    assert_eq!(forged_dialog.status, 401);
    let unknown = s
        .client
        .post(format!("{}/hooks/mattermost/nope", s.url))
        .json(&json!({}))
        .send()
        .await
        .expect("call");
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    assert_eq!(record_of(&s, &id).await["status"], "pending");

    // Someone [identities] does not name: a note only they see, nothing answered.
    let refused = fake.press(&post, "aonce", STRANGER, None).await;
    assert_eq!(refused.status, 200);
    assert!(
        note(&refused).contains(&format!("mattermost:{STRANGER}")),
        "{:?}",
        refused.body
    );
    // ... with the one-time link that links their Mattermost account to their clarify sign-in.
    assert!(
        note(&refused).contains(&format!("{}/link/", s.url)),
        "{:?}",
        refused.body
    );
    assert!(refused.body.get("update").is_none());
    assert_eq!(record_of(&s, &id).await["status"], "pending");

    // A click answers, and the response updates the post in place, without buttons.
    let done = fake.press(&post, "asession", ALICE, None).await;
    assert_eq!(done.status, 200, "{:?}", done.body);
    let record = record_of(&s, &id).await;
    assert_eq!(record["status"], "answered");
    assert_eq!(record["outcome"]["answered_by"], "alice");
    assert_eq!(record["outcome"]["questions"][0]["scope"], "session");
    assert!(fake.actions(&post).is_empty());
    assert!(
        fake.post(&post)["message"]
            .as_str()
            .is_some_and(|m| m.contains("Answered by alice: approved for this session")),
        "{}",
        fake.post(&post)
    );
    // The outbox's follow-up edits it too.
    let edits = fake.wait_for("PUT", 1).await;
    assert_eq!(edits[0].0, format!("/posts/{post}/patch"));
    assert_eq!(edits[0].1["props"]["attachments"], json!([]));

    // The old button still reaches clarify (Mattermost keeps its context): too late.
    let late = fake
        .integration(
            &hook,
            &json!({"user_id": BOB, "post_id": post, "trigger_id": "t", "context": stored}),
        )
        .await;
    assert!(note(&late).contains("Too late"), "{:?}", late.body);
}

#[tokio::test]
async fn dialogs_take_text_reasons_changes_and_edited_arguments() {
    let fake = FakeMattermost::start().await;
    let s = server(&fake).await;

    let (open, post) = announce(&s, &fake, json!({"question": "Name it?"})).await;
    assert_eq!(fake.actions(&post), ["w", "s"]);
    // A stranger does not even get the form.
    let refused = fake.press(&post, "w", STRANGER, None).await;
    assert!(note(&refused).contains("does not know who you are"));
    assert!(fake.dialogs().is_empty());
    fake.press(&post, "w", ALICE, None).await;
    let dialog = fake.dialogs().pop().expect("dialog");
    assert_eq!(dialog["dialog"]["elements"][0]["name"], "q0");
    assert!(
        dialog["trigger_id"]
            .as_str()
            .is_some_and(|t| t.starts_with("trigger-"))
    );
    // The dialog is bound to the person it was opened for.
    let as_bob = fake.submit(BOB, json!({"q0": "Bob's name"})).await;
    assert_eq!(as_bob.status, 401);
    assert_eq!(record_of(&s, &open).await["status"], "pending");
    let done = fake.submit(ALICE, json!({"q0": "  Nova "})).await;
    assert_eq!((done.status, done.body.clone()), (200, json!({})));
    assert_eq!(
        record_of(&s, &open).await["outcome"]["questions"][0]["answer"],
        "Nova"
    );
    // The outbox edits the post to the outcome.
    let edits = fake.wait_for("PUT", 1).await;
    assert!(
        edits[0].1["message"]
            .as_str()
            .is_some_and(|m| m.contains("Nova"))
    );

    let (edit, post) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Scale?", "kind": "approval", "allow_edit": true,
                              "action": {"name": "scale", "arguments": {"replicas": 3}}}]}),
    )
    .await;
    assert_eq!(fake.actions(&post), ["aonce", "d", "c", "r", "e", "s"]);
    fake.press(&post, "e", BOB, None).await;
    let dialog = fake.dialogs().pop().expect("dialog");
    let element = &dialog["dialog"]["elements"][0];
    assert_eq!(element["name"], "q0.arguments");
    assert!(
        element["default"]
            .as_str()
            .is_some_and(|d| d.contains("\"replicas\": 3"))
    );
    let bad = fake.submit(BOB, json!({"q0.arguments": "[1, 2]"})).await;
    assert!(
        bad.body["errors"]["q0.arguments"]
            .as_str()
            .is_some_and(|e| e.contains("JSON object")),
        "{:?}",
        bad.body
    );
    assert_eq!(record_of(&s, &edit).await["status"], "pending");
    fake.submit(BOB, json!({"q0.arguments": "{\"replicas\": 5}"}))
        .await;
    let q = &record_of(&s, &edit).await["outcome"]["questions"][0];
    assert_eq!(q["decision"], "approve");
    assert_eq!(q["edited_arguments"], json!({"replicas": 5}));

    for (button, decision) in [("r", "deny"), ("c", "revise")] {
        let (id, post) = announce(
            &s,
            &fake,
            json!({"questions": [{"text": "Drop?", "kind": "approval",
                                  "action": {"name": "drop", "arguments": {}}}]}),
        )
        .await;
        fake.press(&post, button, ALICE, None).await;
        let empty = fake.submit(ALICE, json!({"q0.reason": ""})).await;
        assert!(
            empty.body["errors"]["q0.reason"].is_string(),
            "{:?}",
            empty.body
        );
        fake.submit(ALICE, json!({"q0.reason": "not on Fridays"}))
            .await;
        let q = &record_of(&s, &id).await["outcome"]["questions"][0];
        assert_eq!(q["decision"], decision);
        assert_eq!(q["reason"], "not on Fridays");
    }
}

#[tokio::test]
async fn menus_dialogs_and_forms_answer_choices_and_fields() {
    let fake = FakeMattermost::start().await;
    let s = server(&fake).await;

    // Past five options, a menu.
    let (single, post) = announce(
        &s,
        &fake,
        json!({"question": "Region?", "choices": ["eu", "us", "ap", "sa", "af", "me"]}),
    )
    .await;
    assert_eq!(fake.actions(&post), ["sel", "x", "s"]);
    let bad = fake.press(&post, "sel", ALICE, Some("9")).await;
    assert!(note(&bad).contains("no longer exists"), "{:?}", bad.body);
    fake.press(&post, "sel", ALICE, Some("3")).await;
    assert_eq!(
        record_of(&s, &single).await["outcome"]["questions"][0]["answer"],
        "sa"
    );

    // Other… on a single question.
    let (other, post) = announce(
        &s,
        &fake,
        json!({"question": "Colour?", "choices": ["red", "blue"]}),
    )
    .await;
    assert_eq!(fake.actions(&post), ["o0", "o1", "x", "s"]);
    fake.press(&post, "x", BOB, None).await;
    fake.submit(BOB, json!({"q0.other": "teal"})).await;
    let q = &record_of(&s, &other).await["outcome"]["questions"][0];
    assert_eq!(
        (q["answer"].clone(), q["mode"].clone()),
        (json!("teal"), json!("other"))
    );

    // Several options: a checkbox each in a dialog.
    let (multi, post) = announce(
        &s,
        &fake,
        json!({"question": "Checks?", "choices": ["lint", "unit", "e2e"], "multi_select": true}),
    )
    .await;
    assert_eq!(fake.actions(&post), ["m", "s"]);
    fake.press(&post, "m", ALICE, None).await;
    let dialog = fake.dialogs().pop().expect("dialog");
    let kinds: Vec<&str> = dialog["dialog"]["elements"]
        .as_array()
        .expect("elements")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(kinds, ["bool", "bool", "bool", "textarea"]);
    let none = fake
        .submit(
            ALICE,
            json!({"q0.o0": false, "q0.o1": false, "q0.o2": false, "q0.other": ""}),
        )
        .await;
    assert!(
        none.body.get("errors").is_some() || none.body.get("error").is_some(),
        "{:?}",
        none.body
    );
    fake.submit(
        ALICE,
        json!({"q0.o0": true, "q0.o1": false, "q0.o2": "true", "q0.other": ""}),
    )
    .await;
    assert_eq!(
        record_of(&s, &multi).await["outcome"]["questions"][0]["answer"],
        json!(["lint", "e2e"])
    );

    // A form: a text element per field (a checkbox for a boolean, a menu for one choice), and
    // a value that does not fit is named beside its element.
    let (form, post) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Plan the launch", "kind": "form", "fields": [
            {"id": "budget", "label": "Budget", "type": "integer", "maximum": 5000},
            {"id": "region", "label": "Region", "type": "choice", "options": ["eu", "us"]},
            {"id": "urgent", "label": "Urgent", "type": "boolean", "required": false}]}]}),
    )
    .await;
    assert_eq!(fake.actions(&post), ["f", "s"]);
    fake.press(&post, "f", ALICE, None).await;
    let dialog = fake.dialogs().pop().expect("dialog");
    let elements = dialog["dialog"]["elements"]
        .as_array()
        .expect("elements")
        .clone();
    let shape: Vec<(String, String)> = elements
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("q0.f.budget".to_owned(), "text".to_owned()),
            ("q0.f.region".to_owned(), "select".to_owned()),
            ("q0.f.urgent".to_owned(), "bool".to_owned())
        ]
    );
    assert!(
        elements[0]["help_text"]
            .as_str()
            .is_some_and(|h| h.contains("5000"))
    );
    let too_much = fake
        .submit(
            ALICE,
            json!({"q0.f.budget": "9000", "q0.f.region": "us", "q0.f.urgent": false}),
        )
        .await;
    assert!(
        too_much.body["errors"]["q0.f.budget"]
            .as_str()
            .is_some_and(|e| e.contains("5000")),
        "{:?}",
        too_much.body
    );
    assert_eq!(record_of(&s, &form).await["status"], "pending");
    fake.submit(
        ALICE,
        json!({"q0.f.budget": "4000", "q0.f.region": "us", "q0.f.urgent": true}),
    )
    .await;
    assert_eq!(
        record_of(&s, &form).await["outcome"]["questions"][0]["answer"],
        json!({"budget": 4000, "region": "us", "urgent": true})
    );
}

#[tokio::test]
async fn a_quorum_counts_votes_on_the_post() {
    let fake = FakeMattermost::start().await;
    let s = server(&fake).await;
    let (id, post) = announce(
        &s,
        &fake,
        json!({"approvals_required": 2, "questions": [{"text": "Ship?", "kind": "approval",
               "action": {"name": "ship", "arguments": {}}}]}),
    )
    .await;
    let first = fake.press(&post, "aonce", ALICE, None).await;
    assert!(
        note(&first).contains("1 of 2 approvals"),
        "{:?}",
        first.body
    );
    assert!(
        fake.post(&post)["message"]
            .as_str()
            .is_some_and(|m| m.contains("1 of 2 approvals")),
        "{}",
        fake.post(&post)
    );
    assert_eq!(
        fake.actions(&post).len(),
        5,
        "still open to the second vote"
    );
    let again = fake.press(&post, "aonce", ALICE, None).await;
    assert!(note(&again).contains("already voted"), "{:?}", again.body);
    fake.press(&post, "aonce", BOB, None).await;
    assert_eq!(record_of(&s, &id).await["status"], "answered");
    assert!(fake.actions(&post).is_empty());
}

#[tokio::test]
async fn a_rate_limited_post_waits_and_an_answer_elsewhere_edits_the_post() {
    let fake = FakeMattermost::start().await;
    fake.throttle(1);
    let s = server(&fake).await;
    let (id, post) = announce(&s, &fake, json!({"question": "Go?"})).await;
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
    let edits = fake.wait_for("PUT", 1).await;
    assert!(edits[0].0.contains(&post));
    assert!(fake.actions(&post).is_empty());
    assert!(
        fake.post(&post)["message"]
            .as_str()
            .is_some_and(|m| m.contains("yes, go")),
        "{}",
        fake.post(&post)
    );
}

#[tokio::test]
async fn a_restart_between_creation_and_announcement_posts_once() {
    let fake = FakeMattermost::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let store = clarify_store::Store::open(&url, crate::support::announcing(&["team"]))
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

    let s = server_on(&url, crate::support::announcing(&["team"]), &fake).await;
    fake.wait_for("POST", 1).await;
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(&url, crate::support::announcing(&["team"]), &fake).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{}/cancel", created.record.id),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    fake.wait_for("PUT", 1).await;
    assert_eq!(fake.posted().len(), 1, "announced exactly once");
}

#[tokio::test]
async fn reminders_and_escalations_reply_in_the_thread_mentioning_by_username() {
    use std::sync::Arc;
    let fake = FakeMattermost::start().await;
    fake.add_user(BOB, "bob.builder");
    let clock = Arc::new(clarify_store::ManualClock::new(chrono::Utc::now()));
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        ..crate::support::announcing(&["team"])
    };
    let s = server_on("memory:", options, &fake).await;
    let (id, post) = announce(
        &s,
        &fake,
        json!({"question": "Still there?", "responders": ["alice"],
               "remind_every_seconds": 60, "escalate_after_seconds": 90,
               "escalate_to": ["bob"]}),
    )
    .await;
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    let posts = fake.wait_for("POST", 2).await;
    assert_eq!(posts[1].1["root_id"], post);
    assert!(
        posts[1].1["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Reminder"))
    );
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let posts = fake.wait_for("POST", 3).await;
    assert_eq!(posts[2].1["root_id"], post);
    let text = posts[2].1["message"].as_str().expect("message");
    assert!(text.starts_with("@bob.builder Escalated"), "{text}");
    // Bob, escalated to, may now answer on the post.
    fake.press(&post, "w", BOB, None).await;
    fake.submit(BOB, json!({"q0": "here"})).await;
    assert_eq!(record_of(&s, &id).await["outcome"]["answered_by"], "bob");
}

/// Creation to announcement, and click to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeMattermost::start().await;
    let s = server(&fake).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, post) = announce(
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
        fake.press(&post, "o0", ALICE, None).await;
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
