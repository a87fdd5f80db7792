//! Slack, against the fake Slack of `fake_slack`: announcements as Block Kit messages, answers
//! by button, modal, thread reply and Socket Mode, refusals, signatures, rate limits, restarts,
//! and announcements edited whichever way the request was resolved.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::slack::Slack;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_slack::{
    APP_TOKEN, BOT_TOKEN, CHANNEL, FakeSlack, SIGNING_SECRET, block_actions, interaction_body,
    signature, thread_message, view_submission,
};
use crate::support::TestServer;

pub(crate) fn slack_channel(fake: &FakeSlack, socket_mode: bool) -> Channel {
    Channel {
        name: "ops".to_owned(),
        platform: AnyPlatform::Slack(Slack {
            bot_token: BOT_TOKEN.to_owned(),
            signing_secret: (!socket_mode).then(|| SIGNING_SECRET.to_owned()),
            channel: CHANNEL.to_owned(),
            api_url: fake.api_url.parse().expect("url"),
            socket_mode,
            app_token: socket_mode.then(|| APP_TOKEN.to_owned()),
            mention: vec!["S0ONCALL".to_owned()],
        }),
        allow_unmapped: false,
    }
}

fn options() -> StoreOptions {
    crate::support::announcing(&["ops"])
}

async fn server_on(url: &str, fake: &FakeSlack, socket_mode: bool) -> TestServer {
    let channel = slack_channel(fake, socket_mode);
    TestServer::build(url, options(), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            ("slack:U0ALICE".to_owned(), "alice".to_owned()),
            ("slack:U0BOB".to_owned(), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        // Room for more options than Slack shows as buttons.
        c.limits = clarify_core::Limits::new(12, clarify_core::Limits::DEFAULT_TIMEOUT_SECONDS)
            .expect("limits");
    })
    .await
}

pub(crate) async fn server(fake: &FakeSlack) -> TestServer {
    server_on("memory:", fake, false).await
}

/// Posts a signed body to the channel's hook, as Slack does.
async fn hook(s: &TestServer, body: &str, content_type: &str) -> (StatusCode, String) {
    let now = chrono::Utc::now().timestamp();
    hook_at(s, body, content_type, now, &signature(now, body)).await
}

async fn hook_at(
    s: &TestServer,
    body: &str,
    content_type: &str,
    timestamp: i64,
    signature: &str,
) -> (StatusCode, String) {
    let response = s
        .client
        .post(format!("{}/hooks/slack/ops", s.url))
        .header("content-type", content_type)
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body.to_owned())
        .send()
        .await
        .expect("hook");
    let status = response.status();
    (status, response.text().await.expect("body"))
}

const FORM: &str = "application/x-www-form-urlencoded";

/// A click by `user` on `action` of question 0 of request `id`, announced as `ts`.
async fn click(s: &TestServer, fake: &FakeSlack, user: &str, id: &str, ts: &str, action: Value) {
    let mut action = action;
    action["block_id"] = json!(format!("clarify:{id}:0"));
    let payload = block_actions(user, &fake.trigger_id(), ts, action, json!({}));
    let (status, body) = hook(s, &interaction_body(&payload), FORM).await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

/// The `ts` of the announcement of the request, once posted.
pub(crate) async fn announced(fake: &FakeSlack, n: usize) -> (Value, String) {
    let posts = fake.wait_for("chat.postMessage", n).await;
    let post = posts[n - 1].clone();
    let ts = wait_ts(fake, n).await;
    (post, ts)
}

async fn wait_ts(fake: &FakeSlack, n: usize) -> String {
    // The fake numbers the messages it accepts from 100, in order.
    let _ = fake.wait_for("chat.postMessage", n).await;
    format!("1764000000.{:06}", 99 + n)
}

async fn status_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// Every `action_id` in a message's blocks.
fn action_ids(blocks: &Value) -> Vec<String> {
    blocks
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "actions")
        .flat_map(|b| b["elements"].as_array().cloned().unwrap_or_default())
        .filter_map(|e| e["action_id"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn an_approval_is_announced_answered_by_a_click_and_the_message_edited() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Deploy <!channel> to *prod*?", "kind": "approval",
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}},
                                  "scopes": ["once", "session"]}],
                   "agent": "deployer", "session": "s1", "timeout_seconds": 600}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 1).await;
    assert_eq!(post["channel"], CHANNEL);
    let blocks = &post["blocks"];
    let all = blocks.to_string();
    assert!(
        all.contains("Deploy &lt;!channel&gt; to *prod*?"),
        "escaped: {all}"
    );
    assert!(
        !all.contains("<!channel>"),
        "the agent cannot mention the channel"
    );
    assert!(
        all.contains("<!subteam^S0ONCALL>"),
        "the configured mention: {all}"
    );
    assert!(all.contains("*env:* prod"), "the arguments as facts: {all}");
    assert!(all.contains("Asked by *deployer* in session `s1`"), "{all}");
    assert!(all.contains("<!date^"), "the time left: {all}");
    assert_eq!(
        action_ids(blocks),
        [
            "approve:once",
            "approve:session",
            "form_revise",
            "deny",
            "form_deny",
            "skip",
            "view",
            "link_account"
        ]
    );
    let (_, sent) = s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut sent = sent;
    while sent["notifications"][0]["status"] != "delivered" {
        assert!(tokio::time::Instant::now() < deadline, "{sent}");
        tokio::time::sleep(Duration::from_millis(10)).await;
        sent = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await
            .1;
    }
    assert_eq!(
        sent["notifications"][0]["message_ref"],
        format!("{CHANNEL}:{ts}")
    );

    click(
        &s,
        &fake,
        "U0ALICE",
        &id,
        &ts,
        json!({"action_id": "approve:session", "value": "session"}),
    )
    .await;
    let done = status_of(&s, &id).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answered_by"], "alice");
    assert_eq!(done["outcome"]["questions"][0]["scope"], "session");

    let update = fake.wait_for("chat.update", 1).await.remove(0);
    assert_eq!(update["channel"], CHANNEL);
    assert_eq!(update["ts"], ts.as_str());
    assert!(
        action_ids(&update["blocks"]).is_empty(),
        "the buttons are gone: {update}"
    );
    let text = update["blocks"].to_string();
    assert!(
        text.contains("Answered by alice: approved for this session"),
        "{text}"
    );
    // Bob clicks the stale button: told privately, nothing changes.
    click(
        &s,
        &fake,
        "U0BOB",
        &id,
        &ts,
        json!({"action_id": "deny", "value": "deny"}),
    )
    .await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert_eq!(told["user"], "U0BOB");
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("Too late: Answered by alice")),
        "{told}"
    );
    assert_eq!(status_of(&s, &id).await["answered_by"], "alice");
}

#[tokio::test]
async fn modals_answer_open_text_and_refuse_arguments_that_are_not_json() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let open = s
        .ask(
            &s.admin,
            json!({"question": "What should the release be called?"}),
        )
        .await;
    let open_id = open["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 1).await;
    assert_eq!(
        action_ids(&post["blocks"]),
        ["form_open", "skip", "view", "link_account"]
    );
    click(
        &s,
        &fake,
        "U0ALICE",
        &open_id,
        &ts,
        json!({"action_id": "form_open"}),
    )
    .await;
    let view = fake.wait_for("views.open", 1).await.remove(0)["view"].clone();
    assert_eq!(view["type"], "modal");
    let metadata = view["private_metadata"]
        .as_str()
        .expect("metadata")
        .to_owned();
    let submit = view_submission(
        "U0ALICE",
        &metadata,
        json!({"q0": {"v": {"type": "plain_text_input", "value": "Aurora"}}}),
    );
    let (status, body) = hook(&s, &interaction_body(&submit), FORM).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body, "", "an empty answer closes the modal");
    let done = status_of(&s, &open_id).await;
    assert_eq!(
        done["outcome"]["questions"][0]["answer"], "Aurora",
        "{done}"
    );
    assert_eq!(done["answered_by"], "alice");

    // Edit arguments: JSON checked in the modal, the error shown beside the input.
    let edit = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Run the migration?", "kind": "approval",
                                  "action": {"name": "migrate", "arguments": {"steps": 3}},
                                  "allow_edit": true}]}),
        )
        .await;
    let edit_id = edit["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 2).await;
    assert!(action_ids(&post["blocks"]).contains(&"form_edit".to_owned()));
    click(
        &s,
        &fake,
        "U0BOB",
        &edit_id,
        &ts,
        json!({"action_id": "form_edit"}),
    )
    .await;
    let view = fake.wait_for("views.open", 2).await.remove(1)["view"].clone();
    let modal = view.to_string();
    assert!(modal.contains("\\\"steps\\\": 3"), "prefilled: {modal}");
    let metadata = view["private_metadata"]
        .as_str()
        .expect("metadata")
        .to_owned();
    let bad = view_submission(
        "U0BOB",
        &metadata,
        json!({"q0.arguments": {"v": {"type": "plain_text_input", "value": "{steps: 4"}}}),
    );
    let (status, body) = hook(&s, &interaction_body(&bad), FORM).await;
    assert_eq!(status, StatusCode::OK);
    let errors: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(errors["response_action"], "errors");
    assert!(
        errors["errors"]["q0.arguments"]
            .as_str()
            .is_some_and(|e| e.contains("not valid JSON")),
        "{errors}"
    );
    assert_eq!(status_of(&s, &edit_id).await["status"], "pending");
    let good = view_submission(
        "U0BOB",
        &metadata,
        json!({"q0.arguments": {"v": {"type": "plain_text_input", "value": "{\"steps\": 4}"}}}),
    );
    let (_, body) = hook(&s, &interaction_body(&good), FORM).await;
    assert_eq!(body, "");
    let done = status_of(&s, &edit_id).await;
    assert_eq!(
        done["outcome"]["questions"][0]["edited_arguments"],
        json!({"steps": 4}),
        "{done}"
    );
}

#[tokio::test]
async fn a_reply_in_the_thread_answers_through_the_typed_parser() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Which region?", "choices": ["eu", "us", "ap"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 1).await;
    assert_eq!(
        action_ids(&post["blocks"]),
        [
            "option:0",
            "option:1",
            "option:2",
            "form_other",
            "skip",
            "view",
            "link_account"
        ]
    );
    // Wait for the reference to be stored, which the thread reply is matched by.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let mut bot = thread_message("U0BOT", "2", &ts);
    bot["event"]["bot_id"] = json!("B0CLARIFY");
    let (status, _) = hook(&s, &bot.to_string(), "application/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        status_of(&s, &id).await["status"],
        "pending",
        "the bot's own message"
    );

    let wrong = thread_message("U0BOB", "9", &ts);
    hook(&s, &wrong.to_string(), "application/json").await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert_eq!(told["thread_ts"], ts.as_str(), "told in the thread");
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("no option 9")),
        "{told}"
    );

    let reply = thread_message("U0BOB", "2", &ts);
    let (status, _) = hook(&s, &reply.to_string(), "application/json").await;
    assert_eq!(status, StatusCode::OK);
    let done = status_of(&s, &id).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(done["answered_by"], "bob");
    assert_eq!(done["outcome"]["questions"][0]["answer"], "us");

    let challenge = json!({"token": "x", "challenge": "c-123", "type": "url_verification"});
    let (status, body) = hook(&s, &challenge.to_string(), "application/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&body).expect("JSON")["challenge"],
        "c-123"
    );
}

#[tokio::test]
async fn unmapped_users_forged_calls_and_nonsense_change_nothing() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;

    click(
        &s,
        &fake,
        "U0STRANGER",
        &id,
        &ts,
        json!({"action_id": "option:0", "value": "0"}),
    )
    .await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert_eq!(told["user"], "U0STRANGER");
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("(slack:U0STRANGER)") && t.contains("/link/")),
        "names the account and offers the link that links it: {told}"
    );

    let payload = block_actions(
        "U0ALICE",
        &fake.trigger_id(),
        &ts,
        json!({"action_id": "option:0", "value": "0", "block_id": format!("clarify:{id}:0")}),
        json!({}),
    );
    let body = interaction_body(&payload);
    let now = chrono::Utc::now().timestamp();
    // A wrong signature, a stale timestamp (replayed), no signature at all.
    let (status, _) = hook_at(&s, &body, FORM, now, &signature(now, "other body")).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let stale = now - 301;
    let (status, _) = hook_at(&s, &body, FORM, stale, &signature(stale, &body)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let response = s
        .client
        .post(format!("{}/hooks/slack/ops", s.url))
        .body(body.clone())
        .send()
        .await
        .expect("post");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // Signed, but not something clarify reads: refused, named.
    let (status, text) = hook(&s, "payload=%7Bnot%20json", FORM).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("not JSON"), "{text}");
    let unknown = block_actions(
        "U0ALICE",
        "t",
        &ts,
        json!({"action_id": "launch_missiles", "block_id": format!("clarify:{id}:0")}),
        json!({}),
    );
    let (status, text) = hook(&s, &interaction_body(&unknown), FORM).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("unknown action"), "{text}");
    // A request never announced here (another tenant's, or made up): unknown to this channel.
    click(
        &s,
        &fake,
        "U0ALICE",
        "req_made_up",
        &ts,
        json!({"action_id": "option:0", "value": "0"}),
    )
    .await;
    let told = fake.wait_for("chat.postEphemeral", 2).await.remove(1);
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("no such request")),
        "{told}"
    );
    // One route serves every platform: a channel is found by its name and its platform both.
    for (path, named) in [
        ("slack/nope", "no slack channel"),
        ("discord/ops", "no discord channel"),
        ("no-such-platform/ops", "no no-such-platform channel"),
    ] {
        let response = s
            .client
            .post(format!("{}/hooks/{path}", s.url))
            .body(body.clone())
            .send()
            .await
            .expect("post");
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{path}");
        let text = response.text().await.unwrap_or_default();
        assert!(text.contains(named), "{path}: {text}");
    }

    assert_eq!(
        status_of(&s, &id).await["status"],
        "pending",
        "nothing changed"
    );
}

#[tokio::test]
async fn a_rate_limited_announcement_waits_then_an_answer_elsewhere_edits_it() {
    let fake = FakeSlack::start().await;
    fake.throttle(1);
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let sent = loop {
        let (_, body) = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await;
        if body["notifications"][0]["status"] == "delivered" {
            break body["notifications"][0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let attempts = sent["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{sent}");
    assert_eq!(attempts[0]["status_code"], 429);

    // Answered over the API: the Slack message shows it.
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"option": "no"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let update = fake.wait_for("chat.update", 1).await.remove(0);
    assert_eq!(update["ts"], ts.as_str());
    let text = update["text"].as_str().expect("text");
    assert!(
        text.contains("Answered by admin-") && text.ends_with(": no"),
        "{text}"
    );
    assert!(action_ids(&update["blocks"]).is_empty());

    // Cancelled: edited too.
    let other = s.ask(&s.admin, json!({"question": "Lunch?"})).await;
    let other_id = other["id"].as_str().expect("id").to_owned();
    announced(&fake, 2).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{other_id}/cancel"),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let update = fake.wait_for("chat.update", 2).await.remove(1);
    assert!(
        update["text"]
            .as_str()
            .is_some_and(|t| t.contains("Cancelled")),
        "{update}"
    );
}

#[tokio::test]
async fn a_quorum_counts_votes_from_slack_and_shows_them() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Rotate the keys?", "kind": "approval",
                                  "action": {"name": "rotate", "arguments": {}}}],
                   "approvals_required": 2}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 1).await;
    assert!(post["blocks"].to_string().contains("0 of 2 approvals"));
    click(
        &s,
        &fake,
        "U0ALICE",
        &id,
        &ts,
        json!({"action_id": "approve:once", "value": "once"}),
    )
    .await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("1 of 2 approvals")),
        "{told}"
    );
    let update = fake.wait_for("chat.update", 1).await.remove(0);
    assert!(
        update["blocks"]
            .to_string()
            .contains("1 of 2 approvals (voted: alice)"),
        "{update}"
    );
    assert!(
        !action_ids(&update["blocks"]).is_empty(),
        "still open for votes"
    );
    click(
        &s,
        &fake,
        "U0ALICE",
        &id,
        &ts,
        json!({"action_id": "approve:once", "value": "once"}),
    )
    .await;
    let told = fake.wait_for("chat.postEphemeral", 2).await.remove(1);
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("already voted")),
        "{told}"
    );
    click(
        &s,
        &fake,
        "U0BOB",
        &id,
        &ts,
        json!({"action_id": "approve:once", "value": "once"}),
    )
    .await;
    assert_eq!(status_of(&s, &id).await["status"], "answered");
}

#[tokio::test]
async fn a_restart_between_creation_and_announcement_announces_once() {
    let fake = FakeSlack::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    // Created while no server runs: queued with the request, not sent.
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
    assert!(fake.calls_to("chat.postMessage").is_empty());

    let s = server_on(&url, &fake, false).await;
    fake.wait_for("chat.postMessage", 1).await;
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(&url, &fake, false).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{}/cancel", created.record.id),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    fake.wait_for("chat.update", 1).await;
    assert_eq!(
        fake.calls_to("chat.postMessage").len(),
        1,
        "announced exactly once"
    );
}

#[tokio::test]
async fn socket_mode_answers_acknowledges_and_drops_duplicate_envelopes() {
    let fake = FakeSlack::start().await;
    let s = server_on("memory:", &fake, true).await;
    fake.wait_connected().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Merge?", "kind": "approval",
                                  "action": {"name": "merge", "arguments": {"pr": 7}},
                                  "allow_edit": true}]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;

    // An edit refused in the modal comes back in the acknowledgement.
    let bad = view_submission(
        "U0ALICE",
        &format!("{id} edit:0"),
        json!({"q0.arguments": {"v": {"type": "plain_text_input", "value": "[1, 2]"}}}),
    );
    fake.send_envelope("env-1", "interactive", bad);
    let ack = fake.ack("env-1").await;
    assert_eq!(ack["response_action"], "errors", "{ack}");
    assert!(
        ack["errors"]["q0.arguments"]
            .as_str()
            .is_some_and(|e| e.contains("JSON object"))
    );

    let click = block_actions(
        "U0ALICE",
        &fake.trigger_id(),
        &ts,
        json!({"action_id": "approve:once", "value": "once", "block_id": format!("clarify:{id}:0")}),
        json!({}),
    );
    fake.send_envelope("env-2", "interactive", click.clone());
    assert_eq!(fake.ack("env-2").await, Value::Null);
    assert_eq!(status_of(&s, &id).await["answered_by"], "alice");
    // Slack sends it again: acknowledged again, not acted on again (no "too late" notice).
    fake.send_envelope("env-2", "interactive", click);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while fake.acks_of("env-2") < 2 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the duplicate is acknowledged"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fake.wait_for("chat.update", 1).await;
    assert!(fake.calls_to("chat.postEphemeral").is_empty());

    // Slack rotates the connection: clarify opens a new one at once.
    fake.disconnect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while fake.connections_opened() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "reconnected");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    fake.wait_connected().await;
    let reply_to = s.ask(&s.admin, json!({"question": "Name?"})).await;
    let reply_id = reply_to["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 2).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s
        .get(&format!("/v1/requests/{reply_id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    fake.send_envelope("env-3", "events_api", thread_message("U0BOB", "Nova", &ts));
    fake.ack("env-3").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while status_of(&s, &reply_id).await["status"] != "answered" {
        assert!(
            tokio::time::Instant::now() < deadline,
            "answered by the thread reply"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(status_of(&s, &reply_id).await["answered_by"], "bob");
}

#[tokio::test]
async fn checkboxes_submit_a_multi_and_a_form_modal_names_the_field_that_does_not_fit() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let options: Vec<String> = (1..=8).map(|i| format!("opt{i}")).collect();
    let single = s
        .ask(
            &s.admin,
            json!({"question": "Which one?", "choices": options}),
        )
        .await;
    let (post, _) = announced(&fake, 1).await;
    assert_eq!(
        action_ids(&post["blocks"]),
        ["select", "form_other", "skip", "view", "link_account"],
        "past five options, a select"
    );
    let multi = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Which checks?", "kind": "multi",
                                  "options": ["lint", "unit", "e2e"]}]}),
        )
        .await;
    let multi_id = multi["id"].as_str().expect("id").to_owned();
    let (post, ts) = announced(&fake, 2).await;
    assert_eq!(
        action_ids(&post["blocks"]),
        [
            "checks",
            "submit",
            "form_other",
            "skip",
            "view",
            "link_account"
        ]
    );
    let block = format!("clarify:{multi_id}:0");
    let submit = block_actions(
        "U0ALICE",
        &fake.trigger_id(),
        &ts,
        json!({"action_id": "submit", "block_id": block}),
        json!({block.clone(): {"checks": {"type": "checkboxes",
               "selected_options": [{"value": "0"}, {"value": "2"}]}}}),
    );
    let (status, _) = hook(&s, &interaction_body(&submit), FORM).await;
    assert_eq!(status, StatusCode::OK);
    let done = status_of(&s, &multi_id).await;
    assert_eq!(
        done["outcome"]["questions"][0]["answer"],
        json!(["lint", "e2e"]),
        "{done}"
    );

    let form = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Trip details", "kind": "form", "fields": [
                {"id": "budget", "label": "Budget", "type": "number", "maximum": 5000},
                {"id": "city", "label": "City", "type": "choice", "options": ["Paris", "Rome"]}]}]}),
        )
        .await;
    let form_id = form["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 3).await;
    click(
        &s,
        &fake,
        "U0BOB",
        &form_id,
        &ts,
        json!({"action_id": "form_form"}),
    )
    .await;
    let view = fake.wait_for("views.open", 1).await.remove(0)["view"].clone();
    let metadata = view["private_metadata"]
        .as_str()
        .expect("metadata")
        .to_owned();
    let inputs: Vec<&str> = view["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter_map(|b| b["block_id"].as_str())
        .collect();
    assert_eq!(inputs, ["q0.f.budget", "q0.f.city"]);
    let values = |budget: &str| {
        json!({"q0.f.budget": {"v": {"type": "plain_text_input", "value": budget}},
               "q0.f.city": {"v": {"type": "static_select", "selected_option": {"value": "rome"}}}})
    };
    let (_, body) = hook(
        &s,
        &interaction_body(&view_submission("U0BOB", &metadata, values("9000"))),
        FORM,
    )
    .await;
    let errors: Value = serde_json::from_str(&body).expect("JSON");
    assert!(
        errors["errors"]["q0.f.budget"]
            .as_str()
            .is_some_and(|e| e.contains("at most 5000")),
        "{errors}"
    );
    let (_, body) = hook(
        &s,
        &interaction_body(&view_submission("U0BOB", &metadata, values("1200"))),
        FORM,
    )
    .await;
    assert_eq!(body, "");
    let done = status_of(&s, &form_id).await;
    assert_eq!(
        done["outcome"]["questions"][0]["answer"],
        json!({"budget": 1200, "city": "rome"}),
        "{done}"
    );
    drop(single);
}

/// Creation to announcement, and click to the agent's wake-up, against the fake Slack:
/// `cargo test -p clarify-server --test it slack::latency -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let (mut announce, mut wake) = (Vec::new(), Vec::new());
    for i in 0..200 {
        let started = std::time::Instant::now();
        let record = s
            .ask(
                &s.admin,
                json!({"question": "Ship?", "choices": ["yes", "no"]}),
            )
            .await;
        let id = record["id"].as_str().expect("id").to_owned();
        fake.wait_for("chat.postMessage", i + 1).await;
        announce.push(started.elapsed());
        let ts = wait_ts(&fake, i + 1).await;
        let waiting = {
            let client = s.client.clone();
            let url = format!("{}/v1/requests/{id}/wait?timeout=30", s.url);
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
        click(
            &s,
            &fake,
            "U0ALICE",
            &id,
            &ts,
            json!({"action_id": "option:0", "value": "0"}),
        )
        .await;
        let woke = waiting.await.expect("waiter");
        wake.push(woke.duration_since(clicked));
    }
    for (name, v) in [
        ("creation → announcement", announce),
        ("click → agent wakes", wake),
    ] {
        crate::support::print_percentiles(name, v);
    }
}

#[tokio::test]
async fn a_long_diff_arrives_preformatted_within_the_section_limit_with_a_link_to_the_rest() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let record = s.ask(&s.admin, crate::display::big_edit()).await;
    let link = record["answer_url"].as_str().expect("link").to_owned();
    let (post, _) = announced(&fake, 1).await;
    let sections: Vec<&str> = post["blocks"]
        .as_array()
        .expect("blocks")
        .iter()
        .filter(|b| b["type"] == "section")
        .filter_map(|b| b["text"]["text"].as_str())
        .collect();
    for text in &sections {
        assert!(
            text.chars().count() <= clarify_channels::slack::render::MAX_SECTION,
            "a section over Slack's limit: {} chars",
            text.chars().count()
        );
    }
    let all = sections.join("\n");
    assert!(
        all.contains(
            "```\nbig.txt  +2000 \u{2212}2000\n@@ -1,2000 +1,2000 @@\n-old line 0\n+new line 0\n"
        ),
        "{all}"
    );
    assert!(
        all.contains(&format!("\n```\n<{link}|The rest is on the answer page>")),
        "the block is closed, then the link to the rest: {all}"
    );
    assert!(
        !all.contains("file_path"),
        "no raw JSON beside the diff: {all}"
    );
}

#[tokio::test]
async fn the_person_a_request_acts_for_cannot_approve_it_from_slack() {
    let fake = FakeSlack::start().await;
    let channel = slack_channel(&fake, false);
    let four_eyes = StoreOptions {
        forbid_self_approval: true,
        ..options()
    };
    let s = TestServer::build("memory:", four_eyes, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            ("slack:U0ALICE".to_owned(), "alice".to_owned()),
            ("slack:U0BOB".to_owned(), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
    })
    .await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Deploy?", "kind": "approval",
                                  "action": {"name": "deploy", "arguments": {}}}],
                   "on_behalf_of": "alice"}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;
    let approve = json!({"action_id": "approve:once", "value": "once"});
    click(&s, &fake, "U0ALICE", &id, &ts, approve.clone()).await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert!(
        told["text"]
            .as_str()
            .is_some_and(|t| t.contains("does not let anyone approve their own request")),
        "{told}"
    );
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    click(&s, &fake, "U0BOB", &id, &ts, approve).await;
    let answered = status_of(&s, &id).await;
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["outcome"]["answered_via"], "slack");
}

/// The one-time link in an ephemeral note, as Slack shows it.
fn link_in(note: &Value) -> String {
    let text = note["text"].as_str().expect("a note's text");
    let start = text.find("http://").expect("a link in the note");
    text[start..]
        .split_whitespace()
        .next()
        .expect("the link")
        .to_owned()
}

/// An inbox session for `key`: the `clarify_session=...` cookie.
async fn session_of(s: &TestServer, key: &str) -> String {
    let response = s
        .client
        .post(format!("{}/v1/login", s.url))
        .json(&json!({"key": key}))
        .send()
        .await
        .expect("login");
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("clarify_session="))
        .expect("a session cookie");
    cookie.split(';').next().expect("name=value").to_owned()
}

/// Presses the button of a link-account page, as the page's own form does.
async fn press_link(
    s: &TestServer,
    url: &str,
    cookie: Option<&str>,
    origin: &str,
) -> (StatusCode, String) {
    let mut request = s
        .client
        .post(url)
        .header(reqwest::header::ORIGIN, origin)
        .header(
            reqwest::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        );
    if let Some(cookie) = cookie {
        request = request.header(reqwest::header::COOKIE, cookie);
    }
    let response = request.send().await.expect("post");
    let status = response.status();
    (status, response.text().await.expect("page"))
}

#[tokio::test]
async fn a_person_links_their_slack_account_and_then_answers_from_slack_as_themselves() {
    let fake = FakeSlack::start().await;
    let s = server(&fake).await;
    let carol = s
        .key(clarify_store::Role::Responder, "carol", "default")
        .await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;
    let yes = json!({"action_id": "option:0", "value": "0"});

    // Carol is in no [identities] line: her click answers nothing and offers her the link.
    click(&s, &fake, "U0CAROL", &id, &ts, yes.clone()).await;
    let told = fake.wait_for("chat.postEphemeral", 1).await.remove(0);
    assert_eq!(told["user"], "U0CAROL");
    let link = link_in(&told);
    assert!(link.starts_with(&format!("{}/link/", s.url)), "{link}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    // Opening it shows which account the button links; opening links nothing.
    let page = s.client.get(&link).send().await.expect("get");
    assert_eq!(page.status(), StatusCode::OK);
    let page = page.text().await.expect("page");
    assert!(page.contains("slack:U0CAROL"), "{page}");
    let origin = s.url.clone();
    // Not signed in: told to sign in first, and the link still works afterwards.
    let (status, text) = press_link(&s, &link, None, &origin).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    let cookie = session_of(&s, &carol).await;
    // A post from another site is refused before anything is read.
    let (status, _) = press_link(&s, &link, Some(&cookie), "https://evil.example").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, text) = press_link(&s, &link, Some(&cookie), &origin).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        text.contains("slack:U0CAROL now answers as carol"),
        "{text}"
    );
    // Used once only.
    let (status, _) = press_link(&s, &link, Some(&cookie), &origin).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The same click now answers, as carol, through Slack.
    click(&s, &fake, "U0CAROL", &id, &ts, yes.clone()).await;
    let answered = status_of(&s, &id).await;
    assert_eq!(answered["status"], "answered", "{answered}");
    assert_eq!(answered["outcome"]["answered_by"], "carol");
    assert_eq!(answered["outcome"]["answered_via"], "slack");

    // "Link account" tells each person privately whom their account answers as, with a new
    // link; a configured account is only told it is configured.
    let link_button = json!({"action_id": "link_account", "value": ""});
    click(&s, &fake, "U0CAROL", &id, &ts, link_button.clone()).await;
    let told = fake.wait_for("chat.postEphemeral", 2).await.remove(1);
    let text = told["text"].as_str().expect("text");
    assert!(
        text.contains("answers as carol now") && text.contains("/link/"),
        "{told}"
    );
    click(&s, &fake, "U0ALICE", &id, &ts, link_button).await;
    let told = fake.wait_for("chat.postEphemeral", 3).await.remove(2);
    assert_eq!(told["user"], "U0ALICE");
    let text = told["text"].as_str().expect("text");
    assert!(
        text.contains("as clarify's configuration says") && !text.contains("/link/"),
        "{told}"
    );

    // Admins see the link, with who made it, and the audit chain has it.
    let (status, listed) = s.get("/v1/identities", &s.admin).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(listed["items"][0]["id"], "slack:U0CAROL");
    assert_eq!(listed["items"][0]["name"], "carol");
    assert_eq!(listed["items"][0]["linked_by"], "key:carol");
    let (status, _) = s.get("/v1/identities", &carol).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only admins list links");

    // A link whose query was changed to show another account is refused, and links nothing.
    let second = s
        .ask(
            &s.admin,
            json!({"question": "Again?", "choices": ["yes", "no"]}),
        )
        .await;
    let second = second["id"].as_str().expect("id").to_owned();
    let ts2 = wait_ts(&fake, 2).await;
    click(&s, &fake, "U0MALLORY", &second, &ts2, yes.clone()).await;
    let offered = fake.wait_for("chat.postEphemeral", 4).await.remove(3);
    let forged = link_in(&offered).replace("U0MALLORY", "U0CAROL");
    let (status, _) = press_link(&s, &forged, Some(&cookie), &origin).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, listed) = s.get("/v1/identities", &s.admin).await;
    assert_eq!(
        listed["items"].as_array().map(Vec::len),
        Some(1),
        "{listed}"
    );

    // Removed by an admin: the account answers as nobody again, and the chain records both.
    let response = s
        .client
        .delete(format!("{}/v1/identities/slack:U0CAROL", s.url))
        .bearer_auth(&s.admin)
        .send()
        .await
        .expect("delete");
    assert_eq!(response.status(), StatusCode::OK);
    let response = s
        .client
        .delete(format!("{}/v1/identities/slack:U0CAROL", s.url))
        .bearer_auth(&s.admin)
        .send()
        .await
        .expect("delete");
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    click(&s, &fake, "U0CAROL", &second, &ts2, yes).await;
    let again = fake.wait_for("chat.postEphemeral", 5).await.remove(4);
    assert!(link_in(&again).contains("/link/"), "{again}");
    assert_eq!(status_of(&s, &second).await["status"], "pending");
    let (_, audit) = s.get("/v1/audit", &s.admin).await;
    let kinds: Vec<&str> = audit["events"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|e| e["subject"] == "identity:slack:U0CAROL")
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert_eq!(kinds, ["identity.linked", "identity.unlinked"], "{audit}");
    // The log names who was authenticated: the admin's key for the removal, the Slack
    // account for the answer, and the key carol signed in with for the link.
    let principal_of = |kind: &str| {
        audit["events"]
            .as_array()
            .expect("events")
            .iter()
            .find(|e| e["kind"] == kind)
            .map(|e| e["principal"].clone())
    };
    assert_eq!(
        principal_of("answered"),
        Some(json!("slack:U0CAROL")),
        "{audit}"
    );
    assert_eq!(principal_of("identity.linked"), Some(json!("key:carol")));
    assert!(
        principal_of("identity.unlinked")
            .is_some_and(|p| p.as_str().is_some_and(|p| p.starts_with("key:admin"))),
        "{audit}"
    );
}

#[tokio::test]
async fn a_link_account_link_expires() {
    let fake = FakeSlack::start().await;
    let clock = std::sync::Arc::new(clarify_store::ManualClock::new(chrono::Utc::now()));
    let channel = slack_channel(&fake, false);
    let s = TestServer::build(
        "memory:",
        StoreOptions {
            clock: clock.clone(),
            ..options()
        },
        move |c| {
            c.channels = vec![channel];
            c.webhooks.poll = Duration::from_millis(50);
        },
    )
    .await;
    let carol = s
        .key(clarify_store::Role::Responder, "carol", "default")
        .await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (_, ts) = announced(&fake, 1).await;
    click(
        &s,
        &fake,
        "U0CAROL",
        &id,
        &ts,
        json!({"action_id": "option:0", "value": "0"}),
    )
    .await;
    let link = link_in(&fake.wait_for("chat.postEphemeral", 1).await.remove(0));
    clock.advance(TimeDelta::minutes(16));
    let cookie = session_of(&s, &carol).await;
    let (status, text) = press_link(&s, &link, Some(&cookie), &s.url.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{text}");
    let (_, listed) = s.get("/v1/identities", &s.admin).await;
    assert_eq!(listed["items"], json!([]));
}
