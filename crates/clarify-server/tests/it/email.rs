//! E-mail, against the SMTP sink of `fake_smtp`: the announcement (multipart, escaped, one
//! link per decision), option links that only answer once confirmed, threaded follow-ups,
//! temporary failures retried, recipients from `[identities]`, and restarts.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::TimeDelta;
use clarify_channels::email::Email;
use clarify_channels::{AnyPlatform, Channel};
use clarify_store::StoreOptions;
use mail_parser::MessageParser;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::fake_smtp::{FakeSmtp, Received};
use crate::support::TestServer;

const FROM: &str = "clarify@example.com";

fn options() -> StoreOptions {
    crate::support::announcing(&["mail"])
}

async fn server_on(url: &str, smtp: &FakeSmtp, to: &[&str]) -> TestServer {
    let channel = Channel {
        name: "mail".to_owned(),
        platform: AnyPlatform::Email(Email {
            smtp_url: smtp.url.parse().expect("url"),
            password: None,
            from: format!("Clarify <{FROM}>"),
            to: to.iter().map(|t| (*t).to_owned()).collect(),
            mailgun_signing_key: None,
        }),
        allow_unmapped: false,
    };
    TestServer::build(url, options(), move |c| {
        c.channels = vec![channel];
        c.identities = BTreeMap::from([
            ("email:alice@example.com".to_owned(), "alice".to_owned()),
            ("email:bob@example.com".to_owned(), "bob".to_owned()),
            ("telegram:42".to_owned(), "alice".to_owned()),
        ]);
        c.webhooks.poll = Duration::from_millis(50);
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
    })
    .await
}

async fn status_of(s: &TestServer, id: &str) -> Value {
    s.get(&format!("/v1/requests/{id}"), &s.admin).await.1
}

/// The notifications of request `id`, once none is pending.
async fn settled(s: &TestServer, id: &str) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let body = s
            .get(&format!("/v1/requests/{id}/notifications"), &s.admin)
            .await
            .1;
        let found = body["notifications"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if !found.is_empty() && found.iter().all(|n| n["status"] != "pending") {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "notifications of {id} still pending: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A received message's parts: headers by name, the text body and the HTML body.
struct Mail {
    raw: String,
    subject: String,
    message_id: String,
    in_reply_to: Option<String>,
    references: Option<String>,
    text: String,
    html: String,
}

fn read(r: &Received) -> Mail {
    let parsed = MessageParser::default()
        .parse(r.data.as_bytes())
        .expect("a message");
    let header = |name: &str| parsed.header_raw(name).map(|v| v.trim().to_owned());
    Mail {
        raw: r.data.clone(),
        subject: parsed.subject().unwrap_or_default().to_owned(),
        message_id: header("Message-ID").expect("a Message-ID"),
        in_reply_to: header("In-Reply-To"),
        references: header("References"),
        text: parsed.body_text(0).expect("a text part").into_owned(),
        html: parsed.body_html(0).expect("an HTML part").into_owned(),
    }
}

/// The links in a text body that carry a chosen answer, by label (`- label: url`).
fn choice_links(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.rsplit_once(": "))
        .filter(|(_, url)| url.contains("?answer="))
        .map(|(label, url)| (label.to_owned(), url.trim().to_owned()))
        .collect()
}

/// The hidden fields of a confirmation page's form.
fn hidden_fields(html: &str) -> Vec<(String, String)> {
    html.split("<input type=\"hidden\" ")
        .skip(1)
        .filter_map(|rest| {
            let attr = |name: &str| {
                let start = rest.find(&format!("{name}=\""))? + name.len() + 2;
                let end = rest[start..].find('"')? + start;
                Some(
                    rest[start..end]
                        .replace("&quot;", "\"")
                        .replace("&amp;", "&"),
                )
            };
            Some((attr("name")?, attr("value")?))
        })
        .collect()
}

#[tokio::test]
async fn an_approval_is_mailed_with_one_link_per_decision_each_answering_only_when_confirmed() {
    let smtp = FakeSmtp::start().await;
    let s = server_on("memory:", &smtp, &["ops@example.com"]).await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Deploy <script>alert(1)</script> & roll back?",
                                  "kind": "approval", "scopes": ["once", "session"],
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}}}],
                   "context": "Release \"7\" <b>now</b>",
                   "agent": "deployer", "session": "s1"}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let answer_url = record["answer_url"].as_str().expect("link").to_owned();

    let received = smtp.until(1).await;
    assert_eq!(received[0].to, ["ops@example.com"]);
    assert_eq!(received[0].from, FROM);
    let mail = read(&received[0]);
    assert!(
        mail.raw.contains("multipart/alternative"),
        "text and HTML: {}",
        mail.raw
    );
    // The summary is the subject: for an approval, the tool and its arguments.
    assert_eq!(mail.subject, "deploy: env=prod");
    assert!(
        mail.text
            .contains("Deploy <script>alert(1)</script> & roll back?"),
        "{}",
        mail.text
    );
    assert!(mail.text.contains("Action: deploy"), "{}", mail.text);
    assert!(mail.text.contains("env: prod"), "{}", mail.text);
    assert!(
        mail.text.contains("Asked by deployer in session s1"),
        "{}",
        mail.text
    );
    assert!(!mail.html.contains("<script>"), "{}", mail.html);
    assert!(!mail.html.contains("<b>now"), "{}", mail.html);
    assert!(
        mail.html
            .contains("Deploy &lt;script&gt;alert(1)&lt;/script&gt; &amp; roll back?"),
        "{}",
        mail.html
    );
    assert!(
        mail.html
            .contains("Release &quot;7&quot; &lt;b&gt;now&lt;/b&gt;"),
        "{}",
        mail.html
    );
    assert!(mail.html.contains(&answer_url), "the answer link");

    let links = choice_links(&mail.text);
    let labels: Vec<&str> = links.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(labels, ["Approve", "Approve for this session", "Deny"]);
    for (_, url) in &links {
        assert!(url.starts_with(&format!("{answer_url}?answer=")), "{url}");
    }

    let sent = settled(&s, &id).await;
    assert_eq!(sent[0]["status"], "delivered", "{sent:?}");
    assert_eq!(sent[0]["message_ref"], mail.message_id.as_str());

    // Opening a link (as a mail scanner does) answers nothing: it asks to confirm.
    let session_link = &links[1].1;
    let page = s.client.get(session_link).send().await.expect("get");
    assert_eq!(page.status(), StatusCode::OK);
    assert!(
        page.headers()
            .get("content-security-policy")
            .is_some_and(|v| v.to_str().is_ok_and(|v| v.contains("script-src 'self'")))
    );
    let page = page.text().await.expect("page");
    assert!(page.contains("Approve deploy for this session?"), "{page}");
    assert!(page.contains("Confirm"), "{page}");
    assert!(!page.contains("<script>alert"), "escaped: {page}");
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    // A tampered link is refused, as every bad token is; a mangled answer is a 400 page.
    let (base, encoded) = session_link.split_once("?answer=").expect("answer");
    let tampered = format!("{}x?answer={encoded}", base);
    let refused = s.client.get(&tampered).send().await.expect("get");
    assert_eq!(refused.status(), StatusCode::NOT_FOUND);
    let mangled = s
        .client
        .get(format!("{base}?answer=%21%21not-base64"))
        .send()
        .await
        .expect("get");
    assert_eq!(mangled.status(), StatusCode::BAD_REQUEST);
    assert!(
        mangled
            .text()
            .await
            .expect("page")
            .contains("cannot be read"),
        "says why"
    );
    let elsewhere = s
        .client
        .get(format!(
            "{base}?answer={}",
            base64_of(&json!({"answers": {"nope": {"decision": "approve"}}}))
        ))
        .send()
        .await
        .expect("get");
    assert_eq!(elsewhere.status(), StatusCode::BAD_REQUEST);
    let forged = s
        .client
        .post(tampered.split_once('?').expect("query").0)
        .form(&hidden_fields(&page))
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status(), StatusCode::NOT_FOUND);
    assert_eq!(status_of(&s, &id).await["status"], "pending");

    // Confirming POSTs the page's form, which answers.
    let confirmed = s
        .client
        .post(session_link)
        .form(&hidden_fields(&page))
        .send()
        .await
        .expect("post");
    assert_eq!(confirmed.status(), StatusCode::OK, "redirected to the link");
    let done = status_of(&s, &id).await;
    assert_eq!(done["status"], "answered", "{done}");
    let q = &done["outcome"]["questions"][0];
    assert_eq!(q["decision"], "approve", "{done}");
    assert_eq!(q["scope"], "session", "{done}");

    // The resolution is a reply in the announcement's thread.
    let received = smtp.until(2).await;
    let reply = read(&received[1]);
    assert_eq!(reply.in_reply_to.as_deref(), Some(mail.message_id.as_str()));
    assert_eq!(reply.references.as_deref(), Some(mail.message_id.as_str()));
    assert_eq!(reply.subject, "Re: deploy: env=prod");
    assert!(
        reply.text.contains("Answered: approved for this session"),
        "{}",
        reply.text
    );
    // The link now only says the request is resolved, answer or not.
    let after = s.client.get(session_link).send().await.expect("get");
    assert_eq!(after.status(), StatusCode::OK);
    assert!(
        after
            .text()
            .await
            .expect("page")
            .contains("no longer answers")
    );
}

fn base64_of(v: &Value) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[tokio::test]
async fn an_answer_by_the_api_is_replied_in_the_thread() {
    let smtp = FakeSmtp::start().await;
    let s = server_on("memory:", &smtp, &["ops@example.com"]).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Which region?", "choices": ["eu", "us"], "recommended": "eu"}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let mail = read(&smtp.until(1).await[0]);
    // The summary is the subject: here the question itself.
    assert_eq!(mail.subject, "Which region?");
    assert!(mail.text.contains("- eu (recommended)"), "{}", mail.text);
    let labels: Vec<String> = choice_links(&mail.text)
        .into_iter()
        .map(|(l, _)| l)
        .collect();
    assert_eq!(labels, ["eu", "us"]);
    settled(&s, &id).await;

    let (status, body) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"option": "us"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let reply = read(&smtp.until(2).await[1]);
    assert_eq!(reply.in_reply_to.as_deref(), Some(mail.message_id.as_str()));
    assert_eq!(reply.subject, "Re: Which region?");
    assert!(reply.text.contains("Answered"), "{}", reply.text);
    assert!(reply.text.contains(": us"), "{}", reply.text);
    assert_ne!(reply.message_id, mail.message_id);
}

#[tokio::test]
async fn a_temporary_failure_is_retried_and_each_attempt_recorded() {
    let smtp = FakeSmtp::start().await;
    smtp.fail_next(1);
    let s = server_on("memory:", &smtp, &["ops@example.com"]).await;
    let record = s.ask(&s.admin, json!({"question": "Ship it?"})).await;
    let id = record["id"].as_str().expect("id").to_owned();
    smtp.until(1).await;
    let sent = settled(&s, &id).await;
    assert_eq!(sent[0]["status"], "delivered", "{sent:?}");
    let attempts = sent[0]["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{sent:?}");
    assert!(
        attempts[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("451")),
        "{sent:?}"
    );
    assert!(attempts[1]["error"].is_null(), "{sent:?}");
    assert_eq!(smtp.refused(), 1);
    assert_eq!(smtp.received().len(), 1);
}

#[tokio::test]
async fn without_to_the_responders_addresses_are_written_to_or_the_send_is_skipped() {
    let smtp = FakeSmtp::start().await;
    let s = server_on("memory:", &smtp, &[]).await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Rotate the keys?", "responders": ["alice", "carol"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let received = smtp.until(1).await;
    assert_eq!(
        received[0].to,
        ["alice@example.com"],
        "carol has no address"
    );
    settled(&s, &id).await;

    let nobody = s.ask(&s.admin, json!({"question": "Anyone?"})).await;
    let id = nobody["id"].as_str().expect("id").to_owned();
    let sent = settled(&s, &id).await;
    assert_eq!(sent[0]["status"], "delivered", "{sent:?}");
    assert_eq!(sent[0]["attempts"].as_array().map(Vec::len), Some(1));
    assert!(
        sent[0]["attempts"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("no recipient")),
        "{sent:?}"
    );
    assert_eq!(smtp.received().len(), 1, "nothing sent without a recipient");
}

#[tokio::test]
async fn a_restart_between_creation_and_announcement_sends_one_announcement() {
    let smtp = FakeSmtp::start().await;
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
                &json!({"question": "Still there?", "choices": ["yes", "no"]}),
                &clarify_core::Limits::default(),
            )
            .expect("valid"),
        )
        .await
        .expect("create");
    drop(store);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(smtp.received().is_empty());

    let s = server_on(&url, &smtp, &["ops@example.com"]).await;
    smtp.until(1).await;
    settled(&s, &created.record.id).await;
    let (store, _) = s.halt().await;
    drop(store);

    let s = server_on(&url, &smtp, &["ops@example.com"]).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(smtp.received().len(), 1, "announced once");
    let sent = settled(&s, &created.record.id).await;
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["attempts"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_diff_arrives_as_a_table_in_html_and_as_lines_in_text() {
    let smtp = FakeSmtp::start().await;
    let s = server_on("memory:", &smtp, &["ops@example.com"]).await;
    s.ask(
        &s.admin,
        json!({"questions": [{"text": "Allow the agent to run Edit?", "kind": "approval",
                              "action": {"name": "Edit", "arguments": {"file_path": "src/payments.py"}}}],
               "display": [{"type": "diff", "path": "src/payments.py",
                            "before": "def refund(order, amount):\n    if amount > order.total:\n        raise ValueError\n",
                            "after": "def refund(order, amount):\n    if amount > order.paid:\n        raise ValueError\n"}]}),
    )
    .await;
    let mail = read(&smtp.until(1).await[0]);
    assert!(
        mail.text
            .lines()
            .any(|l| l == "-    if amount > order.total:")
            && mail
                .text
                .lines()
                .any(|l| l == "+    if amount > order.paid:"),
        "{}",
        mail.text
    );
    assert!(
        mail.html
            .contains("<td class=\"text\">    if amount &gt; order.total:</td>")
            && mail
                .html
                .contains("<td class=\"text\">    if amount &gt; order.paid:</td>"),
        "{}",
        mail.html
    );
    assert!(
        !mail.text.contains("\"file_path\""),
        "no raw JSON: {}",
        mail.text
    );
}
