//! Remote `clarify mcp` (`CLARIFY_URL` and an agent key) asking in the MCP client too: a test
//! client declaring form elicitation is shown the form while `ask_human` waits on a real
//! `clarify serve`, and the server records the client's answer on the agent key's behalf
//! (`answered_via: "mcp"`), only for the request that key created and only while it is pending.

use std::process::Stdio;

use clarify_testkit::mcp::{Declared, McpAgent, finish, question, structured, text};
use rmcp::model::{ElicitationAction, ProtocolVersion};
use rmcp::transport::TokioChildProcess;
use serde_json::json;

use crate::mcp::{remote, wait_remote};
use crate::support::{Api, BIN};

/// Starts `clarify mcp` against the server at `url` with `key`, as a client declaring form
/// elicitation.
async fn start_remote(url: &str, key: &str) -> McpAgent {
    let mut command = tokio::process::Command::new(BIN);
    command
        .arg("mcp")
        .env("NO_COLOR", "1")
        .env("CLARIFY_URL", url)
        .env("CLARIFY_TOKEN", key)
        .env_remove("CLARIFY_DB");
    let (transport, _) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .expect("clarify mcp starts");
    let declared = Declared {
        form: true,
        ..Declared::plain(ProtocolVersion::V_2025_11_25)
    };
    McpAgent::connect_as(transport, declared).await
}

#[tokio::test]
async fn a_form_answered_in_the_client_resolves_the_remote_request_via_mcp() {
    let (server, key, api) = remote("mcp-remote-form").await;
    let mut agent = start_remote(&server.url, &key).await;
    let call = agent.begin("ask_human", question("Remote form?")).await;
    let shown = agent.next_elicitation().await;
    assert_eq!(shown.json()["message"], "Remote form?");
    assert_eq!(
        shown.json()["requestedSchema"]["properties"]["answer"]["oneOf"][1]["const"],
        "sqlite"
    );
    let record = wait_remote(&api, "Remote form?").await;
    // The token is handed to the creating key only: nobody reading the record sees it.
    assert!(record.get("client_answer_token").is_none(), "{record}");
    shown.accept(json!({"answer": "sqlite"}));
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by bot: SQLite");
    assert_eq!(structured(&result)["answered_via"], "mcp");
    let id = record["id"].as_str().expect("id");
    let (_, stored) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(stored["status"], "answered");
    assert_eq!(stored["answered_by"], "bot");
    assert_eq!(stored["outcome"]["answered_via"], "mcp");
}

#[tokio::test]
async fn a_declined_form_leaves_the_remote_request_to_a_person() {
    let (server, key, api) = remote("mcp-remote-decline").await;
    let mut agent = start_remote(&server.url, &key).await;
    let mut args = question("Declined remotely?");
    args["allow_skip"] = json!(false);
    let call = agent.begin("ask_human", args).await;
    let shown = agent.next_elicitation().await;
    shown.answer(ElicitationAction::Decline);
    let record = wait_remote(&api, "Declined remotely?").await;
    let id = record["id"].as_str().expect("id");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (_, still) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(still["status"], "pending", "{still}");
    let (status, _) = api
        .post(
            &format!("/v1/requests/{id}/answer"),
            json!({"option": "postgres"}),
        )
        .await;
    assert_eq!(status, 200);
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by alice: Postgres");
    assert_eq!(structured(&result)["answered_via"], "api");
}

#[tokio::test]
async fn a_person_answering_first_withdraws_the_remote_form_and_keys_cannot_forge_one() {
    let (server, key, api) = remote("mcp-remote-withdraw").await;
    let mut agent = start_remote(&server.url, &key).await;
    let call = agent.begin("ask_human", question("Person first?")).await;
    let shown = agent.next_elicitation().await;
    let record = wait_remote(&api, "Person first?").await;
    let id = record["id"].as_str().expect("id");

    // Neither the agent key without the creating response's token, nor with a made-up one,
    // nor a responder key, may record an answer as the MCP client's.
    let bot = Api::new(&server.url, &key);
    let path = format!("/v1/requests/{id}/client-answer");
    let (status, refused) = bot.post(&path, json!({"option": "sqlite"})).await;
    assert_eq!(status, 403, "{refused}");
    assert_eq!(refused["error"]["code"], "not_the_creator");
    let (status, refused) = api.post(&path, json!({"option": "sqlite"})).await;
    assert_eq!(status, 403, "{refused}");
    let (_, still) = api.get(&format!("/v1/requests/{id}")).await;
    assert_eq!(still["status"], "pending", "{still}");

    let (status, _) = api
        .post(
            &format!("/v1/requests/{id}/answer"),
            json!({"option": "postgres"}),
        )
        .await;
    assert_eq!(status, 200);
    let withdrawn = agent.next_cancelled().await;
    assert_eq!(withdrawn.reason.as_deref(), Some("answered elsewhere"));
    let result = finish(call).await;
    assert_eq!(text(&result), "answered by alice: Postgres");
    drop(shown);
}
