//! Revoking an API key while servers trust it: through one instance's revoke route it is refused
//! there at once; revoked anywhere (another instance, or on the store as `clarify keys revoke`
//! does from another process) it is refused by every instance within a second. Two servers share
//! one SQLite file, then one PostgreSQL database.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clarify_store::{Role, Store, StoreOptions};
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{TestServer, suffix};
use clarify_testkit::postgres_url;

/// What the contract allows a revocation to take to reach every instance.
const WITHIN: Duration = Duration::from_secs(1);
/// Slack for the polling request itself.
const MARGIN: Duration = Duration::from_millis(100);

async fn status(s: &TestServer, token: &str) -> StatusCode {
    s.get("/v1/requests?limit=1", token).await.0
}

/// Polls `s` with `token` from `since` until it is refused; fails if that takes longer than
/// [`WITHIN`] and a margin.
async fn refused_within_a_second(s: &TestServer, token: &str, since: Instant, what: &str) {
    loop {
        let code = status(s, token).await;
        if code == StatusCode::UNAUTHORIZED {
            eprintln!("{what}: refused after {:?}", since.elapsed());
            return;
        }
        assert_eq!(code, StatusCode::OK, "{what}");
        assert!(
            since.elapsed() <= WITHIN + MARGIN,
            "{what}: still accepted {:?} after the revocation",
            since.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn revocations_reach_every_instance(url: &str) {
    let a = TestServer::build(url, StoreOptions::default(), |_| {}).await;
    let b = TestServer::build(url, StoreOptions::default(), |_| {}).await;
    // Another process's handle on the same database, as `clarify keys revoke` has.
    let cli = Store::open(url, StoreOptions::default())
        .await
        .expect("store opens");

    // Revoked through a's route: refused by a at once, also while the key is in use there.
    let name = format!("bot-{}", suffix());
    let token = a.key(Role::Agent, &name, "default").await;
    assert_eq!(status(&a, &token).await, StatusCode::OK);
    assert_eq!(status(&b, &token).await, StatusCode::OK);
    let busy = Arc::new(AtomicBool::new(true));
    let hammer = {
        let (client, url, token, busy) = (
            a.client.clone(),
            format!("{}/v1/requests?limit=1", a.url),
            token.clone(),
            busy.clone(),
        );
        tokio::spawn(async move {
            while busy.load(Ordering::Relaxed) {
                let _ = client.get(&url).bearer_auth(&token).send().await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(20)).await;
    // b trusts the key too, right before it is revoked.
    assert_eq!(status(&b, &token).await, StatusCode::OK);
    let (code, _) = a
        .post(&format!("/v1/keys/{name}/revoke"), &a.admin, json!({}))
        .await;
    assert_eq!(code, StatusCode::OK);
    let revoked = Instant::now();
    for _ in 0..20 {
        assert_eq!(
            status(&a, &token).await,
            StatusCode::UNAUTHORIZED,
            "a key revoked through this instance is refused here at once"
        );
    }
    busy.store(false, Ordering::Relaxed);
    hammer.await.expect("hammer");
    refused_within_a_second(&b, &token, revoked, "revoked on a, used on b").await;

    // Revoked on the store by another process: refused by both within a second.
    let name = format!("bot-{}", suffix());
    let token = a.key(Role::Agent, &name, "default").await;
    assert_eq!(status(&a, &token).await, StatusCode::OK);
    assert_eq!(status(&b, &token).await, StatusCode::OK);
    cli.revoke_key(&name, &clarify_store::Actor::system())
        .await
        .expect("revoked");
    let revoked = Instant::now();
    refused_within_a_second(&a, &token, revoked, "revoked on the store, used on a").await;
    refused_within_a_second(&b, &token, revoked, "revoked on the store, used on b").await;

    // A trusted key's id with another secret is refused.
    let name = format!("bot-{}", suffix());
    let token = a.key(Role::Agent, &name, "default").await;
    assert_eq!(status(&a, &token).await, StatusCode::OK);
    let (id_part, secret) = token.rsplit_once('_').expect("ck_<id>_<secret>");
    let forged = format!("{id_part}_{}", "x".repeat(secret.len()));
    assert_eq!(status(&a, &forged).await, StatusCode::UNAUTHORIZED);
    assert_eq!(status(&a, &token).await, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocations_reach_every_instance_on_sqlite() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    revocations_reach_every_instance(&url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revocations_reach_every_instance_on_postgres() {
    let Some(pg) = postgres_url() else { return };
    revocations_reach_every_instance(&pg).await;
}
