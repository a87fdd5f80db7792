//! The store conformance suite: one set of cases, run against every backend.
//!
//! Each case is an `async fn(Store, Env)` that checks behaviour a user of the store can see.
//! [`conformance!`] (in `main.rs`) turns each into one test per backend
//! (`conformance::memory::<case>`, `conformance::sqlite::<case>`, `conformance::postgres::<case>`),
//! so a backend passes exactly when it behaves like the others. Cases under `durable` need a store that outlives its
//! process and run on SQLite and PostgreSQL only. The tests at the end check what happens when
//! a store cannot be opened, which differs by backend.
//!
//! PostgreSQL cases share one database with each other (see `support`): they use their own
//! tenant, take [`Env::exclusive_clock`] before creating short-timeout requests or moving the
//! clock, and assert exact counts of expired requests only on private stores.

use std::borrow::Borrow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use chrono::TimeDelta;
use clarify_core::policy::Grant;
use clarify_core::{AnswerError, Mode, NewRequest, Scope, Status};
use clarify_store::{
    Actor, Event, EventKind, ListQuery, ManualClock, Page, RequestRecord, ResolveError, Store,
    StoreError,
};
use serde_json::{Value, json};
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use crate::support::{
    DAY, Env, Kind, SHORT, TempDir, alice, bob, in_scratch_database, options, postgres_url,
    random_name, request, start_time, tail_feed, yes_no,
};

conformance! {
    every: [
        create_and_get_round_trip,
        answers_of_every_kind_read_back_unchanged,
        an_answered_request_reads_back_as_its_answer_returned_it,
        forms_and_defaults_read_back_unchanged,
        idempotency_key_returns_the_original,
        idempotency_key_race_stores_once,
        dedupe_returns_an_identical_pending_request,
        dedupe_race_stores_once,
        dedupe_ends_when_the_request_is_resolved,
        list_is_newest_first_and_filters,
        list_pages_without_gaps_or_repeats,
        answer_resolves_with_outcome,
        invalid_answer_leaves_the_request_pending,
        first_resolution_wins,
        cancel_and_skip,
        responders_restrict_who_answers,
        unknown_and_foreign_ids_are_not_found,
        concurrent_answers_exactly_one_wins,
        wait_returns_at_once_when_already_answered,
        wait_is_woken_by_an_answer,
        wait_times_out_with_the_pending_record,
        dropped_wait_leaves_no_waiter,
        expiry_under_the_controlled_clock,
        late_resolution_finds_the_request_expired,
        waiter_is_woken_by_expiry,
        event_log_records_every_change,
        event_log_tail_misses_nothing_under_concurrency,
        grants_round_trip,
        ping_answers,
        retention_purges_old_resolved_requests_with_their_traces,
    ],
    durable: [
        reopen_keeps_requests_and_expires_overdue_ones,
        second_instance_wakes_a_waiter,
    ],
}

// ---------------------------------------------------------------------------------------------
// Creating and reading

async fn create_and_get_round_trip(store: Store, env: Env) {
    let t = &env.tenant;
    let req = request(json!({
        "questions": [
            {"id": "db", "header": "Database", "text": "Which database?",
             "options": ["Postgres (recommended)", {"id": "lite", "label": "SQLite", "description": "embedded"}]},
            {"id": "colours", "text": "Which colours?", "kind": "multi", "options": ["Red", "Green"],
             "allow_other": false},
            {"id": "notes", "text": "Anything else?"},
            {"id": "go", "text": "Migrate?", "kind": "approval",
             "action": {"name": "migrate", "arguments": {"to": "pg", "dry_run": false}},
             "scopes": ["once", "always"], "allow_edit": true},
        ],
        "context": {"ticket": 42, "why": "two instances"},
        "session": "s1",
        "agent": "planner",
        "tags": ["infra", "db"],
        "tool_call_id": "call_1",
        "allow_skip": false,
        "responders": ["alice", "bob"],
        "callback_url": "https://example.com/hook",
        "idempotency_key": "round-trip",
    }));
    let created = store.create(t, req.clone()).await.expect("create");
    assert!(created.created);
    let r = &created.record;
    assert!(!r.id.is_empty());
    assert_eq!(r.tenant, *t);
    // `borrow` reads the request whether the record holds it directly or shared.
    let stored: &NewRequest = r.request.borrow();
    assert_eq!(*stored, req, "the stored request is what was given");
    assert_eq!(r.status, Status::Pending);
    assert_eq!(r.created_at, env.now());
    assert_eq!(
        r.expires_at,
        Some(env.now() + TimeDelta::seconds(DAY as i64))
    );
    assert!(r.resolution.is_none() && r.outcome().is_none());

    let got = store.get(t, &r.id).await.expect("get");
    assert_eq!(
        got.as_ref(),
        Some(r),
        "get returns exactly what create returned"
    );

    let never = store
        .create(
            t,
            request(json!({"question": "Forever?", "context": "plain text", "timeout_seconds": 0})),
        )
        .await
        .expect("create without timeout");
    assert!(never.created);
    assert_ne!(never.record.id, r.id);
    assert_eq!(never.record.expires_at, None, "timeout 0 never expires");
    let got = store.get(t, &never.record.id).await.expect("get");
    assert_eq!(got, Some(never.record.clone()));

    let other = env.other_tenant();
    assert_eq!(
        store.get(&other, &r.id).await.expect("get"),
        None,
        "tenants are isolated"
    );
    assert_eq!(store.get(t, "no-such-request").await.expect("get"), None);
}

/// What an answer returns is the request as stored, for a request whose reminder, escalation
/// and warning were set and had already run once (SQLite builds the returned record from the
/// row it read before resolving, so this checks it against a later read).
async fn an_answered_request_reads_back_as_its_answer_returned_it(store: Store, env: Env) {
    let t = &env.tenant;
    let req = request(json!({"question": "Still there?", "options": ["yes", "no"],
        "responders": ["alice", "carol"], "remind_every_seconds": 60,
        "escalate_after_seconds": 90, "escalate_to": ["carol"], "warn_before_seconds": 120}));
    let id = store.create(t, req).await.expect("create").record.id;
    env.advance(60);
    store.remind_due().await.expect("remind");
    env.advance(30);
    store.escalate_due().await.expect("escalate");
    let before = store.get(t, &id).await.expect("get").expect("exists");
    assert!(
        before.remind_at.is_some(),
        "the next reminder is set while pending"
    );
    let mut carol = Actor::new("carol", "inbox");
    carol.principal = Some("key:carol".to_owned());
    let answered = store
        .answer(t, &id, &json!({"option": "no"}), &carol)
        .await
        .expect("answer");
    store.sync_feed().await.expect("numbered");
    let stored = store.get(t, &id).await.expect("get").expect("exists");
    let (mut answered, mut expected) = (answered, stored.clone());
    if answered
        .resolution
        .as_ref()
        .is_some_and(|r| r.seq.is_none())
    {
        // PostgreSQL numbers a resolution (its place, and the principal with it) in its
        // sequencer's rounds, which may come before or after the answer returns.
        for record in [&mut answered, &mut expected] {
            if let Some(r) = record.resolution.as_mut() {
                r.seq = None;
                r.actor.principal = None;
            }
        }
    }
    assert_eq!(
        answered, expected,
        "the answer returned the request as stored"
    );
    assert_eq!(stored.remind_at, None, "no reminder once answered");
    assert_eq!(stored.escalated_at, before.escalated_at);
    let resolution = stored.resolution.as_ref().expect("resolved");
    assert_eq!(resolution.actor.principal.as_deref(), Some("key:carol"));
}

async fn answers_of_every_kind_read_back_unchanged(store: Store, env: Env) {
    let t = &env.tenant;
    let req = request(json!({"questions": [
        {"id": "db", "text": "Which database?", "options": ["Postgres", "SQLite"]},
        {"id": "colours", "text": "Which colours?", "kind": "multi", "options": ["Red", "Green", "Blue"]},
        {"id": "notes", "text": "Anything else?"},
        {"id": "go", "text": "Migrate?", "kind": "approval",
         "action": {"name": "migrate", "arguments": {"to": "pg"}},
         "scopes": ["once", "session", "always"], "allow_edit": true},
        {"id": "why", "text": "Why not?", "options": ["Cost", "Time"]},
    ]}));
    let id = store.create(t, req).await.expect("create").record.id;
    let body = json!({"answers": {
        "db": {"option": "sqlite"},
        "colours": {"options": ["red", "blue"], "other": "teal"},
        "notes": {"text": "  ship it on Friday  "},
        "go": {"decision": "approve", "scope": "always", "edited_arguments": {"to": "sqlite"},
               "reason": "smaller"},
        "why": {"other": "Licence"},
    }});
    let answered = store.answer(t, &id, &body, &alice()).await.expect("answer");
    let stored = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(stored, answered, "the stored answer reads back as given");

    let outcome = stored.outcome().expect("resolved");
    let answers: Vec<(&str, &Value, Option<Mode>)> = outcome
        .questions
        .iter()
        .map(|q| (q.id.as_str(), &q.answer, q.mode))
        .collect();
    assert_eq!(
        answers,
        vec![
            ("db", &json!("SQLite"), Some(Mode::Option)),
            (
                "colours",
                &json!(["Red", "Blue", "teal"]),
                Some(Mode::Other)
            ),
            ("notes", &json!("ship it on Friday"), Some(Mode::Text)),
            ("go", &json!("approve"), Some(Mode::Decision)),
            ("why", &json!("Licence"), Some(Mode::Other)),
        ]
    );
    let go = &outcome.questions[3];
    assert_eq!(go.scope, Some(Scope::Always));
    assert_eq!(go.edited_arguments, Some(json!({"to": "sqlite"})));
    assert_eq!(go.reason.as_deref(), Some("smaller"));
}

/// A form's typed values and an expired request's default survive the store on every backend:
/// values canonical and in field order, the default computed from the stored request.
async fn forms_and_defaults_read_back_unchanged(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let form = request(json!({"question": "Trip details", "fields": [
        {"id": "nights", "label": "Nights", "type": "integer", "minimum": 1, "default": 2},
        {"id": "budget", "label": "Budget", "type": "number", "maximum": 5000},
        {"id": "start", "label": "Start", "type": "text", "format": "date", "required": false},
        {"id": "extras", "label": "Extras", "type": "choices", "options": ["Wifi", "Parking"]}
    ]}));
    let id = store.create(t, form).await.expect("create").record.id;
    let refused = store
        .answer(
            t,
            &id,
            &json!({"values": {"budget": 9000, "extras": ["wifi"]}}),
            &alice(),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(ResolveError::Invalid(AnswerError::InvalidValue { .. }))
        ),
        "{refused:?}"
    );
    let body =
        json!({"values": {"budget": 12.5, "extras": ["parking", "Wifi"], "start": "2027-01-31"}});
    let answered = store.answer(t, &id, &body, &alice()).await.expect("answer");
    let stored = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(
        stored, answered,
        "the stored form answer reads back as given"
    );
    let outcome = stored.outcome().expect("resolved");
    assert_eq!(outcome.questions[0].mode, Some(Mode::Form));
    let values = outcome.form_values("q1").expect("values");
    assert_eq!(
        serde_json::to_string(values).expect("json"),
        r#"{"nights":2,"budget":12.5,"start":"2027-01-31","extras":["wifi","parking"]}"#,
        "canonical values in the form's field order"
    );

    let approval = request(
        json!({"questions": [{"text": "Drop it?", "kind": "approval",
        "action": {"name": "drop", "arguments": {}}}], "timeout_seconds": SHORT,
        "on_timeout": {"decision": "deny", "reason": "nobody answered"}}),
    );
    let id = store.create(t, approval).await.expect("create").record.id;
    env.advance(SHORT as i64 + 1);
    store.expire_due().await.expect("expire");
    let expired = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(expired.status, Status::Expired);
    let outcome = expired.outcome().expect("resolved");
    assert!(outcome.default_applied);
    assert_eq!(outcome.questions[0].mode, Some(Mode::Default));
    assert_eq!(outcome.questions[0].answer, json!("deny"));
    assert_eq!(
        outcome.questions[0].reason.as_deref(),
        Some("nobody answered")
    );
}

async fn idempotency_key_returns_the_original(store: Store, env: Env) {
    let t = &env.tenant;
    let with_key = |text: &str, key: &str| {
        request(json!({"question": text, "choices": ["yes", "no"], "idempotency_key": key}))
    };
    let first = store
        .create(t, with_key("Ship it?", "k1"))
        .await
        .expect("create");
    assert!(first.created);

    // Whatever the repeated call carries, the key returns the original.
    let again = store
        .create(t, with_key("Something else entirely?", "k1"))
        .await
        .expect("repeat");
    assert!(!again.created, "a repeated key creates nothing");
    assert_eq!(again.record, first.record);

    store
        .answer(t, &first.record.id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let after = store
        .create(t, with_key("Ship it?", "k1"))
        .await
        .expect("repeat");
    assert!(!after.created);
    assert_eq!(after.record.id, first.record.id);
    assert_eq!(
        after.record.status,
        Status::Answered,
        "the original, whatever its status"
    );
    assert_eq!(
        after
            .record
            .outcome()
            .map(|o| o.questions[0].answer.clone()),
        Some(json!("yes"))
    );

    let other_key = store
        .create(t, with_key("Ship it?", "k2"))
        .await
        .expect("create");
    assert!(other_key.created);
    assert_ne!(other_key.record.id, first.record.id);

    let other = env.other_tenant();
    let elsewhere = store
        .create(&other, with_key("Ship it?", "k1"))
        .await
        .expect("create");
    assert!(elsewhere.created, "keys are per tenant");
    assert_ne!(elsewhere.record.id, first.record.id);
    assert_eq!(elsewhere.record.tenant, other);
    assert_eq!(elsewhere.record.status, Status::Pending);
}

async fn idempotency_key_race_stores_once(store: Store, env: Env) {
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let store = store.clone();
            let t = env.tenant.clone();
            tokio::spawn(async move {
                let req =
                    request(json!({"question": format!("Racing {i}?"), "idempotency_key": "race"}));
                store.create(&t, req).await
            })
        })
        .collect();
    let mut created = Vec::new();
    for task in tasks {
        created.push(task.await.expect("task").expect("create"));
    }
    assert_eq!(
        created.iter().filter(|c| c.created).count(),
        1,
        "exactly one stored"
    );
    let id = &created[0].record.id;
    assert!(
        created.iter().all(|c| c.record.id == *id),
        "every caller gets the same request"
    );
    let page = store
        .list(&env.tenant, &ListQuery::default())
        .await
        .expect("list");
    assert_eq!(ids(&page), vec![id.clone()]);
}

async fn dedupe_returns_an_identical_pending_request(store: Store, env: Env) {
    let t = &env.tenant;
    let ask = |text: &str, session: Option<&str>, dedupe: bool| {
        let mut raw = json!({"question": text, "choices": ["yes", "no"], "dedupe": dedupe});
        if let Some(s) = session {
            raw["session"] = json!(s);
        }
        request(raw)
    };
    let a = store
        .create(t, ask("Proceed?", Some("s1"), true))
        .await
        .expect("create");
    assert!(a.created);
    let a2 = store
        .create(t, ask("Proceed?", Some("s1"), true))
        .await
        .expect("create");
    assert!(!a2.created, "an identical pending request is returned");
    assert_eq!(a2.record, a.record);

    let b = store
        .create(t, ask("Proceed?", Some("s2"), true))
        .await
        .expect("create");
    assert!(b.created, "another session asks again");
    let c = store
        .create(t, ask("Proceed?", None, true))
        .await
        .expect("create");
    assert!(c.created, "no session is not session s1");
    let c2 = store
        .create(t, ask("Proceed?", None, true))
        .await
        .expect("create");
    assert!(!c2.created, "no session matches no session");
    assert_eq!(c2.record.id, c.record.id);
    let d = store
        .create(t, ask("Proceed now?", Some("s1"), true))
        .await
        .expect("create");
    assert!(d.created, "a different question is not identical");
    let other = env.other_tenant();
    let e = store
        .create(&other, ask("Proceed?", Some("s1"), true))
        .await
        .expect("create");
    assert!(e.created, "another tenant asks again");

    let p1 = store
        .create(t, ask("Proceed?", Some("s1"), false))
        .await
        .expect("create");
    let p2 = store
        .create(t, ask("Proceed?", Some("s1"), false))
        .await
        .expect("create");
    assert!(
        p1.created && p2.created,
        "without dedupe every request is new"
    );
    let all = [&a, &b, &c, &d, &e, &p1, &p2].map(|c| c.record.id.clone());
    let mut distinct = all.to_vec();
    distinct.sort();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        all.len(),
        "new requests have new ids: {all:?}"
    );
}

async fn dedupe_race_stores_once(store: Store, env: Env) {
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (store, t) = (store.clone(), env.tenant.clone());
            tokio::spawn(async move {
                let req = request(json!({"question": "Race?", "session": "s1", "dedupe": true}));
                store.create(&t, req).await
            })
        })
        .collect();
    let mut created = Vec::new();
    for task in tasks {
        created.push(task.await.expect("task").expect("create"));
    }
    assert_eq!(
        created.iter().filter(|c| c.created).count(),
        1,
        "exactly one stored"
    );
    let id = &created[0].record.id;
    assert!(
        created.iter().all(|c| c.record.id == *id),
        "every caller gets the same request"
    );
}

async fn dedupe_ends_when_the_request_is_resolved(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let ask = |text: &str, timeout: u64| {
        request(
            json!({"question": text, "choices": ["yes", "no"], "session": "s1",
                       "dedupe": true, "timeout_seconds": timeout}),
        )
    };
    for (text, how) in [
        ("Answered?", "answer"),
        ("Skipped?", "skip"),
        ("Cancelled?", "cancel"),
    ] {
        let first = store.create(t, ask(text, DAY)).await.expect("create");
        let id = &first.record.id;
        let resolved = match how {
            "answer" => {
                store
                    .answer(t, id, &json!({"option": "yes"}), &alice())
                    .await
            }
            "skip" => store.skip(t, id, &alice()).await,
            _ => store.cancel(t, id, &alice()).await,
        };
        assert!(resolved.is_ok(), "{how}: {resolved:?}");
        let second = store.create(t, ask(text, DAY)).await.expect("create");
        assert!(
            second.created,
            "{text}: a resolved request never counts as identical"
        );
        assert_ne!(second.record.id, *id);
        let third = store.create(t, ask(text, DAY)).await.expect("create");
        assert_eq!(
            third.record.id, second.record.id,
            "{text}: the new one dedupes"
        );
    }

    let first = store
        .create(t, ask("Expired?", SHORT))
        .await
        .expect("create");
    env.advance(SHORT as i64 + 1);
    store.expire_due().await.expect("expire");
    let expired = store
        .get(t, &first.record.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(expired.status, Status::Expired);
    let second = store
        .create(t, ask("Expired?", SHORT))
        .await
        .expect("create");
    assert!(
        second.created,
        "an expired request never counts as identical"
    );
    assert_ne!(second.record.id, first.record.id);
}

// ---------------------------------------------------------------------------------------------
// Listing

async fn list_is_newest_first_and_filters(store: Store, env: Env) {
    let t = &env.tenant;
    let specs = [
        (Some("s1"), Some("a1"), vec!["x"]),
        (Some("s2"), Some("a1"), vec!["x", "y"]),
        (Some("s1"), Some("a2"), vec!["y"]),
        (None, None, vec![]),
        (Some("s1"), Some("a1"), vec!["x"]),
        (Some("s2"), Some("a2"), vec!["x"]),
    ];
    let mut r = Vec::new();
    for (i, (session, agent, tags)) in specs.iter().enumerate() {
        let mut raw =
            json!({"question": format!("Question {i}?"), "choices": ["yes", "no"], "tags": tags});
        if let Some(s) = session {
            raw["session"] = json!(s);
        }
        if let Some(a) = agent {
            raw["agent"] = json!(a);
        }
        r.push(
            store
                .create(t, request(raw))
                .await
                .expect("create")
                .record
                .id,
        );
    }
    store
        .answer(t, &r[4], &json!({"option": "no"}), &alice())
        .await
        .expect("answer");
    store.cancel(t, &r[5], &alice()).await.expect("cancel");
    let other = env.other_tenant();
    let foreign =
        request(json!({"question": "Question 0?", "session": "s1", "agent": "a1", "tags": ["x"]}));
    store.create(&other, foreign).await.expect("create");

    let list = |q: ListQuery| {
        let store = store.clone();
        async move { store.list(t, &q).await.expect("list") }
    };
    let want = |idx: &[usize]| idx.iter().map(|&i| r[i].clone()).collect::<Vec<_>>();

    let all = list(ListQuery::default()).await;
    assert_eq!(
        ids(&all),
        want(&[5, 4, 3, 2, 1, 0]),
        "newest first, own tenant only"
    );
    assert_eq!(all.next_cursor, None);
    for record in &all.records {
        let got = store.get(t, &record.id).await.expect("get");
        assert_eq!(got.as_ref(), Some(record), "listed records are complete");
    }
    assert_eq!(all.records[1].status, Status::Answered);

    let status = |s: Status| ListQuery {
        status: Some(s),
        ..ListQuery::default()
    };
    assert_eq!(
        ids(&list(status(Status::Pending)).await),
        want(&[3, 2, 1, 0])
    );
    assert_eq!(ids(&list(status(Status::Answered)).await), want(&[4]));
    assert_eq!(ids(&list(status(Status::Cancelled)).await), want(&[5]));
    assert_eq!(ids(&list(status(Status::Expired)).await), want(&[]));

    let session = ListQuery {
        session: Some("s1".into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(&list(session).await), want(&[4, 2, 0]));
    let agent = ListQuery {
        agent: Some("a1".into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(&list(agent).await), want(&[4, 1, 0]));
    let tag = |t: &str| ListQuery {
        tag: Some(t.into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(&list(tag("x")).await), want(&[5, 4, 1, 0]));
    assert_eq!(ids(&list(tag("y")).await), want(&[2, 1]));
    assert_eq!(ids(&list(tag("z")).await), want(&[]));
    let combined = ListQuery {
        status: Some(Status::Pending),
        session: Some("s1".into()),
        tag: Some("x".into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(&list(combined).await), want(&[0]));
    let combined = ListQuery {
        agent: Some("a2".into()),
        tag: Some("x".into()),
        ..ListQuery::default()
    };
    assert_eq!(ids(&list(combined).await), want(&[5]));

    let foreign_page = store
        .list(&other, &ListQuery::default())
        .await
        .expect("list");
    assert_eq!(foreign_page.records.len(), 1);
    assert!(foreign_page.records.iter().all(|rec| !r.contains(&rec.id)));
}

async fn list_pages_without_gaps_or_repeats(store: Store, env: Env) {
    let t = &env.tenant;
    let mut created = Vec::new();
    for i in 0..7 {
        let tags = if i % 2 == 0 { vec!["even"] } else { vec![] };
        let req = request(json!({"question": format!("Page {i}?"), "tags": tags}));
        created.push(store.create(t, req).await.expect("create").record.id);
    }
    let newest_first: Vec<String> = created.iter().rev().cloned().collect();

    let page = |cursor: Option<String>, limit: usize, tag: Option<&str>| {
        let store = store.clone();
        let q = ListQuery {
            limit: Some(limit),
            cursor,
            tag: tag.map(str::to_owned),
            ..ListQuery::default()
        };
        async move { store.list(t, &q).await.expect("list") }
    };

    let p1 = page(None, 3, None).await;
    // A request created between pages does not shift the pages that follow.
    store
        .create(t, request(json!({"question": "Late?"})))
        .await
        .expect("create");
    let p2 = page(p1.next_cursor.clone(), 3, None).await;
    let p3 = page(p2.next_cursor.clone(), 3, None).await;
    let sizes = [p1.records.len(), p2.records.len(), p3.records.len()];
    assert_eq!(sizes, [3, 3, 1]);
    assert!(p1.next_cursor.is_some() && p2.next_cursor.is_some());
    assert_eq!(p3.next_cursor, None, "the last page has no cursor");
    let walked: Vec<String> = [p1, p2, p3].iter().flat_map(ids).collect();
    assert_eq!(walked, newest_first, "no gaps, no repeats, newest first");

    // A filtered walk whose last page is exactly full still ends without a cursor.
    let q1 = page(None, 2, Some("even")).await;
    let q2 = page(q1.next_cursor.clone(), 2, Some("even")).await;
    assert_eq!(ids(&q1), vec![created[6].clone(), created[4].clone()]);
    assert_eq!(ids(&q2), vec![created[2].clone(), created[0].clone()]);
    assert_eq!(q2.next_cursor, None);

    let one = page(None, 0, None).await;
    assert_eq!(one.records.len(), 1, "a limit below 1 lists one");

    for bad in ["garbage", "c", "cx12", "", "12"] {
        let q = ListQuery {
            cursor: Some(bad.to_owned()),
            ..ListQuery::default()
        };
        let got = store.list(t, &q).await;
        assert!(
            matches!(got, Err(StoreError::InvalidCursor)),
            "cursor {bad:?}: {got:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Resolving

async fn answer_resolves_with_outcome(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    env.advance(5);
    let record = store
        .answer(t, &id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    assert_eq!(record.status, Status::Answered);
    assert_eq!(record.resolved_at(), Some(env.now()));
    let resolution = record.resolution.as_ref().expect("resolved");
    assert_eq!(resolution.actor, alice());
    let outcome = record.outcome().expect("outcome");
    assert_eq!(outcome.status, Status::Answered);
    assert_eq!(outcome.request_id, id);
    assert_eq!(outcome.answered_by.as_deref(), Some("alice"));
    assert_eq!(outcome.questions[0].answer, json!("yes"));
    assert_eq!(outcome.questions[0].mode, Some(Mode::Option));
    assert_eq!(outcome.note, None);
    let stored = store.get(t, &id).await.expect("get");
    assert_eq!(stored, Some(record));
}

async fn invalid_answer_leaves_the_request_pending(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    let bad = [
        json!({"option": "maybe"}),
        json!({"answers": {"q9": {"option": "yes"}}}),
        json!({"options": ["yes", "no"]}),
        json!("yes"),
    ];
    for body in &bad {
        let got = store.answer(t, &id, body, &alice()).await;
        assert!(
            matches!(got, Err(ResolveError::Invalid(_))),
            "{body}: {got:?}"
        );
        let record = store.get(t, &id).await.expect("get").expect("exists");
        assert_eq!(record.status, Status::Pending, "{body} changed the request");
        assert!(record.resolution.is_none());
    }
    let record = store
        .answer(t, &id, &json!({"option": "no"}), &alice())
        .await
        .expect("a corrected answer still resolves");
    assert_eq!(record.status, Status::Answered);
    assert_eq!(answer_of(&record), json!("no"));
    let kinds: Vec<EventKind> = own_events(&store, &env)
        .await
        .iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds,
        [EventKind::Created, EventKind::Answered],
        "refusals log nothing"
    );
}

async fn first_resolution_wins(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    let first = store
        .answer(t, &id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let late: [(&str, Result<RequestRecord, ResolveError>); 4] = [
        (
            "answer",
            store.answer(t, &id, &json!({"option": "no"}), &bob()).await,
        ),
        (
            "same answer",
            store
                .answer(t, &id, &json!({"option": "yes"}), &alice())
                .await,
        ),
        ("cancel", store.cancel(t, &id, &bob()).await),
        ("skip", store.skip(t, &id, &bob()).await),
    ];
    for (what, got) in late {
        match got {
            Err(ResolveError::AlreadyResolved(record)) => {
                assert_eq!(*record, first, "{what}: reports the first resolution")
            }
            other => panic!("{what}: want AlreadyResolved, got {other:?}"),
        }
    }
    assert_eq!(
        store.get(t, &id).await.expect("get"),
        Some(first),
        "nothing changed"
    );
}

async fn cancel_and_skip(store: Store, env: Env) {
    let t = &env.tenant;
    let a = store
        .create(t, yes_no("Cancel me?"))
        .await
        .expect("create")
        .record
        .id;
    let cancelled = store.cancel(t, &a, &alice()).await.expect("cancel");
    assert_eq!(cancelled.status, Status::Cancelled);
    assert_eq!(
        cancelled.resolution.as_ref().map(|r| &r.actor),
        Some(&alice())
    );
    let note = cancelled.outcome().and_then(|o| o.note).expect("a note");
    assert!(note.contains("cancelled"), "{note}");
    let again = store
        .answer(t, &a, &json!({"option": "yes"}), &alice())
        .await;
    assert!(
        matches!(&again, Err(ResolveError::AlreadyResolved(r)) if r.status == Status::Cancelled),
        "{again:?}"
    );

    let b = store
        .create(t, yes_no("Skip me?"))
        .await
        .expect("create")
        .record
        .id;
    let skipped = store.skip(t, &b, &bob()).await.expect("skip");
    assert_eq!(skipped.status, Status::Skipped);
    assert_eq!(
        skipped.outcome().and_then(|o| o.answered_by).as_deref(),
        Some("bob")
    );
    let note = skipped.outcome().and_then(|o| o.note).expect("a note");
    assert!(note.contains("chose not to answer"), "{note}");

    let c = store
        .create(t, yes_no("Skip by body?"))
        .await
        .expect("create")
        .record
        .id;
    let skipped = store
        .answer(t, &c, &json!({"skip": true}), &bob())
        .await
        .expect("skip body");
    assert_eq!(skipped.status, Status::Skipped);

    let strict =
        request(json!({"question": "Must answer?", "choices": ["yes", "no"], "allow_skip": false}));
    let d = store.create(t, strict).await.expect("create").record.id;
    let refused = store.skip(t, &d, &bob()).await;
    assert!(
        matches!(
            refused,
            Err(ResolveError::Invalid(AnswerError::SkipNotAllowed))
        ),
        "{refused:?}"
    );
    let refused = store.answer(t, &d, &json!({"skip": true}), &bob()).await;
    assert!(
        matches!(
            refused,
            Err(ResolveError::Invalid(AnswerError::SkipNotAllowed))
        ),
        "{refused:?}"
    );
    let record = store.get(t, &d).await.expect("get").expect("exists");
    assert_eq!(record.status, Status::Pending);
    let cancelled = store.cancel(t, &d, &bob()).await.expect("cancel");
    assert_eq!(
        cancelled.status,
        Status::Cancelled,
        "cancelling is not skipping"
    );
}

async fn responders_restrict_who_answers(store: Store, env: Env) {
    let t = &env.tenant;
    let req =
        request(json!({"question": "Deploy?", "choices": ["yes", "no"], "responders": ["alice"]}));
    let id = store.create(t, req).await.expect("create").record.id;
    let refused = store
        .answer(t, &id, &json!({"option": "yes"}), &bob())
        .await;
    assert!(
        matches!(&refused, Err(ResolveError::NotAllowed { responder }) if responder == "bob"),
        "{refused:?}"
    );
    let refused = store.skip(t, &id, &bob()).await;
    assert!(
        matches!(refused, Err(ResolveError::NotAllowed { .. })),
        "{refused:?}"
    );
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(record.status, Status::Pending);
    let record = store
        .answer(t, &id, &json!({"option": "yes"}), &alice())
        .await
        .expect("an allowed responder answers");
    assert_eq!(record.status, Status::Answered);
}

async fn unknown_and_foreign_ids_are_not_found(store: Store, env: Env) {
    let t = &env.tenant;
    let missing = "no-such-request";
    let yes = json!({"option": "yes"});
    assert!(matches!(
        store.answer(t, missing, &yes, &alice()).await,
        Err(ResolveError::NotFound)
    ));
    assert!(matches!(
        store.cancel(t, missing, &alice()).await,
        Err(ResolveError::NotFound)
    ));
    assert!(matches!(
        store.skip(t, missing, &alice()).await,
        Err(ResolveError::NotFound)
    ));
    assert!(matches!(
        store.wait(t, missing, Duration::from_millis(50)).await,
        Err(ResolveError::NotFound)
    ));

    let id = store
        .create(t, yes_no("Mine?"))
        .await
        .expect("create")
        .record
        .id;
    let other = env.other_tenant();
    assert!(matches!(
        store.answer(&other, &id, &yes, &alice()).await,
        Err(ResolveError::NotFound)
    ));
    assert!(matches!(
        store.cancel(&other, &id, &alice()).await,
        Err(ResolveError::NotFound)
    ));
    assert!(matches!(
        store.wait(&other, &id, Duration::from_millis(50)).await,
        Err(ResolveError::NotFound)
    ));
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(
        record.status,
        Status::Pending,
        "another tenant changed nothing"
    );
    assert_eq!(store.waiting_requests(), 0);
}

async fn concurrent_answers_exactly_one_wins(store: Store, env: Env) {
    let t = env.tenant.clone();
    let req = request(json!({"question": "Name the release?"}));
    let id = store.create(&t, req).await.expect("create").record.id;
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let (store, t, id) = (store.clone(), t.clone(), id.clone());
            tokio::spawn(async move {
                let body = json!({"text": format!("answer {i}")});
                let actor = Actor::new(format!("r{i}"), "api");
                (i, store.answer(&t, &id, &body, &actor).await)
            })
        })
        .collect();
    let mut won = Vec::new();
    let mut lost = Vec::new();
    for task in tasks {
        match task.await.expect("task") {
            (i, Ok(record)) => won.push((i, record)),
            (_, Err(ResolveError::AlreadyResolved(record))) => lost.push(record),
            (i, Err(e)) => panic!("answer {i}: {e}"),
        }
    }
    assert_eq!((won.len(), lost.len()), (1, 99), "exactly one answer wins");
    let (winner, record) = &won[0];
    let stored = store.get(&t, &id).await.expect("get").expect("exists");
    assert_eq!(&stored, record);
    assert_eq!(answer_of(&stored), json!(format!("answer {winner}")));
    assert_eq!(
        stored.outcome().and_then(|o| o.answered_by),
        Some(format!("r{winner}"))
    );
    assert!(
        lost.iter().all(|r| **r == stored),
        "losers see the winner's answer"
    );
    let answered = own_events(&store, &env)
        .await
        .iter()
        .filter(|e| e.kind == EventKind::Answered)
        .count();
    assert_eq!(answered, 1, "one resolution, one event");
}

// ---------------------------------------------------------------------------------------------
// Waiting

async fn wait_returns_at_once_when_already_answered(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    store
        .answer(t, &id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let start = Instant::now();
    let record = store
        .wait(t, &id, Duration::from_secs(10))
        .await
        .expect("wait");
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(record.status, Status::Answered);
    assert_eq!(store.waiting_requests(), 0);
}

async fn wait_is_woken_by_an_answer(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    let waiters: Vec<_> = (0..2).map(|_| spawn_wait(&store, t, &id, 10)).collect();
    until_waiting(&store, 1).await;
    let answered_at = Instant::now();
    store
        .answer(t, &id, &json!({"option": "no"}), &alice())
        .await
        .expect("answer");
    for waiter in waiters {
        let record = waiter.await.expect("task").expect("wait");
        assert_eq!(record.status, Status::Answered);
        assert_eq!(answer_of(&record), json!("no"));
    }
    let took = answered_at.elapsed();
    assert!(took < Duration::from_secs(1), "waiters woke after {took:?}");
    assert_eq!(store.waiting_requests(), 0);
}

async fn wait_times_out_with_the_pending_record(store: Store, env: Env) {
    let t = &env.tenant;
    let created = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record;
    let start = Instant::now();
    let record = store
        .wait(t, &created.id, Duration::from_millis(300))
        .await
        .expect("wait");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300),
        "returned after {took:?}"
    );
    assert!(took < Duration::from_secs(5), "returned after {took:?}");
    assert_eq!(record, created, "the still-pending record");
    assert_eq!(store.waiting_requests(), 0);
}

async fn dropped_wait_leaves_no_waiter(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store
        .create(t, yes_no("Deploy?"))
        .await
        .expect("create")
        .record
        .id;
    let cut = tokio::time::timeout(
        Duration::from_millis(200),
        store.wait(t, &id, Duration::from_secs(10)),
    )
    .await;
    assert!(cut.is_err(), "the wait should still be running");
    assert_eq!(store.waiting_requests(), 0);

    let task = spawn_wait(&store, t, &id, 10);
    until_waiting(&store, 1).await;
    task.abort();
    assert!(task.await.is_err_and(|e| e.is_cancelled()));
    assert_eq!(store.waiting_requests(), 0, "an aborted wait unregisters");
}

// ---------------------------------------------------------------------------------------------
// Expiry

async fn expiry_under_the_controlled_clock(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let short = |text: &str, timeout: u64| {
        request(json!({"question": text, "choices": ["yes", "no"], "timeout_seconds": timeout}))
    };
    let a = store
        .create(t, short("Deploy?", SHORT))
        .await
        .expect("create")
        .record;
    let never = store
        .create(t, short("Forever?", 0))
        .await
        .expect("create")
        .record;
    let long = store
        .create(t, short("Tomorrow?", DAY))
        .await
        .expect("create")
        .record;

    env.advance(SHORT as i64 - 1);
    let n = store.expire_due().await.expect("expire");
    if !env.shared() {
        assert_eq!(n, 0, "nothing is due yet");
    }
    let got = store.get(t, &a.id).await.expect("get").expect("exists");
    assert_eq!(got.status, Status::Pending, "not yet due");

    env.advance(2);
    let n = store.expire_due().await.expect("expire");
    if env.shared() {
        assert!(n >= 1, "expired {n}");
    } else {
        assert_eq!(n, 1);
    }
    let expired = store.get(t, &a.id).await.expect("get").expect("exists");
    assert_eq!(expired.status, Status::Expired);
    assert_eq!(expired.resolved_at(), Some(env.now()));
    assert_eq!(
        expired.resolution.as_ref().map(|r| &r.actor),
        Some(&Actor::system())
    );
    let outcome = expired.outcome().expect("outcome");
    assert_eq!(outcome.status, Status::Expired);
    assert_eq!(outcome.answered_by, None);
    let note = outcome.note.unwrap_or_default();
    assert!(note.contains("did not answer within 10 minutes"), "{note}");

    env.advance(60);
    let n = store.expire_due().await.expect("expire");
    if !env.shared() {
        assert_eq!(n, 0, "an expired request is not expired again");
    }
    let again = store.get(t, &a.id).await.expect("get");
    assert_eq!(again, Some(expired), "expiry happens once");

    for r in [&never, &long] {
        let got = store.get(t, &r.id).await.expect("get").expect("exists");
        assert_eq!(
            got.status,
            Status::Pending,
            "{}",
            r.request.questions[0].text
        );
    }
    if !env.shared() {
        // Years later (only on a private store: a shared one holds other tests' requests).
        env.advance(20 * 365 * 86_400);
        store.expire_due().await.expect("expire");
        let got = store.get(t, &never.id).await.expect("get").expect("exists");
        assert_eq!(got.status, Status::Pending, "timeout 0 never expires");
    }
}

async fn late_resolution_finds_the_request_expired(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let short = || {
        request(json!({"question": "Deploy?", "choices": ["yes", "no"], "timeout_seconds": SHORT}))
    };
    let in_time = store.create(t, short()).await.expect("create").record.id;
    let late = store.create(t, short()).await.expect("create").record.id;
    let late_cancel = store.create(t, short()).await.expect("create").record.id;
    let late_wait = store.create(t, short()).await.expect("create").record.id;

    env.advance(SHORT as i64 - 1);
    let record = store
        .answer(t, &in_time, &json!({"option": "yes"}), &alice())
        .await
        .expect("an answer just before the deadline counts");
    assert_eq!(record.status, Status::Answered);

    // Exactly at the deadline, before any reaper ran.
    env.advance(1);
    let got = store
        .answer(t, &late, &json!({"option": "yes"}), &alice())
        .await;
    match got {
        Err(ResolveError::AlreadyResolved(record)) => {
            assert_eq!(record.status, Status::Expired);
            let note = record.outcome().and_then(|o| o.note).unwrap_or_default();
            assert!(note.contains("did not answer within 10 minutes"), "{note}");
        }
        other => panic!("a late answer: want AlreadyResolved(expired), got {other:?}"),
    }
    let stored = store.get(t, &late).await.expect("get").expect("exists");
    assert_eq!(stored.status, Status::Expired);

    let got = store.cancel(t, &late_cancel, &alice()).await;
    assert!(
        matches!(&got, Err(ResolveError::AlreadyResolved(r)) if r.status == Status::Expired),
        "a late cancel: {got:?}"
    );
    let start = Instant::now();
    let waited = store
        .wait(t, &late_wait, Duration::from_secs(10))
        .await
        .expect("wait");
    assert_eq!(
        waited.status,
        Status::Expired,
        "a wait past the deadline expires it"
    );
    assert!(start.elapsed() < Duration::from_secs(1));
    let answered = store.get(t, &in_time).await.expect("get").expect("exists");
    assert_eq!(
        answered.status,
        Status::Answered,
        "expiry leaves answered requests alone"
    );
}

async fn waiter_is_woken_by_expiry(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let req = request(json!({"question": "Deploy?", "timeout_seconds": SHORT}));
    let id = store.create(t, req).await.expect("create").record.id;
    let waiter = spawn_wait(&store, t, &id, 10);
    until_waiting(&store, 1).await;
    env.advance(SHORT as i64 + 1);
    let start = Instant::now();
    store.expire_due().await.expect("expire");
    let record = waiter.await.expect("task").expect("wait");
    assert_eq!(record.status, Status::Expired);
    assert!(
        start.elapsed() < Duration::from_secs(1),
        "woke after {:?}",
        start.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// The event log

async fn event_log_records_every_change(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let before = store.last_event_seq().await.expect("last seq");
    let mut id = Vec::new();
    for (i, timeout) in [DAY, DAY, DAY, SHORT, DAY].into_iter().enumerate() {
        let req = request(
            json!({"question": format!("Event {i}?"), "choices": ["yes", "no"],
                                 "timeout_seconds": timeout}),
        );
        id.push(store.create(t, req).await.expect("create").record.id);
    }
    let created_at = env.now();
    env.advance(1);
    store
        .answer(t, &id[0], &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    store.cancel(t, &id[1], &bob()).await.expect("cancel");
    store.skip(t, &id[2], &alice()).await.expect("skip");
    let resolved_at = env.now();
    env.advance(SHORT as i64);
    store.expire_due().await.expect("expire");
    let other = env.other_tenant();
    store
        .create(&other, yes_no("Elsewhere?"))
        .await
        .expect("create");

    let events = own_events(&store, &env).await;
    let (c, api, inbox, system) = (
        None,
        Some("api".to_owned()),
        Some("inbox".to_owned()),
        Some("system".to_owned()),
    );
    let alice_name = Some("alice".to_owned());
    let want: Vec<(EventKind, &String, Option<String>, Option<String>)> = vec![
        (EventKind::Created, &id[0], None, c.clone()),
        (EventKind::Created, &id[1], None, c.clone()),
        (EventKind::Created, &id[2], None, c.clone()),
        (EventKind::Created, &id[3], None, c.clone()),
        (EventKind::Created, &id[4], None, c),
        (EventKind::Answered, &id[0], alice_name.clone(), api.clone()),
        (EventKind::Cancelled, &id[1], Some("bob".to_owned()), inbox),
        (EventKind::Skipped, &id[2], alice_name, api),
        (EventKind::Expired, &id[3], None, system),
    ];
    let got: Vec<_> = events
        .iter()
        .map(|e| (e.kind, &e.request_id, e.actor.clone(), e.channel.clone()))
        .collect();
    assert_eq!(got, want);
    assert!(events.iter().all(|e| e.tenant == *t));
    assert!(events.windows(2).all(|w| w[0].seq < w[1].seq), "monotonic");
    assert!(events[0].seq > before);
    assert!(events[..5].iter().all(|e| e.at == created_at));
    assert!(events[5..8].iter().all(|e| e.at == resolved_at));
    assert_eq!(events[8].at, env.now());

    // Resuming after any event gives exactly the rest.
    for (k, event) in events.iter().enumerate() {
        let rest = store
            .events_after(Some(t), event.seq, 1_000)
            .await
            .expect("events");
        assert_eq!(rest, events[k + 1..], "resuming after {}", event.seq);
    }
    let first_two = store.events_after(Some(t), 0, 2).await.expect("events");
    assert_eq!(first_two, events[..2], "the limit takes the oldest");

    let theirs = store
        .events_after(Some(&other), 0, 1_000)
        .await
        .expect("events");
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].tenant, other);

    // The unfiltered log holds the same events, in the same order.
    let mut all = Vec::new();
    let mut after = before;
    loop {
        let batch = store
            .events_after(None, after, 1_000)
            .await
            .expect("events");
        let Some(last) = batch.last() else { break };
        after = last.seq;
        all.extend(batch.into_iter().filter(|e| e.tenant == *t));
    }
    assert_eq!(all, events);
    let last = store.last_event_seq().await.expect("last seq");
    assert!(last >= theirs[0].seq && last >= events[8].seq);
}

async fn event_log_tail_misses_nothing_under_concurrency(store: Store, env: Env) {
    let done = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let (store, t) = (store.clone(), env.tenant.clone());
            tokio::spawn(async move {
                for i in 0..15 {
                    let req = yes_no(&format!("Writer {w} request {i}?"));
                    let id = store.create(&t, req).await.expect("create").record.id;
                    let body = json!({"option": "yes"});
                    store
                        .answer(&t, &id, &body, &alice())
                        .await
                        .expect("answer");
                }
            })
        })
        .collect();
    let tail = tokio::spawn(tail_feed(
        store.clone(),
        env.tenant.clone(),
        7,
        Arc::clone(&done),
    ));
    for writer in writers {
        writer.await.expect("writer");
    }
    // Every event written is numbered before the tail is told the writers finished.
    store.sync_feed().await.expect("sync the feed");
    done.store(true, Ordering::SeqCst);
    let tailed = tail.await.expect("tail");
    let full = own_events(&store, &env).await;
    assert_eq!(full.len(), 8 * 15 * 2);
    let tailed_seqs: Vec<u64> = tailed.iter().map(|e| e.seq).collect();
    let missed: Vec<u64> = full
        .iter()
        .map(|e| e.seq)
        .filter(|seq| !tailed_seqs.contains(seq))
        .collect();
    assert!(
        missed.is_empty(),
        "a reader resuming after each batch missed events {missed:?}"
    );
    assert_eq!(tailed, full, "the tail saw each event once, in order");
}

// ---------------------------------------------------------------------------------------------
// Grants and health

/// Raises an approval of `deploy(args)` in `session` (every scope, edits allowed) and answers it
/// with `answer`; returns the request id.
async fn approve(
    store: &Store,
    env: &Env,
    session: Option<&str>,
    args: Value,
    answer: Value,
) -> String {
    let mut body = json!({
        "questions": [{"text": "Deploy?", "kind": "approval",
                       "action": {"name": "Deploy", "arguments": args},
                       "scopes": ["once", "session", "always"], "allow_edit": true}],
        "timeout_seconds": 0,
    });
    if let Some(session) = session {
        body["session"] = json!(session);
    }
    let created = store
        .create(&env.tenant, request(body))
        .await
        .expect("create");
    store
        .answer(&env.tenant, &created.record.id, &answer, &alice())
        .await
        .unwrap_or_else(|e| panic!("answering {answer}: {e}"));
    created.record.id
}

async fn grants_round_trip(store: Store, env: Env) {
    let t = &env.tenant;
    let args = json!({"env": "prod", "replicas": 3});
    let same_args = json!({"replicas": 3, "env": "prod"});
    let action = |arguments: &Value| clarify_core::Action {
        name: "deploy".to_owned(),
        arguments: arguments.clone(),
    };
    // Answers that give no grant: once, deny, skip.
    approve(
        &store,
        &env,
        Some("s1"),
        args.clone(),
        json!({"decision": "approve"}),
    )
    .await;
    approve(
        &store,
        &env,
        Some("s1"),
        args.clone(),
        json!({"decision": "deny", "scope": "always"}),
    )
    .await;
    assert!(
        store.list_grants(t, None).await.expect("list").is_empty(),
        "only session and always approvals grant"
    );

    let by_session = approve(
        &store,
        &env,
        Some("s1"),
        args.clone(),
        json!({"decision": "approve", "scope": "session"}),
    )
    .await;
    approve(
        &store,
        &env,
        Some("s1"),
        same_args.clone(),
        json!({"decision": "approve", "scope": "session"}),
    )
    .await;
    let always = approve(
        &store,
        &env,
        None,
        json!({"env": "dev"}),
        json!({"decision": "approve", "scope": "always",
               "edited_arguments": {"env": "staging"}}),
    )
    .await;

    let listed = store.list_grants(t, None).await.expect("list");
    assert_eq!(listed.len(), 2, "an equal grant is stored once: {listed:?}");
    let session_grant = &listed[0];
    assert_eq!(
        session_grant.request_id.as_deref(),
        Some(by_session.as_str())
    );
    assert_eq!(session_grant.granted_by.as_deref(), Some("alice"));
    assert_eq!(
        session_grant.grant,
        Grant::new("deploy", &args, Scope::Session, Some("s1")).expect("grant")
    );
    assert_eq!(listed[1].request_id.as_deref(), Some(always.as_str()));
    assert_eq!(
        listed[1].grant,
        Grant::new("deploy", &json!({"env": "staging"}), Scope::Always, None).expect("grant"),
        "the grant covers the arguments as edited"
    );
    assert_eq!(
        store.list_grants(t, Some("s1")).await.expect("list").len(),
        1
    );
    assert!(
        store
            .list_grants(t, Some("s2"))
            .await
            .expect("list")
            .is_empty()
    );
    assert!(
        store
            .list_grants(&env.other_tenant(), None)
            .await
            .expect("list")
            .is_empty()
    );
    assert_eq!(store.grants(t, " DEPLOY ").await.expect("grants").len(), 2);

    // Checks: the session grant holds in its session only, key order does not matter.
    let check = |arguments: Value, session: Option<&'static str>| {
        let store = store.clone();
        let t = t.clone();
        let action = action(&arguments);
        async move {
            store
                .check_grant(&t, &action, session)
                .await
                .expect("check")
        }
    };
    assert_eq!(
        check(same_args.clone(), Some("s1")).await.map(|g| g.id),
        Some(session_grant.id.clone())
    );
    assert!(check(args.clone(), Some("s2")).await.is_none());
    assert!(check(args.clone(), None).await.is_none());
    assert!(
        check(json!({"env": "dev"}), Some("s1")).await.is_none(),
        "the proposed arguments were not approved"
    );
    assert_eq!(
        check(json!({"env": "staging"}), Some("s9"))
            .await
            .map(|g| g.grant.scope),
        Some(Scope::Always)
    );

    // Revocation: gone for this tenant; another tenant cannot revoke it.
    assert!(
        store
            .revoke_grant(
                &env.other_tenant(),
                &session_grant.id,
                &clarify_store::Actor::system()
            )
            .await
            .expect("revoke")
            .is_none()
    );
    let revoked = store
        .revoke_grant(t, &session_grant.id, &bob())
        .await
        .expect("revoke");
    assert_eq!(revoked.as_ref().map(|g| &g.id), Some(&session_grant.id));
    // The revocation is an event of the audit chain, naming who revoked which grant.
    store.sync_feed().await.expect("sync the feed");
    let revocations: Vec<_> = store
        .audit_events(Some(t), 0, 10_000)
        .await
        .expect("audit")
        .into_iter()
        .filter(|e| e.kind == "grant.revoked")
        .collect();
    assert_eq!(revocations.len(), 1, "{revocations:?}");
    assert_eq!(
        revocations[0].subject.as_deref(),
        Some(format!("grant:{}", session_grant.id).as_str())
    );
    assert_eq!(revocations[0].actor.as_deref(), Some("bob"));
    assert_eq!(revocations[0].channel.as_deref(), Some("inbox"));
    assert!(
        check(args.clone(), Some("s1")).await.is_none(),
        "a revoked grant no longer lets the call through"
    );
    assert!(
        store
            .revoke_grant(t, &session_grant.id, &clarify_store::Actor::system())
            .await
            .expect("revoke")
            .is_none()
    );

    // Arguments may be large (64 KiB of JSON is allowed).
    let big = json!({"payload": "x".repeat(60_000)});
    approve(
        &store,
        &env,
        None,
        big.clone(),
        json!({"decision": "approve", "scope": "always"}),
    )
    .await;
    assert!(check(big, None).await.is_some());
}

async fn ping_answers(store: Store, _env: Env) {
    store.ping().await.expect("ping");
}

// ---------------------------------------------------------------------------------------------
// Durable stores

async fn reopen_keeps_requests_and_expires_overdue_ones(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let pending = store
        .create(t, yes_no("Still there?"))
        .await
        .expect("create")
        .record;
    let due = request(json!({"question": "Overdue?", "timeout_seconds": SHORT}));
    let due = store.create(t, due).await.expect("create").record;
    let keyed =
        request(json!({"question": "Keyed?", "choices": ["yes", "no"], "idempotency_key": "k"}));
    let keyed = store.create(t, keyed).await.expect("create").record;
    let answered = store
        .answer(t, &keyed.id, &json!({"option": "no"}), &alice())
        .await
        .expect("answer");
    store.sync_feed().await.expect("sync the feed");
    let last_seq = store.last_event_seq().await.expect("last seq");
    drop(store);

    env.advance(SHORT as i64 + 1);
    let store = env.open().await;
    let got = store.get(t, &pending.id).await.expect("get");
    assert_eq!(got, Some(pending.clone()), "a pending request survives");
    let got = store.get(t, &answered.id).await.expect("get");
    assert_eq!(got, Some(answered.clone()), "an answered request survives");
    assert!(
        got.and_then(|r| r.resolution?.seq).is_some(),
        "numbered in the audit chain once the feed is synced"
    );
    let expired = store.get(t, &due.id).await.expect("get").expect("exists");
    assert_eq!(
        expired.status,
        Status::Expired,
        "overdue while closed: expired at open"
    );
    assert_eq!(expired.resolved_at(), Some(env.now()));
    let again = request(json!({"question": "Keyed?", "idempotency_key": "k"}));
    let again = store.create(t, again).await.expect("create");
    assert!(!again.created, "idempotency keys survive");
    assert_eq!(again.record, answered);

    let still = store
        .wait(t, &pending.id, Duration::from_millis(200))
        .await
        .expect("wait");
    assert_eq!(still.status, Status::Pending);
    let waiter = spawn_wait(&store, t, &pending.id, 10);
    until_waiting(&store, 1).await;
    let answered_at = Instant::now();
    store
        .answer(t, &pending.id, &json!({"option": "yes"}), &bob())
        .await
        .expect("answer after reopening");
    let record = waiter.await.expect("task").expect("wait");
    assert_eq!(record.status, Status::Answered);
    assert!(answered_at.elapsed() < Duration::from_secs(1));

    let kinds: Vec<(EventKind, String)> = own_events(&store, &env)
        .await
        .into_iter()
        .map(|e| (e.kind, e.request_id))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (EventKind::Created, pending.id.clone()),
            (EventKind::Created, due.id.clone()),
            (EventKind::Created, keyed.id.clone()),
            (EventKind::Answered, keyed.id.clone()),
            (EventKind::Expired, due.id.clone()),
            (EventKind::Answered, pending.id.clone()),
        ]
    );
    assert!(store.last_event_seq().await.expect("last seq") > last_seq);
}

async fn second_instance_wakes_a_waiter(store: Store, env: Env) {
    let t = &env.tenant;
    // On PostgreSQL the waiting instance polls too rarely to matter: only NOTIFY can wake it
    // in time. On SQLite polling the event log is the mechanism.
    let (waiting, bound) = match env.kind {
        Kind::Postgres => {
            let mut opts = options(&env.clock);
            opts.poll_interval = Some(Duration::from_secs(3_600));
            let waiting = Store::open(&env.url, opts).await.expect("open");
            (waiting, Duration::from_millis(500))
        }
        _ => (env.open().await, Duration::from_secs(2)),
    };
    let answering = store;

    let id = answering
        .create(t, yes_no("Across?"))
        .await
        .expect("create")
        .record
        .id;
    let seen = waiting.get(t, &id).await.expect("get");
    assert!(seen.is_some(), "the other instance sees the request");
    let waiter = spawn_wait(&waiting, t, &id, 10);
    until_waiting(&waiting, 1).await;
    let answered_at = Instant::now();
    answering
        .answer(t, &id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let record = waiter.await.expect("task").expect("wait");
    let took = answered_at.elapsed();
    assert_eq!(record.status, Status::Answered);
    assert!(
        took < bound,
        "the waiter woke after {took:?}, want under {bound:?}"
    );

    // And the other way round, with a cancellation.
    let id = waiting
        .create(t, yes_no("Back?"))
        .await
        .expect("create")
        .record
        .id;
    let waiter = spawn_wait(&answering, t, &id, 10);
    until_waiting(&answering, 1).await;
    let cancelled_at = Instant::now();
    waiting.cancel(t, &id, &alice()).await.expect("cancel");
    let record = waiter.await.expect("task").expect("wait");
    assert_eq!(record.status, Status::Cancelled);
    let took = cancelled_at.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the waiter woke after {took:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Opening what cannot be opened

#[tokio::test]
async fn sqlite_garbage_file_is_not_a_database() {
    let dir = TempDir::new();
    let path = dir.0.join("clarify.db");
    let garbage = b"this is certainly not a database file ".repeat(200);
    std::fs::write(&path, &garbage).expect("write");
    let clock = Arc::new(ManualClock::new(start_time()));
    let url = format!("sqlite://{}", path.display());
    let err = Store::open(&url, options(&clock))
        .await
        .expect_err("garbage must not open");
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err}");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        garbage,
        "the file is untouched"
    );
}

#[tokio::test]
async fn sqlite_schema_newer_than_the_binary_is_refused() {
    let dir = TempDir::new();
    let path = dir.0.join("clarify.db");
    let url = format!("sqlite://{}", path.display());
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = Store::open(&url, options(&clock)).await.expect("open");
    store.create("t", yes_no("Kept?")).await.expect("create");
    drop(store);
    let conn = rusqlite::Connection::open(&path).expect("open with rusqlite");
    conn.pragma_update(None, "user_version", 99)
        .expect("bump the version");
    drop(conn);
    let err = Store::open(&url, options(&clock))
        .await
        .expect_err("a newer schema must not open");
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
}

#[tokio::test]
async fn postgres_unreachable_is_unavailable_at_once() {
    let clock = Arc::new(ManualClock::new(start_time()));
    let start = Instant::now();
    let err = Store::open("postgres://postgres@127.0.0.1:1/test", options(&clock))
        .await
        .expect_err("nothing listens on port 1");
    assert!(matches!(err, StoreError::Unavailable(_)), "{err}");
    assert!(err.to_string().contains("127.0.0.1:1"), "{err}");
    assert!(
        start.elapsed() < Duration::from_secs(3),
        "took {:?}",
        start.elapsed()
    );

    let err = Store::open(
        "postgres://postgres@127.0.0.1:notaport/test",
        options(&clock),
    )
    .await
    .expect_err("not a URL");
    assert!(matches!(err, StoreError::InvalidUrl { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_schema_newer_than_the_binary_is_refused() {
    let Some(url) = postgres_url() else { return };
    let db = random_name("clarify_test_schema");
    let outcome =
        in_scratch_database(&url, &db, |url| async move { schema_scenario(&url).await }).await;
    let err = outcome.unwrap_or_else(|e| panic!("{e}"));
    assert!(
        matches!(err, StoreError::SchemaTooNew { found: 99, .. }),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_dropped_closes_its_connections() {
    let Some(url) = postgres_url() else { return };
    // A name of its own identifies this store's connections among every other test's.
    let name = random_name("clarify_drop");
    let sep = if url.contains('?') { '&' } else { '?' };
    let store_url = format!("{url}{sep}application_name={name}");
    let mut admin = PgConnection::connect(&url).await.expect("connect");
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = Store::open(&store_url, options(&clock))
        .await
        .expect("open");
    store.ping().await.expect("ping");
    assert!(
        connections(&mut admin, &name).await >= 2,
        "a pooled connection and the listener"
    );
    drop(store);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let open = connections(&mut admin, &name).await;
        if open == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{open} connections outlived the store"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_waiters_survive_a_lost_listen_connection() {
    let Some(url) = postgres_url() else { return };
    let name = random_name("clarify_relisten");
    let sep = if url.contains('?') { '&' } else { '?' };
    let clock = Arc::new(ManualClock::new(start_time()));
    // Polling too rarely to matter, so only the listener can wake this store's waiters.
    let mut opts = options(&clock);
    opts.poll_interval = Some(Duration::from_secs(3_600));
    let waiting = Store::open(&format!("{url}{sep}application_name={name}"), opts)
        .await
        .expect("open");
    let answering = Store::open(&url, options(&clock)).await.expect("open");
    let t = random_name("t");

    let mut admin = PgConnection::connect(&url).await.expect("connect");
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE application_name = $1 AND query LIKE 'LISTEN%'",
    )
    .bind(&name)
    .fetch_all(&mut admin)
    .await
    .expect("terminate the listener");
    assert_eq!(killed, [true], "one listening connection");

    // Resolved while the listener may still be down: the reconnection wakes every waiter.
    for text in ["Right after the loss?", "Later?"] {
        let id = answering
            .create(&t, yes_no(text))
            .await
            .expect("create")
            .record
            .id;
        let waiter = spawn_wait(&waiting, &t, &id, 10);
        until_waiting(&waiting, 1).await;
        let answered_at = Instant::now();
        answering
            .answer(&t, &id, &json!({"option": "yes"}), &alice())
            .await
            .expect("answer");
        let record = waiter.await.expect("task").expect("wait");
        assert_eq!(record.status, Status::Answered, "{text}");
        let took = answered_at.elapsed();
        assert!(took < Duration::from_secs(2), "{text}: woke after {took:?}");
    }
}

/// How many connections carry `application_name`.
async fn connections(admin: &mut PgConnection, application_name: &str) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1")
        .bind(application_name)
        .fetch_one(admin)
        .await
        .expect("count connections")
}

/// On an empty database: instances starting together all migrate it safely; then, once the
/// recorded version is newer than this binary's, opening fails with that error.
async fn schema_scenario(url: &str) -> Result<StoreError, String> {
    let clock = Arc::new(ManualClock::new(start_time()));
    let opening: Vec<_> = (0..4)
        .map(|_| {
            let (url, opts) = (url.to_owned(), options(&clock));
            tokio::spawn(async move { Store::open(&url, opts).await })
        })
        .collect();
    let mut stores = Vec::new();
    for task in opening {
        match task.await {
            Ok(Ok(store)) => stores.push(store),
            Ok(Err(e)) => return Err(format!("opening concurrently failed: {e}")),
            Err(e) => return Err(format!("opening task failed: {e}")),
        }
    }
    stores[0]
        .create("t", yes_no("Migrated?"))
        .await
        .map_err(|e| format!("create: {e}"))?;
    drop(stores);
    let reopened = Store::open(url, options(&clock))
        .await
        .map_err(|e| format!("reopening: {e}"))?;
    drop(reopened);

    let mut conn = PgConnection::connect(url)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    sqlx::query("INSERT INTO clarify_schema (version) VALUES (99)")
        .execute(&mut conn)
        .await
        .map_err(|e| format!("bump the version: {e}"))?;
    let _ = conn.close().await;
    match Store::open(url, options(&clock)).await {
        Ok(_) => Err("a database with schema version 99 opened".to_owned()),
        Err(e) => Ok(e),
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers

fn ids(page: &Page) -> Vec<String> {
    page.records.iter().map(|r| r.id.clone()).collect()
}

/// The answer to the first question, as the outcome shows it.
fn answer_of(record: &RequestRecord) -> Value {
    record
        .outcome()
        .map(|o| o.questions[0].answer.clone())
        .unwrap_or(Value::Null)
}

/// Every event of this test's tenant, oldest first, once everything written is numbered.
async fn own_events(store: &Store, env: &Env) -> Vec<Event> {
    store.sync_feed().await.expect("sync the feed");
    let mut events = Vec::new();
    loop {
        let after = events.last().map_or(0, |e: &Event| e.seq);
        let batch = store
            .events_after(Some(&env.tenant), after, 1_000)
            .await
            .expect("events");
        if batch.is_empty() {
            return events;
        }
        events.extend(batch);
    }
}

fn spawn_wait(
    store: &Store,
    tenant: &str,
    id: &str,
    seconds: u64,
) -> tokio::task::JoinHandle<Result<RequestRecord, ResolveError>> {
    let (store, tenant, id) = (store.clone(), tenant.to_owned(), id.to_owned());
    tokio::spawn(async move { store.wait(&tenant, &id, Duration::from_secs(seconds)).await })
}

/// Returns once `n` request ids have waiters, so what follows happens during the wait.
async fn until_waiting(store: &Store, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while store.waiting_requests() < n {
        assert!(Instant::now() < deadline, "no waiter registered");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Registration precedes the waiter's first read; give that read time to finish.
    tokio::time::sleep(Duration::from_millis(50)).await;
}

// ---------------------------------------------------------------------------------------------
// Retention

/// Requests resolved longer ago than the retention period are purged with their events, tags
/// and deliveries; pending ones, young ones and ones whose webhook is still being delivered
/// stay; several instances purging at once delete each request once and fail nowhere.
async fn retention_purges_old_resolved_requests_with_their_traces(_store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let retaining = || async {
        let options = clarify_store::StoreOptions {
            retain_resolved: Some(TimeDelta::days(5)),
            ..crate::support::options(&env.clock)
        };
        Store::open(&env.url, options).await.expect("open")
    };
    let store = retaining().await;
    // Other tests sharing a database resolve requests at the real time, which a cutoff five
    // days back never reaches; this test's old requests are made ten days back, and never
    // expire (another test's clock would find a deadline in the past overdue).
    let now = env.now();
    env.clock.set(now - TimeDelta::days(10));
    let tagged = |text: &str, timeout: u64| {
        request(
            json!({"question": text, "choices": ["yes", "no"], "tags": ["old", "purge"],
                       "timeout_seconds": timeout}),
        )
    };
    let mut old = Vec::new();
    for i in 0..7 {
        let r = store
            .create(t, tagged(&format!("Old {i}?"), 0))
            .await
            .expect("create");
        let id = r.record.id;
        if i % 2 == 0 {
            store
                .answer(t, &id, &json!({"option": "yes"}), &alice())
                .await
                .expect("answer");
        } else {
            store.cancel(t, &id, &alice()).await.expect("cancel");
        }
        old.push(id);
    }
    let pending = store
        .create(t, tagged("Still open?", 0))
        .await
        .expect("create")
        .record;
    let hooked = store
        .create(
            t,
            request(
                json!({"question": "Hooked?", "choices": ["yes", "no"], "timeout_seconds": 0,
                           "callback_url": "http://127.0.0.1:9/hook"}),
            ),
        )
        .await
        .expect("create")
        .record;
    store
        .answer(t, &hooked.id, &json!({"option": "no"}), &alice())
        .await
        .expect("answer");
    env.clock.set(now - TimeDelta::days(1));
    let young = store
        .create(t, tagged("Young?", 0))
        .await
        .expect("create")
        .record;
    store.cancel(t, &young.id, &alice()).await.expect("cancel");
    env.clock.set(now);

    // Two instances purge at once (on memory, each store is its own).
    let other = if env.kind == crate::support::Kind::Memory {
        None
    } else {
        Some(retaining().await)
    };
    let drain = |s: Store| async move {
        let mut total = 0;
        loop {
            let n = s.purge_resolved().await.expect("purge");
            total += n;
            if n == 0 {
                return total;
            }
        }
    };
    let (mine, theirs) = tokio::join!(drain(store.clone()), async {
        match &other {
            Some(s) => drain(s.clone()).await,
            None => 0,
        }
    });
    if !env.shared() {
        assert_eq!(mine + theirs, old.len(), "each old request purged once");
    }
    for id in &old {
        assert_eq!(store.get(t, id).await.expect("get"), None, "{id} was kept");
    }
    for (what, id) in [
        ("pending", &pending.id),
        ("young", &young.id),
        ("still delivering", &hooked.id),
    ] {
        assert!(
            store.get(t, id).await.expect("get").is_some(),
            "the {what} request was purged"
        );
    }
    store.sync_feed().await.expect("sync the feed");
    let events = store.events_after(Some(t), 0, 1_000).await.expect("events");
    assert!(
        events.iter().all(|e| !old.contains(&e.request_id)),
        "events of purged requests remain"
    );
    // Their places in the audit chain stay as tombstones, and the chain still verifies.
    assert!(
        store
            .audit_events(None, 0, usize::MAX)
            .await
            .expect("audit")
            .iter()
            .any(|e| e.kind == "purged" && e.tenant.is_none() && e.hash.len() == 64),
        "no tombstones"
    );
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "purging broke the chain"
    );
    assert!(
        events.iter().any(|e| e.request_id == young.id),
        "young events stay"
    );
    let query = ListQuery {
        tag: Some("purge".to_owned()),
        ..ListQuery::default()
    };
    let listed: Vec<String> = store
        .list(t, &query)
        .await
        .expect("list")
        .records
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(
        listed,
        [young.id.clone(), pending.id.clone()],
        "tags of purged requests remain"
    );
    assert_eq!(
        store
            .deliveries(t, &hooked.id)
            .await
            .expect("deliveries")
            .len(),
        1
    );
    if !env.shared() {
        assert_eq!(
            store.purge_resolved().await.expect("purge"),
            0,
            "nothing left to purge"
        );
    }
}
