//! Four eyes: with `forbid_self_approval`, the person a request acts for (`on_behalf_of`)
//! cannot answer or vote on it through the API, the inbox or an answer link; anyone else can.

use clarify_store::{Role, StoreOptions};
use reqwest::StatusCode;
use reqwest::header::COOKIE;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

async fn server(forbid: bool) -> TestServer {
    let options = StoreOptions {
        forbid_self_approval: forbid,
        ..StoreOptions::default()
    };
    TestServer::build("memory:", options, |_| {}).await
}

fn deploy_for(person: &str) -> Value {
    json!({"question": "Deploy to production?", "choices": ["yes", "no"], "on_behalf_of": person})
}

async fn status_of(s: &TestServer, id: &str) -> String {
    let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    record["status"].as_str().unwrap_or_default().to_owned()
}

#[tokio::test]
async fn the_person_a_request_acts_for_cannot_answer_it_over_the_api() {
    let s = server(true).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let record = s.ask(&s.admin, deploy_for("Alice")).await;
    assert_eq!(record["on_behalf_of"], "Alice");
    let id = record["id"].as_str().expect("as the test set it up");
    let path = format!("/v1/requests/{id}/answer");
    let (status, err) = s.post(&path, &alice, json!({"option": "yes"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "self_approval");
    assert_eq!(status_of(&s, id).await, "pending", "nothing was answered");
    let (status, outcome) = s.post(&path, &bob, json!({"option": "yes"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "bob");
}

#[tokio::test]
async fn nor_through_an_inbox_session_or_the_anonymous_link() {
    let s = server(true).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let record = s.ask(&s.admin, deploy_for("alice")).await;
    let id = record["id"]
        .as_str()
        .expect("as the test set it up")
        .to_owned();

    // The inbox: a session opened with alice's key.
    let http = clarify_client::http::client().expect("an HTTP client");
    let login = http
        .post(format!("{}/v1/login", s.url))
        .json(&json!({"key": alice}))
        .send()
        .await
        .expect("as the test set it up");
    let session = login
        .headers()
        .get_all(reqwest::header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|h| {
            h.split(';')
                .next()?
                .strip_prefix("clarify_session=")
                .map(str::to_owned)
        })
        .expect("a session");
    let me: Value = login.json().await.expect("as the test set it up");
    let response = http
        .post(format!("{}/v1/requests/{id}/answer", s.url))
        .header(COOKIE, format!("clarify_session={session}"))
        .header(
            "x-csrf-token",
            me["csrf_token"].as_str().expect("as the test set it up"),
        )
        .json(&json!({"option": "yes"}))
        .send()
        .await
        .expect("as the test set it up");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let err: Value = response.json().await.expect("as the test set it up");
    assert_eq!(code(&err), "self_approval");

    // The anonymous link says nobody in particular, so it cannot answer for someone else.
    let link = record["answer_url"].as_str().expect("answer link");
    let response = http
        .post(link)
        .json(&json!({"option": "yes"}))
        .send()
        .await
        .expect("as the test set it up");
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let err: Value = response.json().await.expect("as the test set it up");
    assert_eq!(code(&err), "self_approval", "{err}");
    assert_eq!(status_of(&s, &id).await, "pending");
}

#[tokio::test]
async fn without_four_eyes_the_person_may_answer_and_the_outcome_says_where_from() {
    let s = server(false).await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let record = s.ask(&s.admin, deploy_for("alice")).await;
    let id = record["id"].as_str().expect("as the test set it up");
    let (status, outcome) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_via"], "api");

    let record = s.ask(&s.admin, deploy_for("alice")).await;
    let link = record["answer_url"].as_str().expect("answer link");
    let response = clarify_client::http::client()
        .expect("an HTTP client")
        .post(link)
        .json(&json!({"option": "no"}))
        .send()
        .await
        .expect("as the test set it up");
    assert_eq!(response.status(), StatusCode::OK);
    let (_, answered) = s
        .get(
            &format!(
                "/v1/requests/{}",
                record["id"].as_str().expect("as the test set it up")
            ),
            &s.admin,
        )
        .await;
    assert_eq!(answered["outcome"]["answered_via"], "link", "{answered}");
}
