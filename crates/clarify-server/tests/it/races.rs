//! Races over HTTP: of many concurrent resolutions of one request, exactly one wins.

use std::sync::Arc;

use chrono::TimeDelta;
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{TestServer, code};

async fn race_answers(s: &TestServer, answers: usize) {
    let responder = s
        .key(Role::Responder, &format!("r{answers}"), "default")
        .await;
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Who wins?", "choices": ["a", "b"]}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let mut tasks = Vec::with_capacity(answers);
    for i in 0..answers {
        let (client, url, key) = (s.client.clone(), s.url.clone(), responder.clone());
        let path = format!("{url}/v1/requests/{id}/answer");
        let option = if i % 2 == 0 { "a" } else { "b" };
        tasks.push(tokio::spawn(async move {
            let r = client
                .post(path)
                .bearer_auth(key)
                .json(&json!({"option": option}))
                .send()
                .await
                .expect("sent");
            let status = r.status();
            let body: serde_json::Value = r.json().await.expect("json");
            (status, body, option)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (status, body, option) = t.await.expect("task");
        match status {
            StatusCode::OK => winners.push(option),
            StatusCode::CONFLICT => assert_eq!(code(&body), "already_resolved"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one answer wins");
    let (_, stored) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(
        stored["outcome"]["questions"][0]["answer"], winners[0],
        "the stored answer is the winner's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_answers_have_one_winner_on_memory() {
    let s = TestServer::start().await;
    race_answers(&s, 1_000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_answers_have_one_winner_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("clarify-races-{}", crate::support::suffix()));
    std::fs::create_dir_all(&dir).expect("dir");
    let url = format!("sqlite://{}", dir.join("races.db").display());
    let s = TestServer::build(&url, StoreOptions::default(), |_| {}).await;
    race_answers(&s, 1_000).await;
}

/// Answers `id` with text in the background; the task returns the HTTP status.
fn spawn_answer(s: &TestServer, key: &str, id: &str) -> tokio::task::JoinHandle<StatusCode> {
    let request = s
        .client
        .post(format!("{}/v1/requests/{id}/answer", s.url))
        .bearer_auth(key)
        .json(&json!({"text": "yes"}));
    tokio::spawn(async move { request.send().await.expect("sent").status() })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_against_answer_has_one_winner() {
    let s = TestServer::start().await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    for _ in 0..50 {
        let id = s.ask(&s.admin, json!({"question": "Go?"})).await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        let answer = spawn_answer(&s, &responder, &id);
        let (cancel, _) = s
            .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
            .await;
        let answer = answer.await.expect("task");
        let wins = [answer, cancel]
            .iter()
            .filter(|s| **s == StatusCode::OK)
            .count();
        assert_eq!(wins, 1, "answer {answer}, cancel {cancel}");
        let (_, stored) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        let expected = if answer == StatusCode::OK {
            "answered"
        } else {
            "cancelled"
        };
        assert_eq!(stored["status"], expected);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expiry_against_answer_has_one_winner() {
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let s = TestServer::with_clock(clock.clone()).await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    for round in 0..40 {
        let id = s
            .ask(
                &s.admin,
                json!({"question": "In time?", "timeout_seconds": 60}),
            )
            .await["id"]
            .as_str()
            .expect("id")
            .to_owned();
        // Even rounds: the answer races the reaper at the deadline. Odd rounds: the answer is
        // in time and the reaper runs just after the deadline.
        let late = round % 2 == 0;
        clock.advance(TimeDelta::seconds(if late { 60 } else { 59 }));
        let answer = spawn_answer(&s, &responder, &id);
        if !late {
            assert_eq!(answer.await.expect("task"), StatusCode::OK);
            clock.advance(TimeDelta::seconds(1));
            assert_eq!(
                s.store.expire_due().await.expect("expire"),
                0,
                "an answered request does not expire"
            );
            let (_, stored) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
            assert_eq!(stored["status"], "answered");
            continue;
        }
        s.store.expire_due().await.expect("expire");
        let answer = answer.await.expect("task");
        let (_, stored) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
        // At its deadline a request accepts no answer: expiry wins whichever arrives first,
        // and the late answer is told the request is already resolved.
        assert_eq!(answer, StatusCode::CONFLICT);
        assert_eq!(stored["status"], "expired");
    }
}
