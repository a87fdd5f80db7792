//! Receipts: every resolved request carries its decision signed, bound to the exact arguments;
//! `/.well-known/jwks.json` publishes the keys; `POST /v1/receipts/spend` spends one once,
//! whatever the instances; a rotation keeps older receipts verifying.

use clarify_model::receipt::{ReceiptClaims, args_sha256, verify};
use clarify_store::{Role, Store, StoreOptions};
use clarify_testkit::postgres_url;
use jsonwebtoken::jwk::JwkSet;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

fn transfer(amount: u64) -> Value {
    json!({"questions": [{"id": "pay", "text": "Send the money?",
        "action": {"name": "transfer", "arguments": {"amount": amount, "to": "bob"}},
        "allow_edit": true}]})
}

/// The `kid`s of a key set, in its order.
fn kids(keys: &JwkSet) -> Vec<&str> {
    keys.keys
        .iter()
        .filter_map(|k| k.common.key_id.as_deref())
        .collect()
}

async fn jwks(s: &TestServer) -> JwkSet {
    let response = s
        .client
        .get(format!("{}/.well-known/jwks.json", s.url))
        .send()
        .await
        .expect("jwks");
    assert_eq!(response.status(), StatusCode::OK);
    response.json().await.expect("a key set")
}

/// The answer that approves the transfer.
fn approve() -> Value {
    json!({"answers": {"pay": {"decision": "approve"}}})
}

/// A server on a SQLite file of its own (kept while the directory is), and the file's URL, for
/// the tests that reach its store from outside.
async fn on_sqlite() -> (tempfile::TempDir, String, TestServer) {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let s = TestServer::build(&url, StoreOptions::default(), |_| {}).await;
    (dir, url, s)
}

/// Asks for a transfer of `amount` and answers it with `answer`; the resolved record.
async fn decided(s: &TestServer, amount: u64, answer: Value) -> Value {
    let created = s.ask(&s.admin, transfer(amount)).await;
    let id = created["id"].as_str().expect("id");
    assert!(
        created.get("receipt").is_none(),
        "a pending request has no receipt"
    );
    let (status, outcome) = s
        .post(&format!("/v1/requests/{id}/answer"), &s.admin, answer)
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(
        outcome["receipt"], record["receipt"],
        "the answer's outcome and the record carry the same receipt"
    );
    assert_eq!(record["outcome"]["receipt"], record["receipt"]);
    record
}

#[tokio::test]
async fn an_approval_is_signed_with_the_claims_and_the_exact_arguments() {
    let s = TestServer::start().await;
    let record = decided(
        &s,
        100,
        json!({"answers": {"pay": {"decision": "approve", "reason": "ok"}}}),
    )
    .await;
    let receipt = record["receipt"].as_str().expect("a receipt");
    let claims: ReceiptClaims = verify(receipt, &jwks(&s).await).expect("verifies");
    assert_eq!(claims.iss, s.url);
    assert_eq!(claims.sub, record["id"].as_str().expect("id"));
    assert_eq!(claims.tid, "default");
    assert_eq!(claims.status, "answered");
    assert!(claims.by.starts_with("key:admin"), "{}", claims.by);
    assert_eq!(
        claims.iat,
        chrono::DateTime::parse_from_rfc3339(record["resolved_at"].as_str().expect("at"))
            .expect("time")
            .timestamp()
    );
    // seq names the resolution's event in the audit chain.
    let (_, audit) = s.get("/v1/audit", &s.admin).await;
    let answered = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "answered" && e["request_id"] == record["id"])
        .expect("the answered event");
    assert_eq!(answered["seq"].as_u64(), Some(claims.seq));
    assert_eq!(claims.approvals.len(), 1);
    let approval = &claims.approvals[0];
    assert_eq!(
        (
            approval.id.as_str(),
            approval.action.as_str(),
            approval.decision.as_str()
        ),
        ("pay", "transfer", "approve")
    );
    assert_eq!(
        approval.args_sha256,
        args_sha256(&json!({"to": "bob", "amount": 100}))
    );
    claims
        .check(Some("transfer"), Some(&json!({"amount": 100, "to": "bob"})))
        .expect("covers the call as proposed");
    assert!(
        claims
            .check(
                Some("transfer"),
                Some(&json!({"amount": 10000, "to": "bob"}))
            )
            .is_err(),
        "another amount is not approved"
    );
    // Read again, the receipt is the same: signing is deterministic.
    let (_, again) = s
        .get(&format!("/v1/requests/{}", claims.sub), &s.admin)
        .await;
    assert_eq!(again["receipt"], record["receipt"]);
}

#[tokio::test]
async fn edited_arguments_are_the_ones_bound_and_a_denial_binds_nothing() {
    let s = TestServer::start().await;
    let keys = jwks(&s).await;
    let edited = decided(
        &s,
        100,
        json!({"answers": {"pay": {"decision": "approve",
            "edited_arguments": {"amount": 50, "to": "bob"}}}}),
    )
    .await;
    let claims = verify(edited["receipt"].as_str().expect("receipt"), &keys).expect("verifies");
    claims
        .check(Some("transfer"), Some(&json!({"amount": 50, "to": "bob"})))
        .expect("the person's arguments are the approved ones");
    assert!(
        claims
            .check(Some("transfer"), Some(&json!({"amount": 100, "to": "bob"})))
            .is_err(),
        "the agent's own arguments are not"
    );

    let denied = decided(
        &s,
        100,
        json!({"answers": {"pay": {"decision": "deny", "reason": "no"}}}),
    )
    .await;
    let claims = verify(denied["receipt"].as_str().expect("receipt"), &keys).expect("verifies");
    assert_eq!(claims.approvals[0].decision, "deny");
    let refused = claims
        .check(Some("transfer"), Some(&json!({"amount": 100, "to": "bob"})))
        .expect_err("a denial approves nothing");
    assert!(refused.to_string().contains("not approved"), "{refused}");

    // Cancelled and expired requests are signed too, as not decided.
    let created = s.ask(&s.admin, transfer(1)).await;
    let id = created["id"].as_str().expect("id");
    let (status, cancelled) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{cancelled}");
    let claims = verify(cancelled["receipt"].as_str().expect("receipt"), &keys).expect("verifies");
    assert_eq!(claims.status, "cancelled");
    assert_eq!(claims.approvals[0].decision, "none");
}

#[tokio::test]
async fn a_receipt_is_spent_once_and_a_forged_one_not_at_all() {
    let s = TestServer::start().await;
    let record = decided(&s, 100, approve()).await;
    let receipt = record["receipt"].as_str().expect("receipt");
    // Any key of the tenant may spend it: the executor has an agent key of its own.
    let executor = s.key(Role::Agent, "executor", "default").await;
    let (status, spent) = s
        .post("/v1/receipts/spend", &executor, json!({"receipt": receipt}))
        .await;
    assert_eq!(status, StatusCode::OK, "{spent}");
    assert_eq!(spent["request_id"], record["id"]);
    assert_eq!(spent["status"], "answered");
    let (status, again) = s
        .post("/v1/receipts/spend", &executor, json!({"receipt": receipt}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{again}");
    assert_eq!(code(&again), "receipt_spent");
    // The spend is in the audit chain.
    let (_, audit) = s.get("/v1/audit", &s.admin).await;
    assert!(
        audit["events"]
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["kind"] == "receipt.spent"),
        "{audit}"
    );

    // Another tenant's key cannot spend this tenant's receipt.
    let other = decided(&s, 7, approve()).await;
    let elsewhere = s.key(Role::Agent, "elsewhere", "other-tenant").await;
    let (status, body) = s
        .post(
            "/v1/receipts/spend",
            &elsewhere,
            json!({"receipt": other["receipt"]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(code(&body), "receipt_invalid");

    // A receipt whose payload was changed is refused, naming the signature.
    let parts: Vec<&str> = receipt.split('.').collect();
    let forged = format!("{}.{}.{}", parts[0], parts[1], &parts[1][..20]);
    for bad in [forged.as_str(), "not.a.receipt", ""] {
        let (status, body) = s
            .post("/v1/receipts/spend", &executor, json!({"receipt": bad}))
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
        assert_eq!(code(&body), "receipt_invalid");
    }
    // No key, no spend.
    let (status, _) = s
        .post("/v1/receipts/spend", "", json!({"receipt": receipt}))
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_rotation_new_receipts_use_the_new_key_and_old_ones_still_verify() {
    let (_dir, url, s) = on_sqlite().await;
    let before = decided(&s, 100, approve()).await;
    let old_kid = s.state.receipts.signing_kid();
    // `clarify receipts rotate` works on the store from another process.
    let cli = Store::open(&url, StoreOptions::default())
        .await
        .expect("store opens");
    let new_key = cli.rotate_receipt_key().await.expect("rotated");
    assert_ne!(new_key.kid(), old_kid);
    // Each server reads the keys again on its own (every 30 seconds); here, now.
    s.state.receipts.reload(&s.store).await.expect("reloaded");
    let keys = jwks(&s).await;
    let kids = kids(&keys);
    assert_eq!(kids, [new_key.kid(), old_kid.as_str()], "newest first");
    let after = decided(&s, 100, approve()).await;
    let header =
        jsonwebtoken::decode_header(after["receipt"].as_str().expect("receipt")).expect("header");
    assert_eq!(header.kid.as_deref(), Some(new_key.kid()));
    verify(after["receipt"].as_str().expect("receipt"), &keys).expect("the new one verifies");
    // The receipt read before the rotation still verifies with the published set.
    verify(before["receipt"].as_str().expect("receipt"), &keys).expect("the old one too");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_two_instances_sign_alike_and_spend_once_between_them() {
    let Some(pg) = postgres_url() else { return };
    let a = TestServer::build(&pg, StoreOptions::default(), |_| {}).await;
    let b = TestServer::build(&pg, StoreOptions::default(), |_| {}).await;
    assert_eq!(
        a.state.receipts.signing_kid(),
        b.state.receipts.signing_kid(),
        "every instance signs with the store's key"
    );
    // Answered on a; the outcome carries its receipt once the chain numbered it.
    let record = decided(
        &a,
        100,
        json!({"answers": {"pay": {"decision": "approve"}}}),
    )
    .await;
    let receipt = record["receipt"].as_str().expect("a receipt on postgres");
    let claims = verify(receipt, &jwks(&b).await).expect("b's key set verifies a's receipt");
    let id = record["id"].as_str().expect("id");
    let token = a
        .key(
            Role::Agent,
            &format!("exec-{}", crate::support::suffix()),
            "default",
        )
        .await;
    // Both instances race to spend it: exactly one wins.
    let (one, two) = tokio::join!(
        a.post("/v1/receipts/spend", &token, json!({"receipt": receipt})),
        b.post("/v1/receipts/spend", &token, json!({"receipt": receipt})),
    );
    let mut statuses = [one.0, two.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::OK, StatusCode::CONFLICT],
        "{one:?} {two:?}"
    );
    assert_eq!(claims.sub, id);
}

#[tokio::test]
async fn a_configured_key_signs_and_the_stores_keys_still_verify_what_they_signed() {
    let (_dir, _, s) = on_sqlite().await;
    let before = decided(&s, 100, approve()).await;
    let stored_kid = s.state.receipts.signing_kid();
    let store = s.halt().await.0;
    // The operator moves the key out of the database: `[receipts] signing_key`.
    let s = TestServer::on_store(store, |c| c.receipts.signing_key = Some([9; 32])).await;
    let configured_kid = s.state.receipts.signing_kid();
    assert_ne!(configured_kid, stored_kid);
    let keys = jwks(&s).await;
    let kids = kids(&keys);
    assert_eq!(kids, [configured_kid.as_str(), stored_kid.as_str()]);
    let after = decided(&s, 100, approve()).await;
    let header =
        jsonwebtoken::decode_header(after["receipt"].as_str().expect("receipt")).expect("header");
    assert_eq!(header.kid.as_deref(), Some(configured_kid.as_str()));
    verify(before["receipt"].as_str().expect("receipt"), &keys).expect("the old one verifies");
}
