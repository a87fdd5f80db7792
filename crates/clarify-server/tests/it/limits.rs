//! `--max-waiters` and `--rate-limit`, each at its edge: the last admitted caller, the first
//! refused one, its error and `Retry-After`, the counters in `/metrics`, and `/mcp` counting
//! against the same limits.

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, Utc};
use clarify_store::{ManualClock, Role, StoreOptions};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

async fn refused(response: reqwest::Response, status: StatusCode, expected: &str) {
    assert_eq!(response.status(), status);
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    assert!(
        retry_after.is_some_and(|s| s >= 1),
        "Retry-After: {retry_after:?}"
    );
    let body: Value = response.json().await.expect("a JSON error");
    assert_eq!(code(&body), expected, "{body}");
}

fn mcp_initialize(s: &TestServer, key: &str) -> reqwest::RequestBuilder {
    s.client
        .post(format!("{}/mcp", s.url))
        .bearer_auth(key)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "limits", "version": "1"}}
        }))
}

#[tokio::test]
async fn long_polls_event_streams_and_mcp_share_the_waiter_limit() {
    let s = TestServer::build("memory:", StoreOptions::default(), |c| c.max_waiters = 2).await;
    let record = s.ask(&s.admin, json!({"question": "Wait for me?"})).await;
    let id = record["id"].as_str().expect("id").to_owned();
    let wait = |s: &TestServer| {
        s.client
            .get(format!(
                "{}/v1/requests/{id}/wait?timeout_seconds=60",
                s.url
            ))
            .bearer_auth(&s.admin)
            .send()
    };
    let events = |s: &TestServer| {
        s.client
            .get(format!("{}/v1/events", s.url))
            .bearer_auth(&s.admin)
            .send()
    };

    // The last two admitted: a stream and a long-poll.
    let stream = events(&s).await.expect("a stream");
    assert_eq!(stream.status(), StatusCode::OK);
    let poll = tokio::spawn(wait(&s));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.metric("clarify_waiters").await < 2.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the long-poll never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    // The first refused, whichever kind.
    let over = [
        wait(&s).await.expect("a refusal"),
        events(&s).await.expect("a refusal"),
        mcp_initialize(&s, &s.admin)
            .send()
            .await
            .expect("a refusal"),
    ];
    for response in over {
        refused(
            response,
            StatusCode::SERVICE_UNAVAILABLE,
            "too_many_waiters",
        )
        .await;
    }
    assert_eq!(s.metric("clarify_waiters_refused_total").await, 3.0);
    // Other routes are not limited.
    let (status, _) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(status, StatusCode::OK);

    // A long-poll that returns gives its place back.
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let polled = poll
        .await
        .expect("poll task")
        .expect("the long-poll returns");
    assert_eq!(polled.status(), StatusCode::OK);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while s.metric("clarify_waiters").await > 1.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the place was not given back"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let response = mcp_initialize(&s, &s.admin).send().await.expect("admitted");
    assert_eq!(response.status(), StatusCode::OK, "/mcp is admitted again");
    drop(response);
    drop(stream);
}

#[tokio::test]
async fn a_key_past_its_rate_gets_429_with_retry_after_and_other_keys_do_not() {
    let clock = Arc::new(ManualClock::new(Utc::now()));
    let options = StoreOptions {
        clock: clock.clone(),
        reaper_interval: None,
        ..StoreOptions::default()
    };
    let s = TestServer::build("memory:", options, |c| c.rate_limit = NonZeroU32::new(2)).await;
    let other = s.key(Role::Agent, "other", "default").await;

    // A burst of two is admitted; the third request in the same instant is refused.
    for _ in 0..2 {
        let (status, body) = s.get("/v1/requests", &s.admin).await;
        assert_eq!(status, StatusCode::OK, "{body}");
    }
    let third = s
        .client
        .get(format!("{}/v1/requests", s.url))
        .bearer_auth(&s.admin)
        .send()
        .await
        .expect("a response");
    assert_eq!(
        third
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1"),
        "half a second to wait rounds up to 1"
    );
    refused(third, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // /mcp counts against the same key's rate.
    let mcp = mcp_initialize(&s, &s.admin)
        .send()
        .await
        .expect("a response");
    refused(mcp, StatusCode::TOO_MANY_REQUESTS, "rate_limited").await;
    // Another key has its own allowance.
    let (status, _) = s.get("/v1/requests", &other).await;
    assert_eq!(status, StatusCode::OK);
    // Unauthenticated calls are refused before they count, and unlimited routes stay open.
    let (status, _) = s.get("/v1/requests", "ck_nobody").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(s.metric("clarify_rate_limited_total").await, 2.0);

    // At 2 per second, one more request is allowed every 500 ms.
    clock.advance(TimeDelta::milliseconds(499));
    let (status, _) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "not yet");
    clock.advance(TimeDelta::milliseconds(1));
    let (status, _) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(status, StatusCode::OK, "one more after 500 ms");
    let (status, _) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "and only one");
}

#[tokio::test]
async fn without_a_rate_limit_a_key_is_never_refused() {
    let s = TestServer::start().await;
    for _ in 0..50 {
        let (status, _) = s.get("/v1/requests", &s.admin).await;
        assert_eq!(status, StatusCode::OK);
    }
}
