//! WhatsApp through Twilio, against the fake REST API of `fake_twilio`: the message goes to
//! `whatsapp:` addresses, a reply from one answers as the person its number maps to, a reply
//! from a plain number is not WhatsApp's, and a forged signature changes nothing.

use std::collections::BTreeMap;

use clarify_channels::sms::{Sender, Sms};
use clarify_channels::whatsapp::WhatsApp;
use clarify_channels::{AnyPlatform, Channel};
use reqwest::StatusCode;
use serde_json::json;

use crate::fake_twilio::{self, AUTH_TOKEN, FakeTwilio, Signed};
use crate::sms::{ALICE, account, status_of, waiting};
use crate::support::TestServer;

/// Twilio's WhatsApp sandbox number.
const SANDBOX: &str = "+14155238886";

async fn server(fake: &FakeTwilio) -> TestServer {
    let channel = Channel {
        name: "wa".to_owned(),
        platform: AnyPlatform::WhatsApp(WhatsApp(Sms {
            account: account(fake),
            from: Sender::Number(SANDBOX.to_owned()),
            to: Vec::new(),
        })),
        allow_unmapped: false,
    };
    TestServer::build("memory:", crate::support::announcing(&["wa"]), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([(format!("phone:{ALICE}"), "alice".to_owned())]);
    })
    .await
}

async fn reply(s: &TestServer, from: &str, body: &str, signed: Signed<'_>) -> (StatusCode, String) {
    let url = format!("{}/hooks/whatsapp/wa", s.url);
    let to = format!("whatsapp:{SANDBOX}");
    let params = [
        ("MessageSid", "SM22222222222222222222222222222222"),
        ("From", from),
        ("To", to.as_str()),
        ("Body", body),
        ("ProfileName", "Alice"),
        ("WaId", "4930123456"),
    ];
    let (status, twiml) = fake_twilio::call(&s.client, &url, &params, signed).await;
    (status, fake_twilio::message_text(&twiml))
}

#[tokio::test]
async fn a_request_goes_to_whatsapp_addresses_and_a_reply_answers_it() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Which region?", "choices": ["eu-west", "us-east"],
                   "responders": ["alice"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let sent = fake.wait_for("Messages", 1).await;
    assert_eq!(sent[0]["To"], format!("whatsapp:{ALICE}"));
    assert_eq!(sent[0]["From"], format!("whatsapp:{SANDBOX}"));
    let code = clarify_model::short_code(&id);
    let body = sent[0]["Body"].as_str().expect("body");
    assert!(
        body.contains(&format!("[{code}]")) && body.contains("2. us-east"),
        "{body}"
    );

    // Forged, or a plain number on the WhatsApp hook: nothing changes.
    let from = format!("whatsapp:{ALICE}");
    let url = format!("{}/hooks/whatsapp/wa", s.url);
    let forged = fake_twilio::sign("wrong", &url, &[("From", from.as_str()), ("Body", "2")]);
    let (status, _) = reply(&s, &from, "2", Signed::As(&forged)).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = reply(&s, ALICE, "2", Signed::ByTwilio).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(status_of(&s, &id).await["status"], "pending");
    assert_ne!(AUTH_TOKEN, "wrong");

    let agent = waiting(&s, &id);
    let (status, said) = reply(&s, &from, "2", Signed::ByTwilio).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        said.starts_with(&format!("[{code}] Answered by alice")),
        "{said}"
    );
    let outcome = agent.await.expect("agent");
    assert_eq!(
        outcome["outcome"]["questions"][0]["answer"], "us-east",
        "{outcome}"
    );
    let resolved = fake.wait_for("Messages", 2).await;
    assert_eq!(resolved[1]["To"], format!("whatsapp:{ALICE}"));
}

#[tokio::test]
#[ignore = "a measurement: run with --ignored --nocapture"]
async fn latency() {
    let fake = FakeTwilio::start().await;
    let s = server(&fake).await;
    let from = format!("whatsapp:{ALICE}");
    let (mut announced, mut wake) = (Vec::new(), Vec::new());
    for n in 0..200 {
        let started = std::time::Instant::now();
        let record = s
            .ask(
                &s.admin,
                json!({"question": "Ship?", "choices": ["yes", "no"],
                                  "responders": ["alice"]}),
            )
            .await;
        let id = record["id"].as_str().expect("id").to_owned();
        // Each round adds the announcement and the resolution.
        fake.wait_for("Messages", 2 * n + 1).await;
        announced.push(started.elapsed());
        let (agent, replied) = crate::sms::timed_wait(&s, &id).await;
        let (status, _) = reply(&s, &from, "1", Signed::ByTwilio).await;
        assert_eq!(status, StatusCode::OK);
        wake.push(agent.await.expect("agent").duration_since(replied));
        fake.wait_for("Messages", 2 * n + 2).await;
    }
    crate::support::print_percentiles("whatsapp: creation → message at Twilio", announced);
    crate::support::print_percentiles("whatsapp: reply → agent wakes", wake);
}
