//! Transcripts: OpenAI chat messages round-trip with unknown fields kept; a request raised by a
//! tool call resolves into that call's result; protocol messages stay in the stored history but
//! never reach the model; what the model is sent always pairs every call with one result.

use clarify_core::transcript::{Message, PendingRequest, ToolCall, Transcript, TranscriptError};
use clarify_testkit::assert_valid_for_provider;
use serde_json::{Value, json};

/// Parses `input` as a message, writes it back, and compares with `want` (`None`: unchanged).
fn check_round_trip(cases: Vec<(&str, Value, Option<Value>)>) {
    let mut failures = Vec::new();
    for (name, input, want) in cases {
        let want = want.unwrap_or_else(|| input.clone());
        match serde_json::from_value::<Message>(input) {
            Ok(message) => {
                let got = serde_json::to_value(&message).expect("a message serializes");
                if got != want {
                    failures.push(format!("{name}: want {want}, got {got}"));
                }
            }
            Err(e) => failures.push(format!("{name}: does not parse: {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn messages_round_trip_the_wire_format() {
    check_round_trip(vec![
        (
            "system",
            json!({"role": "system", "content": "Be brief."}),
            None,
        ),
        (
            "developer with a name",
            json!({"role": "developer", "content": "Rules.", "name": "ops"}),
            None,
        ),
        (
            "user with content parts",
            json!({"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}
            ]}),
            None,
        ),
        (
            "assistant text with provider extras",
            json!({"role": "assistant", "content": "Hello.", "refusal": null,
                   "annotations": [], "reasoning_content": "The user greets me."}),
            None,
        ),
        (
            "assistant tool calls with extras on the call and the function",
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_1", "type": "function", "index": 0,
                 "function": {"name": "ask_human", "arguments": "{\"questions\":[]}", "strict": true}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "write_file", "arguments": ""}}
            ]}),
            None,
        ),
        (
            "assistant content is written as null when absent",
            json!({"role": "assistant", "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]}),
            Some(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ]})),
        ),
        (
            "a call without a type is a function call",
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "function": {"name": "f"}}
            ]}),
            Some(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": ""}}
            ]})),
        ),
        (
            "tool result",
            json!({"role": "tool", "tool_call_id": "call_1", "content": "{\"ok\":true}"}),
            None,
        ),
    ]);
}

#[test]
fn unknown_roles_and_missing_fields_are_errors() {
    let cases = [
        (
            json!({"role": "wizard", "content": "x"}),
            "unknown variant `wizard`",
        ),
        (json!({"content": "x"}), "missing field `role`"),
        (
            json!({"role": "tool", "content": "x"}),
            "missing field `tool_call_id`",
        ),
        (json!({"role": "user"}), "missing field `content`"),
    ];
    for (input, want) in cases {
        let error = serde_json::from_value::<Message>(input.clone())
            .expect_err(&format!("{input} is not a message"))
            .to_string();
        assert!(error.contains(want), "{input}: want {want:?} in {error:?}");
    }
}

#[test]
fn tool_call_arguments() {
    let cases: Vec<(&str, Result<Value, &str>)> = vec![
        (r#"{"path": "a.txt"}"#, Ok(json!({"path": "a.txt"}))),
        ("", Ok(json!({}))),
        ("  ", Ok(json!({}))),
        ("[1, 2]", Err("are not a JSON object: got [1,2]")),
        ("{\"path\": ", Err("are not a JSON object: EOF")),
        ("\"text\"", Err("got \"text\"")),
    ];
    for (text, want) in cases {
        let mut call = ToolCall::function("call_9", "write_file", &json!({}));
        call.function.arguments = text.to_owned();
        match (call.arguments(), want) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "{text:?}"),
            (Err(e), Err(want)) => {
                let message = e.to_string();
                assert!(message.contains("call_9"), "{message}");
                assert!(
                    message.contains(want),
                    "{text:?}: want {want:?} in {message:?}"
                );
            }
            (got, want) => panic!("{text:?}: want {want:?}, got {got:?}"),
        }
    }
}

/// A transcript from stored entries (protocol messages have role `clarify`).
fn transcript(entries: Value) -> Transcript {
    serde_json::from_value(entries).expect("a stored transcript")
}

fn call(id: &str, name: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": "{}"}})
}

fn calls(list: &[(&str, &str)]) -> Value {
    let list: Vec<Value> = list.iter().map(|(id, name)| call(id, name)).collect();
    json!({"role": "assistant", "content": null, "tool_calls": list})
}

fn result(id: &str, content: &str) -> Value {
    json!({"role": "tool", "tool_call_id": id, "content": content})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn asked(call_id: &str, request_id: &str) -> Value {
    json!({"role": "clarify", "event": "asked", "request_id": request_id,
           "tool_call_id": call_id, "body": {"id": request_id, "questions": []}})
}

fn resolved(call_id: &str, request_id: &str) -> Value {
    json!({"role": "clarify", "event": "resolved", "request_id": request_id,
           "tool_call_id": call_id, "body": {"request_id": request_id, "status": "answered"}})
}

/// The synthetic result of a call that never finished.
fn no_result(id: &str) -> Value {
    let content = json!({
        "status": "no_result",
        "note": "No result was recorded for this call: the agent stopped while it ran, so it may \
                 or may not have taken effect. Check before repeating it.",
    })
    .to_string();
    result(id, &content)
}

#[test]
fn what_the_model_is_sent() {
    type Case = (&'static str, Value, Result<Value, TranscriptError>);
    let awaiting = |call: &str, request: &str| TranscriptError::AwaitingHuman {
        tool_call_id: call.to_owned(),
        request_id: request.to_owned(),
    };
    let cases: Vec<Case> = vec![
        (
            "a plain conversation is sent as it is",
            json!([{"role": "system", "content": "Be brief."}, user("Hi"),
                   {"role": "assistant", "content": "Hello.", "refusal": null}]),
            Ok(
                json!([{"role": "system", "content": "Be brief."}, user("Hi"),
                      {"role": "assistant", "content": "Hello.", "refusal": null}]),
            ),
        ),
        (
            "protocol messages are left out; the call keeps its result",
            json!([
                user("Deploy?"),
                calls(&[("call_1", "ask_human")]),
                asked("call_1", "req_1"),
                resolved("call_1", "req_1"),
                result("call_1", "{\"status\":\"answered\"}")
            ]),
            Ok(json!([
                user("Deploy?"),
                calls(&[("call_1", "ask_human")]),
                result("call_1", "{\"status\":\"answered\"}")
            ])),
        ),
        (
            "a call waiting for a human is refused",
            json!([
                user("Deploy?"),
                calls(&[("call_1", "ask_human")]),
                asked("call_1", "req_1")
            ]),
            Err(awaiting("call_1", "req_1")),
        ),
        (
            "a call waiting behind an answered one is refused",
            json!([
                user("x"),
                calls(&[("a", "ask_human"), ("b", "write_file")]),
                asked("a", "req_a"),
                resolved("a", "req_a"),
                result("a", "yes"),
                asked("b", "req_b")
            ]),
            Err(awaiting("b", "req_b")),
        ),
        (
            "a call the agent never finished gets a synthetic result",
            json!([user("x"), calls(&[("call_1", "write_file")])]),
            Ok(json!([
                user("x"),
                calls(&[("call_1", "write_file")]),
                no_result("call_1")
            ])),
        ),
        (
            "an approval resolved but never run gets a synthetic result",
            json!([
                user("x"),
                calls(&[("call_1", "write_file")]),
                asked("call_1", "req_1"),
                resolved("call_1", "req_1")
            ]),
            Ok(json!([
                user("x"),
                calls(&[("call_1", "write_file")]),
                no_result("call_1")
            ])),
        ),
        (
            "results are placed right after their calls, in call order",
            json!([
                user("x"),
                calls(&[("a", "f"), ("b", "g")]),
                result("b", "B"),
                user("still there?"),
                result("a", "A")
            ]),
            Ok(json!([
                user("x"),
                calls(&[("a", "f"), ("b", "g")]),
                result("a", "A"),
                result("b", "B"),
                user("still there?")
            ])),
        ),
        (
            "a call id reused in a later turn pairs with its own result",
            json!([
                user("x"),
                calls(&[("call_0", "f")]),
                result("call_0", "first"),
                calls(&[("call_0", "f")]),
                result("call_0", "second")
            ]),
            Ok(json!([
                user("x"),
                calls(&[("call_0", "f")]),
                result("call_0", "first"),
                calls(&[("call_0", "f")]),
                result("call_0", "second")
            ])),
        ),
        (
            "a reused id whose first call never finished",
            json!([
                user("x"),
                calls(&[("call_0", "f")]),
                user("go on"),
                calls(&[("call_0", "f")]),
                result("call_0", "second")
            ]),
            Ok(json!([
                user("x"),
                calls(&[("call_0", "f")]),
                no_result("call_0"),
                user("go on"),
                calls(&[("call_0", "f")]),
                result("call_0", "second")
            ])),
        ),
        (
            "a result without a call is corrupt",
            json!([user("x"), result("call_1", "?")]),
            Err(TranscriptError::UnknownToolCall {
                tool_call_id: "call_1".to_owned(),
            }),
        ),
        (
            "a result before its call is corrupt",
            json!([user("x"), result("call_1", "?"), calls(&[("call_1", "f")])]),
            Err(TranscriptError::UnknownToolCall {
                tool_call_id: "call_1".to_owned(),
            }),
        ),
        (
            "a second result for one call is corrupt",
            json!([
                user("x"),
                calls(&[("call_1", "f")]),
                result("call_1", "a"),
                result("call_1", "b")
            ]),
            Err(TranscriptError::DuplicateResult {
                tool_call_id: "call_1".to_owned(),
            }),
        ),
        (
            "a protocol message for an unknown call is corrupt",
            json!([user("x"), asked("call_7", "req_7")]),
            Err(TranscriptError::UnknownToolCall {
                tool_call_id: "call_7".to_owned(),
            }),
        ),
    ];
    let mut failures = Vec::new();
    for (name, entries, want) in cases {
        let stored = transcript(entries.clone());
        let got = stored
            .for_model()
            .map(|messages| serde_json::to_value(messages).expect("messages serialize"));
        if got != want {
            failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}"));
            continue;
        }
        if let Ok(Value::Array(messages)) = &got {
            assert_valid_for_provider(messages);
        }
        // The stored history is untouched and still writes back entry for entry.
        assert_eq!(
            serde_json::to_value(&stored).expect("a transcript serializes"),
            entries,
            "{name}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An outcome as a server sends it.
fn outcome(request_id: &str, answer: &str) -> Value {
    json!({"request_id": request_id, "status": "answered", "questions": [
        {"id": "q1", "question": "Which greeting?", "kind": "single",
         "choices_offered": ["Hello", "Hi"], "answer": answer, "mode": "option"}
    ], "answered_by": "alice", "resolved_at": "2024-05-01T12:00:00.000Z"})
}

#[test]
fn a_request_resolves_into_the_result_of_the_call_that_raised_it() {
    let mut t = Transcript::new();
    t.push(Message::system("Greet the user.")).expect("system");
    t.push(Message::user("Say hi.")).expect("user");
    let ask = ToolCall::function("call_abc", "ask_human", &json!({"questions": []}));
    t.push(Message::tool_calls(vec![ask])).expect("the call");
    t.record_asked(
        "call_abc",
        "req_42",
        json!({"id": "req_42", "answer_url": "https://x/a/t"}),
    )
    .expect("asked");
    assert_eq!(
        t.pending().expect("readable"),
        vec![PendingRequest {
            tool_call_id: "call_abc".to_owned(),
            request_id: "req_42".to_owned(),
        }]
    );
    // Asking again for the same call and request (a resumed agent) records nothing new.
    let before = t.entries().len();
    t.record_asked("call_abc", "req_42", json!({}))
        .expect("asked again");
    assert_eq!(t.entries().len(), before);

    t.answer("req_42", &outcome("req_42", "Hello"))
        .expect("answered");
    assert!(t.pending().expect("readable").is_empty());
    assert!(t.open_calls().expect("readable").is_empty());

    let sent = serde_json::to_value(t.for_model().expect("ready for the model")).expect("json");
    let sent = sent.as_array().expect("a list");
    assert_valid_for_provider(sent);
    assert_eq!(sent.len(), 4, "system, user, call, result: {sent:?}");
    assert_eq!(sent[3]["role"], "tool");
    assert_eq!(
        sent[3]["tool_call_id"], "call_abc",
        "the LLM's id, not the request's"
    );
    let content: Value =
        serde_json::from_str(sent[3]["content"].as_str().expect("text")).expect("outcome JSON");
    assert_eq!(content, outcome("req_42", "Hello"));

    // The stored history keeps the request as shown and the raw outcome.
    let stored = serde_json::to_value(&t).expect("json");
    let protocol: Vec<&Value> = stored
        .as_array()
        .expect("a list")
        .iter()
        .filter(|e| e["role"] == "clarify")
        .collect();
    assert_eq!(protocol.len(), 2, "{stored}");
    assert_eq!(protocol[0]["event"], "asked");
    assert_eq!(protocol[0]["body"]["answer_url"], "https://x/a/t");
    assert_eq!(protocol[1]["event"], "resolved");
    assert_eq!(protocol[1]["body"], outcome("req_42", "Hello"));
    let back: Transcript = serde_json::from_value(stored).expect("reads back");
    assert_eq!(back, t);
}

#[test]
fn an_approval_records_its_outcome_and_the_tool_supplies_the_result() {
    let mut t = transcript(json!([user("x"), calls(&[("call_w", "write_file")])]));
    t.record_asked("call_w", "req_w", json!({})).expect("asked");
    let call = t
        .record_resolved("req_w", json!({"status": "answered"}))
        .expect("resolved");
    assert_eq!(call, "call_w");
    assert!(t.pending().expect("readable").is_empty());
    let open = t.open_calls().expect("readable");
    assert_eq!(open.len(), 1, "still needs the tool's result");
    assert_eq!(open[0].0.id, "call_w");
    assert_eq!(open[0].1, Some("req_w"));
    // Recording it again (a resumed agent) adds nothing.
    let before = t.entries().len();
    t.record_resolved("req_w", json!({}))
        .expect("resolved again");
    assert_eq!(t.entries().len(), before);
    t.push(Message::tool_result("call_w", "written"))
        .expect("the tool's result");
    let sent = t.for_model().expect("ready");
    assert_eq!(
        serde_json::to_value(&sent).expect("json"),
        json!([
            user("x"),
            calls(&[("call_w", "write_file")]),
            result("call_w", "written")
        ])
    );
}

#[test]
fn refused_operations_change_nothing() {
    let base = json!([
        user("x"),
        calls(&[("call_1", "ask_human")]),
        asked("call_1", "req_1"),
        resolved("call_1", "req_1"),
        result("call_1", "yes"),
        calls(&[("call_2", "ask_human")]),
        asked("call_2", "req_2")
    ]);
    type Op = Box<dyn Fn(&mut Transcript) -> Result<(), TranscriptError>>;
    let cases: Vec<(&str, Op, TranscriptError)> = vec![
        (
            "a result for a call that was never made",
            Box::new(|t| t.push(Message::tool_result("call_9", "?"))),
            TranscriptError::UnknownToolCall {
                tool_call_id: "call_9".to_owned(),
            },
        ),
        (
            "a second result for an answered call",
            Box::new(|t| t.push(Message::tool_result("call_1", "again"))),
            TranscriptError::DuplicateResult {
                tool_call_id: "call_1".to_owned(),
            },
        ),
        (
            "asking for a call that has its result",
            Box::new(|t| t.record_asked("call_1", "req_9", json!({}))),
            TranscriptError::DuplicateResult {
                tool_call_id: "call_1".to_owned(),
            },
        ),
        (
            "asking a second request for one call",
            Box::new(|t| t.record_asked("call_2", "req_3", json!({}))),
            TranscriptError::AlreadyAsked {
                tool_call_id: "call_2".to_owned(),
                request_id: "req_2".to_owned(),
            },
        ),
        (
            "answering a request no call raised",
            Box::new(|t| t.answer("req_9", &json!({}))),
            TranscriptError::UnknownRequest {
                request_id: "req_9".to_owned(),
            },
        ),
        (
            "answering a call twice",
            Box::new(|t| t.answer("req_1", &json!({}))),
            TranscriptError::DuplicateResult {
                tool_call_id: "call_1".to_owned(),
            },
        ),
        (
            "resolving a request no call raised",
            Box::new(|t| t.record_resolved("req_9", json!({})).map(drop)),
            TranscriptError::UnknownRequest {
                request_id: "req_9".to_owned(),
            },
        ),
    ];
    for (name, op, want) in cases {
        let mut t = transcript(base.clone());
        let before = t.clone();
        assert_eq!(op(&mut t), Err(want), "{name}");
        assert_eq!(t, before, "{name}: the transcript changed");
    }
}
