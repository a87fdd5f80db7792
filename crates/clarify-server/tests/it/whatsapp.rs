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
use crate::sms::{ALICE, account};
use crate::support::{TestServer, status_of, waiting};

/// Twilio's WhatsApp sandbox number.
const SANDBOX: &str = "+14155238886";

async fn server(fake: &FakeTwilio) -> TestServer {
    server_with(fake, None).await
}

async fn server_with(fake: &FakeTwilio, content_sid: Option<String>) -> TestServer {
    let channel = Channel {
        name: "wa".to_owned(),
        platform: AnyPlatform::WhatsApp(WhatsApp {
            sms: Sms {
                account: account(fake),
                from: Sender::Number(SANDBOX.to_owned()),
                to: Vec::new(),
            },
            content_sid,
        }),
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

/// Outside the 24-hour window (the person has not written to the sender yet) the channel's
/// template goes out, with the headline and the short code; a resolution is not sent to such a
/// number. Once they reply, messages are free-form again.
#[tokio::test]
async fn outside_the_window_the_template_goes_out_and_after_a_reply_the_text() {
    let fake = FakeTwilio::start().await;
    let sid = "HXb5b62575e6e4ff6129ad7c8efe1f983e";
    let s = server_with(&fake, Some(sid.to_owned())).await;
    let first = s
        .ask(
            &s.admin,
            json!({"question": "Restart the\n  payments queue?", "choices": ["yes", "no"],
                   "responders": ["alice"]}),
        )
        .await;
    let first = first["id"].as_str().expect("id").to_owned();
    let sent = fake.wait_for("Messages", 1).await;
    assert_eq!(sent[0]["To"], format!("whatsapp:{ALICE}"));
    assert_eq!(sent[0]["ContentSid"], sid, "{}", sent[0]);
    assert!(
        sent[0].get("Body").is_none(),
        "a template has no body: {}",
        sent[0]
    );
    let variables: serde_json::Value = serde_json::from_str(
        sent[0]["ContentVariables"]
            .as_str()
            .expect("the template's variables"),
    )
    .expect("JSON");
    assert_eq!(
        variables,
        json!({"1": "Restart the payments queue?", "2": clarify_model::short_code(&first)})
    );

    // The reply answers by the code the template carried, and opens the window.
    let from = format!("whatsapp:{ALICE}");
    let code = clarify_model::short_code(&first);
    let (status, said) = reply(&s, &from, &format!("yes {code}"), Signed::ByTwilio).await;
    assert_eq!(status, StatusCode::OK, "{said}");
    assert_eq!(status_of(&s, &first).await["status"], "answered");
    let second = s
        .ask(
            &s.admin,
            json!({"question": "And the refunds queue?", "choices": ["yes", "no"],
                   "responders": ["alice"]}),
        )
        .await;
    let second = second["id"].as_str().expect("id").to_owned();
    let sent = fake.wait_for("Messages", 3).await;
    let text: Vec<&serde_json::Value> = sent.iter().filter(|m| m.get("Body").is_some()).collect();
    assert_eq!(
        text.len(),
        2,
        "the first's resolution and the second, as text: {sent:?}"
    );
    assert!(
        text.iter().any(|m| m["Body"]
            .as_str()
            .is_some_and(|b| b.contains(&format!("[{}]", clarify_model::short_code(&second))))),
        "{sent:?}"
    );
}

/// A resolution is not worth a template: someone outside the window is not told that a request
/// ended (here, cancelled by the agent).
#[tokio::test]
async fn a_resolution_is_not_sent_outside_the_window() {
    let fake = FakeTwilio::start().await;
    let s = server_with(&fake, Some("HXb5b62575e6e4ff6129ad7c8efe1f983e".to_owned())).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"], "responders": ["alice"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    fake.wait_for("Messages", 1).await;
    let (status, _) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(status, 200);
    // The resolution's delivery is done (skipped) once the notifications say so.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, n) = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await;
        let done = n["notifications"]
            .as_array()
            .is_some_and(|all| all.len() >= 2 && all.iter().all(|x| x["status"] != "pending"));
        if done {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{n}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(
        fake.created("Messages").len(),
        1,
        "only the template went out"
    );
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
        let (agent, replied) = crate::support::timed_wait(&s, &id).await;
        let (status, _) = reply(&s, &from, "1", Signed::ByTwilio).await;
        assert_eq!(status, StatusCode::OK);
        wake.push(agent.await.expect("agent").duration_since(replied));
        fake.wait_for("Messages", 2 * n + 2).await;
    }
    crate::support::print_percentiles("whatsapp: creation → message at Twilio", announced);
    crate::support::print_percentiles("whatsapp: reply → agent wakes", wake);
}
