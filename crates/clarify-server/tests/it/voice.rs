//! A phone call that asks, through Twilio, against the fake REST API of `fake_twilio`: the call
//! placed to the responder's number, the TwiML Twilio fetches when the person picks up (the
//! request read, a `<Gather>` for a key), a press repeated and confirmed, the answer waking the
//! agent; no answer, an answering machine or a forged callback changing nothing; a request that
//! needs a passkey read without keys.

use std::collections::BTreeMap;

use clarify_channels::voice::Voice;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_twilio::{self, FROM, FakeTwilio, Signed};
use crate::sms::{ALICE, account};
use crate::support::{TestServer, status_of, waiting};

async fn server_on(fake: &FakeTwilio, options: StoreOptions) -> TestServer {
    let channel = Channel {
        name: "ring".to_owned(),
        platform: AnyPlatform::Voice(Voice {
            account: account(fake),
            from: FROM.to_owned(),
            to: Vec::new(),
            language: "en-US".to_owned(),
        }),
        allow_unmapped: false,
    };
    TestServer::build("memory:", options, move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([(format!("phone:{ALICE}"), "alice".to_owned())]);
    })
    .await
}

async fn server(fake: &FakeTwilio) -> TestServer {
    server_on(fake, crate::support::announcing(&["ring"])).await
}

/// Creates a request and waits for its call: the id and the call's form.
async fn called(s: &TestServer, fake: &FakeTwilio, body: Value) -> (String, Value) {
    let before = fake.created("Calls").len();
    let record = s.ask(&s.admin, body).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let calls = fake.wait_for("Calls", before + 1).await;
    (id, calls[before].clone())
}

/// Twilio's call to `url` during the call to alice, with `extra` parameters.
async fn callback(
    s: &TestServer,
    url: &str,
    extra: &[(&str, &str)],
    signed: Signed<'_>,
) -> (StatusCode, String) {
    let mut params = vec![
        ("AccountSid", crate::fake_twilio::ACCOUNT_SID),
        ("CallSid", "CA33333333333333333333333333333333"),
        ("From", FROM),
        ("To", ALICE),
        ("Direction", "outbound-api"),
    ];
    params.extend_from_slice(extra);
    fake_twilio::call(&s.client, url, &params, signed).await
}

/// The `action` URL of a TwiML document's `<Gather>`.
fn action(twiml: &str) -> String {
    let start = twiml.find("action=\"").expect("a Gather's action") + "action=\"".len();
    let end = start + twiml[start..].find('"').expect("closing quote");
    fake_twilio::unescape(&twiml[start..end])
}

fn deploy() -> Value {
    json!({"agent": "deployer", "responders": ["alice"],
           "questions": [{"text": "Deploy build 481 to production?", "kind": "approval",
                          "action": {"name": "deploy", "arguments": {"env": "prod"}}}]})
}

#[tokio::test]
async fn a_call_reads_the_request_and_a_confirmed_press_answers_it() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (id, call) = called(&s, &fake, deploy()).await;
    assert_eq!(call["To"], ALICE);
    assert_eq!(call["From"], FROM);
    assert_eq!(call["MachineDetection"], "Enable");
    let url = call["Url"].as_str().expect("Url").to_owned();
    assert_eq!(url, format!("{}/hooks/voice/ring?request={id}", s.url));
    let status_url = call["StatusCallback"]
        .as_str()
        .expect("StatusCallback")
        .to_owned();
    assert!(status_url.ends_with("&step=status"), "{status_url}");

    // Picked up: the request is read and a key gathered.
    let (status, twiml) = callback(
        &s,
        &url,
        &[("CallStatus", "in-progress"), ("AnsweredBy", "human")],
        Signed::ByTwilio,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(twiml.contains("<Gather numDigits=\"1\""), "{twiml}");
    assert!(twiml.contains("Deploy build 481 to production?"), "{twiml}");
    assert!(
        twiml.contains("Press 1 to approve. Press 2 to deny."),
        "{twiml}"
    );
    let press = action(&twiml);

    // A key that is no choice: back to the start, nothing answered.
    let (_, again) = callback(&s, &press, &[("Digits", "7")], Signed::ByTwilio).await;
    assert!(
        again.contains("There is no choice 7.") && again.contains("<Redirect"),
        "{again}"
    );

    // 1, then 1 to confirm: approved, and the agent wakes.
    let (_, confirm) = callback(&s, &press, &[("Digits", "1")], Signed::ByTwilio).await;
    assert!(
        confirm.contains("You pressed 1: approve. Press 1 to confirm"),
        "{confirm}"
    );
    let confirm_url = action(&confirm);
    assert_eq!(
        status_of(&s, &id).await["status"],
        "pending",
        "a press alone answers nothing"
    );

    // A confirmation forged, or signed for another URL: nothing changes.
    let forged = fake_twilio::sign("wrong", &confirm_url, &[("Digits", "1")]);
    let (status, _) = callback(&s, &confirm_url, &[("Digits", "1")], Signed::As(&forged)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = callback(&s, &confirm_url, &[("Digits", "1")], Signed::Not).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    let agent = waiting(&s, &id);
    let (status, done) = callback(&s, &confirm_url, &[("Digits", "1")], Signed::ByTwilio).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        done.contains("Thank you. Answered by alice") && done.contains("<Hangup/>"),
        "{done}"
    );
    let outcome = agent.await.expect("agent");
    assert_eq!(outcome["outcome"]["answered_by"], "alice", "{outcome}");
    assert_eq!(outcome["outcome"]["questions"][0]["decision"], "approve");
    // The resolution places no call.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(fake.created("Calls").len(), 1);
}

#[tokio::test]
async fn no_answer_or_an_answering_machine_answers_nothing() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (id, call) = called(
        &s,
        &fake,
        json!({"question": "Which region?",
        "choices": ["eu-west", "us-east"], "responders": ["alice"]}),
    )
    .await;
    let url = call["Url"].as_str().expect("Url").to_owned();
    let (status, twiml) = callback(
        &s,
        &url,
        &[
            ("CallStatus", "in-progress"),
            ("AnsweredBy", "machine_end_beep"),
        ],
        Signed::ByTwilio,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        twiml.contains("<Hangup/>") && !twiml.contains("<Gather"),
        "{twiml}"
    );
    let status_url = call["StatusCallback"]
        .as_str()
        .expect("StatusCallback")
        .to_owned();
    for ended in ["no-answer", "busy", "failed"] {
        let (status, _) =
            callback(&s, &status_url, &[("CallStatus", ended)], Signed::ByTwilio).await;
        assert_eq!(status, StatusCode::OK);
    }
    let record = status_of(&s, &id).await;
    assert_eq!(record["status"], "pending", "{record}");

    // The options are read by name and a press picks one.
    let (_, twiml) = callback(
        &s,
        &url,
        &[("CallStatus", "in-progress"), ("AnsweredBy", "human")],
        Signed::ByTwilio,
    )
    .await;
    assert!(
        twiml.contains("Press 1 for eu-west. Press 2 for us-east."),
        "{twiml}"
    );
    let (_, confirm) = callback(&s, &action(&twiml), &[("Digits", "2")], Signed::ByTwilio).await;
    let (_, done) = callback(&s, &action(&confirm), &[("Digits", "1")], Signed::ByTwilio).await;
    assert!(done.contains("Answered by alice"), "{done}");
    let record = status_of(&s, &id).await;
    assert_eq!(
        record["outcome"]["questions"][0]["answer"], "us-east",
        "{record}"
    );
}

#[tokio::test]
async fn a_request_that_needs_a_passkey_is_read_but_no_key_answers_it() {
    let fake = FakeTwilio::start().await;
    let options = StoreOptions {
        step_up: Some(clarify_core::Risk::High),
        ..crate::support::announcing(&["ring"])
    };
    let s = server_on(&fake, options).await;
    let mut body = deploy();
    body["risk"] = json!("high");
    let (id, call) = called(&s, &fake, body).await;
    let url = call["Url"].as_str().expect("Url").to_owned();
    assert!(url.contains("passkey=1"), "{url}");
    let (_, twiml) = callback(&s, &url, &[("AnsweredBy", "human")], Signed::ByTwilio).await;
    assert!(!twiml.contains("<Gather"), "{twiml}");
    assert!(twiml.contains("needs a passkey confirmation"), "{twiml}");
    assert!(
        twiml.contains("Open the link clarify sent you by text or e-mail"),
        "{twiml}"
    );
    // Even a confirmation Twilio signed does not answer it.
    let confirm = format!(
        "{}/hooks/voice/ring?request={id}&step=confirm&choice=1",
        s.url
    );
    let (_, done) = callback(&s, &confirm, &[("Digits", "1")], Signed::ByTwilio).await;
    assert!(done.contains("nothing was answered"), "{done}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");
}

#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn latency() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let (mut placed, mut wake) = (Vec::new(), Vec::new());
    for _ in 0..200 {
        let started = std::time::Instant::now();
        let (id, call) = called(
            &s,
            &fake,
            json!({"question": "Ship?", "choices": ["yes", "no"],
                                                   "responders": ["alice"]}),
        )
        .await;
        placed.push(started.elapsed());
        let confirm = format!(
            "{}/hooks/voice/ring?request={id}&step=confirm&choice=1",
            s.url
        );
        assert!(call["Url"].is_string());
        let (agent, pressed) = crate::support::timed_wait(&s, &id).await;
        let (status, _) = callback(&s, &confirm, &[("Digits", "1")], Signed::ByTwilio).await;
        assert_eq!(status, StatusCode::OK);
        wake.push(agent.await.expect("agent").duration_since(pressed));
    }
    crate::support::print_percentiles("voice: creation → call placed at Twilio", placed);
    crate::support::print_percentiles("voice: confirming press → agent wakes", wake);
}
