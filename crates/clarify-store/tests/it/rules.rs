//! The server's `[[rules]]` on every backend: an approval created through the store is decided
//! by the first matching rule (allowed or denied at once, in the event log and the audit chain
//! as the rule; or asked with the rule's settings), and bounded grants (`grant_ttl_seconds`,
//! `grant_max_uses`) stop matching past either, each use counted atomically, also between two
//! instances racing for the last one.

use std::sync::Arc;

use clarify_core::rules::{AskSettings, Decide, RuleSpec, Rules};
use clarify_core::{Action, OnTimeout, Status};
use clarify_store::{Actor, EventKind, Store, StoreOptions};
use serde_json::{Value, json};

use crate::support::{DAY, Env, options, request};

conformance! {
    every: [
        an_allow_rule_resolves_the_approval_as_the_rule,
        a_deny_rule_resolves_it_denied_with_the_reason,
        an_ask_rule_sets_every_field_it_names,
        the_first_matching_rule_wins,
        a_failing_condition_does_not_match,
        rules_leave_other_requests_alone,
        a_repeated_idempotency_key_is_not_decided_again,
        a_grant_expires_after_its_ttl,
        a_grant_stops_after_its_max_uses,
        bounds_need_a_grant_scope,
    ],
    durable: [
        two_instances_racing_for_the_last_use_one_gets_it,
    ],
}

fn rule(name: &str, tool: &str, when: Option<&str>, decide: Decide) -> RuleSpec {
    RuleSpec {
        name: name.to_owned(),
        tool: Some(tool.to_owned()),
        when: when.map(str::to_owned),
        decide,
        reason: None,
        ask: AskSettings::default(),
    }
}

/// The rules every case here runs with.
fn rules() -> Rules {
    let mut small = rule(
        "small-refunds",
        "refund",
        Some("args.amount < 100"),
        Decide::Allow,
    );
    small.reason = Some("refunds under 100 are routine".to_owned());
    let mut outside = rule(
        "outside-workspace",
        "Write",
        Some("!args.file_path.startsWith(cwd)"),
        Decide::Deny,
    );
    outside.reason = Some("writes outside the workspace are not allowed".to_owned());
    let mut big = rule(
        "big-refunds",
        "refund",
        Some("args.amount >= 1000"),
        Decide::Ask,
    );
    big.ask = AskSettings {
        responders: Some(vec!["cfo".to_owned(), "controller".to_owned()]),
        approvals_required: Some(2),
        risk: Some("high".to_owned()),
        timeout_seconds: Some(7_200),
        on_timeout: Some(OnTimeout::Decision {
            decision: clarify_core::Decision::Deny,
            reason: Some("nobody approved in time".to_owned()),
        }),
        tags: vec!["finance".to_owned()],
    };
    // Would allow every refund, but comes after the rules above.
    let any = rule(
        "any-refund",
        "refund",
        Some("has(args.amount)"),
        Decide::Deny,
    );
    let reads_missing = rule(
        "needs-recipient",
        "send_mail",
        Some("args.to.endsWith('@example.com')"),
        Decide::Allow,
    );
    Rules::compile(vec![small, outside, big, any, reads_missing]).expect("the rules compile")
}

/// A second handle on the test's store, deciding with [`rules`].
async fn with_rules(env: &Env) -> Store {
    let options = StoreOptions {
        rules: Some(rules()),
        ..options(&env.clock)
    };
    Store::open(&env.url, options).await.expect("open")
}

fn approval(tool: &str, arguments: Value) -> Value {
    json!({
        "questions": [{"text": format!("Run {tool}?"), "kind": "approval",
            "action": {"name": tool, "arguments": arguments},
            "scopes": ["once", "session", "always"], "allow_edit": true}],
        "session": "s1",
        "agent": "billing-bot",
        "timeout_seconds": DAY,
    })
}

async fn events_of(store: &Store, env: &Env, id: &str) -> Vec<clarify_store::Event> {
    store.sync_feed().await.expect("sync feed");
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let batch = store
            .events_after(Some(&env.tenant), after, 1_000)
            .await
            .expect("events");
        let Some(last) = batch.last() else { break };
        after = last.seq;
        all.extend(batch.into_iter().filter(|e| e.request_id == id));
    }
    all
}

async fn an_allow_rule_resolves_the_approval_as_the_rule(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    let created = store
        .create(
            &env.tenant,
            request(approval("refund", json!({"amount": 40}))),
        )
        .await
        .expect("create");
    assert!(created.created);
    let record = created.record;
    assert_eq!(record.status, Status::Answered, "resolved at creation");
    let outcome = serde_json::to_value(record.outcome().expect("outcome")).expect("json");
    assert_eq!(outcome["answered_by"], "policy:small-refunds");
    assert_eq!(outcome["questions"][0]["decision"], "approve");
    assert_eq!(
        outcome["questions"][0]["reason"],
        "refunds under 100 are routine"
    );
    // Read back, it is the same.
    let stored = store
        .get(&env.tenant, &record.id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(stored.status, Status::Answered);

    let events = events_of(&store, &env, &record.id).await;
    let kinds: Vec<EventKind> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, vec![EventKind::Created, EventKind::Answered]);
    let answered = &events[1];
    assert_eq!(answered.actor.as_deref(), Some("policy:small-refunds"));
    assert_eq!(answered.channel.as_deref(), Some("policy"));
    assert!(
        !answered.hash.is_empty(),
        "the decision is in the audit chain"
    );
    let audit = store
        .audit_events(Some(&env.tenant), 0, 10_000)
        .await
        .expect("audit");
    let entry = audit
        .iter()
        .find(|e| e.seq == answered.seq)
        .expect("the answer is in the audit chain");
    assert_eq!(entry.actor.as_deref(), Some("policy:small-refunds"));
    assert_eq!(entry.hash, answered.hash);
}

async fn a_deny_rule_resolves_it_denied_with_the_reason(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    let mut raw = approval("Write", json!({"file_path": "/etc/passwd", "content": "x"}));
    raw["context"] = json!({"working_directory": "/home/dev/project"});
    let record = store
        .create(&env.tenant, request(raw))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Answered);
    let outcome = serde_json::to_value(record.outcome().expect("outcome")).expect("json");
    assert_eq!(outcome["questions"][0]["decision"], "deny");
    assert_eq!(outcome["answered_by"], "policy:outside-workspace");
    assert_eq!(
        outcome["questions"][0]["reason"],
        "writes outside the workspace are not allowed"
    );
    // Inside the workspace nothing matches: a person is asked.
    let mut inside = approval(
        "Write",
        json!({"file_path": "/home/dev/project/a.txt", "content": "x"}),
    );
    inside["context"] = json!({"working_directory": "/home/dev/project"});
    let record = store
        .create(&env.tenant, request(inside))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending);
    let events = events_of(&store, &env, &record.id).await;
    assert_eq!(events.len(), 1, "only created");
}

async fn an_ask_rule_sets_every_field_it_names(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    let mut raw = approval("refund", json!({"amount": 5000}));
    raw["tags"] = json!(["billing"]);
    let record = store
        .create(&env.tenant, request(raw))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending, "an ask rule asks");
    let r = &record.request;
    assert_eq!(
        r.responders.as_deref(),
        Some(&["cfo".to_owned(), "controller".to_owned()][..])
    );
    assert_eq!(r.approvals_required, 2);
    assert_eq!(r.timeout_seconds, 7_200);
    assert_eq!(
        record.expires_at,
        Some(record.created_at + chrono::TimeDelta::seconds(7_200))
    );
    assert_eq!(
        r.on_timeout,
        Some(OnTimeout::Decision {
            decision: clarify_core::Decision::Deny,
            reason: Some("nobody approved in time".to_owned()),
        })
    );
    assert_eq!(r.tags, vec!["billing".to_owned(), "finance".to_owned()]);
    // A quorum cannot go with edits, so the rule turned them off.
    let clarify_core::QuestionKind::Approval(a) = &r.questions[0].kind else {
        panic!("an approval")
    };
    assert!(!a.allow_edit);
    // The settings hold: one of the rule's responders votes, someone else cannot.
    let refused = store
        .answer(
            &env.tenant,
            &record.id,
            &json!({"decision": "approve"}),
            &Actor::new("intern", "api"),
        )
        .await;
    assert!(
        matches!(refused, Err(clarify_store::ResolveError::NotAllowed { .. })),
        "{refused:?}"
    );
    let voted = store
        .answer(
            &env.tenant,
            &record.id,
            &json!({"decision": "approve"}),
            &Actor::new("cfo", "api"),
        )
        .await
        .expect("vote");
    assert_eq!(voted.status, Status::Pending, "one of two approvals");
}

async fn the_first_matching_rule_wins(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    // 500 matches neither small-refunds nor big-refunds, but any-refund, which denies.
    let record = store
        .create(
            &env.tenant,
            request(approval("REFUND", json!({"amount": 500}))),
        )
        .await
        .expect("create")
        .record;
    let outcome = serde_json::to_value(record.outcome().expect("resolved")).expect("json");
    assert_eq!(outcome["answered_by"], "policy:any-refund");
    assert_eq!(outcome["questions"][0]["decision"], "deny");
    // 40 matches small-refunds first, though any-refund matches too.
    let record = store
        .create(
            &env.tenant,
            request(approval("refund", json!({"amount": 40}))),
        )
        .await
        .expect("create")
        .record;
    let outcome = serde_json::to_value(record.outcome().expect("resolved")).expect("json");
    assert_eq!(outcome["answered_by"], "policy:small-refunds");
}

async fn a_failing_condition_does_not_match(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    // `args.to` is missing: the rule's condition fails, so it does not match; a person is asked.
    let record = store
        .create(
            &env.tenant,
            request(approval("send_mail", json!({"subject": "hi"}))),
        )
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending);
    // With the argument, it matches.
    let record = store
        .create(
            &env.tenant,
            request(approval("send_mail", json!({"to": "bob@example.com"}))),
        )
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Answered);
    // A refund without an amount fails small-refunds and big-refunds, and any-refund's
    // `has()` is false: nothing matches.
    let record = store
        .create(&env.tenant, request(approval("refund", json!({"to": "x"}))))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending);
}

async fn rules_leave_other_requests_alone(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    let record = store
        .create(&env.tenant, crate::support::yes_no("Ship it?"))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending);
    // Two questions: not one call, so the rules do not decide it.
    let raw = json!({"questions": [
        {"text": "Refund?", "kind": "approval", "action": {"name": "refund", "arguments": {"amount": 1}}},
        {"text": "Why?", "kind": "open"}]});
    let record = store
        .create(&env.tenant, request(raw))
        .await
        .expect("create")
        .record;
    assert_eq!(record.status, Status::Pending);
}

async fn a_repeated_idempotency_key_is_not_decided_again(_store: Store, env: Env) {
    let store = with_rules(&env).await;
    let mut raw = approval("refund", json!({"amount": 40}));
    raw["idempotency_key"] = json!("k-1");
    let first = store
        .create(&env.tenant, request(raw.clone()))
        .await
        .expect("create");
    let again = store
        .create(&env.tenant, request(raw))
        .await
        .expect("create");
    assert!(!again.created);
    assert_eq!(again.record.id, first.record.id);
    assert_eq!(again.record.status, Status::Answered);
    let events = events_of(&store, &env, &first.record.id).await;
    assert_eq!(events.len(), 2, "created and answered once: {events:?}");
}

fn deploy() -> Action {
    Action {
        name: "deploy".to_owned(),
        arguments: json!({"env": "staging"}),
    }
}

/// Approves a `deploy` with scope `always` and `bounds` added to the answer.
async fn grant(store: &Store, env: &Env, bounds: Value) {
    let action = deploy();
    let record = store
        .create(
            &env.tenant,
            request(approval(&action.name, action.arguments.clone())),
        )
        .await
        .expect("create")
        .record;
    let mut answer = json!({"decision": "approve", "scope": "always"});
    if let (Some(a), Some(b)) = (answer.as_object_mut(), bounds.as_object()) {
        a.extend(b.clone());
    }
    store
        .answer(&env.tenant, &record.id, &answer, &crate::support::alice())
        .await
        .expect("answer");
}

async fn a_grant_expires_after_its_ttl(store: Store, env: Env) {
    grant(&store, &env, json!({"grant_ttl_seconds": 60})).await;
    let found = store
        .check_grant(&env.tenant, &deploy(), None)
        .await
        .expect("check")
        .expect("granted within its time");
    assert_eq!(
        found.expires_at,
        Some(found.created_at + chrono::TimeDelta::seconds(60))
    );
    env.advance(59);
    assert!(
        store
            .check_grant(&env.tenant, &deploy(), None)
            .await
            .expect("check")
            .is_some()
    );
    env.advance(1);
    assert!(
        store
            .check_grant(&env.tenant, &deploy(), None)
            .await
            .expect("check")
            .is_none(),
        "past its time the grant no longer matches"
    );
    // The listing still shows it, with its expiry.
    let listed = store.list_grants(&env.tenant, None).await.expect("list");
    assert_eq!(listed.len(), 1);
    assert!(listed[0].expires_at.is_some());
}

async fn a_grant_stops_after_its_max_uses(store: Store, env: Env) {
    grant(&store, &env, json!({"grant_max_uses": 2})).await;
    for n in 1..=2 {
        let used = store
            .check_grant(&env.tenant, &deploy(), None)
            .await
            .expect("check")
            .unwrap_or_else(|| panic!("use {n} of 2 is granted"));
        assert_eq!(used.uses, n);
        assert_eq!(used.max_uses, Some(2));
    }
    assert!(
        store
            .check_grant(&env.tenant, &deploy(), None)
            .await
            .expect("check")
            .is_none(),
        "a third use is refused"
    );
    // A new approval of the same call renews it, uses counted afresh.
    grant(&store, &env, json!({"grant_max_uses": 1})).await;
    let renewed = store
        .check_grant(&env.tenant, &deploy(), None)
        .await
        .expect("check")
        .expect("renewed");
    assert_eq!((renewed.uses, renewed.max_uses), (1, Some(1)));
    assert_eq!(
        store
            .list_grants(&env.tenant, None)
            .await
            .expect("list")
            .len(),
        1,
        "one grant, renewed in place"
    );
}

async fn bounds_need_a_grant_scope(store: Store, env: Env) {
    let action = deploy();
    let record = store
        .create(
            &env.tenant,
            request(approval(&action.name, action.arguments.clone())),
        )
        .await
        .expect("create")
        .record;
    for (answer, field) in [
        (
            json!({"decision": "approve", "scope": "once", "grant_max_uses": 3}),
            "grant_max_uses",
        ),
        (
            json!({"decision": "deny", "grant_ttl_seconds": 60}),
            "grant_ttl_seconds",
        ),
        (
            json!({"decision": "approve", "scope": "always", "grant_max_uses": 0}),
            "grant_max_uses",
        ),
        (
            json!({"decision": "approve", "scope": "always", "grant_ttl_seconds": "1h"}),
            "grant_ttl_seconds",
        ),
    ] {
        let refused = store
            .answer(&env.tenant, &record.id, &answer, &crate::support::alice())
            .await;
        match refused {
            Err(clarify_store::ResolveError::Invalid(e)) => {
                assert_eq!(e.code(), "invalid_grant_bound");
                assert_eq!(e.path().as_deref(), Some(&*format!("answers.q1.{field}")));
            }
            other => panic!("{answer} should be refused: {other:?}"),
        }
    }
    let still = store
        .get(&env.tenant, &record.id)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(
        still.status,
        Status::Pending,
        "refused answers change nothing"
    );
}

async fn two_instances_racing_for_the_last_use_one_gets_it(store: Store, env: Env) {
    let other = env.open().await;
    for round in 0..10 {
        let action = Action {
            name: "deploy".to_owned(),
            arguments: json!({"round": round}),
        };
        let record = store
            .create(
                &env.tenant,
                request(approval(&action.name, action.arguments.clone())),
            )
            .await
            .expect("create")
            .record;
        store
            .answer(
                &env.tenant,
                &record.id,
                &json!({"decision": "approve", "scope": "always", "grant_max_uses": 1}),
                &crate::support::alice(),
            )
            .await
            .expect("answer");
        let action = Arc::new(action);
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let instance = if i % 2 == 0 {
                    store.clone()
                } else {
                    other.clone()
                };
                let (tenant, action) = (env.tenant.clone(), Arc::clone(&action));
                tokio::spawn(async move {
                    instance
                        .check_grant(&tenant, &action, None)
                        .await
                        .expect("check")
                        .is_some()
                })
            })
            .collect();
        let mut granted = 0;
        for task in tasks {
            granted += usize::from(task.await.expect("task"));
        }
        assert_eq!(
            granted, 1,
            "round {round}: exactly one of eight got the last use"
        );
    }
}
