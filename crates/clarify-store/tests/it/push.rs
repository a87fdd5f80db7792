//! Web Push subscriptions on every backend: subscribed, read, listed per tenant, replaced by the
//! same endpoint, removed only by their person, each change an admin event; and a new request
//! queued as a push to exactly the subscriptions whose people may answer it, claimed only by the
//! push worker, followed up by its reminders; the subscriptions a create reads are at most a
//! second old, and those made through the same store are seen at once.

use std::collections::BTreeMap;
use std::sync::Arc;

use clarify_store::{Actor, EventKind, NewPushSubscription, PushSubscription, Store};
use serde_json::json;

use crate::support::{Env, random_name, request};

conformance! {
    every: [
        a_subscription_is_read_listed_replaced_and_removed_by_its_person,
        a_new_request_is_pushed_to_the_people_who_may_answer_it,
        a_tenant_is_pushed_to_from_its_first_subscription_made_here,
    ],
    durable: [
        a_subscription_survives_a_restart,
        another_instances_subscription_is_pushed_to_within_a_second,
    ],
}

fn browser(endpoint: &str) -> NewPushSubscription {
    NewPushSubscription {
        endpoint: endpoint.to_owned(),
        p256dh: "BP256DH".to_owned(),
        auth: "AUTH".to_owned(),
    }
}

fn endpoint() -> String {
    format!("https://push.example/{}", random_name("e"))
}

async fn subscribe(store: &Store, tenant: &str, by: &Actor) -> PushSubscription {
    store
        .subscribe_push(tenant, by, browser(&endpoint()))
        .await
        .expect("subscribe")
}

async fn a_subscription_is_read_listed_replaced_and_removed_by_its_person(store: Store, env: Env) {
    let t = &env.tenant;
    let carol = Actor::new("carol", "inbox")
        .as_principal("oidc:https://id.example#c")
        .in_groups(vec!["ops".to_owned()]);
    let url = endpoint();
    let first = store
        .subscribe_push(t, &carol, browser(&url))
        .await
        .expect("subscribe");
    assert_eq!(first.person, "carol");
    assert_eq!(first.groups, ["ops"]);
    assert_eq!(
        first.principal.as_deref(),
        Some("oidc:https://id.example#c")
    );
    assert_eq!(first.created_at, env.now());
    assert_eq!(
        store.push_subscription(&first.id).await.expect("read"),
        Some(first.clone())
    );
    assert_eq!(
        store.push_subscriptions(t).await.expect("list"),
        std::slice::from_ref(&first)
    );
    assert!(
        store
            .push_subscriptions(&env.other_tenant())
            .await
            .expect("list")
            .is_empty(),
        "another tenant lists none"
    );

    // The same browser subscribes again (its keys changed): one subscription, the newer.
    let mut again = browser(&url);
    again.auth = "AUTH2".to_owned();
    let second = store.subscribe_push(t, &carol, again).await.expect("again");
    assert_ne!(second.id, first.id);
    let listed = store.push_subscriptions(t).await.expect("list");
    assert_eq!(listed, std::slice::from_ref(&second));
    assert_eq!(
        store.push_subscription(&first.id).await.expect("read"),
        None
    );

    // Nobody else removes it, not even in its tenant; its person does, once.
    let dave = Actor::new("dave", "inbox");
    assert_eq!(
        store
            .unsubscribe_push(t, &second.id, &dave)
            .await
            .expect("x"),
        None
    );
    assert_eq!(
        store
            .unsubscribe_push(&env.other_tenant(), &second.id, &carol)
            .await
            .expect("x"),
        None
    );
    assert_eq!(
        store
            .unsubscribe_push(t, &second.id, &carol)
            .await
            .expect("unsubscribe")
            .map(|s| s.id),
        Some(second.id.clone())
    );
    assert_eq!(
        store
            .unsubscribe_push(t, &second.id, &carol)
            .await
            .expect("x"),
        None
    );
    assert!(store.push_subscriptions(t).await.expect("list").is_empty());

    // A push service's 410 removes a subscription too, by the system.
    let third = subscribe(&store, t, &carol).await;
    assert!(
        store
            .drop_push_subscription(&third.id)
            .await
            .expect("drop")
            .is_some()
    );
    assert_eq!(
        store.drop_push_subscription(&third.id).await.expect("drop"),
        None
    );

    store.sync_feed().await.expect("sync");
    let events = store.audit_events(Some(t), 0, 100).await.expect("audit");
    let seen: Vec<(&str, Option<&str>, Option<&str>)> = events
        .iter()
        .map(|e| (e.kind.as_str(), e.subject.as_deref(), e.actor.as_deref()))
        .collect();
    let subject = |s: &PushSubscription| format!("push:{}", s.id);
    let (a, b, c) = (subject(&first), subject(&second), subject(&third));
    assert_eq!(
        seen,
        [
            ("push.subscribed", Some(a.as_str()), Some("carol")),
            ("push.subscribed", Some(b.as_str()), Some("carol")),
            ("push.unsubscribed", Some(b.as_str()), Some("carol")),
            ("push.subscribed", Some(c.as_str()), Some("carol")),
            ("push.unsubscribed", Some(c.as_str()), None),
        ]
    );
}

async fn a_new_request_is_pushed_to_the_people_who_may_answer_it(_store: Store, env: Env) {
    // It claims from the outbox, which every test shares on PostgreSQL (see `access`).
    let _clock = env.exclusive_clock().await;
    let store = env
        .open_with(|o| {
            o.groups = Arc::new(BTreeMap::from([(
                "oncall".to_owned(),
                vec!["erin".to_owned()],
            )]));
            o.forbid_self_approval = true;
            o.announce = Some(clarify_store::Announce(Arc::new(|_: &str, _: &_| {
                vec!["ops".to_owned()]
            })));
        })
        .await;
    let t = &env.tenant;
    let alice = subscribe(&store, t, &Actor::new("alice", "inbox")).await;
    // Bob subscribed from two browsers; carol is in `ops` by her provider, erin by `[groups]`.
    let bob_phone = subscribe(&store, t, &Actor::new("bob", "inbox")).await;
    let bob_desk = subscribe(&store, t, &Actor::new("bob", "api")).await;
    let carol = subscribe(
        &store,
        t,
        &Actor::new("carol", "inbox").in_groups(vec!["ops".to_owned()]),
    )
    .await;
    let erin = subscribe(&store, t, &Actor::new("erin", "inbox")).await;
    let elsewhere = subscribe(&store, &env.other_tenant(), &Actor::new("bob", "inbox")).await;

    let pushed_to = |id: String| {
        let store = store.clone();
        let t = t.clone();
        async move {
            let mut channels: Vec<String> = store
                .notifications(&t, &id)
                .await
                .expect("notifications")
                .into_iter()
                .filter(|n| n.event == Some(EventKind::Created))
                .filter_map(|n| n.channel)
                .filter(|c| c != "ops")
                .collect();
            channels.sort();
            channels
        }
    };
    let sorted = |subs: &[&PushSubscription]| {
        let mut v: Vec<String> = subs.iter().map(|s| s.channel()).collect();
        v.sort();
        v
    };
    let create = |body: serde_json::Value| {
        let store = store.clone();
        let t = t.clone();
        async move {
            store
                .create(&t, request(body))
                .await
                .expect("create")
                .record
                .id
        }
    };

    let for_bob = create(json!({"question": "Bob?", "responders": ["bob"]})).await;
    assert_eq!(
        pushed_to(for_bob.clone()).await,
        sorted(&[&bob_phone, &bob_desk])
    );
    let for_groups = create(json!({"question": "Ops?",
        "responders": ["group:ops", "group:oncall"]}))
    .await;
    assert_eq!(pushed_to(for_groups).await, sorted(&[&carol, &erin]));
    let open = create(json!({"question": "Anyone?"})).await;
    assert_eq!(
        pushed_to(open).await,
        sorted(&[&alice, &bob_phone, &bob_desk, &carol, &erin]),
        "a request naming nobody is everyone's in the tenant, and no one's elsewhere"
    );
    let four_eyes = create(
        json!({"question": "Deploy for alice?", "on_behalf_of": "alice",
        "responders": ["alice", "bob"]}),
    )
    .await;
    assert_eq!(
        pushed_to(four_eyes).await,
        sorted(&[&bob_phone, &bob_desk]),
        "the person a request acts for is not asked"
    );
    let nobody = create(json!({"question": "Zed?", "responders": ["zed"]})).await;
    assert!(pushed_to(nobody).await.is_empty());
    assert!(
        !pushed_to(for_bob.clone())
            .await
            .contains(&elsewhere.channel())
    );

    // Only the push worker claims pushes; the channel worker claims the channel's.
    let lease = env.now() + chrono::TimeDelta::seconds(30);
    let channels: Vec<_> = crate::access::claim_all(|| store.claim_notifications(lease, 100))
        .await
        .into_iter()
        .filter(|d| d.tenant == *t)
        .collect();
    assert!(channels.iter().all(|d| d.channel.as_deref() == Some("ops")));
    assert_eq!(channels.len(), 5);
    let pushes: Vec<_> = crate::access::claim_all(|| store.claim_pushes(lease, 100))
        .await
        .into_iter()
        .filter(|d| d.tenant == *t)
        .collect();
    assert_eq!(pushes.len(), 2 + 2 + 5 + 2);
    assert!(
        pushes
            .iter()
            .all(|d| d.channel.as_deref().is_some_and(|c| c.starts_with("push:")))
    );
    assert!(
        crate::access::claim_all(|| store.claim_deliveries(lease, 100))
            .await
            .iter()
            .all(|d| d.tenant != *t),
        "the webhook worker claims no push"
    );

    // A reminder follows up on each push channel the request went to.
    let nagging = create(json!({"question": "Still there?", "responders": ["bob"],
        "remind_every_seconds": 60}))
    .await;
    env.advance(60);
    store.remind_due().await.expect("remind");
    let reminded: Vec<String> = store
        .notifications(t, &nagging)
        .await
        .expect("notifications")
        .into_iter()
        .filter(|n| n.event == Some(EventKind::Reminded))
        .filter_map(|n| n.channel)
        .filter(|c| c != "ops")
        .collect();
    let mut reminded = reminded;
    reminded.sort();
    assert_eq!(reminded, sorted(&[&bob_phone, &bob_desk]));
    store
        .cancel(t, &nagging, &Actor::new("bob", "api"))
        .await
        .expect("cancel");
}

async fn a_subscription_survives_a_restart(store: Store, env: Env) {
    let made = subscribe(&store, &env.tenant, &Actor::new("carol", "inbox")).await;
    drop(store);
    let store = env.open().await;
    assert_eq!(
        store.push_subscription(&made.id).await.expect("read"),
        Some(made.clone())
    );
    assert_eq!(
        store.push_subscriptions(&env.tenant).await.expect("list"),
        [made]
    );
}

/// The push channels request `id` of `tenant` was announced on.
async fn push_channels_of(store: &Store, tenant: &str, id: &str) -> Vec<String> {
    store
        .notifications(tenant, id)
        .await
        .expect("notifications")
        .into_iter()
        .filter_map(|n| n.channel)
        .filter(|c| c.starts_with("push:"))
        .collect()
}

async fn create_open(store: &Store, tenant: &str) -> String {
    store
        .create(tenant, request(json!({"question": "Anyone?"})))
        .await
        .expect("create")
        .record
        .id
}

async fn a_tenant_is_pushed_to_from_its_first_subscription_made_here(store: Store, env: Env) {
    let t = &env.tenant;
    assert!(store.may_push(t), "not read yet: a push may be due");
    let before = create_open(&store, t).await;
    assert!(push_channels_of(&store, t, &before).await.is_empty());
    assert!(
        !store.may_push(t),
        "read just now and none: the push worker need not wake"
    );
    let carol = Actor::new("carol", "inbox");
    let made = subscribe(&store, t, &carol).await;
    assert!(store.may_push(t));
    let after = create_open(&store, t).await;
    assert_eq!(
        push_channels_of(&store, t, &after).await,
        [made.channel()],
        "a subscription made through this store is pushed to at once"
    );
    store
        .unsubscribe_push(t, &made.id, &carol)
        .await
        .expect("unsubscribe")
        .expect("removed");
    let gone = create_open(&store, t).await;
    assert!(
        push_channels_of(&store, t, &gone).await.is_empty(),
        "nor is a removed one pushed to"
    );
    assert!(!store.may_push(t));
}

async fn another_instances_subscription_is_pushed_to_within_a_second(store: Store, env: Env) {
    let t = &env.tenant;
    let other = env.open().await;
    // This instance reads the tenant's subscriptions (none), then the other one subscribes.
    let _ = create_open(&store, t).await;
    let made = subscribe(&other, t, &Actor::new("carol", "inbox")).await;
    tokio::time::sleep(clarify_store::PUSH_FRESH_FOR + std::time::Duration::from_millis(100)).await;
    assert!(store.may_push(t), "what was read is stale by now");
    let id = create_open(&store, t).await;
    assert_eq!(push_channels_of(&store, t, &id).await, [made.channel()]);
}
