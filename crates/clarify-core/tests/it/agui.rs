//! AG-UI, the pure part: each interrupt reason made the request it asks (and every body a valid
//! request), each outcome made the resume entry the agent receives, LangGraph's `on_interrupt`
//! event as `ag-ui-langgraph` sends it, and the resume input of a structured and a legacy run.

use chrono::{DateTime, Utc};
use clarify_core::agui::{
    Ask, Interrupt, Origin, ResumeEntry, Trace, legacy_interrupt, request_body, resume_entry,
    resume_input,
};
use clarify_core::{Limits, Outcome, Resolution, Submission, parse_request};
use serde_json::{Value, json};

fn interrupt(reason: &str, schema: Option<Value>) -> Interrupt {
    Interrupt {
        id: "int-1".to_owned(),
        reason: reason.to_owned(),
        message: Some("May I?".to_owned()),
        tool_call_id: (reason == "tool_call").then(|| "call_9".to_owned()),
        response_schema: schema,
        expires_at: None,
    }
}

fn origin<'a>(tool_call: Option<(&'a str, &'a Value)>) -> Origin<'a> {
    Origin {
        agent: "deployer",
        thread_id: "thread-7",
        run_id: "run-1",
        tool_call,
    }
}

/// An interrupt, the tool call the run streamed, what it asks, and the question kind.
type Case<'a> = (Interrupt, Option<(&'a str, &'a Value)>, Ask, &'static str);

#[test]
fn every_interrupt_reason_becomes_the_request_it_asks() {
    let arguments = json!({"env": "prod", "build": 481});
    let edits = json!({"type": "object", "properties": {
        "approved": {"type": "boolean"}, "editedArgs": {"type": "object"}}});
    let form = json!({"type": "object", "properties": {
        "budget": {"type": "number", "maximum": 5000}}, "required": ["budget"]});
    let cases: [Case<'_>; 6] = [
        (
            interrupt("tool_call", Some(edits)),
            Some(("deploy", &arguments)),
            Ask::Approval,
            "approval",
        ),
        (
            interrupt("tool_call", None),
            Some(("deploy", &arguments)),
            Ask::Approval,
            "approval",
        ),
        (
            interrupt("input_required", Some(form)),
            None,
            Ask::Form,
            "form",
        ),
        (
            interrupt("confirmation", None),
            None,
            Ask::Confirmation,
            "single",
        ),
        (
            interrupt("langgraph:interrupt", None),
            None,
            Ask::Open,
            "open",
        ),
        // A schema clarify cannot show as a form is asked as open text.
        (
            interrupt(
                "input_required",
                Some(json!({"type": "object", "$ref": "#/x"})),
            ),
            None,
            Ask::Open,
            "open",
        ),
    ];
    for (i, (interrupt, tool_call, ask, kind)) in cases.into_iter().enumerate() {
        let (body, asked) = request_body(&interrupt, origin(tool_call));
        assert_eq!(asked, ask, "case {i}");
        let request = parse_request(&body, &Limits::default())
            .unwrap_or_else(|e| panic!("case {i}: {e}\n{body}"));
        assert_eq!(request.questions[0].kind.name(), kind, "case {i}");
        assert_eq!(request.questions[0].text, "May I?");
        assert_eq!(request.session.as_deref(), Some("thread-7"));
        assert_eq!(request.agent.as_deref(), Some("deployer"));
        assert_eq!(
            request.idempotency_key.as_deref(),
            Some("agui:deployer:thread-7:run-1:int-1")
        );
        if ask == Ask::Approval {
            assert_eq!(body["questions"][0]["action"]["arguments"], arguments);
            assert_eq!(request.tool_call_id.as_deref(), Some("call_9"));
            assert_eq!(
                body["questions"][0]["allow_edit"],
                json!(i == 0),
                "edits only with editedArgs in the schema"
            );
            assert!(body.get("display").is_none(), "derived from the tool call");
        } else {
            assert_eq!(body["display"][0]["type"], "fields");
        }
    }
}

/// Request `body` resolved by `how`: an answer body, or `"expired"`.
fn outcome(body: &Value, how: Value) -> Value {
    let request = parse_request(body, &Limits::default()).expect("valid");
    let resolution = match how.as_str() {
        Some("expired") => Resolution::Expired,
        _ => match clarify_core::parse_submission(&request, &how).expect("a valid answer") {
            Submission::Answered(a) => Resolution::Answered(a),
            Submission::Skipped => Resolution::Skipped,
        },
    };
    let at: DateTime<Utc> = "2026-11-01T12:00:00Z".parse().expect("a time");
    serde_json::to_value(Outcome::new(
        "req_1",
        &request,
        &resolution,
        Some("alice"),
        at,
    ))
    .expect("an outcome serializes")
}

#[test]
fn outcomes_become_the_payloads_the_agent_resumes_with() {
    let arguments = json!({"env": "prod"});
    let edits = json!({"type": "object", "properties": {"editedArgs": {"type": "object"}}});
    let (approval, _) = request_body(
        &interrupt("tool_call", Some(edits)),
        origin(Some(("deploy", &arguments))),
    );
    let (confirmation, _) = request_body(&interrupt("confirmation", None), origin(None));
    let form = json!({"type": "object", "properties": {"budget": {"type": "number"}}});
    let (form, _) = request_body(&interrupt("input_required", Some(form)), origin(None));
    let (open, _) = request_body(&interrupt("other", None), origin(None));
    let resolved = |payload: Value| ResumeEntry {
        interrupt_id: "int-1".to_owned(),
        cancelled: false,
        payload: Some(payload),
    };
    let cases = [
        (
            &approval,
            Ask::Approval,
            json!({"decision": "approve", "edited_arguments": {"env": "staging"}}),
            resolved(json!({"approved": true, "editedArgs": {"env": "staging"}})),
        ),
        (
            &approval,
            Ask::Approval,
            json!({"decision": "deny", "reason": "not on Fridays"}),
            resolved(json!({"approved": false, "reason": "not on Fridays"})),
        ),
        (
            &approval,
            Ask::Approval,
            json!({"decision": "revise", "reason": "staging first"}),
            resolved(json!({"approved": false, "reason": "Changes requested: staging first"})),
        ),
        (
            &confirmation,
            Ask::Confirmation,
            json!({"option": "yes"}),
            resolved(json!({"approved": true})),
        ),
        (
            &confirmation,
            Ask::Confirmation,
            json!({"option": "no"}),
            resolved(json!({"approved": false})),
        ),
        (
            &form,
            Ask::Form,
            json!({"values": {"budget": 1200}}),
            resolved(json!({"budget": 1200})),
        ),
        (
            &open,
            Ask::Open,
            json!({"text": "eu-west-1"}),
            resolved(json!("eu-west-1")),
        ),
        // Nobody answered: AG-UI abandons the interrupt in the status.
        (
            &open,
            Ask::Open,
            json!("expired"),
            ResumeEntry {
                interrupt_id: "int-1".to_owned(),
                cancelled: true,
                payload: None,
            },
        ),
    ];
    for (body, ask, how, expected) in cases {
        let outcome = outcome(body, how.clone());
        assert_eq!(resume_entry("int-1", ask, &outcome), expected, "{how}");
    }
}

#[test]
fn langgraphs_on_interrupt_event_is_read_as_ag_ui_langgraph_sends_it() {
    // As ag-ui-langgraph 0.0.47 sends it for `interrupt({"message": ...})`.
    let event = json!({"type": "CUSTOM", "name": "on_interrupt",
        "rawEvent": {"value": {"message": "Which region?"}, "id": "eff0b3d9", "response_schema": null},
        "value": "{\"message\": \"Which region?\"}"});
    let read = legacy_interrupt(&event, 0);
    assert_eq!(read.id, "eff0b3d9");
    assert_eq!(read.reason, "langgraph:interrupt");
    assert_eq!(read.message.as_deref(), Some("Which region?"));
    // A plain string value, and no id: the message is the string, the id its place in the run.
    let plain = legacy_interrupt(
        &json!({"type": "CUSTOM", "name": "on_interrupt",
                                         "value": "Proceed?"}),
        2,
    );
    assert_eq!(plain.id, "on_interrupt-2");
    assert_eq!(plain.message.as_deref(), Some("Proceed?"));
}

#[test]
fn a_run_is_resumed_with_its_last_snapshots_and_its_answers() {
    let mut trace = Trace::default();
    for event in [
        json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r1"}),
        json!({"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "deploy"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "{\"env\":"}),
        json!({"type": "TOOL_CALL_ARGS", "toolCallId": "c1", "delta": "\"prod\"}"}),
        json!({"type": "STATE_SNAPSHOT", "snapshot": {"step": 2}}),
        json!({"type": "MESSAGES_SNAPSHOT", "messages": [{"id": "m1", "role": "user", "content": "go"}]}),
    ] {
        trace.note(&event);
    }
    assert_eq!(
        trace.tool_call("c1"),
        Some(("deploy".to_owned(), json!({"env": "prod"})))
    );
    let finished = json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r1",
        "outcome": {"type": "interrupt", "interrupts": [
            {"id": "i1", "reason": "tool_call", "toolCallId": "c1"}]}});
    let (found, legacy) = trace
        .interrupts(&finished)
        .expect("fits")
        .expect("interrupted");
    assert!(!legacy);
    assert_eq!(found[0].tool_call_id.as_deref(), Some("c1"));
    assert!(
        trace
            .interrupts(
                &json!({"type": "RUN_FINISHED", "outcome": {"type": "interrupt", "interrupts": []}})
            )
            .is_err(),
        "an interrupt outcome names at least one"
    );

    let input = json!({"threadId": "t", "runId": "r1", "messages": [], "state": {},
                       "forwardedProps": {"keep": 1, "command": {"resume": "old"}},
                       "resume": [{"interruptId": "old", "status": "resolved"}]});
    let raw = input.as_object().cloned().unwrap_or_default();
    let entry = ResumeEntry {
        interrupt_id: "i1".to_owned(),
        cancelled: false,
        payload: Some(json!({"approved": true})),
    };
    let next = resume_input(
        trace.next_input(&raw),
        "r2",
        std::slice::from_ref(&entry),
        false,
    );
    assert_eq!(next["runId"], "r2");
    assert_eq!(next["state"], json!({"step": 2}));
    assert_eq!(next["messages"][0]["id"], "m1");
    assert_eq!(
        next["resume"],
        json!([{"interruptId": "i1", "status": "resolved", "payload": {"approved": true}}])
    );
    assert_eq!(next["forwardedProps"], json!({"keep": 1}));
    let legacy = resume_input(trace.next_input(&raw), "r2", &[entry], true);
    assert!(legacy.get("resume").is_none());
    assert_eq!(
        legacy["forwardedProps"],
        json!({"keep": 1, "command": {"resume": {"approved": true}}})
    );
    assert!(clarify_core::agui::parse_input(&next).is_ok());
}
