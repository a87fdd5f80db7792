//! The server's rules over HTTP and `/mcp` (one set of rules, every path), `POST
//! /v1/policy/check`, bounded grants through the API, and `POST /v1/answers` (a batch with
//! mixed results, each item what answering it alone gives).

use std::time::Duration;

use clarify_core::rules::{AskSettings, Decide, RuleSpec, Rules};
use clarify_store::{Role, StoreOptions};
use clarify_testkit::mcp::{McpAgent, text};
use reqwest::StatusCode;
use rmcp::model::ProtocolVersion;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

fn rules() -> Rules {
    let spec = |name: &str, tool: &str, when: &str, decide| RuleSpec {
        name: name.to_owned(),
        tool: Some(tool.to_owned()),
        when: Some(when.to_owned()),
        decide,
        reason: Some(format!("{name} decided")),
        ask: AskSettings::default(),
    };
    let mut prod = spec(
        "prod-namespaces",
        "kubectl*",
        "args.namespace.startsWith('prod')",
        Decide::Ask,
    );
    prod.reason = None;
    prod.ask = AskSettings {
        responders: Some(vec!["sre-lead".to_owned()]),
        tags: vec!["prod".to_owned()],
        timeout_seconds: Some(900),
        ..AskSettings::default()
    };
    Rules::compile(vec![
        spec(
            "read-only-git",
            "Bash",
            "args.command.matches('^git (status|log|diff)( |$)')",
            Decide::Allow,
        ),
        spec(
            "no-force-push",
            "Bash",
            "args.command.contains('push --force')",
            Decide::Deny,
        ),
        prod,
        spec("needs-amount", "refund", "args.amount > 1", Decide::Deny),
    ])
    .expect("rules compile")
}

async fn server() -> TestServer {
    let options = StoreOptions {
        rules: Some(rules()),
        ..StoreOptions::default()
    };
    TestServer::build("memory:", options, |config| {
        config.mcp.progress_interval = Duration::from_millis(200);
    })
    .await
}

fn approval(tool: &str, arguments: Value) -> Value {
    json!({"questions": [{"text": format!("Run {tool}?"), "kind": "approval",
        "action": {"name": tool, "arguments": arguments},
        "scopes": ["once", "always"]}]})
}

#[tokio::test]
async fn rules_decide_approvals_created_over_http() {
    let server = server().await;
    let agent = server.key(Role::Agent, "bot", "default").await;
    let (status, record) = server
        .post(
            "/v1/requests",
            &agent,
            approval("Bash", json!({"command": "git status"})),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{record}");
    assert_eq!(record["status"], "answered");
    assert_eq!(record["outcome"]["answered_by"], "policy:read-only-git");
    assert_eq!(record["outcome"]["questions"][0]["decision"], "approve");

    let (_, record) = server
        .post(
            "/v1/requests",
            &agent,
            approval("Bash", json!({"command": "git push --force origin main"})),
        )
        .await;
    assert_eq!(record["outcome"]["questions"][0]["decision"], "deny");
    assert_eq!(
        record["outcome"]["questions"][0]["reason"],
        "no-force-push decided"
    );
    // A second answer finds it resolved, by the rule.
    let admin = server.admin.clone();
    let id = record["id"].as_str().expect("id");
    let (status, body) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &admin,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");

    let (_, record) = server
        .post(
            "/v1/requests",
            &agent,
            approval("kubectl_apply", json!({"namespace": "prod-eu"})),
        )
        .await;
    assert_eq!(record["status"], "pending");
    assert_eq!(record["tags"], json!(["prod"]));
    // The rule named the responder: another may not answer.
    let bob = server.key(Role::Responder, "bob", "default").await;
    let id = record["id"].as_str().expect("id");
    let (status, body) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &bob,
            json!({"decision": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");

    // The decisions are in the audit chain, as the rule.
    let (status, audit) = server.get("/v1/audit?limit=100", &admin).await;
    assert_eq!(status, StatusCode::OK, "{audit}");
    let by_rule: Vec<&Value> = audit["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["actor"]
                .as_str()
                .is_some_and(|a| a.starts_with("policy:"))
        })
        .collect();
    assert_eq!(by_rule.len(), 2, "{audit}");
    assert!(by_rule.iter().all(|e| e["channel"] == "policy"));
}

#[tokio::test]
async fn rules_decide_approvals_asked_over_mcp() {
    let server = server().await;
    let key = server.key(Role::Agent, "bot", "default").await;
    let transport = StreamableHttpClientTransport::with_client(
        clarify_client::http::client().expect("an HTTP client"),
        StreamableHttpClientTransportConfig::with_uri(format!("{}/mcp", server.url))
            .auth_header(key),
    );
    let agent = McpAgent::connect_with(transport, ProtocolVersion::V_2025_06_18).await;
    let result = agent
        .call(
            "approve_tool_use",
            json!({"tool_name": "Bash", "input": {"command": "git log -3"}}),
        )
        .await;
    let said: Value = serde_json::from_str(&text(&result)).expect("permission JSON");
    assert_eq!(said["behavior"], "allow", "{said}");
    let result = agent
        .call(
            "approve_tool_use",
            json!({"tool_name": "Bash", "input": {"command": "git push --force"}}),
        )
        .await;
    let said = text(&result);
    assert!(said.contains("\"deny\""), "{said}");
    assert!(said.contains("no-force-push decided"), "{said}");
}

#[tokio::test]
async fn policy_check_says_what_the_rules_would_decide() {
    let server = server().await;
    let agent = server.key(Role::Agent, "bot", "default").await;
    let check = |body: Value| {
        let (server, agent) = (&server, agent.clone());
        async move { server.post("/v1/policy/check", &agent, body).await }
    };
    let (status, body) =
        check(json!({"action": {"name": "Bash", "arguments": {"command": "git diff"}}})).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["decision"], "allow");
    assert_eq!(body["rule"], "read-only-git");
    assert_eq!(body["reason"], "read-only-git decided");
    let (_, body) = check(
        json!({"action": {"name": "kubectl", "arguments": {"namespace": "prod"}}, "agent": "x"}),
    )
    .await;
    assert_eq!(body["decision"], "ask");
    assert_eq!(body["rule"], "prod-namespaces");
    assert_eq!(
        body["ask"],
        json!({"responders": ["sre-lead"], "timeout_seconds": 900, "tags": ["prod"]})
    );
    let (_, body) = check(json!({"action": {"name": "Read", "arguments": {}}})).await;
    assert_eq!(body["decision"], "ask");
    assert_eq!(body["rule"], Value::Null);
    // A condition that fails is reported and does not match.
    let (_, body) = check(json!({"action": {"name": "refund", "arguments": {}}})).await;
    assert_eq!(body["decision"], "ask");
    assert_eq!(body["errors"][0]["rule"], "needs-amount");
    // Nothing was created.
    let (_, page) = server.get("/v1/requests", &agent).await;
    assert_eq!(page["requests"], json!([]), "{page}");
    // Refusals: a responder, an unknown field.
    let bob = server.key(Role::Responder, "bob", "default").await;
    let (status, body) = server
        .post(
            "/v1/policy/check",
            &bob,
            json!({"action": {"name": "x", "arguments": {}}}),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = check(json!({"action": {"name": "x"}, "sesion": "s"})).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
}

#[tokio::test]
async fn bounded_grants_through_the_api() {
    let server = TestServer::start().await;
    let agent = server.key(Role::Agent, "bot", "default").await;
    let alice = server.key(Role::Responder, "alice", "default").await;
    let record = server
        .ask(&agent, approval("deploy", json!({"env": "staging"})))
        .await;
    let id = record["id"].as_str().expect("id");
    let (status, body) = server
        .post(
            &format!("/v1/requests/{id}/answer"),
            &alice,
            json!({"decision": "approve", "scope": "always", "grant_max_uses": 1, "grant_ttl_seconds": 3600}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let check = json!({"action": {"name": "deploy", "arguments": {"env": "staging"}}});
    let (_, first) = server.post("/v1/grants/check", &agent, check.clone()).await;
    assert_eq!(first["granted"], true, "{first}");
    assert_eq!(first["grant"]["uses"], 1);
    assert_eq!(first["grant"]["max_uses"], 1);
    assert!(first["grant"]["expires_at"].is_string());
    let (_, second) = server.post("/v1/grants/check", &agent, check).await;
    assert_eq!(second["granted"], false, "used up: {second}");
}

#[tokio::test]
async fn a_batch_answers_each_item_as_alone() {
    let server = TestServer::start().await;
    let agent = server.key(Role::Agent, "bot", "default").await;
    let alice = server.key(Role::Responder, "alice", "default").await;
    let mut ids = Vec::new();
    for n in 0..4 {
        let record = server
            .ask(&agent, approval("deploy", json!({"n": n})))
            .await;
        ids.push(record["id"].as_str().expect("id").to_owned());
    }
    // The third is answered already.
    server
        .post(
            &format!("/v1/requests/{}/answer", ids[2]),
            &alice,
            json!({"decision": "deny"}),
        )
        .await;
    let (status, body) = server
        .post(
            "/v1/answers",
            &alice,
            json!({"items": [
                {"id": ids[0], "answer": {"decision": "approve"}},
                {"id": ids[1], "answer": {"decision": "maybe"}},
                {"id": ids[2], "answer": {"decision": "approve"}},
                {"id": "no-such-request", "answer": {"decision": "approve"}},
                {"id": ids[3], "answer": {"decision": "deny", "reason": "not today"}},
                {"answer": {"decision": "approve"}},
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let items = body["items"].as_array().expect("items");
    let statuses: Vec<u64> = items
        .iter()
        .map(|i| i["status"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(statuses, [200, 422, 409, 404, 200, 422], "{body}");
    assert_eq!(items[0]["id"], ids[0].as_str());
    assert_eq!(items[0]["body"]["questions"][0]["decision"], "approve");
    assert_eq!(code(&items[1]["body"]), "invalid_decision");
    assert_eq!(code(&items[2]["body"]), "already_resolved");
    assert_eq!(items[4]["body"]["questions"][0]["reason"], "not today");
    // Each matches what answering alone gives: the invalid one is still pending.
    let (_, record) = server
        .get(&format!("/v1/requests/{}", ids[1]), &alice)
        .await;
    assert_eq!(record["status"], "pending");

    // More than 100 items is refused whole.
    let many: Vec<Value> = (0..101)
        .map(|_| json!({"id": ids[1], "answer": {"decision": "approve"}}))
        .collect();
    let (status, body) = server
        .post("/v1/answers", &alice, json!({"items": many}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(code(&body), "too_many_items");
    let (_, record) = server
        .get(&format!("/v1/requests/{}", ids[1]), &alice)
        .await;
    assert_eq!(
        record["status"], "pending",
        "nothing of a refused batch ran"
    );
    // An agent key may not answer: each item says so.
    let (status, body) = server
        .post(
            "/v1/answers",
            &agent,
            json!({"items": [{"id": ids[1], "answer": {"decision": "approve"}}]}),
        )
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["items"][0]["status"], 403, "{body}");
}
