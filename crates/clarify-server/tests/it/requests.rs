//! The request routes: create, read, list, answer, cancel, wait; their status codes and errors.

use std::time::{Duration, Instant};

use clarify_store::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestServer, code};

fn deploy() -> Value {
    json!({"question": "Deploy to prod?", "choices": ["yes", "no"]})
}

#[tokio::test]
async fn create_returns_the_validated_record_with_an_answer_link() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let record = s
        .ask(
            &agent,
            json!({"prompt": "Which region?", "options": [{"title": "EU"}, {"title": "US"}],
                   "context": {"diff": "+1"}, "session": "s1", "agent": "deployer", "tags": ["prod"],
                   "tool_call_id": "call_9", "timeout_seconds": 600}),
        )
        .await;
    assert_eq!(record["status"], "pending");
    assert_eq!(record["questions"][0]["kind"], "single");
    assert_eq!(record["questions"][0]["options"][1]["label"], "US");
    assert_eq!(record["context"], json!({"diff": "+1"}));
    assert_eq!(record["tool_call_id"], "call_9");
    assert_eq!(record["tags"], json!(["prod"]));
    assert!(record["expires_at"].is_string());
    assert!(record["outcome"].is_null());
    let link = record["answer_url"]
        .as_str()
        .expect("agents see the answer link");
    assert!(link.starts_with(&format!("{}/a/", s.url)), "{link}");

    let never = s
        .ask(&agent, json!({"question": "Later?", "timeout_seconds": 0}))
        .await;
    assert!(never["expires_at"].is_null(), "timeout 0 never expires");
}

#[tokio::test]
async fn invalid_requests_are_refused_with_the_problem_named() {
    let s = TestServer::start().await;
    let cases = [
        (json!({"questions": []}), "no_questions"),
        (
            json!({"question": "Pick", "choices": ["a", "b", "c", "d", "e"]}),
            "too_many_options",
        ),
        (
            json!({"question": "Pick", "choices": [{"name": "x"}]}),
            "all_options_dropped",
        ),
        (json!({"question": "  "}), "empty_field"),
        (json!([1, 2]), "not_an_object"),
    ];
    for (body, expected) in cases {
        let (status, err) = s.post("/v1/requests", &s.admin, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {err}");
        assert_eq!(code(&err), expected, "{body}: {err}");
        assert!(!err["error"]["message"].as_str().unwrap_or("").is_empty());
    }
    let (_, page) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(page["requests"], json!([]), "nothing was stored");
}

#[tokio::test]
async fn an_idempotency_key_returns_the_original_request_whatever_its_status() {
    let s = TestServer::start().await;
    let send = |key: &'static str| {
        s.client
            .post(format!("{}/v1/requests", s.url))
            .bearer_auth(&s.admin)
            .header("Idempotency-Key", key)
            .json(&deploy())
            .send()
    };
    let first = send("k-1").await.expect("sent");
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    let id = first["id"].as_str().expect("id");
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"option": "no"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);

    let again = send("k-1").await.expect("sent");
    assert_eq!(again.status(), StatusCode::OK);
    let again: Value = again.json().await.expect("json");
    assert_eq!(again["id"], first["id"]);
    assert_eq!(again["status"], "answered");

    let mut body = deploy();
    body["idempotency_key"] = json!("k-1");
    let (status, by_field) = s.post("/v1/requests", &s.admin, body).await;
    assert_eq!((status, &by_field["id"]), (StatusCode::OK, &first["id"]));

    let mut other = deploy();
    other["idempotency_key"] = json!("other");
    let conflicting = s
        .client
        .post(format!("{}/v1/requests", s.url))
        .bearer_auth(&s.admin)
        .header("Idempotency-Key", "k-1")
        .json(&other)
        .send()
        .await
        .expect("sent");
    assert_eq!(conflicting.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn dedupe_returns_the_pending_twin_only_while_it_is_pending() {
    let s = TestServer::start().await;
    let body = json!({"question": "Proceed?", "session": "s", "dedupe": true});
    let first = s.ask(&s.admin, body.clone()).await;
    let (status, twin) = s.post("/v1/requests", &s.admin, body.clone()).await;
    assert_eq!((status, &twin["id"]), (StatusCode::OK, &first["id"]));
    let id = first["id"].as_str().expect("id");
    s.post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    let fresh = s.ask(&s.admin, body).await;
    assert_ne!(fresh["id"], first["id"]);
}

#[tokio::test]
async fn answers_resolve_once_and_invalid_answers_leave_the_request_pending() {
    let s = TestServer::start().await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    let id = s
        .ask(
            &s.admin,
            json!({"question": "Ship?", "choices": ["yes", "no"], "allow_other": false}),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/v1/requests/{id}/answer");

    for (bad, expected) in [
        (json!({"option": "maybe"}), "unknown_option"),
        (json!({"other": "later"}), "other_not_allowed"),
        (
            json!({"answers": {"q9": {"option": "yes"}}}),
            "unknown_question",
        ),
    ] {
        let (status, err) = s.post(&path, &responder, bad.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{bad}: {err}");
        assert_eq!(code(&err), expected, "{bad}: {err}");
        let (_, record) = s.get(&format!("/v1/requests/{id}"), &responder).await;
        assert_eq!(record["status"], "pending", "still pending after {bad}");
    }

    let (status, outcome) = s
        .post(
            &path,
            &responder,
            json!({"answers": {"q1": {"option": "yes"}}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["status"], "answered");
    assert_eq!(outcome["answered_by"], "alice");
    assert_eq!(outcome["questions"][0]["answer"], "yes");
    assert_eq!(outcome["questions"][0]["mode"], "option");

    let (status, err) = s.post(&path, &s.admin, json!({"option": "no"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(code(&err), "already_resolved");
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("alice"),
        "{err}"
    );
    assert_eq!(
        err["record"]["outcome"]["questions"][0]["answer"], "yes",
        "the first answer stands"
    );

    let (_, record) = s.get(&format!("/v1/requests/{id}"), &responder).await;
    assert_eq!(record["status"], "answered");
    assert_eq!(record["answered_by"], "alice");
    assert!(record["resolved_at"].is_string());
    assert!(
        record.get("answer_url").is_none(),
        "responders do not see answer links"
    );
}

#[tokio::test]
async fn skip_and_cancel_have_their_own_outcomes() {
    let s = TestServer::start().await;
    let skippable = s.ask(&s.admin, deploy()).await;
    let id = skippable["id"].as_str().expect("id");
    let (status, outcome) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"skip": true}),
        )
        .await;
    assert_eq!(
        (status, outcome["status"].as_str()),
        (StatusCode::OK, Some("skipped"))
    );
    assert!(outcome["note"].is_string());

    let strict = s
        .ask(
            &s.admin,
            json!({"question": "Must answer", "allow_skip": false}),
        )
        .await;
    let id = strict["id"].as_str().expect("id");
    let (status, err) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"skip": true}),
        )
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNPROCESSABLE_ENTITY, "skip_not_allowed")
    );

    let (status, record) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(record["status"], "cancelled");
    assert_eq!(record["outcome"]["status"], "cancelled");
    let (status, err) = s
        .post(&format!("/v1/requests/{id}/cancel"), &s.admin, json!({}))
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::CONFLICT, "already_resolved")
    );
    let (status, _) = s
        .post("/v1/requests/nope/cancel", &s.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn only_listed_responders_may_answer_a_restricted_request() {
    let s = TestServer::start().await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let bob = s.key(Role::Responder, "bob", "default").await;
    let id = s
        .ask(
            &s.admin,
            json!({"question": "Approve the budget?", "responders": ["alice"]}),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let path = format!("/v1/requests/{id}/answer");
    let (status, err) = s.post(&path, &bob, json!({"text": "ok"})).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::FORBIDDEN, "not_a_responder")
    );
    let (status, _) = s.post(&path, &alice, json!({"text": "ok"})).await;
    assert_eq!(status, StatusCode::OK);
}

#[tokio::test]
async fn roles_limit_what_a_key_may_do() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    let (status, err) = s.post("/v1/requests", &responder, deploy()).await;
    assert_eq!((status, code(&err)), (StatusCode::FORBIDDEN, "forbidden"));
    assert_eq!(
        err["error"]["message"],
        "a responder key cannot create, wait for or cancel requests; use an agent key"
    );
    let id = s.ask(&agent, deploy()).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let (status, err) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &agent,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "agents do not answer");
    assert_eq!(
        err["error"]["message"],
        "an agent key cannot answer requests; use a responder key"
    );
    let (status, _) = s
        .post(&format!("/v1/requests/{id}/cancel"), &responder, json!({}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "responders do not cancel");
    let (status, _) = s
        .get(
            &format!("/v1/requests/{id}/wait?timeout_seconds=0"),
            &responder,
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "responders do not wait");
    let (status, _) = s.get(&format!("/v1/requests/{id}"), &responder).await;
    assert_eq!(status, StatusCode::OK, "responders read");
    let (status, _) = s.get("/v1/keys", &agent).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "only admins manage keys");
}

#[tokio::test]
async fn tenants_never_see_each_other() {
    let s = TestServer::start().await;
    let acme = s.key(Role::Admin, "acme-admin", "acme").await;
    let id = s.ask(&s.admin, deploy()).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    for (method, path) in [
        (Method::GET, format!("/v1/requests/{id}")),
        (
            Method::GET,
            format!("/v1/requests/{id}/wait?timeout_seconds=0"),
        ),
        (Method::GET, format!("/v1/requests/{id}/deliveries")),
        (Method::POST, format!("/v1/requests/{id}/answer")),
        (Method::POST, format!("/v1/requests/{id}/cancel")),
    ] {
        let (status, err) = s
            .call(
                method.clone(),
                &path,
                Some(&acme),
                Some(json!({"option": "yes"})),
            )
            .await;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::NOT_FOUND, "not_found"),
            "{method} {path}"
        );
    }
    let (_, page) = s.get("/v1/requests", &acme).await;
    assert_eq!(page["requests"], json!([]));
    let (_, record) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(
        record["status"], "pending",
        "the other tenant changed nothing"
    );
}

#[tokio::test]
async fn credentials_are_checked() {
    let s = TestServer::start().await;
    let (status, err) = s.call(Method::GET, "/v1/requests", None, None).await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::UNAUTHORIZED, "unauthorized")
    );
    let (status, _) = s
        .get("/v1/requests", "ck_aaaaaaaaaaaaaaaa_wrongsecret")
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let response = s
        .client
        .get(format!("{}/v1/requests", s.url))
        .header("authorization", "Basic dXNlcjpwYXNz")
        .send()
        .await
        .expect("sent");
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);

    let bot = s.key(Role::Agent, "bot", "default").await;
    assert_eq!(s.get("/v1/requests", &bot).await.0, StatusCode::OK);
    // Revoked on the store, as `clarify keys revoke` does: the server stops trusting it within
    // a second (`keys` tests this across instances and databases).
    s.store
        .revoke_key("bot", &clarify_store::Actor::system())
        .await
        .expect("revoked");
    let revoked = std::time::Instant::now();
    while s.get("/v1/requests", &bot).await.0 == StatusCode::OK {
        assert!(
            revoked.elapsed() < std::time::Duration::from_millis(1100),
            "a revoked key stops within a second"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        s.get("/v1/requests", &bot).await.0,
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn list_filters_and_pages_newest_first() {
    let s = TestServer::start().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let body = json!({"question": format!("Q{i}"), "session": if i % 2 == 0 { "even" } else { "odd" },
                          "agent": "a1", "tags": [format!("t{i}")]});
        ids.push(
            s.ask(&s.admin, body).await["id"]
                .as_str()
                .expect("id")
                .to_owned(),
        );
    }
    s.post(
        &format!("/v1/requests/{}/cancel", ids[4]),
        &s.admin,
        json!({}),
    )
    .await;

    let (_, page) = s.get("/v1/requests?limit=2", &s.admin).await;
    let got: Vec<&str> = page["requests"]
        .as_array()
        .expect("list")
        .iter()
        .map(|r| r["id"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(got, [ids[4].as_str(), ids[3].as_str()]);
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let (_, next) = s
        .get(&format!("/v1/requests?limit=2&cursor={cursor}"), &s.admin)
        .await;
    assert_eq!(next["requests"][0]["id"], ids[2].as_str());

    let count = |v: &Value| v["requests"].as_array().map_or(0, Vec::len);
    assert_eq!(
        count(&s.get("/v1/requests?status=pending", &s.admin).await.1),
        4
    );
    assert_eq!(
        count(&s.get("/v1/requests?status=cancelled", &s.admin).await.1),
        1
    );
    assert_eq!(
        count(&s.get("/v1/requests?session=even", &s.admin).await.1),
        3
    );
    assert_eq!(count(&s.get("/v1/requests?tag=t1", &s.admin).await.1), 1);
    assert_eq!(
        count(&s.get("/v1/requests?agent=a1&session=odd", &s.admin).await.1),
        2
    );

    for (query, expected) in [
        ("status=done", "invalid_status"),
        ("limit=0", "invalid_limit"),
        ("limit=many", "invalid_limit"),
        ("cursor=zzz", "invalid_cursor"),
    ] {
        let (status, err) = s.get(&format!("/v1/requests?{query}"), &s.admin).await;
        assert_eq!(
            (status, code(&err)),
            (StatusCode::BAD_REQUEST, expected),
            "{query}"
        );
    }
}

#[tokio::test]
async fn a_long_poll_returns_as_soon_as_the_request_is_answered() {
    let s = TestServer::start().await;
    let id = s.ask(&s.admin, deploy()).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let waiter = {
        let client = s.client.clone();
        let url = format!("{}/v1/requests/{id}/wait?timeout_seconds=30", s.url);
        let token = s.admin.clone();
        tokio::spawn(async move {
            let response = client
                .get(url)
                .bearer_auth(token)
                .send()
                .await
                .expect("sent");
            let answered = Instant::now();
            (response.json::<Value>().await.expect("json"), answered)
        })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = Instant::now();
    let (status, _) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"option": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    let (record, returned) = waiter.await.expect("waiter");
    assert_eq!(record["status"], "answered");
    assert_eq!(record["outcome"]["questions"][0]["answer"], "yes");
    assert!(
        returned.duration_since(sent) < Duration::from_secs(2),
        "woke promptly"
    );

    // Already resolved: returns at once.
    let started = Instant::now();
    let (_, again) = s
        .get(
            &format!("/v1/requests/{id}/wait?timeout_seconds=30"),
            &s.admin,
        )
        .await;
    assert_eq!(again["status"], "answered");
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn a_long_poll_returns_the_pending_record_when_its_time_runs_out() {
    let s = TestServer::start().await;
    let id = s.ask(&s.admin, deploy()).await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let started = Instant::now();
    let (status, record) = s
        .get(
            &format!("/v1/requests/{id}/wait?timeout_seconds=1"),
            &s.admin,
        )
        .await;
    assert_eq!(
        (status, record["status"].as_str()),
        (StatusCode::OK, Some("pending"))
    );
    assert!(started.elapsed() >= Duration::from_millis(900));
    let (status, err) = s
        .get(
            &format!("/v1/requests/{id}/wait?timeout_seconds=soon"),
            &s.admin,
        )
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::BAD_REQUEST, "invalid_timeout")
    );
    let (status, _) = s
        .get("/v1/requests/unknown/wait?timeout_seconds=1", &s.admin)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn malformed_oversized_and_misrouted_input_gets_clear_errors() {
    let s = TestServer::start().await;
    let raw = |path: &str, body: Vec<u8>| {
        s.client
            .post(format!("{}{path}", s.url))
            .bearer_auth(&s.admin)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    for (body, status, expected) in [
        (
            b"{\"question\": ".to_vec(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (b"".to_vec(), StatusCode::BAD_REQUEST, "malformed_json"),
        (
            vec![b'"', 0xff, 0xfe, b'"'],
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            "[".repeat(10_000).into_bytes(),
            StatusCode::BAD_REQUEST,
            "malformed_json",
        ),
        (
            format!("{{\"question\": \"{}\"}}", "x".repeat(4200 * 1024)).into_bytes(),
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
        ),
    ] {
        let response = raw("/v1/requests", body).await.expect("sent");
        assert_eq!(response.status(), status);
        let err: Value = response.json().await.expect("a JSON error");
        assert_eq!(code(&err), expected);
    }
    let (status, err) = s.get("/v1/nothing-here", &s.admin).await;
    assert_eq!((status, code(&err)), (StatusCode::NOT_FOUND, "not_found"));
    let (status, err) = s
        .call(Method::DELETE, "/v1/requests", Some(&s.admin), None)
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed")
    );
}

#[tokio::test]
async fn admins_manage_keys_of_their_tenant() {
    let s = TestServer::start().await;
    let (status, created) = s
        .post(
            "/v1/keys",
            &s.admin,
            json!({"name": "carol", "role": "responder"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    let token = created["token"].as_str().expect("token").to_owned();
    assert_eq!(s.get("/v1/requests", &token).await.0, StatusCode::OK);
    let (status, err) = s
        .post(
            "/v1/keys",
            &s.admin,
            json!({"name": "carol", "role": "agent"}),
        )
        .await;
    assert_eq!((status, code(&err)), (StatusCode::CONFLICT, "name_taken"));
    let (status, err) = s
        .post(
            "/v1/keys",
            &s.admin,
            json!({"name": "dave", "role": "root"}),
        )
        .await;
    assert_eq!(
        (status, code(&err)),
        (StatusCode::BAD_REQUEST, "invalid_role")
    );
    let (_, keys) = s.get("/v1/keys", &s.admin).await;
    assert!(
        keys.as_array()
            .expect("list")
            .iter()
            .any(|k| k["name"] == "carol" && k["role"] == "responder")
    );
    assert!(
        keys.to_string().find("ck_").is_none(),
        "secrets are never listed"
    );
    let (status, _) = s.post("/v1/keys/carol/revoke", &s.admin, json!({})).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        s.get("/v1/requests", &token).await.0,
        StatusCode::UNAUTHORIZED
    );

    s.key(Role::Agent, "other-bot", "acme").await;
    let (status, _) = s
        .post("/v1/keys/other-bot/revoke", &s.admin, json!({}))
        .await;
    assert_eq!(
        status,
        StatusCode::NOT_FOUND,
        "another tenant's key is out of reach"
    );
}

#[tokio::test]
async fn health_readiness_metrics_and_openapi_answer() {
    let s = TestServer::start().await;
    let text = |path: &'static str| {
        let url = format!("{}{path}", s.url);
        let client = s.client.clone();
        async move {
            let r = client.get(url).send().await.expect("sent");
            (r.status(), r.text().await.expect("text"))
        }
    };
    assert_eq!(text("/healthz").await.0, StatusCode::OK);
    assert_eq!(text("/readyz").await.0, StatusCode::OK);
    s.ask(&s.admin, deploy()).await;
    let (status, metrics) = text("/metrics").await;
    assert_eq!(status, StatusCode::OK);
    assert!(metrics.contains("clarify_requests_pending 1"), "{metrics}");
    assert!(
        metrics.contains("clarify_requests_created_total 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("route=\"/v1/requests\",status=\"201\""),
        "{metrics}"
    );
    let (status, doc) = text("/openapi.json").await;
    assert_eq!(status, StatusCode::OK);
    let doc: Value = serde_json::from_str(&doc).expect("json");
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/requests",
        "/v1/requests/{id}/answer",
        "/v1/requests/{id}/wait",
        "/v1/events",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} is documented");
    }
}

/// `clarify_requests_pending` counts the whole store, also what another instance creates and
/// resolves, and keeps counting after requests are purged.
#[tokio::test]
async fn the_pending_gauge_follows_every_instance() {
    let dir = tempfile::tempdir().expect("dir");
    let url = format!("sqlite://{}", dir.path().join("clarify.db").display());
    let options = clarify_store::StoreOptions::default;
    let a = TestServer::build(&url, options(), |_| {}).await;
    let b = TestServer::build(&url, options(), |_| {}).await;
    assert_eq!(a.metric("clarify_requests_pending").await, 0.0);
    let first = a.ask(&a.admin, deploy()).await;
    b.ask(&b.admin, json!({"question": "Name?"})).await;
    b.ask(&b.admin, json!({"question": "Colour?"})).await;
    assert_eq!(
        a.metric("clarify_requests_pending").await,
        3.0,
        "b's requests count on a too"
    );
    let id = first["id"].as_str().expect("id");
    let (status, _) = b
        .post(&format!("/v1/requests/{id}/cancel"), &b.admin, json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(a.metric("clarify_requests_pending").await, 2.0);
    assert_eq!(b.metric("clarify_requests_pending").await, 2.0);
    // A third instance, started now, counts the same.
    let c = TestServer::build(&url, options(), |_| {}).await;
    assert_eq!(c.metric("clarify_requests_pending").await, 2.0);
}

/// A client that sends `{}` with `POST .../cancel` in a second packet, as httpx may, and then
/// reuses the connection: the server must read the body it does not need, or it closes the
/// connection under the client's next request ("server disconnected").
#[tokio::test]
async fn a_connection_stays_usable_after_a_cancel_whose_body_came_late() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let id = s.ask(&agent, deploy()).await["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    let address = s.url.trim_start_matches("http://").to_owned();
    let mut tcp = tokio::net::TcpStream::connect(&address)
        .await
        .expect("connect");
    let head = format!(
        "POST /v1/requests/{id}/cancel HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {agent}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.expect("write head");
    tcp.flush().await.expect("flush");
    tokio::time::sleep(Duration::from_millis(150)).await;
    tcp.write_all(b"{}").await.expect("write body");
    let first = read_response(&mut tcp).await;
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    assert!(
        !first.to_ascii_lowercase().contains("connection: close"),
        "{first}"
    );

    let again = format!(
        "GET /v1/requests/{id} HTTP/1.1\r\nhost: {address}\r\nauthorization: Bearer {agent}\r\n\r\n"
    );
    tcp.write_all(again.as_bytes())
        .await
        .expect("write the second request");
    let second = read_response(&mut tcp).await;
    assert!(
        second.starts_with("HTTP/1.1 200"),
        "the connection was dropped: {second:?}"
    );
    assert!(second.contains("\"cancelled\""), "{second}");

    /// One response with a `content-length` body, read off the connection.
    async fn read_response(tcp: &mut tokio::net::TcpStream) -> String {
        let mut bytes = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Some(end) = text.find("\r\n\r\n") {
                let length = text[..end]
                    .lines()
                    .find_map(|l| {
                        let (name, value) = l.split_once(':')?;
                        name.eq_ignore_ascii_case("content-length")
                            .then(|| value.trim().parse::<usize>().ok())?
                    })
                    .unwrap_or(0);
                if bytes.len() >= end + 4 + length {
                    return text;
                }
            }
            let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut chunk))
                .await
                .expect("a reply within 5 s")
                .expect("read");
            if read == 0 {
                return text;
            }
            bytes.extend_from_slice(&chunk[..read]);
        }
    }
}

/// `POST /v1/requests/{id}/client-answer` with `token` in its header, as `key`.
async fn client_answer(
    s: &TestServer,
    key: &str,
    id: &str,
    token: &str,
    body: Value,
) -> (StatusCode, Value) {
    let response = s
        .client
        .post(format!("{}/v1/requests/{id}/client-answer", s.url))
        .bearer_auth(key)
        .header("x-clarify-client-answer", token)
        .json(&body)
        .send()
        .await
        .expect("request sent");
    let status = response.status();
    (status, response.json().await.expect("JSON body"))
}

#[tokio::test]
async fn only_the_creating_key_records_its_mcp_clients_answer_while_pending() {
    let s = TestServer::start().await;
    let bot = s.key(Role::Agent, "bot", "default").await;
    let other = s.key(Role::Agent, "other", "default").await;
    let first = s
        .ask(
            &bot,
            json!({"question": "First?", "choices": ["yes", "no"], "idempotency_key": "k1"}),
        )
        .await;
    let second = s.ask(&bot, deploy()).await;
    let id = first["id"].as_str().expect("id");
    let token = first["client_answer_token"]
        .as_str()
        .expect("the creator gets a token");

    // Handed out only in the creating response: not on reads, nor on an idempotent repeat.
    let (_, read) = s.get(&format!("/v1/requests/{id}"), &bot).await;
    assert!(read.get("client_answer_token").is_none(), "{read}");
    let (status, again) = s
        .post(
            "/v1/requests",
            &other,
            json!({"question": "First?", "choices": ["yes", "no"], "idempotency_key": "k1"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert!(again.get("client_answer_token").is_none(), "{again}");

    // Another key with the token, or the token on another request, is refused.
    let yes = json!({"option": "yes"});
    let (status, body) = client_answer(&s, &other, id, token, yes.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "not_the_creator")
    );
    let second_id = second["id"].as_str().expect("id");
    let (status, body) = client_answer(&s, &bot, second_id, token, yes.clone()).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "not_the_creator")
    );

    let (status, outcome) = client_answer(&s, &bot, id, token, yes.clone()).await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["answered_via"], "mcp");
    assert_eq!(outcome["answered_by"], "bot");
    // Once resolved, nothing more is taken.
    let (status, body) = client_answer(&s, &bot, id, token, json!({"option": "no"})).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::CONFLICT, "already_resolved")
    );

    // A request naming its responders is theirs, not the client's.
    let named = s
        .ask(&bot, json!({"question": "Named?", "responders": ["alice"]}))
        .await;
    let (status, body) = client_answer(
        &s,
        &bot,
        named["id"].as_str().expect("id"),
        named["client_answer_token"].as_str().expect("token"),
        json!({"text": "hi"}),
    )
    .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "not_for_client")
    );
}
