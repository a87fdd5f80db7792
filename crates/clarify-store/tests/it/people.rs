//! Who may answer, on every backend: `group:NAME` responders (members from `[groups]` or the
//! identity provider's claim), a quorum over a group counting people, and four eyes (the person
//! a request acts for may not answer it, nor may an anonymous answer stand in for anyone).
//! These checks sit in the store, so every surface (API, inbox, links, chat, MCP) keeps them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use clarify_store::{Actor, OnCall, ResolveError, Store};
use serde_json::json;

use crate::support::{Env, request};

conformance! {
    every: [
        group_members_answer_and_others_are_refused,
        a_quorum_over_a_group_counts_each_person_once,
        four_eyes_refuses_the_person_a_request_acts_for_on_every_actor,
        the_outcome_names_the_surface_an_answer_came_through,
        on_call_readings_are_kept_and_read_again_at_the_escalation,
    ],
    durable: [],
}

fn sre(members: &[&str]) -> Arc<BTreeMap<String, Vec<String>>> {
    Arc::new(BTreeMap::from([(
        "sre".to_owned(),
        members.iter().map(|m| (*m).to_owned()).collect(),
    )]))
}

async fn group_members_answer_and_others_are_refused(_: Store, env: Env) {
    let store = env.open_with(|o| o.groups = sre(&["bob"])).await;
    let asked = request(
        json!({"question": "Restart?", "choices": ["yes", "no"], "responders": ["group:sre"]}),
    );
    let created = store
        .create(&env.tenant, asked.clone())
        .await
        .expect("created");
    let id = created.record.id;
    let answer = json!({"option": "yes"});
    let refused = store
        .answer(&env.tenant, &id, &answer, &Actor::new("carol", "api"))
        .await;
    assert!(
        matches!(refused, Err(ResolveError::NotAllowed { ref responder }) if responder == "carol"),
        "{refused:?}"
    );
    // A group the identity provider names counts as much as a configured one.
    let claimed = Actor::new("carol", "inbox").in_groups(vec!["sre".to_owned()]);
    let answered = store.answer(&env.tenant, &id, &answer, &claimed).await;
    assert!(answered.is_ok(), "{answered:?}");
    // A configured member answers another.
    let created = store.create(&env.tenant, asked).await.expect("created");
    let answered = store
        .answer(
            &env.tenant,
            &created.record.id,
            &answer,
            &Actor::new("bob", "api"),
        )
        .await
        .expect("bob is in sre");
    assert_eq!(
        answered.outcome().and_then(|o| o.answered_by),
        Some("bob".to_owned())
    );
}

async fn a_quorum_over_a_group_counts_each_person_once(_: Store, env: Env) {
    let store = env.open_with(|o| o.groups = sre(&["bob", "dave"])).await;
    let asked = request(json!({
        "questions": [{"text": "Deploy?", "kind": "approval", "action": {"name": "deploy", "arguments": {}}}],
        "responders": ["group:sre"],
        "approvals_required": 2,
    }));
    let id = store
        .create(&env.tenant, asked)
        .await
        .expect("created")
        .record
        .id;
    let approve = json!({"decision": "approve"});
    let bob = Actor::new("bob", "api");
    let first = store
        .answer(&env.tenant, &id, &approve, &bob)
        .await
        .expect("counted");
    assert!(!first.status.is_resolved());
    let again = store.answer(&env.tenant, &id, &approve, &bob).await;
    assert!(
        matches!(again, Err(ResolveError::AlreadyVoted { .. })),
        "{again:?}"
    );
    let done = store
        .answer(&env.tenant, &id, &approve, &Actor::new("dave", "inbox"))
        .await
        .expect("decides");
    assert!(done.status.is_resolved());
    assert_eq!(done.votes.len(), 2);
}

async fn four_eyes_refuses_the_person_a_request_acts_for_on_every_actor(_: Store, env: Env) {
    let store = env.open_with(|o| o.forbid_self_approval = true).await;
    let asked =
        request(json!({"question": "Deploy?", "choices": ["yes", "no"], "on_behalf_of": "Alice"}));
    let id = store
        .create(&env.tenant, asked)
        .await
        .expect("created")
        .record
        .id;
    let answer = json!({"option": "yes"});
    for channel in ["api", "inbox", "slack", "mcp"] {
        let refused = store
            .answer(&env.tenant, &id, &answer, &Actor::new("alice", channel))
            .await;
        assert!(
            matches!(refused, Err(ResolveError::SelfApproval { .. })),
            "{channel}: {refused:?}"
        );
    }
    let anonymous = Actor {
        name: None,
        channel: "link".to_owned(),
        ..Actor::default()
    };
    let refused = store.answer(&env.tenant, &id, &answer, &anonymous).await;
    assert!(
        matches!(refused, Err(ResolveError::SelfApprovalNeedsIdentity { ref person }) if person == "Alice"),
        "{refused:?}"
    );
    let skipped = store
        .skip(&env.tenant, &id, &Actor::new("alice", "api"))
        .await;
    assert!(
        matches!(skipped, Err(ResolveError::SelfApproval { .. })),
        "{skipped:?}"
    );
    let still = store
        .get(&env.tenant, &id)
        .await
        .expect("read")
        .expect("there");
    assert!(!still.status.is_resolved(), "nothing was answered");
    let answered = store
        .answer(&env.tenant, &id, &answer, &Actor::new("bob", "slack"))
        .await
        .expect("another person answers");
    assert!(answered.status.is_resolved());
}

async fn the_outcome_names_the_surface_an_answer_came_through(store: Store, env: Env) {
    let asked = request(json!({"question": "Go?", "choices": ["yes", "no"]}));
    let id = store
        .create(&env.tenant, asked)
        .await
        .expect("created")
        .record
        .id;
    store
        .answer(
            &env.tenant,
            &id,
            &json!({"option": "yes"}),
            &Actor::new("bob", "telegram"),
        )
        .await
        .expect("answered");
    // Read back from the store, not the record the answer returned.
    let outcome = store
        .get(&env.tenant, &id)
        .await
        .expect("read")
        .and_then(|r| r.outcome())
        .expect("an outcome");
    assert_eq!(outcome.answered_via.as_deref(), Some("telegram"));
    assert_eq!(outcome.answered_by.as_deref(), Some("bob"));
}

/// A reader standing in for `[oncall.*]`: whatever `now` holds when asked, and who asked.
fn reader(now: Arc<Mutex<Result<Vec<String>, String>>>) -> OnCall {
    OnCall(Arc::new(move |_responder: String| {
        let answer = now.lock().expect("lock").clone();
        Box::pin(async move { answer })
    }))
}

async fn on_call_readings_are_kept_and_read_again_at_the_escalation(_: Store, env: Env) {
    let now = Arc::new(Mutex::new(Err::<Vec<String>, String>(
        "on-call PagerDuty schedule P1 could not be read: PagerDuty answered 503".to_owned(),
    )));
    let store = env
        .open_with(|o| o.on_call = Some(reader(Arc::clone(&now))))
        .await;
    let asked = request(json!({"question": "Roll back?", "choices": ["yes", "no"],
                               "responders": ["oncall:pagerduty:P1", "carol"],
                               "escalate_after_seconds": 60, "escalate_to": ["lead"]}));
    let id = store
        .create(&env.tenant, asked)
        .await
        .expect("created")
        .record
        .id;
    let answer = json!({"option": "yes"});
    let refused = store
        .answer(&env.tenant, &id, &answer, &Actor::new("alice", "api"))
        .await;
    assert!(
        matches!(refused, Err(ResolveError::NotAllowed { .. })),
        "{refused:?}"
    );

    *now.lock().expect("lock") = Ok(vec!["alice".to_owned()]);
    env.advance(61);
    store.escalate_due().await.expect("escalates");
    let record = store
        .get(&env.tenant, &id)
        .await
        .expect("read")
        .expect("the request");
    let readings: Vec<(&str, Vec<String>, Option<&str>)> = record
        .on_call
        .iter()
        .map(|s| {
            (
                s.responder.as_str(),
                s.people.clone(),
                s.unreadable.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        readings,
        [
            (
                "oncall:pagerduty:P1",
                vec![],
                Some("on-call PagerDuty schedule P1 could not be read: PagerDuty answered 503")
            ),
            ("oncall:pagerduty:P1", vec!["alice".to_owned()], None),
        ]
    );
    let answered = store
        .answer(&env.tenant, &id, &answer, &Actor::new("alice", "api"))
        .await;
    assert!(answered.is_ok(), "{answered:?}");
}
