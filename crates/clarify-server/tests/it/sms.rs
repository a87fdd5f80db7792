//! SMS through Twilio, against the fake REST API of `fake_twilio`: announcements with the
//! request's short code and numbered options, answers by reply (a number, a label, `approve`
//! with a code, `deny` with a code and a reason) waking the agent that waits, the newest-pending
//! rule and a code that picks an older request, a number nobody mapped, forged or missing
//! signatures refused with nothing changed, and a request that needs a passkey sent as a link.

use std::collections::BTreeMap;
use std::time::Duration;

use clarify_channels::sms::{Sender, Sms};
use clarify_channels::twilio::Account;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_twilio::{self, ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, Signed};
use crate::support::{TestServer, status_of, timed_wait, waiting};

pub const ALICE: &str = "+4930123456";
pub const BOB: &str = "+4930654321";
const STRANGER: &str = "+4930999999";

pub fn account(fake: &FakeTwilio) -> Account {
    Account {
        account_sid: ACCOUNT_SID.to_owned(),
        auth_token: AUTH_TOKEN.to_owned(),
        api_url: fake.api_url.parse().expect("url"),
    }
}

/// A server with one SMS channel `oncall` (no fixed `to`: it texts the responders) and alice
/// and bob mapped by their numbers.
async fn server_on(fake: &FakeTwilio, options: StoreOptions) -> TestServer {
    let channel = Channel {
        name: "oncall".to_owned(),
        platform: AnyPlatform::Sms(Sms {
            account: account(fake),
            from: Sender::Number(FROM.to_owned()),
            to: Vec::new(),
        }),
        allow_unmapped: false,
    };
    TestServer::build("memory:", options, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            (format!("phone:{ALICE}"), "alice".to_owned()),
            (format!("phone:{BOB}"), "bob".to_owned()),
        ]);
    })
    .await
}

async fn server(fake: &FakeTwilio) -> TestServer {
    server_on(fake, crate::support::announcing(&["oncall"])).await
}

/// Creates a request and waits until the fake got its message: the id and the message's form.
async fn announce(s: &TestServer, fake: &FakeTwilio, body: Value) -> (String, Value) {
    let before = fake.created("Messages").len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let sent = fake.wait_for("Messages", before + 1).await;
    (id, sent[before].clone())
}

/// Texts `body` from `from` to the channel as Twilio does; the status and the reply's text.
pub async fn text(s: &TestServer, channel: &str, from: &str, body: &str) -> (StatusCode, String) {
    let url = format!("{}/hooks/sms/{channel}", s.url);
    let params = [
        ("AccountSid", ACCOUNT_SID),
        ("MessageSid", "SM11111111111111111111111111111111"),
        ("From", from),
        ("To", FROM),
        ("Body", body),
        ("NumMedia", "0"),
    ];
    let (status, twiml) = fake_twilio::call(&s.client, &url, &params, Signed::ByTwilio).await;
    (status, fake_twilio::message_text(&twiml))
}

fn approval(responders: &[&str]) -> Value {
    json!({"agent": "deployer", "responders": responders,
           "questions": [{"text": "Deploy build 481 to production?", "kind": "approval",
                          "action": {"name": "deploy", "arguments": {"env": "prod"}}}]})
}

#[tokio::test]
async fn an_approval_is_texted_with_its_code_and_a_reply_of_1_approves_it() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (id, sent) = announce(&s, &fake, approval(&["alice"])).await;
    let code = clarify_model::short_code(&id);
    assert_eq!(sent["To"], ALICE, "only the responder is texted: {sent}");
    assert_eq!(sent["From"], FROM);
    let body = sent["Body"].as_str().expect("body");
    assert!(
        body.starts_with(&format!("[{code}] deploy: env=prod\n")),
        "{body}"
    );
    assert!(body.contains("1. Approve\n2. Deny\n"), "{body}");
    assert!(
        body.contains(&format!("approve {code} / deny {code} <reason>")),
        "{body}"
    );
    assert!(body.contains("/a/"), "the answer link: {body}");

    let agent = waiting(&s, &id);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (status, reply) = text(&s, "oncall", ALICE, "1").await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        reply.starts_with(&format!("[{code}] Answered by alice")),
        "{reply}"
    );
    let outcome = agent.await.expect("agent");
    assert_eq!(outcome["status"], "answered", "{outcome}");
    assert_eq!(outcome["outcome"]["answered_by"], "alice");
    assert_eq!(outcome["outcome"]["questions"][0]["decision"], "approve");

    // The resolution is texted too, as one short line.
    let resolved = fake.wait_for("Messages", 2).await;
    let last = resolved[1]["Body"].as_str().expect("body");
    assert!(
        last.starts_with(&format!("[{code}] ")) && last.contains("Answered by alice"),
        "{last}"
    );

    // Too late for bob: told so, nothing changes.
    let (_, late) = text(&s, "oncall", BOB, &format!("deny {code}")).await;
    assert!(late.starts_with("Too late"), "{late}");
}

#[tokio::test]
async fn a_label_a_coded_deny_with_a_reason_and_the_newest_pending_rule() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (older, _) = announce(&s, &fake, approval(&["alice"])).await;
    let (choice, sent) = announce(
        &s,
        &fake,
        json!({"question": "Which region?", "choices": ["eu-west", "us-east"],
               "responders": ["alice"]}),
    )
    .await;
    assert!(
        sent["Body"]
            .as_str()
            .is_some_and(|b| b.contains("1. eu-west\n2. us-east\n")),
        "{sent}"
    );

    // A reply naming no code answers the newest pending request alice may answer: the choice.
    let (_, reply) = text(&s, "oncall", ALICE, "US-East").await;
    assert!(reply.contains("Answered by alice"), "{reply}");
    let record = status_of(&s, &choice).await;
    assert_eq!(
        record["outcome"]["questions"][0]["answer"], "us-east",
        "{record}"
    );
    assert_eq!(status_of(&s, &older).await["status"], "pending");

    // A newer request, then a deny naming the older one's code: the code wins.
    let (newer, _) = announce(&s, &fake, approval(&["alice"])).await;
    let code = clarify_model::short_code(&older);
    let agent = waiting(&s, &older);
    let (_, reply) = text(
        &s,
        "oncall",
        ALICE,
        &format!("deny {code} not during the freeze"),
    )
    .await;
    assert!(reply.starts_with(&format!("[{code}] ")), "{reply}");
    let outcome = agent.await.expect("agent");
    assert_eq!(
        outcome["outcome"]["questions"][0]["decision"], "deny",
        "{outcome}"
    );
    assert_eq!(
        outcome["outcome"]["questions"][0]["reason"],
        "not during the freeze"
    );
    assert_eq!(status_of(&s, &newer).await["status"], "pending");

    // `approve CODE` in the other order of words works too.
    let newer_code = clarify_model::short_code(&newer);
    let (_, reply) = text(&s, "oncall", ALICE, &format!("{newer_code} approve")).await;
    assert!(reply.contains("Answered by alice"), "{reply}");
    assert_eq!(status_of(&s, &newer).await["status"], "answered");

    // Nothing left: said so.
    let (_, reply) = text(&s, "oncall", ALICE, "1").await;
    assert_eq!(reply, "No request is waiting for your answer here.");
}

#[tokio::test]
async fn a_request_for_someone_else_is_not_answered_by_the_newest_pending_rule() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (for_bob, sent) = announce(&s, &fake, approval(&["bob"])).await;
    assert_eq!(sent["To"], BOB);
    let (_, reply) = text(&s, "oncall", ALICE, "approve").await;
    assert_eq!(reply, "No request is waiting for your answer here.");
    // Naming its code: refused as not hers.
    let code = clarify_model::short_code(&for_bob);
    let (_, reply) = text(&s, "oncall", ALICE, &format!("approve {code}")).await;
    assert!(
        reply.contains("alice is not among the responders"),
        "{reply}"
    );
    assert_eq!(status_of(&s, &for_bob).await["status"], "pending");
    // The coded attempt is in the request's history; the one that named nothing is not.
    let refused = crate::support::refusals(&s, &for_bob).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["actor"], "alice");
    assert_eq!(refused[0]["principal"], format!("phone:{ALICE}"));
    assert_eq!(refused[0]["channel"], "sms");
}

/// A text cannot carry several answers: the person is sent to the link, not to a button an SMS
/// does not have, and nothing is answered.
#[tokio::test]
async fn a_request_of_several_questions_is_not_answered_by_a_text() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let body = json!({"responders": ["alice"], "questions": [
        {"text": "Which region?", "kind": "single", "options": [{"label": "eu"}, {"label": "us"}]},
        {"text": "Why?", "kind": "open"}]});
    let (id, _) = announce(&s, &fake, body).await;
    let (_, reply) = text(&s, "oncall", ALICE, "1").await;
    assert!(reply.contains("through the message's link"), "{reply}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");
}

#[tokio::test]
async fn an_unmapped_number_and_forged_or_missing_signatures_change_nothing() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (id, _) = announce(&s, &fake, approval(&["alice"])).await;
    let code = clarify_model::short_code(&id);

    let (status, reply) = text(&s, "oncall", STRANGER, &format!("approve {code}")).await;
    assert_eq!(status, StatusCode::OK);
    assert!(reply.contains(&format!("\"phone:{STRANGER}\"")), "{reply}");
    assert!(reply.contains("Nothing was answered"), "{reply}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    // A stranger's text that names no code is refused the same way, but is not pinned on the
    // newest request: only the coded attempt is in its history.
    let (_, reply) = text(&s, "oncall", STRANGER, "approve").await;
    assert!(reply.contains("Nothing was answered"), "{reply}");
    let refused = crate::support::refusals(&s, &id).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["actor"], Value::Null);
    assert_eq!(refused[0]["principal"], format!("phone:{STRANGER}"));

    let url = format!("{}/hooks/sms/oncall", s.url);
    let params = [("From", ALICE), ("To", FROM), ("Body", "1")];
    let forged = fake_twilio::sign("not-the-auth-token", &url, &params);
    for signed in [Signed::Not, Signed::As(&forged), Signed::As("")] {
        let (status, body) = fake_twilio::call(&s.client, &url, &params, signed).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
        assert!(body.contains("X-Twilio-Signature"), "{body}");
    }
    // Signed for another URL (another channel's): refused too.
    let elsewhere = fake_twilio::sign(AUTH_TOKEN, &format!("{}/hooks/sms/other", s.url), &params);
    let (status, _) = fake_twilio::call(&s.client, &url, &params, Signed::As(&elsewhere)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(status_of(&s, &id).await["status"], "pending");
}

#[tokio::test]
async fn a_request_that_needs_a_passkey_is_texted_as_its_link_and_a_reply_does_not_answer() {
    let fake = FakeTwilio::start().await;
    let options = StoreOptions {
        step_up: Some(clarify_core::Risk::High),
        ..crate::support::announcing(&["oncall"])
    };
    let s = server_on(&fake, options).await;
    let mut body = approval(&["alice"]);
    body["risk"] = json!("high");
    let (id, sent) = announce(&s, &fake, body).await;
    let text_sent = sent["Body"].as_str().expect("body");
    assert!(
        text_sent.contains(clarify_channels::STEP_UP_LINE),
        "{text_sent}"
    );
    assert!(!text_sent.contains("Reply"), "{text_sent}");
    assert!(text_sent.contains("/a/"), "{text_sent}");
    let (_, reply) = text(&s, "oncall", ALICE, "1").await;
    assert!(reply.contains("nothing was answered"), "{reply}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");
}

#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn latency() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, _) = announce(
            &s,
            &fake,
            json!({"question": "Ship?", "choices": ["yes", "no"], "responders": ["alice"]}),
        )
        .await;
        announced.push(started.elapsed());
        let (agent, replied) = timed_wait(&s, &id).await;
        let code = clarify_model::short_code(&id);
        let (status, _) = text(&s, "oncall", ALICE, &format!("{code} 1")).await;
        assert_eq!(status, StatusCode::OK);
        wake.push(agent.await.expect("agent").duration_since(replied));
        // The resolution's text, so that the next announcement is the next message.
        fake.wait_for("Messages", announced.len() * 2).await;
    }
    crate::support::print_percentiles("sms: creation → message at Twilio", announced);
    crate::support::print_percentiles("sms: reply → agent wakes", wake);
}
