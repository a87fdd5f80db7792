//! The example agent end to end: the real binary, a scripted chat-completions server and a real
//! clarify server, with a person answering through the HTTP API. What the fake provider received
//! is checked, not only what the agent printed: the model must see each question's answer as the
//! result of the call that asked it, never a protocol message, and never a call without a result,
//! also after the agent was killed while a question was pending.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::support::{
    AgentRun, ClarifyServer, FakeProvider, Script, TempDir, assert_valid_for_provider,
    committed_ask_human, file_contains, results, text, tool_call,
};

/// A model that asks which greeting to write, writes it, repeats a write the human edited (as
/// a model that takes the edit on board would), and then reports the last result.
fn greeting_model() -> Script {
    Arc::new(|messages: &[Value]| {
        let results = results(messages);
        match results.as_slice() {
            [] => tool_call(
                "call_ask",
                "ask_human",
                &json!({
                    "questions": [{
                        "question": "Which greeting should the file hold?",
                        "header": "Greeting", "kind": "single", "recommended": "Hello",
                        "options": [{"label": "Hello", "description": null},
                                    {"label": "Howdy", "description": "More casual"}],
                    }],
                    "context": "I am writing greeting.txt.",
                }),
            ),
            [(_, outcome)] => {
                let greeting = outcome["questions"][0]["answer"].as_str().unwrap_or("?");
                tool_call(
                    "call_write",
                    "write_file",
                    &json!({"path": "greeting.txt", "content": format!("{greeting}, world")}),
                )
            }
            [_, (_, written)] if written.get("arguments").is_some() => {
                tool_call("call_again", "write_file", &written["arguments"])
            }
            [.., (_, last)] => text(&format!("Done: {last}")),
        }
    })
}

/// The checks every request to the provider must pass.
fn assert_each_request_valid(provider: &FakeProvider) {
    for (i, received) in provider.received().iter().enumerate() {
        assert_eq!(
            received.authorization.as_deref(),
            Some("Bearer test-key"),
            "request {i}"
        );
        assert_eq!(received.body["model"], "fake-model", "request {i}");
        let tools = received.body["tools"].as_array().expect("tools offered");
        assert_eq!(
            tools[0],
            committed_ask_human(),
            "the committed ask_human definition"
        );
        assert_eq!(tools[1]["function"]["name"], "write_file");
        let messages = received.messages();
        assert_eq!(messages[0]["role"], "system", "request {i}");
        assert_eq!(
            messages[1],
            json!({"role": "user", "content": "Write a greeting file."})
        );
        assert_valid_for_provider(messages);
    }
}

/// The result of `call` in the last request the provider received.
fn result_of(provider: &FakeProvider, request: usize, call: &str) -> Value {
    let received = provider.received();
    let messages = received[request].messages();
    results(messages)
        .into_iter()
        .find(|(id, _)| id == call)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("request {request} has no result for {call}: {messages:#?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn asks_gets_approval_and_finishes() {
    let dir = TempDir::new("finishes");
    let provider = FakeProvider::start(greeting_model()).await;
    let clarify = ClarifyServer::start().await;
    let mut agent = AgentRun::start(
        &dir,
        &provider,
        Some(&clarify),
        Some("Write a greeting file."),
    );

    let question = clarify.pending(&mut agent).await;
    assert_eq!(
        question.tool_call_id.as_deref(),
        Some("call_ask"),
        "raised for the model's call"
    );
    assert_eq!(question.agent.as_deref(), Some("clarify-example-agent"));
    assert_eq!(
        question.questions[0].text,
        "Which greeting should the file hold?"
    );
    let session = question.session.clone().expect("a session");
    clarify
        .answer(&question.id, json!({"option": "howdy"}))
        .await;

    let approval = clarify.pending(&mut agent).await;
    assert_eq!(approval.tool_call_id.as_deref(), Some("call_write"));
    assert_eq!(approval.session.as_ref(), Some(&session));
    let action = approval.questions[0].action.as_ref().expect("an action");
    assert_eq!(
        (action.name.as_str(), &action.arguments),
        (
            "write_file",
            &json!({"path": "greeting.txt", "content": "Howdy, world"})
        )
    );
    assert!(
        !dir.sandbox().join("greeting.txt").exists(),
        "nothing is written before approval"
    );
    let edited = json!({"path": "greeting.txt", "content": "Howdy, world!"});
    clarify
        .answer(
            &approval.id,
            json!({"decision": "approve", "scope": "session", "edited_arguments": edited}),
        )
        .await;

    assert_eq!(agent.finish().await, Some(0), "{}", agent.stderr());
    assert_eq!(
        std::fs::read_to_string(dir.sandbox().join("greeting.txt")).expect("written"),
        "Howdy, world!",
        "the human's edit is what was written"
    );
    // The repeated write was covered by the session grant: nobody was asked a third time.
    assert_eq!(clarify.requests().await.len(), 2);
    let written = json!({"written": "greeting.txt", "bytes": 13});
    assert_eq!(agent.stdout(), format!("Done: {written}\n"));

    let received = provider.received();
    assert_eq!(received.len(), 4, "ask, write, write again, finish");
    assert_each_request_valid(&provider);
    let answer = result_of(&provider, 1, "call_ask");
    assert_eq!(answer["status"], "answered");
    assert_eq!(answer["request_id"], question.id.as_str());
    assert_eq!(answer["questions"][0]["answer"], "Howdy");
    assert_eq!(answer["answered_by"], "alice");
    let first_write = result_of(&provider, 2, "call_write");
    assert_eq!(
        first_write["arguments"], edited,
        "the model is told what ran"
    );
    assert_eq!(first_write["output"], written.to_string());
    assert_eq!(result_of(&provider, 3, "call_again"), written);
    // The provider's own fields in its replies come back as they were sent.
    assert_eq!(received[1].messages()[2]["refusal"], Value::Null);
    assert!(received[1].messages()[2].get("refusal").is_some());

    let state = dir.read_state();
    assert_eq!(state["session"], session.as_str());
    assert!(
        state.get("grants").is_none(),
        "grants are the server's, not the state file's"
    );
    let grants = clarify.grants().await;
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0]["tool"], "write_file");
    assert_eq!(
        grants[0]["arguments"], edited,
        "the grant covers what the human approved"
    );
    assert_eq!(grants[0]["scope"], "session");
    assert_eq!(grants[0]["session"], session.as_str());
    let protocol: Vec<(&str, &str)> = state["transcript"]
        .as_array()
        .expect("entries")
        .iter()
        .filter(|e| e["role"] == "clarify")
        .map(|e| {
            (
                e["event"].as_str().unwrap_or_default(),
                e["tool_call_id"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert_eq!(
        protocol,
        [
            ("asked", "call_ask"),
            ("resolved", "call_ask"),
            ("asked", "call_write"),
            ("resolved", "call_write"),
        ],
        "the stored history keeps what people were shown and how they answered"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumes_after_being_killed_while_waiting() {
    let dir = TempDir::new("resumes");
    let provider = FakeProvider::start(greeting_model()).await;
    let clarify = ClarifyServer::start().await;

    // Killed while the question is pending, once the agent has saved that it asked.
    let mut first = AgentRun::start(
        &dir,
        &provider,
        Some(&clarify),
        Some("Write a greeting file."),
    );
    let question = clarify.pending(&mut first).await;
    file_contains(&dir.state(), &question.id, &mut first).await;
    first.kill();
    clarify
        .answer(&question.id, json!({"option": "hello"}))
        .await;

    // The second run picks up the answer instead of asking again; killed at the approval.
    let mut second = AgentRun::start(&dir, &provider, Some(&clarify), None);
    let approval = clarify.pending(&mut second).await;
    assert_eq!(approval.tool_call_id.as_deref(), Some("call_write"));
    assert_eq!(
        approval.questions[0]
            .action
            .as_ref()
            .expect("an action")
            .arguments["content"],
        "Hello, world"
    );
    file_contains(&dir.state(), &approval.id, &mut second).await;
    second.kill();
    assert!(
        second.stderr().contains("resuming the conversation"),
        "{}",
        second.stderr()
    );
    clarify
        .answer(
            &approval.id,
            json!({"decision": "deny", "reason": "Not today."}),
        )
        .await;

    let mut third = AgentRun::start(&dir, &provider, Some(&clarify), None);
    assert_eq!(third.finish().await, Some(0), "{}", third.stderr());
    assert!(
        !dir.sandbox().join("greeting.txt").exists(),
        "a denied write never happens"
    );

    let requests = clarify.requests().await;
    let raised: Vec<Option<&str>> = requests.iter().map(|r| r.tool_call_id.as_deref()).collect();
    assert_eq!(
        raised,
        [Some("call_write"), Some("call_ask")],
        "each asked once"
    );

    let received = provider.received();
    assert_eq!(received.len(), 3, "one completion per run");
    assert_each_request_valid(&provider);
    // The resumed runs sent the same conversation on, with the answer where the call was.
    assert_eq!(received[1].messages()[..2], received[0].messages()[..]);
    assert_eq!(received[2].messages()[..4], received[1].messages()[..]);
    assert_eq!(
        result_of(&provider, 1, "call_ask")["questions"][0]["answer"],
        "Hello"
    );
    let denied = result_of(&provider, 2, "call_write");
    assert_eq!(denied["status"], "denied");
    assert_eq!(
        denied["reason"],
        "The human denied this call: Not today. The tool was not run."
    );
    assert_eq!(third.stdout(), format!("Done: {denied}\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_raised_just_before_a_crash_is_not_asked_again() {
    let dir = TempDir::new("raised");
    let provider = FakeProvider::start(Arc::new(|messages: &[Value]| {
        match results(messages).as_slice() {
            [(_, outcome)] => text(&format!("Noted: {}", outcome["questions"][0]["answer"])),
            other => panic!("the model is called only with the answer: {other:?}"),
        }
    }))
    .await;
    let clarify = ClarifyServer::start().await;
    // The agent had saved the model's call, raised the request, and died before recording it.
    let arguments = json!({"questions": [{"question": "Which colour?", "kind": "open"}]});
    let state = json!({
        "version": 1,
        "session": "agent-crashed",
        "transcript": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Pick a colour."},
            tool_call("call_c", "ask_human", &arguments),
        ],
    });
    std::fs::write(dir.state(), state.to_string()).expect("state written");
    let agent_client =
        clarify_client::Client::new(&clarify.url, Some(clarify.agent_key.clone())).expect("client");
    let mut body = arguments.clone();
    body["session"] = json!("agent-crashed");
    body["tool_call_id"] = json!("call_c");
    body["idempotency_key"] = json!("agent-crashed/0/call_c");
    let (raised, created) = agent_client.create(&body).await.expect("raised");
    assert!(created);
    clarify.answer(&raised.id, json!({"text": "Teal"})).await;

    let mut agent = AgentRun::start(&dir, &provider, Some(&clarify), None);
    assert_eq!(agent.finish().await, Some(0), "{}", agent.stderr());
    assert_eq!(agent.stdout(), "Noted: \"Teal\"\n");
    assert_eq!(
        clarify.requests().await.len(),
        1,
        "the same request was found again"
    );
    let received = provider.received();
    assert_eq!(received.len(), 1);
    assert_valid_for_provider(received[0].messages());
    let stored = dir.read_state();
    assert_eq!(stored["transcript"][3]["event"], "asked");
    assert_eq!(stored["transcript"][3]["request_id"], raised.id.as_str());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_starts_say_what_to_do_and_keep_the_state_file() {
    let never: Script = Arc::new(|_: &[Value]| panic!("the model is never called"));
    let provider = FakeProvider::start(never).await;
    let unfinished = json!({
        "version": 1, "session": "agent-x",
        "transcript": [{"role": "user", "content": "Hi"},
                       tool_call("call_1", "ask_human", &json!({"questions": []}))],
    })
    .to_string();
    let orphan = json!({
        "version": 1, "session": "agent-x",
        "transcript": [{"role": "tool", "tool_call_id": "call_1", "content": "?"}],
    })
    .to_string();
    /// (name, state file, task, exit code, words on stderr)
    type Case<'a> = (&'a str, Option<&'a str>, Option<&'a str>, i32, &'a str);
    let cases: Vec<Case> = vec![
        (
            "no task and no state",
            None,
            None,
            2,
            "nothing to do: give a task",
        ),
        (
            "a task while a conversation is unfinished",
            Some(&unfinished),
            Some("Something else"),
            2,
            "run without a task to resume it",
        ),
        (
            "a state file that is not JSON",
            Some("{not json"),
            None,
            1,
            "fix or remove it",
        ),
        (
            "a state file of another version",
            Some(r#"{"version": 9, "session": "s", "transcript": []}"#),
            Some("Hi"),
            1,
            "version 9 is not one this agent reads",
        ),
        (
            "a corrupt transcript",
            Some(&orphan),
            None,
            1,
            "no tool call \"call_1\"",
        ),
    ];
    for (name, state, task, code, words) in cases {
        let dir = TempDir::new("bad");
        if let Some(state) = state {
            std::fs::write(dir.state(), state).expect("state written");
        }
        let mut agent = AgentRun::start(&dir, &provider, None, task);
        assert_eq!(
            agent.finish().await,
            Some(code),
            "{name}: {}",
            agent.stderr()
        );
        let stderr = agent.stderr();
        assert!(
            stderr.contains(words),
            "{name}: want {words:?} in {stderr:?}"
        );
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr:?}");
        let kept = std::fs::read_to_string(dir.state()).ok();
        assert_eq!(
            kept.as_deref(),
            state,
            "{name}: the state file is left as it was"
        );
    }
    assert!(provider.received().is_empty());
}
