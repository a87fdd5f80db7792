//! `group:NAME` responders: members from `[groups]` answer, others are refused, and a quorum
//! over a group counts each person once.

use std::collections::BTreeMap;
use std::sync::Arc;

use clarify_store::{Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{TestServer, code};

async fn server() -> TestServer {
    let groups = BTreeMap::from([("sre".to_owned(), vec!["bob".to_owned(), "dave".to_owned()])]);
    let options = StoreOptions {
        groups: Arc::new(groups),
        ..StoreOptions::default()
    };
    TestServer::build("memory:", options, |_| {}).await
}

#[tokio::test]
async fn members_of_a_named_group_answer_and_others_are_refused() {
    let s = server().await;
    let carol = s.key(Role::Responder, "carol", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Restart?", "choices": ["yes", "no"], "responders": ["group:sre"]}),
        )
        .await;
    let id = record["id"].as_str().expect("as the test set it up");
    let path = format!("/v1/requests/{id}/answer");
    let (status, err) = s.post(&path, &carol, json!({"option": "yes"})).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{err}");
    assert_eq!(code(&err), "not_a_responder");
    let (status, pending) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(
        (status, pending["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    let (status, outcome) = s.post(&path, &bob, json!({"option": "yes"})).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_by"], "bob");
    assert_eq!(outcome["answered_via"], "api");
    // The session says which groups a key's name is in.
    let (_, me) = s.get("/v1/session", &bob).await;
    assert_eq!(me["groups"], json!(["sre"]));
    assert_eq!(me["via"], "key");
}

#[tokio::test]
async fn a_quorum_over_a_group_counts_distinct_people() {
    let s = server().await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let dave = s.key(Role::Responder, "dave", "default").await;
    let record = s
        .ask(
            &s.admin,
            json!({
                "questions": [{"text": "Ship it?", "kind": "approval", "action": {"name": "deploy", "arguments": {}}}],
                "responders": ["group:sre"],
                "approvals_required": 2
            }),
        )
        .await;
    let id = record["id"].as_str().expect("as the test set it up");
    let path = format!("/v1/requests/{id}/answer");
    let approve = json!({"decision": "approve"});
    let (status, first) = s.post(&path, &bob, approve.clone()).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{first}");
    let (status, again) = s.post(&path, &bob, approve.clone()).await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(code(&again), "already_voted");
    let (status, outcome) = s.post(&path, &dave, approve).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["votes"].as_array().map(Vec::len), Some(2));
}
