//! Forms, defaults on timeout and unknown fields over HTTP: what an agent sends, what a person
//! answers (through the API and the no-script link form), and what comes back.

use std::sync::Arc;

use chrono::TimeDelta;
use clarify_store::{ManualClock, Role};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

fn trip() -> Value {
    json!({
        "question": "Trip details",
        "fields": [
            {"id": "budget", "label": "Budget", "type": "number", "minimum": 0, "maximum": 5000},
            {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1, "default": 2},
            {"id": "email", "label": "E-mail", "type": "text", "format": "email", "required": false},
            {"id": "plan", "label": "Plan", "type": "choice", "options": ["Basic", "Pro"]}
        ]
    })
}

#[tokio::test]
async fn a_form_refuses_a_value_by_field_and_then_takes_the_corrected_answer() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let alice = s.key(Role::Responder, "alice", "default").await;
    let record = s.ask(&agent, trip()).await;
    let id = record["id"].as_str().expect("an id");
    assert_eq!(record["questions"][0]["kind"], "form");
    assert_eq!(record["questions"][0]["fields"][0]["maximum"], 5000.0);
    assert_eq!(
        record["questions"][0]["fields"][3]["options"][1]["id"],
        "pro"
    );

    let answer = format!("/v1/requests/{id}/answer");
    let (status, err) = s
        .post(
            &answer,
            &alice,
            json!({"values": {"budget": 9000, "plan": "pro"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(code(&err), "invalid_value");
    assert_eq!(
        err["error"]["message"],
        "answers.q1.values.budget: must be at most 5000, got 9000"
    );
    assert_eq!(err["error"]["field"], "answers.q1.values.budget");
    let (_, still) = s.get(&format!("/v1/requests/{id}"), &agent).await;
    assert_eq!(
        still["status"], "pending",
        "a refused value changes nothing"
    );

    let (status, outcome) = s
        .post(
            &answer,
            &alice,
            json!({"values": {"budget": 1200, "plan": "Pro"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["questions"][0]["mode"], "form");
    assert_eq!(
        outcome["questions"][0]["answer"],
        json!({"budget": 1200, "nights": 2, "plan": "pro"}),
        "typed values, the default filled in, the option by id"
    );
    assert_eq!(outcome["answered_by"], "alice");
}

#[tokio::test]
async fn the_link_form_answers_a_form_from_typed_text() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let record = s.ask(&agent, trip()).await;
    let link = record["answer_url"].as_str().expect("a link").to_owned();
    let page = s
        .client
        .get(&link)
        .header("accept", "text/html")
        .send()
        .await
        .expect("page")
        .text()
        .await
        .expect("text");
    assert!(
        page.contains("name=\"q1.values.budget\"") && page.contains("type=\"number\""),
        "the page has a number input for the budget"
    );

    let post = |body: &'static str| {
        s.client
            .post(&link)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let refused = post("q1.values.budget=lots&q1.values.plan=basic")
        .await
        .expect("post");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let text = refused.text().await.expect("text");
    assert!(text.contains("Budget: must be a number"), "{text}");

    let ok = post("q1.values.budget=300&q1.values.nights=&q1.values.plan=2")
        .await
        .expect("post");
    assert!(ok.status().is_success() || ok.status().is_redirection());
    let id = record["id"].as_str().expect("id");
    let (_, done) = s.get(&format!("/v1/requests/{id}"), &agent).await;
    assert_eq!(done["status"], "answered", "{done}");
    assert_eq!(
        done["outcome"]["questions"][0]["answer"],
        json!({"budget": 300, "nights": 2, "plan": "pro"})
    );
}

#[tokio::test]
async fn an_expired_request_carries_its_default_and_says_so() {
    let clock = Arc::new(ManualClock::new(chrono::Utc::now()));
    let s = TestServer::with_clock(Arc::clone(&clock)).await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let record = s
        .ask(
            &agent,
            json!({"questions": [{"text": "Drop the table?", "kind": "approval",
                                  "action": {"name": "drop_table", "arguments": {"t": "users"}}}],
                   "timeout_seconds": 60,
                   "on_timeout": {"decision": "deny", "reason": "nobody was around"}}),
        )
        .await;
    assert_eq!(
        record["on_timeout"],
        json!({"decision": "deny", "reason": "nobody was around"})
    );
    clock.advance(TimeDelta::seconds(61));
    assert_eq!(s.store.expire_due().await.expect("expired"), 1);
    let id = record["id"].as_str().expect("id");
    let (_, done) = s.get(&format!("/v1/requests/{id}"), &agent).await;
    let outcome = &done["outcome"];
    assert_eq!(outcome["status"], "expired");
    assert_eq!(outcome["default_applied"], true);
    assert_eq!(outcome["questions"][0]["answer"], "deny");
    assert_eq!(outcome["questions"][0]["mode"], "default");
    assert_eq!(outcome["questions"][0]["reason"], "nobody was around");
    assert!(
        outcome["note"]
            .as_str()
            .is_some_and(|n| n.contains("default")),
        "{outcome}"
    );
}

#[tokio::test]
async fn unknown_fields_and_bad_decisions_are_refused_by_name() {
    let s = TestServer::start().await;
    let approval = json!([{"text": "Deploy?", "kind": "approval", "action": {"name": "deploy"}}]);
    let cases = [
        (
            json!({"question": "Deploy?", "approval_required": 2}),
            "unknown_field",
            "approval_required: unknown field; did you mean approvals_required?",
        ),
        (
            json!({"question": "Deploy?", "choices": ["yes", "no"], "approvals_required": 2}),
            "quorum_needs_approvals",
            "",
        ),
        (
            json!({"questions": approval, "approvals_required": 3,
                   "responders": ["alice", "bob"]}),
            "quorum_unreachable",
            "",
        ),
        (
            json!({"question": "Still there?", "remind_every_seconds": 30}),
            "invalid_schedule",
            "",
        ),
    ];
    for (body, expected, message) in cases {
        let (status, err) = s.post("/v1/requests", &s.admin, body.clone()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}: {err}");
        assert_eq!(code(&err), expected, "{body}: {err}");
        if !message.is_empty() {
            assert_eq!(err["error"]["message"], message);
        }
    }
    let (_, page) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(page["requests"], json!([]), "nothing was stored");
}
