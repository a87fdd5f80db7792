//! Signed answer links `/a/<token>`: the HTML page, its form, JSON answers, and forged tokens.

use std::sync::Arc;

use chrono::{TimeDelta, Utc};
use clarify_store::ManualClock;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use serde_json::{Value, json};

use crate::support::{TestServer, code};

const IMG: &str = "<img src=x onerror=alert(1)>";
const SCRIPT: &str = "<script>alert(1)</script>";

/// A client that shows redirects instead of following them.
fn no_redirects() -> reqwest::Client {
    clarify_client::http::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
}

fn link_of(record: &Value) -> String {
    record["answer_url"]
        .as_str()
        .expect("the creator sees the answer link")
        .to_owned()
}

fn id_of(record: &Value) -> String {
    record["id"].as_str().expect("record id").to_owned()
}

/// GET of a link as a browser: status, headers and the HTML.
async fn page(link: &str) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let response = no_redirects()
        .get(link)
        .header(ACCEPT, "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .expect("sent");
    let status = response.status();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("html"))
}

/// A JSON POST to a link.
async fn post_json(link: &str, body: Value) -> (StatusCode, Value) {
    let response = no_redirects()
        .post(link)
        .json(&body)
        .send()
        .await
        .expect("sent");
    let status = response.status();
    (status, response.json().await.expect("a JSON body"))
}

/// A form POST to a link, as the page's form sends it.
async fn post_form(link: &str, fields: &[(&str, &str)]) -> reqwest::Response {
    let body = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish();
    no_redirects()
        .post(link)
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .expect("sent")
}

async fn status_of(s: &TestServer, id: &str) -> Value {
    let (status, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{record}");
    record
}

#[tokio::test]
async fn a_link_shows_the_question_as_an_html_page_under_a_strict_policy() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Deploy release 42 to prod?", "choices": ["Ship it", "Hold"],
                   "context": "CI is green"}),
        )
        .await;
    let (status, headers, html) = page(&link_of(&record)).await;
    assert_eq!(status, StatusCode::OK);
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let csp = headers
        .get(CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .expect("a Content-Security-Policy header");
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "only the server's own script files may run: {csp}"
    );
    assert!(
        html.contains("/link.js\"></script>"),
        "the page loads the inbox's request view: {html}"
    );
    for text in [
        "Deploy release 42 to prod?",
        "Ship it",
        "Hold",
        "CI is green",
    ] {
        assert!(html.contains(text), "{text:?} is on the page: {html}");
    }
    assert!(html.contains("<form method=\"post\">"), "{html}");
    assert!(html.contains("name=\"q1.option\""), "{html}");
}

#[tokio::test]
async fn text_from_the_agent_is_escaped_on_the_page() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{
                    "header": "<b>hdr</b>",
                    "text": format!("Run this? {IMG}"),
                    "options": [
                        {"id": "a", "label": SCRIPT, "description": IMG},
                        {"id": "b", "label": "\"quoted\" & 'single'"},
                    ],
                }],
                "context": format!("{SCRIPT} in the context")}),
        )
        .await;
    let (status, _, html) = page(&link_of(&record)).await;
    assert_eq!(status, StatusCode::OK);
    // The head loads the server's own script; request text lives in the body.
    let body = &html[html.find("<body>").expect("a body")..];
    for raw in [SCRIPT, IMG, "<script", "<img", "<b>hdr"] {
        assert!(!body.contains(raw), "{raw:?} reached the page raw: {html}");
    }
    for escaped in [
        "&lt;script&gt;alert(1)&lt;/script&gt;",
        "&lt;img src=x onerror=alert(1)&gt;",
        "&lt;b&gt;hdr&lt;/b&gt;",
        "&quot;quoted&quot; &amp; &#39;single&#39;",
    ] {
        assert!(html.contains(escaped), "{escaped:?} is shown: {html}");
    }
}

#[tokio::test]
async fn a_link_answers_once_with_a_json_body() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Proceed?", "choices": ["yes", "no"]}),
        )
        .await;
    let link = link_of(&record);
    let (status, outcome) = post_json(&link, json!({"option": "yes"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["request_id"], record["id"]);
    assert_eq!(outcome["questions"][0]["answer"], "yes");
    assert!(
        outcome["answered_by"].is_null(),
        "a link names nobody: {outcome}"
    );

    let (status, err) = post_json(&link, json!({"option": "no"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::CONFLICT, "already_resolved")
    );
    let now = status_of(&s, &id_of(&record)).await;
    assert_eq!(now["outcome"]["questions"][0]["answer"], "yes");

    let response = no_redirects()
        .get(&link)
        .header(ACCEPT, "application/json")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(
        response
            .headers()
            .get("cache-control")
            .and_then(|v| v.to_str().ok()),
        Some("no-store")
    );
    let seen: Value = response.json().await.expect("the record as JSON");
    assert_eq!(seen["id"], record["id"]);
    assert_eq!(seen["status"], "answered");
    assert!(
        seen.get("answer_url").is_none(),
        "the link's holder is not shown the link again: {seen}"
    );
}

#[tokio::test]
async fn an_invalid_json_answer_through_a_link_leaves_the_request_pending() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Proceed?", "choices": ["yes", "no"], "allow_other": false}),
        )
        .await;
    let link = link_of(&record);
    let (status, err) = post_json(&link, json!({"option": "maybe"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "unknown_option")
    );
    let response = no_redirects()
        .post(&link)
        .header(CONTENT_TYPE, "application/json")
        .body("{\"option\": ")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(status_of(&s, &id_of(&record)).await["status"], "pending");
    let (status, _) = post_json(&link, json!({"option": "no"})).await;
    assert_eq!(status, StatusCode::OK, "a corrected answer still lands");
}

#[tokio::test]
async fn the_page_form_answers_and_redirects_back_to_the_link() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [
                {"text": "Which region?", "options": ["EU", "US"]},
                {"text": "Anything else?"},
                {"text": "Run the migration?", "kind": "approval",
                 "action": {"name": "migrate", "arguments": {"db": "main"}}},
            ]}),
        )
        .await;
    let link = link_of(&record);
    let path = link.trim_start_matches(&s.url).to_owned();
    let response = post_form(
        &link,
        &[
            ("q1.option", "us"),
            ("q1.other", ""),
            ("q2.text", "  mind the cache  "),
            ("q3.decision", "approve"),
            ("q3.reason", "looks fine"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        response
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok()),
        Some(path.as_str())
    );

    let (status, _, html) = page(&link).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("This request is answered"), "{html}");
    assert!(!html.contains("<form"), "no form once answered: {html}");

    let now = status_of(&s, &id_of(&record)).await;
    assert_eq!(now["status"], "answered");
    assert!(now["answered_by"].is_null());
    let q = &now["outcome"]["questions"];
    assert_eq!(q[0]["answer"], "US");
    assert_eq!(q[1]["answer"], "mind the cache");
    assert_eq!(q[2]["decision"], "approve");
    assert_eq!(q[2]["reason"], "looks fine");

    // Posting the form again changes nothing and lands on the same page.
    let again = post_form(&link, &[("q1.option", "eu")]).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    let now = status_of(&s, &id_of(&record)).await;
    assert_eq!(now["outcome"]["questions"][0]["answer"], "US");
}

#[tokio::test]
async fn the_page_form_can_skip() {
    let s = TestServer::start().await;
    let record = s.ask(&s.admin, json!({"question": "Rename it?"})).await;
    let link = link_of(&record);
    let response = post_form(&link, &[("q1.text", ""), ("skip", "1")]).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(status_of(&s, &id_of(&record)).await["status"], "skipped");
    let (_, _, html) = page(&link).await;
    assert!(html.contains("This request is skipped"), "{html}");
}

#[tokio::test]
async fn an_invalid_form_answer_shows_the_form_again_with_the_error() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Must answer", "choices": ["yes", "no"], "allow_skip": false,
                   "allow_other": false}),
        )
        .await;
    let link = link_of(&record);
    for (fields, message) in [
        (
            vec![("q1.option", "maybe")],
            "is not an option of this question",
        ),
        (vec![("q1.other", "later")], "does not accept a free-text"),
        (vec![], "has no answer"),
        (vec![("skip", "1")], "cannot be skipped"),
    ] {
        let response = post_form(&link, &fields).await;
        assert_eq!(
            response.status(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "{fields:?}"
        );
        let html = response.text().await.expect("html");
        assert!(html.contains("role=\"alert\""), "{fields:?}: {html}");
        assert!(html.contains(message), "{fields:?}: {html}");
        assert!(
            html.contains("<form method=\"post\">"),
            "the form is shown again: {html}"
        );
        assert_eq!(status_of(&s, &id_of(&record)).await["status"], "pending");
    }
    let response = post_form(&link, &[("q1.option", "no")]).await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(status_of(&s, &id_of(&record)).await["status"], "answered");
}

/// `link` with one character of its signature changed.
fn tampered(link: &str) -> String {
    let (head, signature) = link.rsplit_once('.').expect("a signed token");
    let mut chars: Vec<char> = signature.chars().collect();
    chars[0] = if chars[0] == 'A' { 'B' } else { 'A' };
    format!("{head}.{}", chars.into_iter().collect::<String>())
}

#[tokio::test]
async fn a_forged_token_is_not_found() {
    let s = TestServer::start().await;
    let target = s.ask(&s.admin, json!({"question": "Target?"})).await;
    let other = s.ask(&s.admin, json!({"question": "Other?"})).await;
    let (other_id, other_signature) = link_of(&other)
        .rsplit_once("/a/")
        .and_then(|(_, token)| token.split_once('.'))
        .map(|(id, sig)| (id.to_owned(), sig.to_owned()))
        .expect("id.signature");
    assert_eq!(other_id, id_of(&other));
    let target_id = id_of(&target);
    let forged = [
        tampered(&link_of(&target)),
        format!("{}/a/{target_id}.{other_signature}", s.url),
        format!("{}/a/{target_id}", s.url),
        format!("{}/a/{target_id}.", s.url),
        format!("{}/a/.{other_signature}", s.url),
    ];
    for link in &forged {
        let (status, headers, html) = page(link).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{link}");
        assert!(
            headers
                .get(CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.starts_with("text/html")),
            "{link}"
        );
        assert!(html.contains("not valid"), "{link}: {html}");
        let (status, err) = post_json(link, json!({"text": "forged"})).await;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::NOT_FOUND, "not_found"),
            "{link}"
        );
        let response = post_form(link, &[("q1.text", "forged")]).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND, "{link}");
    }
    assert_eq!(status_of(&s, &target_id).await["status"], "pending");
    let (status, _) = post_json(&link_of(&target), json!({"text": "genuine"})).await;
    assert_eq!(status, StatusCode::OK, "the genuine link still works");
}

#[tokio::test]
async fn a_link_dies_with_its_cancelled_or_expired_request() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let s = TestServer::with_clock(clock.clone()).await;
    let cancelled = s.ask(&s.admin, json!({"question": "Cancel me?"})).await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{}/cancel", id_of(&cancelled)),
            &s.admin,
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let overdue = s
        .ask(
            &s.admin,
            json!({"question": "Quick?", "timeout_seconds": 60}),
        )
        .await;
    let reaped = s
        .ask(
            &s.admin,
            json!({"question": "Quicker?", "timeout_seconds": 30}),
        )
        .await;
    clock.advance(TimeDelta::seconds(45));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    clock.advance(TimeDelta::seconds(30));
    // `overdue` is past its deadline but not yet reaped: a late answer must not land.

    for (record, status) in [
        (&cancelled, "cancelled"),
        (&reaped, "expired"),
        (&overdue, "expired"),
    ] {
        let link = link_of(record);
        let (code_, err) = post_json(&link, json!({"text": "too late"})).await;
        assert_eq!(
            (code_, code(&err)),
            (StatusCode::CONFLICT, "already_resolved"),
            "{status}: {err}"
        );
        assert_eq!(err["record"]["status"], status, "{err}");
        let form = post_form(&link, &[("q1.text", "too late")]).await;
        assert_eq!(form.status(), StatusCode::SEE_OTHER);
        let (code_, _, html) = page(&link).await;
        assert_eq!(code_, StatusCode::OK);
        assert!(
            html.contains(&format!("This request is {status}")),
            "{html}"
        );
        assert!(!html.contains("<form"), "{html}");
        let now = status_of(&s, &id_of(record)).await;
        assert_eq!(now["status"], status);
        assert!(now["outcome"]["questions"][0]["answer"].is_null());
    }
}

/// The text of the page's `edited_arguments` textarea, as a browser would submit it.
fn textarea(html: &str, name: &str) -> String {
    let open = format!("name=\"{name}\"");
    let start = html.find(&open).expect("the textarea is on the page");
    let rest = &html[start..];
    let body = &rest[rest.find('>').expect("tag end") + 1..];
    let text = &body[..body.find("</textarea>").expect("textarea end")];
    text.replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

#[tokio::test]
async fn the_page_form_approves_or_denies_an_editable_action() {
    let s = TestServer::start().await;
    let approval = json!({"questions": [{"text": "Delete the branch?", "kind": "approval",
        "action": {"name": "git.delete", "arguments": {"branch": "old"}}, "allow_edit": true}]});
    let mut links = Vec::new();
    for _ in 0..4 {
        links.push(link_of(&s.ask(&s.admin, approval.clone()).await));
    }
    let (_, _, html) = page(&links[0]).await;
    let prefilled = textarea(&html, "q1.edited_arguments");
    assert_eq!(
        serde_json::from_str::<Value>(&prefilled).expect("the arguments as JSON"),
        json!({"branch": "old"})
    );

    let outcome_of = |link: &str| {
        let id = link
            .rsplit_once("/a/")
            .and_then(|(_, t)| t.split_once('.'))
            .map(|(id, _)| id.to_owned())
            .expect("id");
        let s = &s;
        async move { status_of(s, &id).await["outcome"]["questions"][0].clone() }
    };

    // Deny, leaving the prefilled arguments as they are.
    let response = post_form(
        &links[0],
        &[
            ("q1.decision", "deny"),
            ("q1.edited_arguments", &prefilled),
            ("q1.reason", "keep it"),
        ],
    )
    .await;
    assert_eq!(
        response.status(),
        StatusCode::SEE_OTHER,
        "a plain deny works"
    );
    let q = outcome_of(&links[0]).await;
    assert_eq!(
        (&q["decision"], &q["reason"]),
        (&json!("deny"), &json!("keep it"))
    );
    assert!(q.get("edited_arguments").is_none(), "{q}");

    // Approve without touching the arguments: nothing was edited.
    let response = post_form(
        &links[1],
        &[
            ("q1.decision", "approve"),
            ("q1.edited_arguments", &prefilled),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let q = outcome_of(&links[1]).await;
    assert_eq!(q["decision"], "approve");
    assert!(q.get("edited_arguments").is_none(), "{q}");

    // Approve with edits: the edits are the answer.
    let response = post_form(
        &links[2],
        &[
            ("q1.decision", "approve"),
            ("q1.edited_arguments", "{\"branch\": \"older\"}"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let q = outcome_of(&links[2]).await;
    assert_eq!(q["edited_arguments"], json!({"branch": "older"}), "{q}");

    // Edits that are not JSON are refused, not passed on as text.
    let response = post_form(
        &links[3],
        &[
            ("q1.decision", "approve"),
            ("q1.edited_arguments", "{branch: older"),
        ],
    )
    .await;
    assert_eq!(response.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let html = response.text().await.expect("html");
    assert!(html.contains("role=\"alert\""), "{html}");
    assert!(html.contains("JSON"), "{html}");
    assert!(outcome_of(&links[3]).await.is_null(), "still pending");
}

#[tokio::test]
async fn the_page_form_grants_the_one_scope_an_action_offers() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Allow reading the wiki?", "kind": "approval",
                    "action": {"name": "wiki.read", "arguments": {}}, "scopes": ["session"]}]}),
        )
        .await;
    let link = link_of(&record);
    let (_, _, html) = page(&link).await;
    assert!(
        html.contains("name=\"q1.scope\" value=\"session\""),
        "the form carries the only scope offered: {html}"
    );
    let response = post_form(
        &link,
        &[("q1.decision", "approve"), ("q1.scope", "session")],
    )
    .await;
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let q = status_of(&s, &id_of(&record)).await["outcome"]["questions"][0].clone();
    assert_eq!(
        (&q["decision"], &q["scope"]),
        (&json!("approve"), &json!("session"))
    );
}

#[tokio::test]
async fn a_quorum_request_link_shows_the_approvals_and_offers_no_form() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Open the firewall?", "kind": "approval",
                                  "action": {"name": "firewall.open", "arguments": {"port": 22}}}],
                   "approvals_required": 2}),
        )
        .await;
    let (link, id) = (link_of(&record), id_of(&record));
    let alice = s
        .key(clarify_store::Role::Responder, "alice", "default")
        .await;
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::ACCEPTED);

    let (status, _, html) = page(&link).await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("1 of 2 approvals"), "{html}");
    assert!(html.contains("(by alice)"), "{html}");
    assert!(html.contains("Open the firewall?"), "{html}");
    assert!(
        !html.contains("<form"),
        "nothing to answer through the link: {html}"
    );
    let (status, err) = post_json(&link, json!({"decision": "approve"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "quorum_needs_identity");
    let (_, still) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(still["votes"].as_array().map(Vec::len), Some(1), "{still}");
}
