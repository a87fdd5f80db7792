//! `/v1/grants`: grants come only from answers, are listed per tenant and session, checked by
//! agents, revoked by responders; no role can create one.

use clarify_store::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{TestServer, code, suffix};

/// An approval of `deploy(args)` in `session`, answered by `responder` with `answer`.
async fn answered(
    server: &TestServer,
    agent: &str,
    responder: &str,
    session: &str,
    args: Value,
    answer: Value,
) -> String {
    let record = server
        .ask(
            agent,
            json!({
                "questions": [{"text": "Deploy?", "kind": "approval",
                               "action": {"name": "deploy", "arguments": args},
                               "scopes": ["once", "session", "always"], "allow_edit": true}],
                "session": session,
            }),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (status, body) = server
        .post(&format!("/v1/requests/{id}/answer"), responder, answer)
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    id
}

async fn check(server: &TestServer, token: &str, args: Value, session: Option<&str>) -> Value {
    let mut body = json!({"action": {"name": "deploy", "arguments": args}});
    if let Some(session) = session {
        body["session"] = json!(session);
    }
    let (status, result) = server.post("/v1/grants/check", token, body).await;
    assert_eq!(status, StatusCode::OK, "{result}");
    result
}

#[tokio::test]
async fn answers_record_grants_that_agents_check_and_responders_revoke() {
    let server = TestServer::start().await;
    let agent = server
        .key(Role::Agent, &format!("agent-{}", suffix()), "default")
        .await;
    let alice = server
        .key(Role::Responder, &format!("alice-{}", suffix()), "default")
        .await;
    let args = json!({"env": "prod"});

    answered(
        &server,
        &agent,
        &alice,
        "s1",
        args.clone(),
        json!({"decision": "approve"}),
    )
    .await;
    let (_, listed) = server.get("/v1/grants", &agent).await;
    assert_eq!(listed["grants"], json!([]), "scope once remembers nothing");
    assert_eq!(
        check(&server, &agent, args.clone(), Some("s1")).await["granted"],
        false
    );

    let id = answered(
        &server,
        &agent,
        &alice,
        "s1",
        args.clone(),
        json!({"decision": "approve", "scope": "session"}),
    )
    .await;
    answered(
        &server,
        &agent,
        &alice,
        "s2",
        json!({"env": "dev"}),
        json!({"decision": "approve", "scope": "always", "edited_arguments": {"env": "test"}}),
    )
    .await;

    let (status, listed) = server.get("/v1/grants", &alice).await;
    assert_eq!(status, StatusCode::OK);
    let grants = listed["grants"].as_array().expect("grants");
    assert_eq!(grants.len(), 2, "{listed}");
    assert_eq!(grants[0]["tool"], "deploy");
    assert_eq!(grants[0]["arguments"], args);
    assert_eq!(grants[0]["scope"], "session");
    assert_eq!(grants[0]["session"], "s1");
    assert_eq!(grants[0]["request_id"], id.as_str());
    assert!(
        grants[0]["granted_by"]
            .as_str()
            .is_some_and(|b| b.starts_with("alice-"))
    );
    assert_eq!(
        grants[1]["arguments"],
        json!({"env": "test"}),
        "edits are what was approved"
    );
    assert_eq!(grants[1]["session"], Value::Null);
    let (_, s1) = server.get("/v1/grants?session=s1", &agent).await;
    assert_eq!(s1["grants"].as_array().map(Vec::len), Some(1), "{s1}");

    // The same call in the same session passes; elsewhere it does not.
    let granted = check(&server, &agent, args.clone(), Some("s1")).await;
    assert_eq!(granted["granted"], true);
    assert_eq!(granted["grant"]["id"], grants[0]["id"]);
    assert_eq!(
        check(&server, &agent, args.clone(), Some("s2")).await["granted"],
        false
    );
    assert_eq!(
        check(&server, &agent, json!({"env": "test"}), Some("any")).await["granted"],
        true
    );
    assert_eq!(
        check(&server, &agent, json!({"env": "test"}), None).await["grant"]["scope"],
        "always"
    );

    // Another tenant sees none of it and cannot revoke it.
    let stranger = server
        .key(Role::Admin, &format!("other-{}", suffix()), "other")
        .await;
    let (_, theirs) = server.get("/v1/grants", &stranger).await;
    assert_eq!(theirs["grants"], json!([]));
    let grant_id = grants[0]["id"].as_str().expect("grant id");
    let path = format!("/v1/grants/{grant_id}");
    let (status, _) = server
        .call(Method::DELETE, &path, Some(&stranger), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // An agent cannot revoke; a responder can, once.
    let (status, body) = server.call(Method::DELETE, &path, Some(&agent), None).await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden"),
        "{body}"
    );
    let (status, body) = server.call(Method::DELETE, &path, Some(&alice), None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["id"], grants[0]["id"]);
    assert_eq!(
        check(&server, &agent, args.clone(), Some("s1")).await["granted"],
        false
    );
    let (status, _) = server.call(Method::DELETE, &path, Some(&alice), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn no_role_can_create_a_grant_and_responders_cannot_check() {
    let server = TestServer::start().await;
    let agent = server
        .key(Role::Agent, &format!("agent-{}", suffix()), "default")
        .await;
    let alice = server
        .key(Role::Responder, &format!("alice-{}", suffix()), "default")
        .await;
    let grant = json!({"tool": "deploy", "arguments": {}, "scope": "always"});
    for token in [&agent, &alice, &server.admin] {
        let (status, _) = server.post("/v1/grants", token, grant.clone()).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }
    let (status, body) = server
        .post(
            "/v1/grants/check",
            &alice,
            json!({"action": {"name": "deploy", "arguments": {}}}),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::FORBIDDEN, "forbidden"),
        "{body}"
    );
    let (status, body) = server
        .post(
            "/v1/grants/check",
            &agent,
            json!({"action": {"name": "deploy"}, "sesion": "x"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (_, listed) = server.get("/v1/grants", &server.admin).await;
    assert_eq!(listed["grants"], json!([]));
}
