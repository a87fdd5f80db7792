//! Approval gating against every backend: which calls run without a human, the approval request
//! a call raises, what each answer does to the call, and the grants remembered in the store.
//!
//! The decisions themselves are table-tested in core; these cases check the flow around them:
//! that the right request is stored, that grants land in the store and are honoured by the next
//! call (also after a restart), and that a tool runs once, only when it should.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clarify_core::policy::{ApprovalSpec, Grant, Policy, Verdict};
use clarify_core::{Action, QuestionKind, Scope, Status};
use clarify_store::{Actor, Clarify, Gate, GateError, Gated, ListQuery, Proposal, Store};
use serde_json::{Value, json};

use crate::support::{DAY, Env, SHORT};

conformance! {
    every: [
        policy_settles_allowed_and_blocked_calls_without_asking,
        an_approval_request_names_the_call,
        approve_for_the_session_runs_edits_and_remembers,
        approve_always_holds_in_every_session,
        deny_refuses_with_the_reason,
        unanswered_approvals_refuse,
        call_waits_for_the_human_and_runs_the_tool_once,
        resuming_with_the_same_key_does_not_ask_twice,
        settle_refuses_what_it_cannot_read,
    ],
    durable: [
        always_grant_survives_a_restart,
    ],
}

fn deploy(replicas: u64) -> Action {
    Action {
        name: "deploy".to_owned(),
        arguments: json!({"env": "prod", "replicas": replicas}),
    }
}

/// A gate in `session` of this test's tenant; approvals last a day and may be edited.
fn gate(store: &Store, env: &Env, session: &str) -> Gate {
    let clarify = Clarify::new(store.clone())
        .with_tenant(env.tenant.clone())
        .with_agent("deployer");
    let spec = ApprovalSpec {
        allow_edit: true,
        timeout_seconds: Some(DAY),
        ..ApprovalSpec::default()
    };
    Gate::new(clarify, Policy::new(&["read_*"], &["rm", "shell_*"]))
        .with_session(session)
        .with_spec(spec)
}

async fn pending_count(store: &Store, env: &Env) -> usize {
    let query = ListQuery {
        status: Some(Status::Pending),
        ..ListQuery::default()
    };
    store
        .list(&env.tenant, &query)
        .await
        .expect("list")
        .records
        .len()
}

/// Proposes `action`; it must raise an approval request, whose id is returned.
async fn ask(gate: &Gate, action: &Action, call: &str) -> String {
    match gate.propose(action, Some(call), None).await {
        Ok(Proposal::Ask(asked)) => asked.id().to_owned(),
        other => panic!("{} should need a human: {other:?}", action.name),
    }
}

async fn answer(store: &Store, env: &Env, id: &str, body: Value) {
    store
        .answer(&env.tenant, id, &body, &Actor::new("alice", "api"))
        .await
        .unwrap_or_else(|e| panic!("answering {body}: {e}"));
}

/// The remembered grants for `deploy`.
async fn deploy_grants(store: &Store, env: &Env) -> Vec<Grant> {
    store.grants(&env.tenant, "deploy").await.expect("grants")
}

async fn settled(gate: &Gate, id: &str) -> Verdict {
    match gate.settle(id, Duration::from_secs(5)).await {
        Ok(Some(verdict)) => verdict,
        other => panic!("request {id} should be settled: {other:?}"),
    }
}

async fn policy_settles_allowed_and_blocked_calls_without_asking(store: Store, env: Env) {
    let gate = gate(&store, &env, "s1");
    let read = Action {
        name: "READ_file".to_owned(),
        arguments: json!({"path": "a"}),
    };
    match gate.propose(&read, Some("c1"), None).await {
        Ok(Proposal::Run { arguments, granted }) => {
            assert_eq!(arguments, read.arguments);
            assert_eq!(granted, None, "allowed by the policy, not by a grant");
        }
        other => panic!("an allowed tool runs: {other:?}"),
    }
    for name in ["rm", "shell_exec"] {
        let blocked = Action {
            name: name.to_owned(),
            arguments: json!({}),
        };
        match gate.propose(&blocked, Some("c2"), None).await {
            Ok(Proposal::Refuse(refusal)) => {
                assert_eq!(refusal.status, "blocked");
                assert!(refusal.reason.contains(name), "{}", refusal.reason);
            }
            other => panic!("a denied tool is refused: {other:?}"),
        }
    }
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let rm = Action {
        name: "rm".to_owned(),
        arguments: json!({"path": "/"}),
    };
    let gated = gate
        .call(&rm, None, |_| async move {
            counter.fetch_add(1, Ordering::SeqCst)
        })
        .await
        .expect("decided");
    assert!(matches!(gated, Gated::Refused(_)), "{gated:?}");
    assert_eq!(ran.load(Ordering::SeqCst), 0, "a refused tool never runs");
    assert_eq!(pending_count(&store, &env).await, 0, "nobody was asked");
}

async fn an_approval_request_names_the_call(store: Store, env: Env) {
    let gate = gate(&store, &env, "s1");
    let id = ask(&gate, &deploy(3), "call_9").await;
    let record = store
        .get(&env.tenant, &id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(record.status, Status::Pending);
    assert_eq!(record.request.tool_call_id.as_deref(), Some("call_9"));
    assert_eq!(record.request.session.as_deref(), Some("s1"));
    assert_eq!(record.request.agent.as_deref(), Some("deployer"));
    let QuestionKind::Approval(approval) = &record.request.questions[0].kind else {
        panic!("an approval question: {:?}", record.request);
    };
    assert_eq!(approval.action, deploy(3));
    assert_eq!(approval.scopes, Scope::ALL.to_vec());
    assert!(approval.allow_edit);
    assert!(
        gate.settle(&id, Duration::from_millis(50))
            .await
            .expect("readable")
            .is_none(),
        "a pending approval settles nothing"
    );
}

async fn approve_for_the_session_runs_edits_and_remembers(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let id = ask(&s1, &deploy(3), "call_1").await;
    answer(
        &store,
        &env,
        &id,
        json!({"decision": "approve", "scope": "session", "edited_arguments": deploy(2).arguments}),
    )
    .await;
    match settled(&s1, &id).await {
        Verdict::Run {
            arguments, edited, ..
        } => {
            assert_eq!(arguments, deploy(2).arguments, "the human's edit runs");
            assert!(edited);
        }
        other => panic!("an approval runs the tool: {other:?}"),
    }
    let grants = deploy_grants(&store, &env).await;
    assert_eq!(
        grants,
        vec![
            Grant::new("deploy", &deploy(2).arguments, Scope::Session, Some("s1"))
                .expect("a grant")
        ],
        "the grant covers what the human approved, in this session"
    );

    let pending_before = pending_count(&store, &env).await;
    match s1.propose(&deploy(2), Some("call_2"), None).await {
        Ok(Proposal::Run { granted, .. }) => assert_eq!(granted, Some(Scope::Session)),
        other => panic!("the session grant runs the same call: {other:?}"),
    }
    assert_eq!(
        pending_count(&store, &env).await,
        pending_before,
        "nobody asked"
    );
    // The model's original arguments were never approved, and other sessions know nothing.
    ask(&s1, &deploy(3), "call_3").await;
    ask(&gate(&store, &env, "s2"), &deploy(2), "call_4").await;
}

async fn approve_always_holds_in_every_session(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let id = ask(&s1, &deploy(5), "call_1").await;
    answer(
        &store,
        &env,
        &id,
        json!({"decision": "approve", "scope": "always"}),
    )
    .await;
    assert!(matches!(
        settled(&s1, &id).await,
        Verdict::Run { edited: false, .. }
    ));
    for session in ["s1", "s2"] {
        match gate(&store, &env, session)
            .propose(&deploy(5), Some("c"), None)
            .await
        {
            Ok(Proposal::Run { granted, .. }) => assert_eq!(granted, Some(Scope::Always)),
            other => panic!("an always grant runs in {session}: {other:?}"),
        }
    }
    // Grants are the tenant's: another tenant is still asked.
    let other = Clarify::new(store.clone()).with_tenant(env.other_tenant());
    let foreign = Gate::new(other, Policy::default()).with_spec(ApprovalSpec {
        timeout_seconds: Some(DAY),
        ..ApprovalSpec::default()
    });
    match foreign.propose(&deploy(5), None, None).await {
        Ok(Proposal::Ask(asked)) => {
            let QuestionKind::Approval(approval) = &asked.record.request.questions[0].kind else {
                panic!("an approval question");
            };
            assert_eq!(
                approval.scopes,
                vec![Scope::Once, Scope::Always],
                "no session scope outside a session"
            );
        }
        other => panic!("another tenant is asked: {other:?}"),
    }
}

async fn always_grant_survives_a_restart(store: Store, env: Env) {
    let id = ask(&gate(&store, &env, "s1"), &deploy(7), "call_1").await;
    answer(
        &store,
        &env,
        &id,
        json!({"decision": "approve", "scope": "always"}),
    )
    .await;
    settled(&gate(&store, &env, "s1"), &id).await;
    drop(store);
    let reopened = env.open().await;
    match gate(&reopened, &env, "s9")
        .propose(&deploy(7), Some("c"), None)
        .await
    {
        Ok(Proposal::Run { granted, .. }) => assert_eq!(granted, Some(Scope::Always)),
        other => panic!("the grant outlives the process: {other:?}"),
    }
}

async fn deny_refuses_with_the_reason(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let id = ask(&s1, &deploy(3), "call_1").await;
    answer(
        &store,
        &env,
        &id,
        json!({"decision": "deny", "reason": "Freeze until Monday.", "scope": "always"}),
    )
    .await;
    match settled(&s1, &id).await {
        Verdict::Refuse(refusal) => {
            assert_eq!(refusal.status, "denied");
            let result: Value = serde_json::from_str(&refusal.tool_result()).expect("JSON");
            assert!(
                result["reason"]
                    .as_str()
                    .is_some_and(|r| r.contains("Freeze until Monday.")),
                "the model is told the reason: {result}"
            );
        }
        other => panic!("a denial refuses: {other:?}"),
    }
    assert!(
        deploy_grants(&store, &env).await.is_empty(),
        "a denial grants nothing"
    );
    ask(&s1, &deploy(3), "call_2").await;
}

async fn unanswered_approvals_refuse(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let skipped = ask(&s1, &deploy(1), "c1").await;
    store
        .skip(&env.tenant, &skipped, &Actor::new("alice", "api"))
        .await
        .expect("skip");
    let cancelled = ask(&s1, &deploy(2), "c2").await;
    store
        .cancel(&env.tenant, &cancelled, &Actor::new("deployer", "rust"))
        .await
        .expect("cancel");
    for (id, status) in [(skipped, "skipped"), (cancelled, "cancelled")] {
        match settled(&s1, &id).await {
            Verdict::Refuse(refusal) => {
                assert_eq!(refusal.status, status);
                assert!(
                    refusal.reason.contains("The tool was not run."),
                    "{refusal:?}"
                );
            }
            other => panic!("{status} refuses: {other:?}"),
        }
    }

    let _clock = env.exclusive_clock().await;
    let short = s1.clone().with_spec(ApprovalSpec {
        timeout_seconds: Some(SHORT),
        ..ApprovalSpec::default()
    });
    let expiring = ask(&short, &deploy(3), "c3").await;
    env.advance(SHORT as i64 + 1);
    match settled(&short, &expiring).await {
        Verdict::Refuse(refusal) => {
            assert_eq!(refusal.status, "expired");
            assert!(refusal.reason.contains("within 10 minutes"), "{refusal:?}");
        }
        other => panic!("an expired approval refuses: {other:?}"),
    }
    assert!(deploy_grants(&store, &env).await.is_empty());
}

async fn call_waits_for_the_human_and_runs_the_tool_once(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&runs);
    let agent = tokio::spawn(async move {
        s1.call(&deploy(4), Some("call_1"), |arguments| async move {
            counter.fetch_add(1, Ordering::SeqCst);
            format!("deployed {}", arguments["replicas"])
        })
        .await
    });
    // The person answers once the approval shows up.
    let id = loop {
        let query = ListQuery {
            status: Some(Status::Pending),
            ..ListQuery::default()
        };
        let page = store.list(&env.tenant, &query).await.expect("list");
        if let Some(record) = page.records.first() {
            break record.id.clone();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "nothing runs before the approval"
    );
    answer(
        &store,
        &env,
        &id,
        json!({"decision": "approve", "edited_arguments": deploy(6).arguments}),
    )
    .await;
    match agent.await.expect("the agent task") {
        Ok(Gated::Ran {
            output,
            arguments,
            edited,
        }) => {
            assert_eq!(output, "deployed 6");
            assert_eq!(arguments, deploy(6).arguments);
            assert!(edited);
        }
        other => panic!("the approved tool ran: {other:?}"),
    }
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    assert!(
        deploy_grants(&store, &env).await.is_empty(),
        "`once` is not remembered"
    );
}

async fn resuming_with_the_same_key_does_not_ask_twice(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    let first = match s1.propose(&deploy(3), Some("call_1"), Some("s1/1")).await {
        Ok(Proposal::Ask(asked)) => {
            assert!(asked.created);
            asked.id().to_owned()
        }
        other => panic!("asks: {other:?}"),
    };
    match s1.propose(&deploy(3), Some("call_1"), Some("s1/1")).await {
        Ok(Proposal::Ask(asked)) => {
            assert!(!asked.created, "the same request comes back");
            assert_eq!(asked.id(), first);
        }
        other => panic!("asks: {other:?}"),
    }
    assert_eq!(pending_count(&store, &env).await, 1);
    match s1.propose(&deploy(4), Some("call_2"), Some("s1/1")).await {
        Err(GateError::KeyReused { key, request_id }) => {
            assert_eq!(key, "s1/1");
            assert_eq!(request_id, first);
        }
        other => panic!("a key names one call: {other:?}"),
    }
    assert_eq!(pending_count(&store, &env).await, 1);
}

async fn settle_refuses_what_it_cannot_read(store: Store, env: Env) {
    let s1 = gate(&store, &env, "s1");
    match s1
        .settle("no-such-request", Duration::from_millis(10))
        .await
    {
        Err(GateError::Resolve(clarify_store::ResolveError::NotFound)) => {}
        other => panic!("an unknown id is not found: {other:?}"),
    }
    let question = Clarify::new(store.clone()).with_tenant(env.tenant.clone());
    let asked = question
        .ask(&json!({"question": "Why?", "timeout_seconds": DAY}))
        .await
        .expect("asked");
    answer(&store, &env, asked.id(), json!({"text": "Because."})).await;
    match s1.settle(asked.id(), Duration::from_secs(5)).await {
        Err(GateError::Approval(e)) => {
            assert!(e.to_string().contains("has no approval question"), "{e}");
        }
        other => panic!("an open question is not an approval: {other:?}"),
    }
}
