//! `GET /v1/insights` over HTTP: who may read it, its filters from the address, and the refusals
//! of a date that is not one, a range that is not one and a parameter it does not know. The
//! figures themselves are checked on every backend by the store's `insights` tests.

use clarify_store::Role;
use reqwest::StatusCode;
use serde_json::json;

use crate::support::{TestServer, code};

#[tokio::test]
async fn responders_and_admins_read_their_tenants_figures() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    let approval = |tool: &str| {
        json!({"questions": [{"kind": "approval", "text": "Run it?",
               "action": {"name": tool, "arguments": {}}}], "agent": "ci", "tags": ["prod"]})
    };
    let first = s.ask(&agent, approval("deploy")).await;
    let id = first["id"].as_str().expect("id").to_owned();
    let (status, body) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &responder,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    s.ask(&agent, approval("shell")).await;
    let elsewhere = s.key(Role::Agent, "other-bot", "elsewhere").await;
    s.ask(&elsewhere, approval("deploy")).await;

    let (status, all) = s.get("/v1/insights", &responder).await;
    assert_eq!(status, StatusCode::OK, "{all}");
    assert_eq!(all["by_status"]["answered"], 1);
    assert_eq!(all["by_status"]["pending"], 1, "only this tenant's: {all}");
    assert_eq!(all["by_tool"][0]["tool"], "deploy");
    assert_eq!(all["by_tool"][0]["approve"], 1);
    assert_eq!(all["by_responder"][0]["responder"], "alice");
    assert_eq!(all["by_surface"][0]["surface"], "api");
    assert_eq!(all["time_to_decision"]["count"], 1);
    assert_eq!(
        all["time_to_decision"]["per_day"].as_array().map(Vec::len),
        Some(30)
    );

    let (status, shell) = s
        .get("/v1/insights?tool=shell&tag=prod&agent=ci", &s.admin)
        .await;
    assert_eq!(status, StatusCode::OK, "{shell}");
    assert_eq!(shell["by_status"]["answered"], 0);
    assert_eq!(shell["by_status"]["pending"], 1);

    let (status, range) = s
        .get(
            "/v1/insights?from=2026-01-01&to=2026-01-07T12:00:00Z",
            &s.admin,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{range}");
    assert_eq!(
        (range["from"].as_str(), range["to"].as_str()),
        (Some("2026-01-01"), Some("2026-01-07"))
    );

    let (status, refused) = s.get("/v1/insights", &agent).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{refused}");
    for (path, expected) in [
        ("/v1/insights?from=yesterday", "invalid_date"),
        (
            "/v1/insights?from=2026-02-01&to=2026-01-01",
            "invalid_range",
        ),
        (
            "/v1/insights?from=2020-01-01&to=2026-01-01",
            "invalid_range",
        ),
        ("/v1/insights?tools=deploy", "invalid_query"),
    ] {
        let (status, body) = s.get(path, &s.admin).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(code(&body), expected, "{path}: {body}");
    }
}
