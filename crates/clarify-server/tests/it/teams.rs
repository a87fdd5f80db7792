//! Microsoft Teams, against the fake identity platform and Bot Framework of `fake_teams`:
//! the conversation captured when the bot is added, Adaptive Cards announced with a
//! client-credentials token, `Action.Execute` invokes answered with the refreshed card, forms on
//! the card, private refusals, tokens that are forged, expired, for another app or another
//! service URL, or signed by a key that does not endorse Teams refused with nothing changed,
//! rate limits, restarts, reminders and escalations as replies, and the card refreshed for
//! everyone whichever way the request was resolved.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::teams::{Conversation, Teams};
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_teams::{
    APP_ID, APP_PASSWORD, CONVERSATION, FORGER_KEY, FakeTeams, KID, PLATFORM_KEY, TENANT, token,
};
use crate::support::TestServer;

const ALICE: &str = "8d2c6f1e-3b4a-4c5d-9e8f-7a6b5c4d3e2f";
const BOB: &str = "1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6";
const STRANGER: &str = "99999999-9999-4999-8999-999999999999";

fn channel(fake: &FakeTeams, configured: bool) -> Channel {
    Channel {
        name: "approvals".to_owned(),
        platform: AnyPlatform::Teams(Teams::new(
            APP_ID.to_owned(),
            APP_PASSWORD.to_owned(),
            TENANT.to_owned(),
            fake.login_url().parse().expect("url"),
            fake.openid_url().parse().expect("url"),
            configured.then(|| Conversation {
                service_url: fake.service_url(),
                conversation_id: CONVERSATION.to_owned(),
            }),
        )),
        allow_unmapped: false,
    }
}

async fn server_on(
    url: &str,
    options: StoreOptions,
    fake: &FakeTeams,
    configured: bool,
) -> TestServer {
    let channel = channel(fake, configured);
    TestServer::build(url, options, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            (format!("teams:{ALICE}"), "alice".to_owned()),
            (format!("teams:{BOB}"), "bob".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        c.limits = clarify_core::Limits::new(12, clarify_core::Limits::DEFAULT_TIMEOUT_SECONDS)
            .expect("limits");
    })
    .await
}

async fn server(fake: &FakeTeams) -> TestServer {
    server_on(
        "memory:",
        crate::support::announcing(&["approvals"]),
        fake,
        true,
    )
    .await
}

async fn record_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// Creates a request and waits for its card to be posted and recorded: its id, the card and
/// the activity id.
async fn announce(s: &TestServer, fake: &FakeTeams, body: Value) -> (String, Value, String) {
    let before = fake.posted().len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while fake.posted().len() <= before {
        assert!(tokio::time::Instant::now() < deadline, "not announced");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let activity = fake.posted()[before].clone();
    let (_, posted) = fake
        .calls("POST")
        .into_iter()
        .rfind(|(p, _)| p.ends_with("/activities"))
        .expect("posted");
    while s
        .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
        .await
        .1["notifications"][0]["message_ref"]
        .is_null()
    {
        assert!(tokio::time::Instant::now() < deadline, "no message_ref");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (id, posted["attachments"][0]["content"].clone(), activity)
}

/// An `adaptiveCard/action` invoke by `user` of `verb` with `data` on card `activity`.
fn invoke(fake: &FakeTeams, user: &str, activity: &str, verb: &str, data: Value) -> Value {
    json!({
        "type": "invoke", "name": "adaptiveCard/action", "id": "f:invoke-1",
        "channelId": "msteams", "serviceUrl": fake.service_url(),
        "timestamp": chrono::Utc::now().to_rfc3339(),
        "from": {"id": "29:1abc", "name": "Someone", "aadObjectId": user},
        "recipient": {"id": format!("28:{APP_ID}"), "name": "clarify"},
        "conversation": {"id": CONVERSATION, "conversationType": "channel", "tenantId": TENANT},
        "replyToId": activity,
        "value": {"action": {"type": "Action.Execute", "verb": verb, "data": data},
                  "trigger": "manual"},
    })
}

/// Posts `activity` to the messaging endpoint with `authorization`.
async fn deliver(
    s: &TestServer,
    activity: &Value,
    authorization: Option<String>,
) -> (StatusCode, Value) {
    let mut request = s
        .client
        .post(format!("{}/hooks/teams/approvals", s.url))
        .json(activity);
    if let Some(a) = authorization {
        request = request.header("authorization", a);
    }
    let response = request.send().await.expect("activity");
    let status = response.status();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// `activity`, signed as the Bot Framework signs it.
async fn signed(s: &TestServer, fake: &FakeTeams, activity: &Value) -> Value {
    let bearer = format!(
        "Bearer {}",
        token(PLATFORM_KEY, KID, &fake.service_url(), json!({}))
    );
    let (status, body) = deliver(s, activity, Some(bearer)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// The verbs of a card's actions (and of the forms its `Action.ShowCard`s hold).
fn verbs(card: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for a in card["actions"].as_array().into_iter().flatten() {
        match a["type"].as_str() {
            Some("Action.Execute") => out.push(a["verb"].as_str().unwrap_or_default().to_owned()),
            Some("Action.ShowCard") => {
                for inner in a["card"]["actions"].as_array().into_iter().flatten() {
                    out.push(inner["verb"].as_str().unwrap_or_default().to_owned());
                }
            }
            _ => {}
        }
    }
    out
}

fn is_note(body: &Value, containing: &str) -> bool {
    body["statusCode"] == 200
        && body["type"] == "application/vnd.microsoft.activity.message"
        && body["value"]
            .as_str()
            .is_some_and(|v| v.contains(containing))
}

#[tokio::test]
async fn an_approval_is_announced_and_answered_and_bad_tokens_change_nothing() {
    let fake = FakeTeams::start().await;
    let s = server(&fake).await;
    let (id, card, activity) = announce(
        &s,
        &fake,
        json!({"agent": "deployer",
               "questions": [{"text": "Deploy **now** @everyone?", "kind": "approval",
                              "action": {"name": "deploy", "arguments": {"env": "prod"}},
                              "scopes": ["once", "session"]}]}),
    )
    .await;
    assert_eq!(card["version"], "1.5");
    assert_eq!(
        verbs(&card),
        [
            "a:once",
            "a:session",
            "d",
            "form:revise:0",
            "form:deny:0",
            "s"
        ]
    );
    let text = card.to_string();
    assert!(
        !text.contains("\"TextBlock\""),
        "agent text only in TextRuns"
    );
    assert!(text.contains("Deploy **now** @everyone?"));
    assert!(
        text.contains("env: prod"),
        "the arguments, as derived fields: {text}"
    );
    assert_eq!(fake.tokens_issued(), 1);

    // Tokens that are not the Bot Framework's for this app and this activity.
    let click = invoke(&fake, ALICE, &activity, "a:once", json!({"request": id}));
    let service = fake.service_url();
    let now = chrono::Utc::now().timestamp();
    let bad = [
        None,
        Some("Basic YWxhZGRpbjpvcGVuc2VzYW1l".to_owned()),
        Some("Bearer not.a.token".to_owned()),
        Some(format!(
            "Bearer {}",
            token(FORGER_KEY, KID, &service, json!({}))
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, "unknown-kid", &service, json!({}))
        )),
        Some(format!(
            "Bearer {}",
            token(
                PLATFORM_KEY,
                KID,
                &service,
                json!({"exp": now - 400, "nbf": now - 4000})
            )
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, KID, &service, json!({"aud": "another-app"}))
        )),
        Some(format!(
            "Bearer {}",
            token(
                PLATFORM_KEY,
                KID,
                &service,
                json!({"iss": "https://sts.windows.net/x/"})
            )
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, KID, "https://elsewhere.example/", json!({}))
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, KID, &service, json!({"serviceurl": null}))
        )),
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, "bf-test-key-skype", &service, json!({}))
        )),
    ];
    for authorization in bad {
        let (status, body) = deliver(&s, &click, authorization.clone()).await;
        assert_eq!(
            status,
            StatusCode::UNAUTHORIZED,
            "{authorization:?}: {body}"
        );
    }
    // A genuine token for an activity that names another service URL.
    let mut moved = click.clone();
    moved["serviceUrl"] = json!("https://elsewhere.example/");
    let (status, _) = deliver(
        &s,
        &moved,
        Some(format!(
            "Bearer {}",
            token(PLATFORM_KEY, KID, &service, json!({}))
        )),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(record_of(&s, &id).await["status"], "pending");
    assert!(
        fake.key_fetches() <= 3,
        "unknown key ids do not hammer the key set"
    );

    // Someone [identities] does not name: a message only they see, nothing answered.
    let refused = signed(
        &s,
        &fake,
        &invoke(&fake, STRANGER, &activity, "a:once", json!({"request": id})),
    )
    .await;
    assert!(is_note(&refused, &format!("teams:{STRANGER}")), "{refused}");
    // ... with the one-time link that links their Teams account to their clarify sign-in.
    assert!(is_note(&refused, &format!("{}/link/", s.url)), "{refused}");
    let unknown = signed(
        &s,
        &fake,
        &invoke(&fake, ALICE, &activity, "zzz", json!({"request": id})),
    )
    .await;
    assert!(is_note(&unknown, "does not know this button"), "{unknown}");
    assert_eq!(record_of(&s, &id).await["status"], "pending");

    // A click answers; the response is the card as it now is, without actions to answer.
    let done = signed(
        &s,
        &fake,
        &invoke(&fake, ALICE, &activity, "a:session", json!({"request": id})),
    )
    .await;
    assert_eq!(
        done["type"], "application/vnd.microsoft.card.adaptive",
        "{done}"
    );
    assert_eq!(verbs(&done["value"]), Vec::<String>::new());
    assert!(
        done["value"]
            .to_string()
            .contains("Answered by alice: approved for this session")
    );
    let record = record_of(&s, &id).await;
    assert_eq!(record["outcome"]["answered_by"], "alice");
    // The outbox refreshes the card for everyone.
    let puts = fake.wait_for("PUT", 1).await;
    assert!(
        puts[0].0.ends_with(&format!("/activities/{activity}")),
        "{}",
        puts[0].0
    );
    assert!(
        puts[0].1["attachments"][0]["content"]
            .to_string()
            .contains("Answered by alice")
    );
    assert_eq!(fake.tokens_issued(), 1, "the token is reused");

    let late = signed(
        &s,
        &fake,
        &invoke(&fake, BOB, &activity, "d", json!({"request": id})),
    )
    .await;
    assert!(is_note(&late, "Too late"), "{late}");
    // A refresh shows the card as it is now.
    let refreshed = signed(
        &s,
        &fake,
        &invoke(&fake, BOB, &activity, "refresh", json!({"request": id})),
    )
    .await;
    assert!(refreshed["value"].to_string().contains("Answered by alice"));
}

#[tokio::test]
async fn forms_on_the_card_take_text_reasons_edits_choices_and_fields_after_a_rate_limit() {
    let fake = FakeTeams::start().await;
    fake.throttle(1);
    let s = server(&fake).await;

    let (open, card, activity) = announce(&s, &fake, json!({"question": "Name it?"})).await;
    // The first post was refused with 429 and Retry-After: 1; the second came after it.
    let id = &open;
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

    assert_eq!(verbs(&card), ["form:open:0", "s"]);
    signed(
        &s,
        &fake,
        &invoke(
            &fake,
            ALICE,
            &activity,
            "form:open:0",
            json!({"request": open, "q0": " Nova "}),
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &open).await["outcome"]["questions"][0]["answer"],
        "Nova"
    );

    let (edit, card, activity) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Scale?", "kind": "approval", "allow_edit": true,
                              "action": {"name": "scale", "arguments": {"replicas": 3}}}]}),
    )
    .await;
    assert!(verbs(&card).contains(&"form:edit:0".to_owned()));
    let bad = signed(
        &s,
        &fake,
        &invoke(
            &fake,
            BOB,
            &activity,
            "form:edit:0",
            json!({"request": edit, "q0.arguments": "[1]"}),
        ),
    )
    .await;
    assert!(is_note(&bad, "JSON object"), "{bad}");
    assert_eq!(record_of(&s, &edit).await["status"], "pending");
    signed(
        &s,
        &fake,
        &invoke(
            &fake,
            BOB,
            &activity,
            "form:edit:0",
            json!({"request": edit, "q0.arguments": "{\"replicas\": 5}"}),
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &edit).await["outcome"]["questions"][0]["edited_arguments"],
        json!({"replicas": 5})
    );

    for (verb, decision) in [("form:deny:0", "deny"), ("form:revise:0", "revise")] {
        let (id, _, activity) = announce(
            &s,
            &fake,
            json!({"questions": [{"text": "Drop?", "kind": "approval",
                                  "action": {"name": "drop", "arguments": {}}}]}),
        )
        .await;
        signed(
            &s,
            &fake,
            &invoke(
                &fake,
                ALICE,
                &activity,
                verb,
                json!({"request": id, "q0.reason": "not on Fridays"}),
            ),
        )
        .await;
        let q = &record_of(&s, &id).await["outcome"]["questions"][0];
        assert_eq!(
            (q["decision"].clone(), q["reason"].clone()),
            (json!(decision), json!("not on Fridays"))
        );
    }

    let (multi, card, activity) = announce(
        &s,
        &fake,
        json!({"question": "Checks?", "choices": ["lint", "unit", "e2e"], "multi_select": true}),
    )
    .await;
    assert_eq!(
        card["body"]
            .as_array()
            .and_then(|b| b.iter().find(|e| e["type"] == "Input.ChoiceSet"))
            .map(|c| c["isMultiSelect"].clone()),
        Some(json!(true))
    );
    signed(
        &s,
        &fake,
        &invoke(
            &fake,
            ALICE,
            &activity,
            "multi",
            json!({"request": multi, "q0": "0,2"}),
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &multi).await["outcome"]["questions"][0]["answer"],
        json!(["lint", "e2e"])
    );

    let (single, card, activity) = announce(
        &s,
        &fake,
        json!({"question": "Region?", "choices": ["eu", "us", "ap", "sa", "af", "me"]}),
    )
    .await;
    assert_eq!(verbs(&card), ["sel", "form:other:0", "s"]);
    signed(
        &s,
        &fake,
        &invoke(
            &fake,
            ALICE,
            &activity,
            "sel",
            json!({"request": single, "q0": "3"}),
        ),
    )
    .await;
    assert_eq!(
        record_of(&s, &single).await["outcome"]["questions"][0]["answer"],
        "sa"
    );

    let (form, _, activity) = announce(
        &s,
        &fake,
        json!({"questions": [{"text": "Plan the launch", "kind": "form", "fields": [
            {"id": "budget", "label": "Budget", "type": "integer", "maximum": 5000},
            {"id": "region", "label": "Region", "type": "choice", "options": ["eu", "us"]},
            {"id": "urgent", "label": "Urgent", "type": "boolean", "required": false}]}]}),
    )
    .await;
    let too_much = signed(&s, &fake, &invoke(&fake, ALICE, &activity, "form:form:0",
        json!({"request": form, "q0.f.budget": "9000", "q0.f.region": "us", "q0.f.urgent": "no"}))).await;
    assert!(is_note(&too_much, "5000"), "{too_much}");
    signed(&s, &fake, &invoke(&fake, ALICE, &activity, "form:form:0",
        json!({"request": form, "q0.f.budget": "4000", "q0.f.region": "us", "q0.f.urgent": "yes"}))).await;
    assert_eq!(
        record_of(&s, &form).await["outcome"]["questions"][0]["answer"],
        json!({"budget": 4000, "region": "us", "urgent": true})
    );
}

#[tokio::test]
async fn the_conversation_is_captured_when_the_bot_is_added_and_kept_across_restarts() {
    let fake = FakeTeams::start().await;
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let s = server_on(
        &url,
        crate::support::announcing(&["approvals"]),
        &fake,
        false,
    )
    .await;
    // Nowhere to post yet: the announcement waits, and is retried.
    let record = s.ask(&s.admin, json!({"question": "Still there?"})).await;
    let id = record["id"].as_str().expect("id").to_owned();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(fake.posted().is_empty());

    // Someone else joining is not the bot being added.
    let joined = json!({"type": "conversationUpdate", "channelId": "msteams",
        "serviceUrl": fake.service_url(), "recipient": {"id": format!("28:{APP_ID}")},
        "membersAdded": [{"id": "29:someone"}],
        "conversation": {"id": "19:elsewhere@thread.tacv2"}});
    signed(&s, &fake, &joined).await;
    let mut added = joined.clone();
    added["membersAdded"] = json!([{"id": format!("28:{APP_ID}")}]);
    added["conversation"]["id"] = json!(CONVERSATION);
    // Unsigned, it changes nothing.
    let (status, _) = deliver(&s, &added, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    signed(&s, &fake, &added).await;
    fake.wait_for("POST", 1).await;
    assert_eq!(fake.posted().len(), 1);

    // After a restart the captured conversation is still where requests go, and the first
    // request was announced once.
    let (store, _) = s.halt().await;
    drop(store);
    let s = server_on(
        &url,
        crate::support::announcing(&["approvals"]),
        &fake,
        false,
    )
    .await;
    let (status, _) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    fake.wait_for("PUT", 1).await;
    let (_, _, _) = announce(&s, &fake, json!({"question": "And now?"})).await;
    assert_eq!(fake.posted().len(), 2, "each request announced once");
}

#[tokio::test]
async fn reminders_and_escalations_reply_with_mentions() {
    use std::sync::Arc;
    let fake = FakeTeams::start().await;
    let clock = Arc::new(clarify_store::ManualClock::new(chrono::Utc::now()));
    let options = StoreOptions {
        clock: Arc::clone(&clock) as Arc<dyn clarify_store::Clock>,
        reaper_interval: None,
        ..crate::support::announcing(&["approvals"])
    };
    let s = server_on("memory:", options, &fake, true).await;
    let (id, _, activity) = announce(
        &s,
        &fake,
        json!({"question": "Still there?", "responders": ["alice"],
               "remind_every_seconds": 60, "escalate_after_seconds": 90,
               "escalate_to": ["bob"]}),
    )
    .await;
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.remind_due().await.expect("remind"), 1);
    let reply_path = format!("/activities/{activity}");
    let reminder = loop {
        if let Some(found) = fake
            .calls("POST")
            .into_iter()
            .find(|(p, _)| p.ends_with(&reply_path))
        {
            break found;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        reminder.1["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Reminder"))
    );
    clock.advance(TimeDelta::seconds(30));
    assert_eq!(s.store.escalate_due().await.expect("escalate"), 1);
    let escalation = loop {
        let replies: Vec<_> = fake
            .calls("POST")
            .into_iter()
            .filter(|(p, _)| p.ends_with(&reply_path))
            .collect();
        if replies.len() >= 2 {
            break replies[1].clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert!(
        escalation.1["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("<at>{BOB}</at>")) && t.contains("Escalated")),
        "{}",
        escalation.1
    );
    assert_eq!(escalation.1["entities"][0]["mentioned"]["id"], BOB);
    // Bob may answer now.
    signed(
        &s,
        &fake,
        &invoke(
            &fake,
            BOB,
            &activity,
            "form:open:0",
            json!({"request": id, "q0": "here"}),
        ),
    )
    .await;
    assert_eq!(record_of(&s, &id).await["outcome"]["answered_by"], "bob");
}

/// Creation to announcement, and click to agent wake-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; prints figures"]
async fn latency() {
    let fake = FakeTeams::start().await;
    let s = server(&fake).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, _, activity) = announce(
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
        let activity = invoke(&fake, ALICE, &activity, "o:0", json!({"request": id}));
        let clicked = std::time::Instant::now();
        signed(&s, &fake, &activity).await;
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
