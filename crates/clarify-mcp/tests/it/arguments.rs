//! `get_answer` arguments, each accepted or refused with a message naming the problem; and an
//! `ask_human` that outlives its request's time limit.

use std::sync::Arc;
use std::time::Duration;

use chrono::{TimeDelta, TimeZone, Utc};
use clarify_core::Limits;
use clarify_mcp::{ClarifyMcp, Embedded, Options, Upstream};
use clarify_store::{ManualClock, Store, StoreOptions};
use serde_json::{Value, json};

use crate::support::{self, Client};

async fn session(clock: Option<Arc<ManualClock>>) -> (Client, Store) {
    let mut options = StoreOptions {
        reaper_interval: None,
        ..StoreOptions::default()
    };
    if let Some(clock) = clock {
        options.clock = clock;
    }
    let store = Store::open("memory:", options).await.expect("store");
    let upstream = Upstream::Store(Embedded::new(store.clone(), "default", Limits::default()));
    let mcp = ClarifyMcp::new(
        upstream,
        Options {
            progress_interval: Duration::from_millis(50),
            ..Options::default()
        },
    );
    (support::connect(mcp).await, store)
}

/// Calls `get_answer` with `args`; `Ok(status)` or `Err(message)`.
async fn get_answer(client: &Client, args: Value) -> Result<String, String> {
    let result = client.call("get_answer", args).await;
    if result.is_error == Some(true) {
        Err(support::text(&result))
    } else {
        Ok(result.structured_content.expect("structured")["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned())
    }
}

#[tokio::test]
async fn get_answer_arguments() {
    let (client, _) = session(None).await;
    let asked = client
        .call(
            "ask_human_async",
            json!({"question": "Deploy?", "choices": ["yes", "no"]}),
        )
        .await;
    let id = asked.structured_content.expect("structured")["request_id"].clone();
    let pending = || Ok("pending".to_owned());
    let refused = |part: &str| Err(part.to_owned());
    let cases = [
        (json!({"request_id": id, "wait_seconds": 0}), pending()),
        (json!({"request_id": id, "wait_seconds": "0"}), pending()),
        (json!({"request_id": id, "wait_seconds": 0.0}), pending()),
        (json!({"request_id": id, "wait_seconds": 1}), pending()),
        (json!({}), refused("request_id: required")),
        (json!({"request_id": null}), refused("request_id: required")),
        (json!({"request_id": 7}), refused("request_id: must be")),
        (json!({"request_id": "  "}), refused("request_id: must be")),
        (
            json!({"request_id": id, "wait_seconds": 51}),
            refused("wait_seconds: must be a whole number from 0 to 50, got 51"),
        ),
        (
            json!({"request_id": id, "wait_seconds": -1}),
            refused("got -1"),
        ),
        (
            json!({"request_id": id, "wait_seconds": 2.5}),
            refused("got 2.5"),
        ),
        (
            json!({"request_id": id, "wait_seconds": "soon"}),
            refused("got soon"),
        ),
        (
            json!({"request_id": id, "wait_seconds": [1]}),
            refused("got [1]"),
        ),
        (
            json!({"request_id": "nope", "wait_seconds": 0}),
            refused("no request \"nope\""),
        ),
    ];
    for (args, expected) in cases {
        let got = get_answer(&client, args.clone()).await;
        match (&got, &expected) {
            (Ok(status), Ok(want)) => assert_eq!(status, want, "{args}"),
            (Err(message), Err(part)) => {
                assert!(message.contains(part.as_str()), "{args}: {message}")
            }
            _ => panic!("{args}: got {got:?}, expected {expected:?}"),
        }
    }
}

#[tokio::test]
async fn ask_human_returns_expiry_with_its_note() {
    let clock = Arc::new(ManualClock::new(
        Utc.with_ymd_and_hms(2026, 1, 1, 9, 0, 0)
            .single()
            .expect("a time"),
    ));
    let (client, store) = session(Some(Arc::clone(&clock))).await;
    let ask = tokio::spawn(async move {
        client
            .call(
                "ask_human",
                json!({"question": "Still there?", "timeout_seconds": 600}),
            )
            .await
    });
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while store.count_pending().await.expect("counted") == 0 {
        assert!(tokio::time::Instant::now() < deadline, "never asked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    clock.advance(TimeDelta::seconds(601));
    let result = ask.await.expect("the call ends");
    let outcome = result.structured_content.clone().expect("structured");
    assert_eq!(outcome["status"], "expired");
    assert_eq!(
        support::text(&result),
        format!("expired: {}", outcome["note"].as_str().expect("note"))
    );
    assert!(
        support::text(&result).contains("within 10 minutes"),
        "{}",
        support::text(&result)
    );
}
