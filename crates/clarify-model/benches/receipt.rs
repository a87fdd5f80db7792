//! What a receipt costs: `cargo bench -p clarify-model --bench receipt`.
//!
//! A resolved approval (one approval question whose arguments are a small object, as a tool
//! call's are) is turned into its claims and signed, as the server does when it renders a
//! resolved record it has not signed lately; and a receipt is verified, as an executor or
//! `POST /v1/receipts/spend` does. Printed: the median and the fastest of 15 batches of 2,000,
//! per receipt, in microseconds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use clarify_core::{Limits, Resolution, Status, Submission, parse_request, parse_submission};
use clarify_model::receipt::{ReceiptClaims, ReceiptKey, verify};
use clarify_model::{Actor, RequestRecord, StoredResolution};
use jsonwebtoken::jwk::JwkSet;
use serde_json::json;

const BATCH: u32 = 2_000;
const BATCHES: usize = 15;

fn main() {
    let request = parse_request(
        &json!({"question": "Deploy?", "action": {"name": "deploy",
            "arguments": {"service": "api", "version": "1.4.2", "replicas": 3,
                          "regions": ["eu-west-1", "us-east-1"], "canary": true}}}),
        &Limits::default(),
    )
    .expect("a request");
    let Ok(Submission::Answered(answers)) =
        parse_submission(&request, &json!({"decision": "approve"}))
    else {
        panic!("an answer");
    };
    let now = Utc::now();
    let mut resolution = StoredResolution::new(
        Resolution::Answered(answers),
        Actor::new("alice", "inbox").as_principal("key:alice"),
        now,
    );
    resolution.seq = Some(42);
    let record = RequestRecord {
        id: "req_0123456789abcdefghijklmnop".to_owned(),
        tenant: "default".to_owned(),
        request: Arc::new(request),
        status: Status::Answered,
        created_at: now,
        expires_at: None,
        resolution: Some(resolution),
        votes: Vec::new(),
        remind_at: None,
        escalated_at: None,
        on_call: Vec::new(),
    };
    let key = ReceiptKey::from_seed(&[7; 32], now, None).expect("a key");
    let keys = JwkSet {
        keys: vec![key.jwk().clone()],
    };

    let sign = time(|| {
        let claims = ReceiptClaims::of(&record, "https://clarify.example.com").expect("claims");
        key.sign(&claims).expect("signed")
    });
    println!("claims and signature, per receipt: {}", sign);
    let receipt = key
        .sign(&ReceiptClaims::of(&record, "https://clarify.example.com").expect("claims"))
        .expect("signed");
    let checked = time(|| verify(&receipt, &keys).expect("verifies"));
    println!("verification, per receipt:        {}", checked);
}

/// The median and the fastest batch of `f`, per call.
fn time<T>(mut f: impl FnMut() -> T) -> String {
    let mut batches: Vec<Duration> = (0..BATCHES)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..BATCH {
                std::hint::black_box(f());
            }
            started.elapsed() / BATCH
        })
        .collect();
    batches.sort();
    format!(
        "{:.1} µs median, {:.1} µs fastest",
        micros(batches[BATCHES / 2]),
        micros(batches[0])
    )
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
