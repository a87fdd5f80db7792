//! `GET /v1/audit`: a tenant's events with their audit-chain hashes, for admins only, paged.

use clarify_store::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};
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
    let all = page["events"].as_array().expect("events");
    let kinds: Vec<&str> = all.iter().filter_map(|e| e["kind"].as_str()).collect();
    // The test server's admin key was created first.
    assert_eq!(
        kinds,
        ["key.created", "created", "answered"],
        "only this tenant's: {page}"
    );
    let events = &all[1..];
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
    // The admin's key answered it: who was authenticated is hashed with the rest.
    assert!(
        second["principal"]
            .as_str()
            .is_some_and(|p| p.starts_with("key:admin")),
        "{second}"
    );
    let canonical = json!({
        "actor": second["actor"], "at": chrono::DateTime::parse_from_rfc3339(
            second["at"].as_str().expect("at")).expect("time").timestamp_millis(),
        "channel": second["channel"], "kind": second["kind"], "principal": second["principal"],
        "request_id": second["request_id"], "seq": second["seq"], "tenant": "default",
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

    let (_, one) = s.get("/v1/audit?limit=2", &s.admin).await;
    assert_eq!(one["events"].as_array().map(Vec::len), Some(2));
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

/// Admin actions (a key created and revoked, a grant revoked) are events of the chain, naming
/// who did what to which key or grant, and the event stream of requests leaves them out.
#[tokio::test]
async fn admin_actions_are_in_the_audit_chain_with_who_did_them() {
    let s = TestServer::start().await;
    let (status, created) = s
        .post(
            "/v1/keys",
            &s.admin,
            json!({"name": "ci-bot", "role": "agent"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let key_id = created["key"]["id"].as_str().expect("key id").to_owned();
    let (status, body) = s.post("/v1/keys/ci-bot/revoke", &s.admin, json!({})).await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // A grant, given by an `always` approval and revoked by a responder.
    let alice = s.key(Role::Responder, "alice-audit", "default").await;
    let approval = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Deploy?", "kind": "approval",
                                  "action": {"name": "deploy", "arguments": {"env": "prod"}},
                                  "scopes": ["once", "always"]}]}),
        )
        .await;
    let id = approval["id"].as_str().expect("id");
    let (status, body) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"decision": "approve", "scope": "always"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (_, grants) = s.get("/v1/grants", &s.admin).await;
    let grant_id = grants["grants"][0]["id"]
        .as_str()
        .expect("a grant")
        .to_owned();
    let (status, body) = s
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/grants/{grant_id}"),
            Some(&alice),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    let (_, page) = s.get("/v1/audit", &s.admin).await;
    let admin_events: Vec<&Value> = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"].as_str().is_some_and(|k| k.contains('.')))
        .collect();
    let seen: Vec<(&str, &str, &str)> = admin_events
        .iter()
        .map(|e| {
            (
                e["kind"].as_str().unwrap_or_default(),
                e["subject"].as_str().unwrap_or_default(),
                e["actor"].as_str().unwrap_or("<system>"),
            )
        })
        .collect();
    let admin_name = page["events"][0]["subject"].as_str().unwrap_or_default();
    assert!(admin_name.starts_with("key:"), "{page}");
    let key_subject = format!("key:{key_id}");
    let grant_subject = format!("grant:{grant_id}");
    let admin = admin_actor(&s).await;
    assert_eq!(
        seen,
        [
            ("key.created", admin_name, "<system>"),
            ("key.created", key_subject.as_str(), admin.as_str()),
            ("key.revoked", key_subject.as_str(), admin.as_str()),
            ("key.created", seen[3].1, "<system>"),
            ("grant.revoked", grant_subject.as_str(), "alice-audit"),
        ],
        "{page}"
    );
    assert!(admin_events.iter().all(|e| e["request_id"].is_null()));
    assert_eq!(admin_events[1]["channel"], "api");
    // Each key event names its key and role; other events name none.
    let ci_bot = json!({"name": "ci-bot", "role": "agent"});
    assert_eq!(admin_events[1]["key"], ci_bot, "{page}");
    assert_eq!(admin_events[2]["key"], ci_bot, "{page}");
    assert_eq!(admin_events[0]["key"]["role"], "admin", "{page}");
    assert_eq!(admin_events[4].get("key"), None, "{page}");

    // The event stream shows requests' events only.
    let response = s
        .client
        .get(format!("{}/v1/events", s.url))
        .bearer_auth(&s.admin)
        .header("last-event-id", "0")
        .send()
        .await
        .expect("stream");
    let mut body = String::new();
    let mut stream = response.bytes_stream();
    use futures_util::StreamExt as _;
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout_at(deadline, stream.next()).await {
        body.push_str(&String::from_utf8_lossy(&chunk));
        if body.contains("request.answered") {
            break;
        }
    }
    assert!(body.contains("request.created"), "{body}");
    assert!(
        !body.contains("key."),
        "an admin event on the stream: {body}"
    );
}

/// The name of the test server's admin key.
async fn admin_actor(s: &TestServer) -> String {
    let (_, session) = s.get("/v1/keys", &s.admin).await;
    session
        .as_array()
        .expect("keys")
        .iter()
        .find(|k| k["role"] == "admin")
        .and_then(|k| k["name"].as_str())
        .expect("an admin key")
        .to_owned()
}
