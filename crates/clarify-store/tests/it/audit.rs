//! The audit chain on every backend: each event's hash is SHA-256 of the previous event's hash
//! and the event's canonical JSON, recomputed here independently of the store; verification
//! names the first event that does not fit when a stored event is changed, removed or
//! reordered behind the store's back (SQLite and PostgreSQL).
//!
//! PostgreSQL cases share one database, and so one chain: the cases that verify take
//! [`Env::exclusive_clock`], so no case verifies while another has the chain broken on purpose,
//! and every case that breaks it mends it before letting go.

use std::collections::BTreeMap;

use clarify_store::{Actor, AdminEvent, AdminKind, ApiKey, AuditEvent, EventKind, Role, Store};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use sqlx::Connection;

use crate::support::{Env, Kind, alice, random_name, request};

conformance! {
    every: [
        every_event_links_to_the_one_before,
        admin_actions_are_events_of_the_chain_and_not_of_the_feed,
    ],
    durable: [
        changing_removing_or_reordering_an_event_is_named,
        a_changed_admin_event_is_named,
        an_event_of_a_kind_a_newer_release_added_is_read_past,
    ],
}

/// The contract's canonical JSON of an event, written here from scratch. An admin event's
/// subject is stored where a request's id is.
fn canonical(e: &AuditEvent) -> String {
    let fields: BTreeMap<&str, Value> = BTreeMap::from([
        ("actor", json!(e.actor)),
        ("at", json!(e.at.timestamp_millis())),
        ("channel", json!(e.channel)),
        ("kind", json!(e.kind)),
        (
            "request_id",
            json!(e.request_id.as_ref().or(e.subject.as_ref())),
        ),
        ("seq", json!(e.seq)),
        ("tenant", json!(e.tenant)),
    ]);
    let mut fields = fields;
    // The principal is hashed only when there is one, so older events keep their hashes.
    if let Some(principal) = &e.principal {
        fields.insert("principal", json!(principal));
    }
    serde_json::to_string(&fields).expect("json")
}

fn sha256_hex(parts: &[&str]) -> String {
    let mut d = Sha256::new();
    for p in parts {
        d.update(p.as_bytes());
    }
    d.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Creates, answers and cancels a few requests, and waits until their events are numbered;
/// their ids.
async fn some_events(store: &Store, env: &Env) -> Vec<String> {
    let t = &env.tenant;
    let mut ids = Vec::new();
    for i in 0..3 {
        let id = store
            .create(
                t,
                request(json!({"question": format!("Ship {i}?"), "timeout_seconds": 0})),
            )
            .await
            .expect("create")
            .record
            .id;
        if i == 1 {
            store.cancel(t, &id, &alice()).await.expect("cancel");
        } else {
            let signed_in = alice().as_principal("oidc:https://idp.example#alice");
            store
                .answer(t, &id, &json!({"text": "yes"}), &signed_in)
                .await
                .expect("answer");
        }
        ids.push(id);
    }
    store.sync_feed().await.expect("sync the feed");
    ids
}

async fn every_event_links_to_the_one_before(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let ids = some_events(&store, &env).await;
    let mine = store
        .audit_events(Some(&env.tenant), 0, 100)
        .await
        .expect("audit");
    assert_eq!(mine.len(), 6, "{mine:?}");
    // Who was authenticated is kept with each answer, and none with the rest.
    for e in &mine {
        let expected = (e.kind == "answered").then_some("oidc:https://idp.example#alice");
        assert_eq!(e.principal.as_deref(), expected, "{e:?}");
    }
    assert!(
        mine.iter()
            .all(|e| ids.contains(e.request_id.as_ref().expect("id")))
    );
    // Each of this tenant's events links to the event before it in the whole chain.
    for e in &mine {
        assert_eq!(e.hash.len(), 64);
        let previous = store
            .audit_events(None, 0, usize::MAX)
            .await
            .expect("all")
            .into_iter()
            .take_while(|p| p.seq < e.seq)
            .last()
            .map(|p| p.hash)
            .unwrap_or_default();
        assert_eq!(
            e.hash,
            sha256_hex(&[&previous, &canonical(e)]),
            "event {}",
            e.seq
        );
    }
    // The log's own view carries the same hashes.
    let events = store
        .events_after(Some(&env.tenant), 0, 100)
        .await
        .expect("events");
    let hashes: Vec<&str> = events.iter().map(|e| e.hash.as_str()).collect();
    let audited: Vec<&str> = mine.iter().map(|e| e.hash.as_str()).collect();
    assert_eq!(hashes, audited);
    let checked = store.verify_audit().await.expect("verify").expect("intact");
    assert!(checked >= 6, "{checked}");
}

/// A key created and revoked, and a chat account linked, in `env`'s tenant by `by`; the key.
async fn some_admin_actions(store: &Store, env: &Env, by: &Actor) -> ApiKey {
    let key = store
        .create_key(&random_name("k"), Role::Agent, &env.tenant, by)
        .await
        .expect("create key")
        .key;
    store.revoke_key(&key.name, by).await.expect("revoke key");
    store
        .record_admin(AdminEvent::new(
            &env.tenant,
            AdminKind::IdentityLinked,
            "slack:U012ABCDEF",
            by,
        ))
        .await
        .expect("record");
    store.sync_feed().await.expect("sync the feed");
    key
}

async fn admin_actions_are_events_of_the_chain_and_not_of_the_feed(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let root = Actor::new("root", "api");
    let key = some_admin_actions(&store, &env, &root).await;
    let mine = store
        .audit_events(Some(&env.tenant), 0, 100)
        .await
        .expect("audit");
    let seen: Vec<(&str, Option<&str>)> = mine
        .iter()
        .map(|e| (e.kind.as_str(), e.subject.as_deref()))
        .collect();
    let key_subject = format!("key:{}", key.id);
    assert_eq!(
        seen,
        [
            ("key.created", Some(key_subject.as_str())),
            ("key.revoked", Some(key_subject.as_str())),
            ("identity.linked", Some("identity:slack:U012ABCDEF")),
        ]
    );
    // The key's events name it and its role, the revoked one too; other events name no key.
    let named: Vec<Option<(&str, Role)>> = mine
        .iter()
        .map(|e| e.key.as_ref().map(|k| (k.name.as_str(), k.role)))
        .collect();
    assert_eq!(
        named,
        [
            Some((key.name.as_str(), Role::Agent)),
            Some((key.name.as_str(), Role::Agent)),
            None
        ]
    );
    for e in &mine {
        assert_eq!(e.actor.as_deref(), Some("root"), "{e:?}");
        assert_eq!(e.channel.as_deref(), Some("api"), "{e:?}");
        assert_eq!(e.tenant.as_deref(), Some(env.tenant.as_str()));
        assert_eq!(e.request_id, None, "an admin event concerns no request");
        let previous = store
            .audit_events(None, 0, usize::MAX)
            .await
            .expect("all")
            .into_iter()
            .take_while(|p| p.seq < e.seq)
            .last()
            .map(|p| p.hash)
            .unwrap_or_default();
        assert_eq!(
            e.hash,
            sha256_hex(&[&previous, &canonical(e)]),
            "event {}",
            e.seq
        );
    }
    // The feed of requests' events leaves them out, and reads past them.
    assert_eq!(
        store
            .events_after(Some(&env.tenant), 0, 100)
            .await
            .expect("events"),
        []
    );
    store
        .create(&env.tenant, request(json!({"question": "After?"})))
        .await
        .expect("create");
    store.sync_feed().await.expect("sync the feed");
    let events = store
        .events_after(Some(&env.tenant), 0, 100)
        .await
        .expect("events");
    assert_eq!(events.len(), 1, "{events:?}");
    assert!(events[0].seq > mine[2].seq);
    let checked = store.verify_audit().await.expect("verify").expect("intact");
    assert!(checked >= 4, "{checked}");
}

async fn a_changed_admin_event_is_named(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    some_admin_actions(&store, &env, &alice()).await;
    let mine = store
        .audit_events(Some(&env.tenant), 0, 100)
        .await
        .expect("audit");
    let revoked = mine
        .iter()
        .find(|e| e.kind == "key.revoked")
        .expect("the revocation")
        .seq;
    assert!(store.verify_audit().await.expect("verify").is_ok());
    let mut raw = Raw::open(&env).await;
    // Someone rewrites who revoked the key, and mends it at once (a shared database).
    raw.run(&format!(
        "UPDATE events SET actor = 'mallory' WHERE seq = {revoked}"
    ))
    .await;
    let changed = store.verify_audit().await;
    raw.run(&format!(
        "UPDATE events SET actor = 'alice' WHERE seq = {revoked}"
    ))
    .await;
    let at = changed
        .expect("verify")
        .expect_err("a changed admin event breaks the chain");
    assert_eq!(at.seq, revoked, "{at}");
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "mended"
    );
}

/// The table of events and a way to run SQL on it behind the store's back.
enum Raw {
    Sqlite(rusqlite::Connection),
    Postgres(sqlx::PgConnection),
}

impl Raw {
    async fn open(env: &Env) -> Self {
        match env.kind {
            Kind::Sqlite => {
                let path = env.url.strip_prefix("sqlite://").expect("a sqlite url");
                Self::Sqlite(rusqlite::Connection::open(path).expect("open"))
            }
            Kind::Postgres => Self::Postgres(
                sqlx::PgConnection::connect(&env.url)
                    .await
                    .expect("connect"),
            ),
            Kind::Memory => unreachable!("memory has no raw table"),
        }
    }

    /// Runs `sql`, where `events` names the events table.
    async fn run(&mut self, sql: &str) {
        match self {
            Self::Sqlite(conn) => {
                conn.execute_batch(sql).expect("sql");
            }
            Self::Postgres(conn) => {
                sqlx::raw_sql(&sql.replace("events", "clarify_events"))
                    .execute(conn)
                    .await
                    .expect("sql");
            }
        }
    }
}

async fn changing_removing_or_reordering_an_event_is_named(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let ids = some_events(&store, &env).await;
    let mine = store
        .audit_events(Some(&env.tenant), 0, 100)
        .await
        .expect("audit");
    let (first, second) = (mine[1].seq, mine[2].seq);
    // What follows the second in the whole chain (another test's event, on PostgreSQL).
    let after_second = store
        .audit_events(None, second, 1)
        .await
        .expect("next")
        .first()
        .expect("an event after it")
        .seq;
    assert_eq!(
        store.verify_audit().await.expect("verify").map(drop),
        Ok(())
    );
    let mut raw = Raw::open(&env).await;
    let literal = |v: &Option<String>| match v {
        Some(v) => format!("'{}'", v.replace('\'', "''")),
        None => "NULL".to_owned(),
    };
    // Each case breaks the chain, reads what verification says, and mends the chain before
    // asserting anything, so a failure never leaves a shared database broken.

    // Changed: who answered.
    raw.run(&format!(
        "UPDATE events SET actor = 'mallory' WHERE seq = {first}"
    ))
    .await;
    let changed = store.verify_audit().await;
    raw.run(&format!(
        "UPDATE events SET actor = {} WHERE seq = {first}",
        literal(&mine[1].actor)
    ))
    .await;
    let at = changed
        .expect("verify")
        .expect_err("a changed event breaks the chain");
    assert_eq!(at.seq, first, "{at}");
    assert!(
        at.to_string().starts_with(&format!("event {first}: ")),
        "{at}"
    );
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "mended"
    );

    // Removed: the event after it no longer links.
    raw.run(&format!(
        "CREATE TABLE kept AS SELECT * FROM events WHERE seq = {second}; \
         DELETE FROM events WHERE seq = {second};"
    ))
    .await;
    let removed = store.verify_audit().await;
    raw.run("INSERT INTO events SELECT * FROM kept; DROP TABLE kept;")
        .await;
    let at = removed
        .expect("verify")
        .expect_err("a removed event breaks the chain");
    assert_eq!(at.seq, after_second, "{at}");
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "mended"
    );

    // Reordered: two events swap what they say.
    let (a, b) = (&mine[1].kind, &mine[2].kind);
    assert_ne!(a, b);
    let swap = |x: &str, y: &str| {
        format!(
            "UPDATE events SET kind = CASE seq WHEN {first} THEN '{x}' ELSE '{y}' END \
             WHERE seq IN ({first}, {second})"
        )
    };
    raw.run(&swap(b, a)).await;
    let reordered = store.verify_audit().await;
    raw.run(&swap(a, b)).await;
    let at = reordered
        .expect("verify")
        .expect_err("reordered events break the chain");
    assert_eq!(at.seq, first, "{at}");
    assert!(
        store.verify_audit().await.expect("verify").is_ok(),
        "mended"
    );
    assert_eq!(ids.len(), 3);
}

/// How long verifying a million events takes on SQLite: prints the figure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --release and --nocapture"]
async fn verify_a_million_events() {
    const EVENTS: i64 = 1_000_000;
    let dir = crate::support::TempDir::new();
    let path = dir.0.join("clarify.db");
    let url = format!("sqlite://{}", path.display());
    drop(
        Store::open(&url, clarify_store::StoreOptions::default())
            .await
            .expect("open"),
    );
    let started = std::time::Instant::now();
    {
        let mut conn = rusqlite::Connection::open(&path).expect("open");
        let tx = conn.transaction().expect("tx");
        let mut previous = String::new();
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO events (seq, tenant, request_id, kind, actor, channel, at, hash) \
                     VALUES (?1, 'default', ?2, ?3, 'alice', 'api', ?4, ?5)",
                )
                .expect("prepare");
            for seq in 1..=EVENTS {
                let request = format!("r{:012}", seq / 2);
                let kind = if seq % 2 == 1 { "created" } else { "answered" };
                let at = 1_764_000_000_000 + seq;
                let canonical = format!(
                    r#"{{"actor":"alice","at":{at},"channel":"api","kind":"{kind}","request_id":"{request}","seq":{seq},"tenant":"default"}}"#
                );
                previous = sha256_hex(&[&previous, &canonical]);
                insert
                    .execute(rusqlite::params![seq, request, kind, at, previous])
                    .expect("insert");
            }
        }
        tx.commit().expect("commit");
    }
    println!("wrote {EVENTS} chained events in {:.1?}", started.elapsed());
    let store = Store::open(&url, clarify_store::StoreOptions::default())
        .await
        .expect("open");
    let started = std::time::Instant::now();
    let checked = store.verify_audit().await.expect("verify").expect("intact");
    let took = started.elapsed();
    assert_eq!(checked, u64::try_from(EVENTS).expect("count"));
    println!(
        "verified {checked} events in {took:.2?} ({:.0} events/s)",
        checked as f64 / took.as_secs_f64()
    );
}

/// During a rolling upgrade a newer release's instance writes event kinds this one does not
/// know; reading the feed steps past them (as `Unknown`) instead of failing, so this release's
/// event streams, AG-UI emitter and metrics go on.
async fn an_event_of_a_kind_a_newer_release_added_is_read_past(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    let first = store
        .create(t, request(json!({"question": "First?"})))
        .await
        .expect("create")
        .record
        .id;
    store.sync_feed().await.expect("sync the feed");
    let created = store
        .events_after(Some(t), 0, 100)
        .await
        .expect("events")
        .into_iter()
        .find(|e| e.request_id == first)
        .expect("its created event")
        .seq;
    let mut raw = Raw::open(&env).await;
    raw.run(&format!(
        "UPDATE events SET kind = 'teleported' WHERE seq = {created}"
    ))
    .await;
    let second = store
        .create(t, request(json!({"question": "Second?"})))
        .await
        .expect("create")
        .record
        .id;
    store.sync_feed().await.expect("sync the feed");
    let read = store.events_after(Some(t), 0, 100).await;
    raw.run(&format!(
        "UPDATE events SET kind = 'created' WHERE seq = {created}"
    ))
    .await;
    let kinds: Vec<(String, EventKind)> = read
        .expect("the feed reads past a kind it does not know")
        .into_iter()
        .map(|e| (e.request_id, e.kind))
        .collect();
    assert_eq!(
        kinds,
        vec![(first, EventKind::Unknown), (second, EventKind::Created)]
    );
}
