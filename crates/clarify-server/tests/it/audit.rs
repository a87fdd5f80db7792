//! `GET /v1/audit`: a tenant's events with their audit-chain hashes, for admins only, paged.

use clarify_store::Role;
use reqwest::StatusCode;
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::support::{TestServer, code};

#[tokio::test]
async fn admins_read_their_tenants_events_with_hashes_page_by_page() {
    let s = TestServer::start().await;
    let first = s.ask(&s.admin, json!({"question": "Ship?"})).await;
    let id = first["id"].as_str().expect("id").to_owned();
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let other = s.key(Role::Admin, "other-admin", "elsewhere").await;
    s.ask(&other, json!({"question": "Not yours?"})).await;

    let (status, page) = s.get("/v1/audit", &s.admin).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let events = page["events"].as_array().expect("events");
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["created", "answered"], "only this tenant's: {page}");
    assert!(events.iter().all(|e| e["request_id"] == id.as_str()));
    assert!(
        events[1]["actor"]
            .as_str()
            .is_some_and(|a| a.starts_with("admin")),
        "{page}"
    );
    assert_eq!(page["next_after"], json!(null));
    // The second event's hash links to the first's: SHA-256 of its hash and the event's
    // canonical JSON (the events are consecutive in this store's chain).
    let second = &events[1];
    let canonical = json!({
        "actor": second["actor"], "at": chrono::DateTime::parse_from_rfc3339(
            second["at"].as_str().expect("at")).expect("time").timestamp_millis(),
        "channel": second["channel"], "kind": second["kind"], "request_id": second["request_id"],
        "seq": second["seq"], "tenant": "default",
    });
    let mut digest = Sha256::new();
    digest.update(events[0]["hash"].as_str().expect("hash").as_bytes());
    digest.update(serde_json::to_string(&canonical).expect("json").as_bytes());
    let expected: String = digest
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(second["hash"], expected.as_str());

    let (_, one) = s.get("/v1/audit?limit=1", &s.admin).await;
    assert_eq!(one["events"].as_array().map(Vec::len), Some(1));
    let next = one["next_after"].as_u64().expect("a next page");
    let (_, rest) = s
        .get(&format!("/v1/audit?after={next}&limit=1"), &s.admin)
        .await;
    assert_eq!(rest["events"][0]["kind"], "answered");

    for bad in ["?after=-1", "?after=x", "?limit=0", "?limit=1001"] {
        let (status, body) = s.get(&format!("/v1/audit{bad}"), &s.admin).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {body}");
    }
    for role in [Role::Agent, Role::Responder] {
        let key = s.key(role, &format!("not-admin-{role}"), "default").await;
        let (status, body) = s.get("/v1/audit", &key).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(code(&body), "forbidden");
    }
}
