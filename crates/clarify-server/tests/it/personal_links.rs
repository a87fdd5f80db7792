//! Personal links: an e-mail to a group lists a link for each member; each answers (votes) as
//! its person, once, and only while that person may answer; a forged one, one opened in a
//! browser signed in as someone else, one for a person whose access was removed, and, under four
//! eyes, the link of the person the request acts for are refused.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clarify_channels::email::Email;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::{Role, StoreOptions};
use mail_parser::MessageParser;
use reqwest::StatusCode;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use crate::fake_smtp::FakeSmtp;
use crate::support::{TestServer, code};

async fn server(smtp: &FakeSmtp, members: &[&str]) -> TestServer {
    server_with(smtp, members, false).await
}

async fn server_with(smtp: &FakeSmtp, members: &[&str], forbid_self_approval: bool) -> TestServer {
    let channel = Channel {
        name: "mail".to_owned(),
        platform: AnyPlatform::Email(Email {
            smtp_url: smtp.url.parse().expect("url"),
            password: None,
            from: "Clarify <clarify@example.com>".to_owned(),
            to: vec!["ops@example.com".to_owned()],
            mailgun_signing_key: None,
        }),
        allow_unmapped: false,
    };
    let options = StoreOptions {
        groups: Arc::new(BTreeMap::from([(
            "sre".to_owned(),
            members.iter().map(|m| (*m).to_owned()).collect(),
        )])),
        forbid_self_approval,
        ..crate::support::announcing(&["mail"])
    };
    TestServer::build("memory:", options, move |c| {
        c.channels = vec![channel];
        c.webhooks.poll = Duration::from_millis(50);
    })
    .await
}

/// The personal links of a mail's text body, by name (`  name: url`).
fn personal_links(data: &str) -> BTreeMap<String, String> {
    let parsed = MessageParser::default()
        .parse(data.as_bytes())
        .expect("a message");
    let text = parsed.body_text(0).expect("a text part").into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Your own link"))
        .skip(1)
        .map_while(|l| l.strip_prefix("  "))
        .filter_map(|l| l.split_once(": "))
        .map(|(name, url)| (name.to_owned(), url.trim().to_owned()))
        .collect()
}

fn quorum_of_sre() -> Value {
    json!({
        "questions": [{"text": "Rotate the root keys?", "kind": "approval",
                       "action": {"name": "rotate_keys", "arguments": {}}}],
        "responders": ["group:sre"],
        "approvals_required": 2
    })
}

async fn post_json(url: &str, body: Value, cookie: Option<&str>) -> (StatusCode, Value) {
    let mut request = clarify_client::http::client()
        .expect("an HTTP client")
        .post(url)
        .json(&body);
    if let Some(cookie) = cookie {
        request = request.header(COOKIE, cookie);
    }
    let response = request.send().await.expect("sent");
    let status = response.status();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_quorum_of_two_is_reached_by_two_personal_email_links() {
    let smtp = FakeSmtp::start().await;
    let s = server(&smtp, &["bob", "dave"]).await;
    let record = s.ask(&s.admin, quorum_of_sre()).await;
    let id = record["id"]
        .as_str()
        .expect("as the test set it up")
        .to_owned();
    let mails = smtp.until(1).await;
    let links = personal_links(&mails[0].data);
    assert_eq!(
        links.keys().collect::<Vec<_>>(),
        ["bob", "dave"],
        "one link per member of sre"
    );
    let approve = json!({"decision": "approve"});
    let (status, counted) = post_json(&links["bob"], approve.clone(), None).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{counted}");
    assert_eq!(counted["votes"][0]["by"], "bob");
    // The same link again: bob has voted; nothing changes.
    let (status, again) = post_json(&links["bob"], approve.clone(), None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(code(&again), "already_voted");
    let (status, outcome) = post_json(&links["dave"], approve.clone(), None).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["answered_via"], "personal_link");
    // Resolved: the links only say so now.
    let (status, late) = post_json(&links["bob"], approve, None).await;
    assert_eq!(status, StatusCode::CONFLICT, "{late}");
    let (_, final_record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(final_record["votes"].as_array().map(Vec::len), Some(2));
}

#[tokio::test]
async fn under_four_eyes_the_person_a_request_acts_for_cannot_answer_through_their_own_link() {
    let smtp = FakeSmtp::start().await;
    let s = server_with(&smtp, &["bob", "dave"], true).await;
    let mut ask = quorum_of_sre();
    ask["approvals_required"] = json!(1);
    ask["on_behalf_of"] = json!("bob");
    let record = s.ask(&s.admin, ask).await;
    let id = record["id"]
        .as_str()
        .expect("as the test set it up")
        .to_owned();
    let links = personal_links(&smtp.until(1).await[0].data);
    let approve = json!({"decision": "approve"});
    let (status, refused) = post_json(&links["bob"], approve.clone(), None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    assert_eq!(code(&refused), "self_approval");
    let (_, pending) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(pending["status"], "pending", "nothing was answered");
    let (status, outcome) = post_json(&links["dave"], approve, None).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "dave");
    // The log names the link that authenticated dave.
    let (_, audit) = s.get("/v1/audit", &s.admin).await;
    let answered = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "answered")
        .cloned()
        .expect("an answered event");
    assert_eq!(answered["principal"], "personal_link:dave", "{answered}");
}

#[tokio::test]
async fn forged_foreign_and_revoked_personal_links_are_refused() {
    let smtp = FakeSmtp::start().await;
    let s = server(&smtp, &["bob"]).await;
    let record = s.ask(&s.admin, quorum_of_sre()).await;
    let id = record["id"]
        .as_str()
        .expect("as the test set it up")
        .to_owned();
    let bob_link = s.state.personal_url(&id, "bob");
    let approve = json!({"decision": "approve"});

    // Forged: bob's signature with another name.
    let (prefix, signature) = bob_link.rsplit_once('.').expect("a token");
    let (base, _) = prefix.rsplit_once('~').expect("a personal token");
    let forged = format!("{base}~ZXZl.{signature}"); // "eve"
    let (status, _) = post_json(&forged, approve.clone(), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // A browser signed in as carol may not answer through bob's link.
    let carol = s.key(Role::Responder, "carol", "default").await;
    let login = clarify_client::http::client()
        .expect("an HTTP client")
        .post(format!("{}/v1/login", s.url))
        .json(&json!({"key": carol}))
        .send()
        .await
        .expect("as the test set it up");
    let session = login
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| h.split(';').next().map(str::to_owned))
        .expect("a session cookie");
    let (status, err) = post_json(&bob_link, approve.clone(), Some(&session)).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "not_your_link");

    // A link for someone who is not (or no longer) among the responders.
    let eve_link = s.state.personal_url(&id, "eve");
    let (status, err) = post_json(&eve_link, approve, None).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "not_a_responder");
    let (_, still) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(still["votes"], json!([]), "nothing was counted");
}
