//! Warnings before expiry and extensions, on every backend (see `conformance` for how cases
//! run). A pending request's responders are warned once, `warn_before` ahead of its deadline,
//! whatever the number of instances sharing the store and across a restart; a request resolved
//! earlier, or one whose whole life is shorter than the warning period, is not warned. An
//! extension, by someone who may answer, moves the deadline within the configured bound, is an
//! `extended` event of the audit chain, and warns again before the new deadline. An answer a
//! channel refused is a `refused` event of its request, naming the sender, and nothing else.

use chrono::TimeDelta;
use clarify_store::{Actor, Deadlines, Event, EventKind, ExtendError, ResolveError, Store};
use serde_json::json;

use crate::support::{Env, Kind, alice, request};

conformance! {
    every: [
        a_warning_is_sent_once_across_instances,
        a_routes_warning_period_applies_unless_the_request_gives_one,
        no_warning_for_a_request_resolved_earlier_or_shorter_than_the_period,
        an_extension_moves_the_deadline_within_its_bound_and_warns_again,
        an_extension_needs_a_pending_request_with_a_deadline_and_permission,
        a_refused_answer_is_a_refused_event_and_changes_nothing_else,
    ],
    durable: [
        a_warning_is_not_sent_again_after_a_restart,
    ],
}

fn carol() -> Actor {
    Actor::new("carol", "cli")
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

fn count(events: &[EventKind], kind: EventKind) -> usize {
    events.iter().filter(|k| **k == kind).count()
}

/// Half an hour to answer, warned 10 minutes ahead (the default), only alice may answer.
fn half_hour() -> clarify_core::NewRequest {
    request(json!({
        "question": "Ship the release?",
        "choices": ["yes", "no"],
        "responders": ["alice"],
        "timeout_seconds": 1800,
    }))
}

async fn a_warning_is_sent_once_across_instances(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let other = match env.kind {
        Kind::Memory => store.clone(),
        _ => env.open().await,
    };
    let created = store.create(t, half_hour()).await.expect("create").record;
    assert_eq!(
        created.request.warn_before_seconds, None,
        "the stored request is what was given; the default period applies"
    );
    let id = created.id;
    // 19:59 after creation nothing is due; at 20:00 one warning, whichever instance writes it;
    // after that none, however often both look.
    // (seconds later, warnings so far)
    for (step, expect) in [(1199, 0), (1, 1), (1, 1), (300, 1)] {
        env.advance(step);
        let (a, b) = tokio::join!(store.warn_due(), other.warn_due());
        a.expect("warn");
        b.expect("warn");
        let warned = count(&events_of(&store, &env, &id).await, EventKind::Warned);
        assert_eq!(warned, expect, "{step} s later");
    }
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(record.status, clarify_core::Status::Pending);
}

async fn a_routes_warning_period_applies_unless_the_request_gives_one(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    assert!(store.set_deadlines(Deadlines {
        warn_before: Some(clarify_store::WarnBefore(std::sync::Arc::new(
            |_: &str, _: &clarify_core::NewRequest| Some(1800),
        ))),
        ..Deadlines::default()
    }));
    let routed = request(json!({"question": "Ship?", "timeout_seconds": 3600}));
    let routed = store.create(t, routed).await.expect("create").record;
    assert_eq!(
        routed.request.warn_before_seconds,
        Some(1800),
        "kept with it"
    );
    let own = request(json!({"question": "Ship?", "timeout_seconds": 3600,
                             "warn_before_seconds": 0}));
    let own = store.create(t, own).await.expect("create").record;
    assert_eq!(own.request.warn_before_seconds, Some(0));
    env.advance(1799);
    store.warn_due().await.expect("warn");
    assert_eq!(
        count(
            &events_of(&store, &env, &routed.id).await,
            EventKind::Warned
        ),
        0
    );
    env.advance(1);
    store.warn_due().await.expect("warn");
    assert_eq!(
        count(
            &events_of(&store, &env, &routed.id).await,
            EventKind::Warned
        ),
        1
    );
    env.advance(1700);
    store.warn_due().await.expect("warn");
    assert_eq!(
        count(&events_of(&store, &env, &own.id).await, EventKind::Warned),
        0,
        "warn_before_seconds 0: never warned"
    );
}

async fn a_warning_is_not_sent_again_after_a_restart(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let id = store
        .create(t, half_hour())
        .await
        .expect("create")
        .record
        .id;
    env.advance(1200);
    store.warn_due().await.expect("warn");
    drop(store);
    let store = env.open().await;
    env.advance(60);
    store.warn_due().await.expect("warn again");
    let events = events_of(&store, &env, &id).await;
    assert_eq!(count(&events, EventKind::Warned), 1, "{events:?}");
}

async fn no_warning_for_a_request_resolved_earlier_or_shorter_than_the_period(
    store: Store,
    env: Env,
) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let answered = store
        .create(t, half_hour())
        .await
        .expect("create")
        .record
        .id;
    store
        .answer(t, &answered, &json!({"option": "yes"}), &alice())
        .await
        .expect("alice answers");
    // Five minutes to answer is shorter than the ten-minute warning: no warning at all.
    let short = request(json!({"question": "Quick?", "timeout_seconds": 300}));
    let short = store.create(t, short).await.expect("create").record.id;
    // Never expires: nothing to warn of.
    let forever = request(json!({"question": "Whenever?", "timeout_seconds": 0}));
    let forever = store.create(t, forever).await.expect("create").record;
    assert_eq!(forever.request.warn_before_seconds, None);
    for _ in 0..4 {
        env.advance(400);
        store.warn_due().await.expect("warn");
    }
    for id in [&answered, &short, &forever.id] {
        let events = events_of(&store, &env, id).await;
        assert_eq!(count(&events, EventKind::Warned), 0, "{id}: {events:?}");
    }
}

async fn an_extension_moves_the_deadline_within_its_bound_and_warns_again(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    assert!(store.set_deadlines(Deadlines {
        max_extension: TimeDelta::hours(1),
        ..Deadlines::default()
    }));
    let created = store.create(t, half_hour()).await.expect("create").record;
    let id = created.id.clone();
    let first = created.created_at + TimeDelta::seconds(1800);
    assert_eq!(created.expires_at, Some(first));
    env.advance(1200);
    store.warn_due().await.expect("warn");

    let extended = store
        .extend(t, &id, 1800, &alice())
        .await
        .expect("alice extends");
    assert_eq!(extended.expires_at, Some(first + TimeDelta::seconds(1800)));
    // The bound is an hour past the first deadline in all: half an hour is left, not more.
    match store.extend(t, &id, 1801, &alice()).await {
        Err(ExtendError::TooFar { left, .. }) => assert_eq!(left, "30 minutes"),
        other => panic!("beyond the bound is refused, got {other:?}"),
    }
    let again = store
        .extend(t, &id, 1800, &alice())
        .await
        .expect("up to the bound");
    let latest = first + TimeDelta::hours(1);
    assert_eq!(again.expires_at, Some(latest));
    let read = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(
        read.expires_at,
        Some(latest),
        "a reader sees the new deadline"
    );

    // Warned again ten minutes before the new deadline, once; expired only at it.
    let until_warning = (latest - TimeDelta::seconds(600) - env.now()).num_seconds();
    env.advance(until_warning - 1);
    store.warn_due().await.expect("warn");
    store.expire_due().await.expect("expire");
    let events = events_of(&store, &env, &id).await;
    assert_eq!(count(&events, EventKind::Warned), 1, "{events:?}");
    env.advance(1);
    store.warn_due().await.expect("warn");
    store.warn_due().await.expect("warn");
    let events = events_of(&store, &env, &id).await;
    assert_eq!(count(&events, EventKind::Warned), 2, "{events:?}");
    assert_eq!(count(&events, EventKind::Extended), 2, "{events:?}");
    env.advance(599);
    store.expire_due().await.expect("expire");
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(record.status, clarify_core::Status::Pending);
    env.advance(1);
    store.expire_due().await.expect("expire");
    let record = store.get(t, &id).await.expect("get").expect("exists");
    assert_eq!(record.status, clarify_core::Status::Expired);

    // Who extended is in the chain, which still verifies.
    store.sync_feed().await.expect("sync");
    let extensions: Vec<Event> = store
        .events_after(Some(t), 0, 10_000)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.request_id == id && e.kind == EventKind::Extended)
        .collect();
    assert!(
        extensions
            .iter()
            .all(|e| e.actor.as_deref() == Some("alice") && e.channel.as_deref() == Some("api")),
        "{extensions:?}"
    );
    store.verify_audit().await.expect("verify").expect("intact");
}

async fn an_extension_needs_a_pending_request_with_a_deadline_and_permission(
    store: Store,
    env: Env,
) {
    // A half-hour request: another test's clock passing its deadline would expire it.
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let id = store
        .create(t, half_hour())
        .await
        .expect("create")
        .record
        .id;
    match store.extend(t, &id, 600, &carol()).await {
        Err(ExtendError::Resolve(ResolveError::NotAllowed { .. })) => {}
        other => panic!("carol may not answer, so may not extend: {other:?}"),
    }
    match store.extend("another-tenant", &id, 600, &alice()).await {
        Err(ExtendError::Resolve(ResolveError::NotFound)) => {}
        other => panic!("another tenant's request is unknown: {other:?}"),
    }
    match store.extend(t, &id, 0, &alice()).await {
        Err(ExtendError::Empty) => {}
        other => panic!("an extension of nothing is refused: {other:?}"),
    }
    store
        .answer(t, &id, &json!({"option": "no"}), &alice())
        .await
        .expect("answer");
    match store.extend(t, &id, 600, &alice()).await {
        Err(ExtendError::Resolve(ResolveError::AlreadyResolved(r))) => {
            assert_eq!(r.status, clarify_core::Status::Answered);
        }
        other => panic!("a resolved request is not extended: {other:?}"),
    }
    let forever = request(json!({"question": "Whenever?", "timeout_seconds": 0}));
    let forever = store.create(t, forever).await.expect("create").record.id;
    match store.extend(t, &forever, 600, &alice()).await {
        Err(ExtendError::NoDeadline) => {}
        other => panic!("a request that never expires has nothing to extend: {other:?}"),
    }
    let unchanged = store.get(t, &forever).await.expect("get").expect("exists");
    assert_eq!(unchanged.expires_at, None);
}

async fn a_refused_answer_is_a_refused_event_and_changes_nothing_else(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let created = store.create(t, half_hour()).await.expect("create").record;
    let stranger = Actor {
        channel: "email".to_owned(),
        principal: Some("email:mallory@example.net".to_owned()),
        ..Actor::default()
    };
    assert!(
        store
            .refused(t, &created.id, &stranger)
            .await
            .expect("refused")
    );
    let carol = carol().as_principal("slack:U0CAROL");
    assert!(
        store
            .refused(t, &created.id, &carol)
            .await
            .expect("refused")
    );
    assert!(
        !store
            .refused("another-tenant", &created.id, &stranger)
            .await
            .expect("refused"),
        "another tenant's request is not written to"
    );
    assert!(
        !store
            .refused(t, "no-such-request", &stranger)
            .await
            .expect("refused")
    );

    let after = store
        .get(t, &created.id)
        .await
        .expect("get")
        .expect("there");
    assert_eq!(after.status, clarify_core::Status::Pending);
    assert_eq!(after.expires_at, created.expires_at);
    assert_eq!(
        events_of(&store, &env, &created.id).await,
        vec![EventKind::Created, EventKind::Refused, EventKind::Refused]
    );
    let events: Vec<Event> = store
        .events_after(Some(t), 0, 10_000)
        .await
        .expect("events")
        .into_iter()
        .filter(|e| e.request_id == created.id && e.kind == EventKind::Refused)
        .collect();
    assert_eq!(events[0].actor, None);
    assert_eq!(events[0].channel.as_deref(), Some("email"));
    assert_eq!(
        events[0].principal.as_deref(),
        Some("email:mallory@example.net")
    );
    assert_eq!(events[1].actor.as_deref(), Some("carol"));
    assert_eq!(events[1].principal.as_deref(), Some("slack:U0CAROL"));
    // Still answerable by the one it is for, and the chain holds.
    store
        .answer(t, &created.id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    store.verify_audit().await.expect("verify").expect("intact");
}
