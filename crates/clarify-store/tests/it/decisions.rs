//! Quorum votes, reminders and escalation, and channel notifications, on every backend (see
//! `conformance` for how cases run). Votes are counted once per responder and decide a request
//! once; reminders and escalations are written once whatever the number of instances sharing
//! the store; a new request's notifications are queued with it.

use clarify_core::{Decision, Scope, Status};
use clarify_store::{Actor, Event, EventKind, RequestRecord, ResolveError, Store};
use serde_json::{Value, json};

use crate::support::{Env, Kind, alice, bob, request};

conformance! {
    every: [
        quorum_counts_one_vote_per_responder_and_decides_once,
        quorum_deny_is_final,
        quorum_needs_a_named_responder,
        quorum_concurrent_votes_resolve_exactly_once,
        reminders_and_escalation_happen_once_across_instances,
        new_requests_queue_their_channel_notifications,
        resolutions_and_votes_follow_up_on_every_channel,
    ],
    durable: [
        votes_survive_a_restart,
    ],
}

fn carol() -> Actor {
    Actor::new("carol", "cli")
}

/// A deploy approval that needs `n` approvals; scopes `once` and `session`.
fn deploy(n: u32) -> clarify_core::NewRequest {
    request(json!({
        "questions": [{
            "text": "Deploy?",
            "kind": "approval",
            "action": {"name": "deploy", "arguments": {"env": "prod"}},
            "scopes": ["once", "session"],
        }],
        "session": "s1",
        "approvals_required": n,
    }))
}

fn approve(scope: &str) -> Value {
    json!({"decision": "approve", "scope": scope})
}

async fn events_of(store: &Store, env: &Env, id: &str) -> Vec<EventKind> {
    store.sync_feed().await.expect("sync the feed");
    let events: Vec<Event> = store
        .events_after(Some(&env.tenant), 0, 10_000)
        .await
        .expect("events");
    events
        .into_iter()
        .filter(|e| e.request_id == id)
        .map(|e| e.kind)
        .collect()
}

async fn quorum_counts_one_vote_per_responder_and_decides_once(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store.create(t, deploy(2)).await.expect("create").record.id;

    let first = store
        .answer(t, &id, &approve("session"), &alice())
        .await
        .expect("alice votes");
    assert_eq!(first.status, Status::Pending, "one of two approvals");
    assert_eq!(first.votes.len(), 1);
    assert_eq!(first.votes[0].by, "alice");
    assert_eq!(first.votes[0].decision, Decision::Approve);
    assert_eq!(first.votes[0].scope, Scope::Session);
    assert_eq!(first.approvals(), 1);
    assert!(first.outcome().is_none());

    let read = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(read, first, "the vote reads back as it was returned");

    match store.answer(t, &id, &approve("once"), &alice()).await {
        Err(ResolveError::AlreadyVoted { responder, record }) => {
            assert_eq!(responder, "alice");
            assert_eq!(record.votes.len(), 1, "the second vote changed nothing");
        }
        other => panic!("a second vote by alice must be refused, got {other:?}"),
    }

    let decided = store
        .answer(t, &id, &approve("once"), &bob())
        .await
        .expect("bob votes");
    assert_eq!(decided.status, Status::Answered);
    let outcome = decided.outcome().expect("outcome");
    assert_eq!(
        outcome.answered_by.as_deref(),
        Some("bob"),
        "the deciding vote"
    );
    assert_eq!(outcome.votes.len(), 2);
    assert_eq!(outcome.questions[0].decision, Some(Decision::Approve));
    assert_eq!(
        outcome.questions[0].scope,
        Some(Scope::Once),
        "two people agreeing to `session` and `once` agreed to `once`"
    );
    assert_eq!(
        store.get(t, &id).await.expect("get").expect("exists"),
        decided
    );
    assert!(
        store.list_grants(t, None).await.expect("grants").is_empty(),
        "a `once` approval remembers nothing"
    );

    match store.answer(t, &id, &approve("once"), &carol()).await {
        Err(ResolveError::AlreadyResolved(record)) => assert_eq!(record.votes.len(), 2),
        other => panic!("a vote after the decision must find it resolved, got {other:?}"),
    }
    assert_eq!(
        events_of(&store, &env, &id).await,
        [
            EventKind::Created,
            EventKind::Voted,
            EventKind::Voted,
            EventKind::Answered
        ]
    );
}

async fn quorum_deny_is_final(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store.create(t, deploy(3)).await.expect("create").record.id;
    store
        .answer(t, &id, &approve("session"), &alice())
        .await
        .expect("alice approves");
    let denied = store
        .answer(
            t,
            &id,
            &json!({"decision": "deny", "reason": "not on a Friday"}),
            &bob(),
        )
        .await
        .expect("bob denies");
    assert_eq!(denied.status, Status::Answered, "one deny settles it");
    let outcome = denied.outcome().expect("outcome");
    assert_eq!(outcome.questions[0].decision, Some(Decision::Deny));
    assert_eq!(
        outcome.questions[0].reason.as_deref(),
        Some("not on a Friday")
    );
    assert_eq!(outcome.answered_by.as_deref(), Some("bob"));
    assert_eq!(outcome.votes.len(), 2);
    assert!(
        store.list_grants(t, None).await.expect("grants").is_empty(),
        "alice's `session` approval grants nothing once the request is denied"
    );
}

async fn quorum_needs_a_named_responder(store: Store, env: Env) {
    let t = &env.tenant;
    let raw = json!({
        "questions": [{"text": "Wire the money?", "kind": "approval",
                       "action": {"name": "pay", "arguments": {}}}],
        "approvals_required": 2,
        "responders": ["alice", "bob"],
    });
    let id = store
        .create(t, request(raw))
        .await
        .expect("create")
        .record
        .id;
    let anonymous = Actor {
        name: None,
        channel: "link".to_owned(),
        groups: Vec::new(),
        principal: None,
        step_up: clarify_store::StepUp::None,
    };
    match store.answer(t, &id, &approve("once"), &anonymous).await {
        Err(ResolveError::QuorumNeedsIdentity { required: 2 }) => {}
        other => panic!("an anonymous vote must be refused, got {other:?}"),
    }
    match store.answer(t, &id, &approve("once"), &carol()).await {
        Err(ResolveError::NotAllowed { responder }) => assert_eq!(responder, "carol"),
        other => panic!("carol is not a responder, got {other:?}"),
    }
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert!(record.votes.is_empty(), "refused votes are not counted");
    assert_eq!(record.status, Status::Pending);
}

async fn quorum_concurrent_votes_resolve_exactly_once(store: Store, env: Env) {
    let t = env.tenant.clone();
    // A second instance on the same database where there is one, so the votes race through
    // different connections as they would through two servers.
    let other = match env.kind {
        Kind::Memory => store.clone(),
        _ => env.open().await,
    };
    for round in 0..15 {
        let id = store.create(&t, deploy(2)).await.expect("create").record.id;
        let votes = [(store.clone(), alice()), (other.clone(), bob())].map(|(s, who)| {
            let (t, id) = (t.clone(), id.clone());
            tokio::spawn(async move { s.answer(&t, &id, &approve("once"), &who).await })
        });
        let mut results = Vec::new();
        for v in votes {
            results.push(v.await.expect("task").expect("both votes count"));
        }
        let decided: Vec<&RequestRecord> = results
            .iter()
            .filter(|r| r.status == Status::Answered)
            .collect();
        assert_eq!(
            decided.len(),
            1,
            "round {round}: exactly one of two simultaneous votes decides the request"
        );
        assert_eq!(decided[0].votes.len(), 2);
        let events = events_of(&store, &env, &id).await;
        assert_eq!(
            events.iter().filter(|k| **k == EventKind::Answered).count(),
            1,
            "round {round}: answered once, events {events:?}"
        );
        assert_eq!(events.iter().filter(|k| **k == EventKind::Voted).count(), 2);
    }
}

async fn reminders_and_escalation_happen_once_across_instances(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let other = match env.kind {
        Kind::Memory => store.clone(),
        _ => env.open().await,
    };
    let created = store
        .create(
            t,
            request(json!({
                "question": "Ship the release?",
                "choices": ["yes", "no"],
                "responders": ["alice"],
                "remind_every_seconds": 60,
                "escalate_after_seconds": 150,
                "escalate_to": ["carol"],
                "callback_url": "http://127.0.0.1:9/hook",
            })),
        )
        .await
        .expect("create")
        .record;
    let id = created.id.clone();
    assert_eq!(
        created.remind_at,
        Some(env.now() + chrono::TimeDelta::seconds(60))
    );
    assert_eq!(created.escalated_at, None);

    // Both instances run their reaper at every step; each reminder happens once. The store is
    // shared with other tests on PostgreSQL, whose requests may fall due too, so what counts is
    // this request's events.
    let pass = async |a: &Store, b: &Store| -> (usize, usize) {
        let before = events_of(a, &env, &id).await;
        let (ra, rb, ea, eb) = tokio::join!(
            a.remind_due(),
            b.remind_due(),
            a.escalate_due(),
            b.escalate_due()
        );
        for done in [ra, rb, ea, eb] {
            done.expect("the reaper's pass");
        }
        let after = events_of(a, &env, &id).await;
        let new = |kind| {
            let count = |events: &[EventKind]| events.iter().filter(|k| **k == kind).count();
            count(&after) - count(&before)
        };
        (new(EventKind::Reminded), new(EventKind::Escalated))
    };
    let mut reminders = 0;
    let mut escalations = 0;
    // Times since creation: 59 s (nothing due), 60 (first reminder), 61, 119, 120 (second),
    // 150 (escalation), 179, 180 (third).
    for (step, expect_reminder, expect_escalation) in [
        (59, 0, 0),
        (1, 1, 0),
        (1, 0, 0),
        (58, 0, 0),
        (1, 1, 0),
        (30, 0, 1),
        (29, 0, 0),
        (1, 1, 0),
    ] {
        if step == 30 {
            match store
                .answer(t, &id, &json!({"option": "yes"}), &carol())
                .await
            {
                Err(ResolveError::NotAllowed { .. }) => {}
                other => panic!("carol may not answer before the escalation, got {other:?}"),
            }
        }
        env.advance(step);
        let (r, e) = pass(&store, &other).await;
        assert_eq!(
            (r, e),
            (expect_reminder, expect_escalation),
            "at {step} s later"
        );
        reminders += r;
        escalations += e;
    }
    assert_eq!((reminders, escalations), (3, 1));
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(
        record.escalated_at,
        Some(created.created_at + chrono::TimeDelta::seconds(150))
    );
    assert_eq!(
        record.remind_at,
        Some(created.created_at + chrono::TimeDelta::seconds(240))
    );
    let events = events_of(&store, &env, &id).await;
    assert_eq!(
        events,
        [
            EventKind::Created,
            EventKind::Reminded,
            EventKind::Reminded,
            EventKind::Escalated,
            EventKind::Reminded
        ]
    );
    let announced: Vec<Option<EventKind>> = store
        .deliveries(t, &id)
        .await
        .expect("deliveries")
        .iter()
        .map(|d| d.event)
        .collect();
    assert_eq!(
        announced,
        [
            Some(EventKind::Reminded),
            Some(EventKind::Reminded),
            Some(EventKind::Escalated),
            Some(EventKind::Reminded)
        ],
        "each reminder and the escalation is queued for the webhook once"
    );

    // From the escalation on, carol may answer; then reminders stop.
    let answered = other
        .answer(t, &id, &json!({"option": "yes"}), &carol())
        .await
        .expect("the escalated responder answers");
    assert_eq!(answered.status, Status::Answered);
    assert_eq!(answered.remind_at, None);
    env.advance(600);
    assert_eq!(
        pass(&store, &other).await,
        (0, 0),
        "nothing after the answer"
    );
}

async fn votes_survive_a_restart(store: Store, env: Env) {
    let t = &env.tenant;
    let id = store.create(t, deploy(2)).await.expect("create").record.id;
    store
        .answer(t, &id, &approve("session"), &alice())
        .await
        .expect("alice votes");
    drop(store);
    let store = env.open().await;
    match store.answer(t, &id, &approve("once"), &alice()).await {
        Err(ResolveError::AlreadyVoted { .. }) => {}
        other => panic!("alice's vote survived the restart, so she cannot vote again: {other:?}"),
    }
    let decided = store
        .answer(t, &id, &approve("session"), &bob())
        .await
        .expect("bob votes");
    assert_eq!(decided.status, Status::Answered);
    let grants = store.list_grants(t, Some("s1")).await.expect("grants");
    assert_eq!(grants.len(), 1, "both approved for the session: one grant");
    assert_eq!(grants[0].granted_by.as_deref(), Some("bob"));
}

/// With an `announce` hook, a new request queues one notification per channel in its creating
/// transaction; webhook workers never see them, and a repeated idempotency key adds none.
async fn new_requests_queue_their_channel_notifications(_store: Store, env: Env) {
    // It claims from the outbox, which every test shares on PostgreSQL (see `access`).
    let _clock = env.exclusive_clock().await;
    let mut options = crate::support::options(&env.clock);
    options.announce = Some(clarify_store::Announce(std::sync::Arc::new(
        |_tenant: &str, request: &clarify_core::NewRequest| {
            if request.tags.iter().any(|t| t == "quiet") {
                Vec::new()
            } else {
                vec!["phone".to_owned(), "ops".to_owned()]
            }
        },
    )));
    let store = Store::open(&env.url, options).await.expect("open");
    let t = &env.tenant;
    let body = json!({"question": "Ship?", "idempotency_key": format!("k-{t}")});
    let id = store
        .create(t, request(body.clone()))
        .await
        .expect("create")
        .record
        .id;
    let again = store.create(t, request(body)).await.expect("create again");
    assert!(!again.created);
    let quiet = store
        .create(t, request(json!({"question": "Shh?", "tags": ["quiet"]})))
        .await
        .expect("create")
        .record
        .id;

    let queued = store.notifications(t, &id).await.expect("notifications");
    let channels: Vec<Option<&str>> = queued.iter().map(|n| n.channel.as_deref()).collect();
    assert_eq!(
        channels,
        [Some("phone"), Some("ops")],
        "once each, in order"
    );
    assert!(queued.iter().all(|n| n.event == Some(EventKind::Created)));
    assert!(
        store
            .deliveries(t, &id)
            .await
            .expect("deliveries")
            .is_empty()
    );
    assert!(
        store
            .notifications(t, &quiet)
            .await
            .expect("none")
            .is_empty()
    );

    // In the shared PostgreSQL database earlier runs leave notifications nobody delivers (no
    // server has these channels), older than ours: claim batch by batch until nothing is due.
    let lease = env.now() + chrono::TimeDelta::seconds(30);
    let webhooks = crate::access::claim_all(|| store.claim_deliveries(lease, 100)).await;
    assert!(
        !webhooks.iter().any(|d| d.tenant == *t),
        "the webhook worker does not claim notifications"
    );
    let claimed: Vec<_> = crate::access::claim_all(|| store.claim_notifications(lease, 100))
        .await
        .into_iter()
        .filter(|d| d.tenant == *t)
        .collect();
    assert_eq!(claimed.len(), 2);
    let attempt = clarify_store::Attempt {
        number: 1,
        at: env.now(),
        status_code: None,
        error: None,
        duration_ms: 3,
    };
    store
        .finish_notification(
            claimed[0].id,
            attempt,
            clarify_store::AfterAttempt::Delivered,
            Some(format!("msg-{t}")),
        )
        .await
        .expect("finish");
    let after = store.notifications(t, &id).await.expect("notifications");
    let sent = after.iter().find(|n| n.id == claimed[0].id).expect("sent");
    // Unique per test: the PostgreSQL database is shared by every run.
    let msg = format!("msg-{t}");
    assert_eq!(sent.message_ref.as_deref(), Some(msg.as_str()));
    // A reply to that message finds its request.
    let channel = sent.channel.clone().expect("a channel");
    assert_eq!(
        store.announced_as(&channel, &msg).await.expect("lookup"),
        Some((t.clone(), id.clone()))
    );
    assert_eq!(
        store.announced_as(&channel, "msg-2").await.expect("lookup"),
        None
    );
    assert_eq!(sent.status, clarify_store::DeliveryStatus::Delivered);
    assert_eq!(sent.attempts.len(), 1);

    // A reminder and an escalation are announced on the same channels.
    let nagging = store
        .create(
            t,
            request(json!({"question": "Still there?", "responders": ["alice"],
                           "remind_every_seconds": 60, "escalate_after_seconds": 90,
                           "escalate_to": ["carol"]})),
        )
        .await
        .expect("create")
        .record
        .id;
    env.advance(60);
    store.remind_due().await.expect("remind");
    env.advance(30);
    store.escalate_due().await.expect("escalate");
    let found = store
        .notifications(t, &nagging)
        .await
        .expect("notifications");
    let seen: Vec<(Option<&str>, Option<EventKind>)> = found
        .iter()
        .map(|n| (n.channel.as_deref(), n.event))
        .collect();
    assert_eq!(
        seen,
        [
            (Some("phone"), Some(EventKind::Created)),
            (Some("ops"), Some(EventKind::Created)),
            (Some("phone"), Some(EventKind::Reminded)),
            (Some("ops"), Some(EventKind::Reminded)),
            (Some("phone"), Some(EventKind::Escalated)),
            (Some("ops"), Some(EventKind::Escalated)),
        ]
    );
    // Not left pending in a shared database, where other tests' reapers would remind it.
    store.cancel(t, &nagging, &alice()).await.expect("cancel");
}

/// Every resolution (answer, cancel, expiry) and every vote that does not decide queues one
/// notification per channel the request was announced on, in the same transaction, so each
/// announcement is edited to show it; a request announced nowhere queues none.
async fn resolutions_and_votes_follow_up_on_every_channel(_store: Store, env: Env) {
    let mut options = crate::support::options(&env.clock);
    options.announce = Some(clarify_store::Announce(std::sync::Arc::new(
        |_tenant: &str, request: &clarify_core::NewRequest| {
            if request.tags.iter().any(|t| t == "quiet") {
                Vec::new()
            } else {
                vec!["phone".to_owned(), "ops".to_owned()]
            }
        },
    )));
    let store = Store::open(&env.url, options).await.expect("open");
    let t = &env.tenant;
    let events = |found: Vec<clarify_store::Delivery>| -> Vec<(Option<String>, Option<EventKind>)> {
        found.into_iter().map(|n| (n.channel, n.event)).collect()
    };
    let both = |kind: EventKind| {
        vec![
            (Some("phone".to_owned()), Some(kind)),
            (Some("ops".to_owned()), Some(kind)),
        ]
    };

    let answered = store
        .create(t, request(json!({"question": "Ship?"})))
        .await
        .expect("create")
        .record
        .id;
    store
        .answer(t, &answered, &json!({"text": "yes"}), &alice())
        .await
        .expect("answer");
    let mut expected = both(EventKind::Created);
    expected.extend(both(EventKind::Answered));
    assert_eq!(
        events(store.notifications(t, &answered).await.expect("n")),
        expected
    );

    let cancelled = store
        .create(t, request(json!({"question": "Ship?"})))
        .await
        .expect("create")
        .record
        .id;
    store.cancel(t, &cancelled, &alice()).await.expect("cancel");
    let mut expected = both(EventKind::Created);
    expected.extend(both(EventKind::Cancelled));
    assert_eq!(
        events(store.notifications(t, &cancelled).await.expect("n")),
        expected
    );

    let voted = store.create(t, deploy(2)).await.expect("create").record.id;
    store
        .answer(t, &voted, &json!({"decision": "approve"}), &alice())
        .await
        .expect("vote");
    store
        .answer(t, &voted, &json!({"decision": "approve"}), &bob())
        .await
        .expect("vote");
    let mut expected = both(EventKind::Created);
    expected.extend(both(EventKind::Voted));
    expected.extend(both(EventKind::Answered));
    assert_eq!(
        events(store.notifications(t, &voted).await.expect("n")),
        expected,
        "the first vote edits; the deciding one resolves"
    );

    let quiet = store
        .create(t, request(json!({"question": "Shh?", "tags": ["quiet"]})))
        .await
        .expect("create")
        .record
        .id;
    store.cancel(t, &quiet, &alice()).await.expect("cancel");
    assert!(store.notifications(t, &quiet).await.expect("n").is_empty());

    let _clock = env.exclusive_clock().await;
    let expiring = store
        .create(
            t,
            request(json!({"question": "Soon?", "timeout_seconds": 30})),
        )
        .await
        .expect("create")
        .record
        .id;
    env.advance(31);
    while store.expire_due().await.expect("expire") > 0 {}
    let mut expected = both(EventKind::Created);
    expected.extend(both(EventKind::Expired));
    assert_eq!(
        events(store.notifications(t, &expiring).await.expect("n")),
        expected
    );
}
