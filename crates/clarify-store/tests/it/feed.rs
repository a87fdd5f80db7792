//! The event feed with several instances writing and reading at once: no reader resuming after
//! what it saw ever misses or repeats an event, and the audit chain holds. On PostgreSQL, where
//! one sequencer per database numbers the events its instances commit, also what happens when
//! the leading sequencer hangs (it is replaced) or goes away (another takes over).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clarify_store::{Event, EventKind, ManualClock, Store};
use serde_json::json;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

use crate::support::{
    Env, alice, in_scratch_database, options, postgres_url, random_name, start_time, tail_feed,
    yes_no,
};

conformance! {
    every: [
        the_tally_counts_what_the_events_after_a_place_did,
    ],
    durable: [
        readers_on_every_instance_miss_nothing,
    ],
}

/// The tally the pending gauge catches up with counts exactly what the feed's events after a
/// place created and resolved, up to the newest event it names (other cases write to the same
/// PostgreSQL database meanwhile: the expected counts are read from the feed up to that event),
/// and names the place itself when nothing came after it.
async fn the_tally_counts_what_the_events_after_a_place_did(store: Store, env: Env) {
    store.sync_feed().await.expect("sync the feed");
    let start = store.last_event_seq().await.expect("seq");
    let t = &env.tenant;
    let mut ids = Vec::new();
    for i in 0..3 {
        let req = yes_no(&format!("Tally {i}?"));
        ids.push(store.create(t, req).await.expect("create").record.id);
    }
    store
        .answer(t, &ids[0], &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    store.cancel(t, &ids[1], &alice()).await.expect("cancel");
    store.sync_feed().await.expect("sync the feed");

    let tally = store.tally_after(start).await.expect("tally");
    let events = store
        .events_after(None, start, 100_000)
        .await
        .expect("events");
    let counted: Vec<&Event> = events.iter().filter(|e| e.seq <= tally.last).collect();
    let created = counted
        .iter()
        .filter(|e| e.kind == EventKind::Created)
        .count();
    let resolved = counted.iter().filter(|e| e.kind.resolves()).count();
    assert_eq!(
        (tally.created, tally.resolved),
        (created as u64, resolved as u64),
        "the tally after {start} up to {}",
        tally.last
    );
    assert!(
        tally.created >= 3 && tally.resolved >= 2,
        "this case's three creations and two resolutions are in it: {tally:?}"
    );
    let last = store.last_event_seq().await.expect("seq");
    let after_all = store.tally_after(last).await.expect("tally");
    // PostgreSQL's cases share one database, whose other cases may write meanwhile.
    if env.kind == crate::support::Kind::Postgres {
        assert!(
            after_all.last >= last,
            "the tally never goes back: {after_all:?}"
        );
    } else {
        assert_eq!(
            after_all.last, last,
            "nothing after the newest event names it"
        );
        assert_eq!((after_all.created, after_all.resolved), (0, 0));
    }
}

/// The session-level advisory lock the leading sequencer holds (`SEQUENCER_LOCK` in the
/// PostgreSQL backend); a session holding it is, to every instance, the leader.
const SEQUENCER_LOCK: i64 = 0x636c_6172_6966_7903;

/// Writers on three instances each create a request on one instance and answer it on the next,
/// while a reader on each instance tails the tenant's feed in small batches: every reader sees
/// every event exactly once, in one order, creation before resolution.
async fn readers_on_every_instance_miss_nothing(store: Store, env: Env) {
    const WRITERS: usize = 24;
    const EACH: usize = 8;
    // Verifying the chain at the end must not meet another case's deliberate break of it.
    let _clock = env.exclusive_clock().await;
    let instances = [store, env.open().await, env.open().await];
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = instances
        .iter()
        .map(|store| {
            tokio::spawn(tail_feed(
                store.clone(),
                env.tenant.clone(),
                5,
                Arc::clone(&done),
            ))
        })
        .collect();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let creating = instances[w % 3].clone();
            let answering = instances[(w + 1) % 3].clone();
            let t = env.tenant.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    let req = yes_no(&format!("Writer {w}, request {i}?"));
                    let id = creating.create(&t, req).await.expect("create").record.id;
                    answering
                        .answer(&t, &id, &json!({"option": "yes"}), &alice())
                        .await
                        .expect("answer");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.await.expect("writer");
    }
    instances[0].sync_feed().await.expect("sync the feed");
    done.store(true, Ordering::SeqCst);

    let mut full = Vec::new();
    loop {
        let after = full.last().map_or(0, |e: &Event| e.seq);
        let batch = instances[2]
            .events_after(Some(&env.tenant), after, 1_000)
            .await
            .expect("events");
        if batch.is_empty() {
            break;
        }
        full.extend(batch);
    }
    assert_eq!(full.len(), WRITERS * EACH * 2, "every event is in the feed");
    assert!(full.windows(2).all(|w| w[0].seq < w[1].seq), "in order");
    let mut created: HashMap<&str, u64> = HashMap::new();
    for e in &full {
        match e.kind {
            EventKind::Created => {
                assert!(created.insert(&e.request_id, e.seq).is_none(), "{e:?}");
            }
            EventKind::Answered => assert!(
                created
                    .get(e.request_id.as_str())
                    .is_some_and(|c| *c < e.seq),
                "answered before it was created: {e:?}"
            ),
            other => panic!("unexpected {other:?}"),
        }
    }
    for (n, reader) in readers.into_iter().enumerate() {
        let tailed = reader.await.expect("reader");
        let missed = full.iter().filter(|e| !tailed.contains(e)).count();
        assert_eq!(missed, 0, "the reader on instance {n} missed events");
        assert_eq!(
            tailed, full,
            "the reader on instance {n} saw each event once"
        );
    }
    let verified = instances[1].verify_audit().await.expect("verify");
    assert!(verified.is_ok(), "the audit chain breaks: {verified:?}");
}

/// A session that holds the lead but numbers nothing (a hung process with its connection open)
/// is ended by a standing-by instance once the oldest unnumbered event has waited for two
/// seconds; that instance then numbers the feed. When the leading instance goes away, another
/// takes over within a fraction of a second. The pending count stays in step with the feed's
/// position meanwhile. Runs in a database of its own, so its fake leader holds up no other test.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_hung_or_vanished_sequencer_is_replaced() {
    let Some(url) = postgres_url() else { return };
    let db = random_name("clarify_test_feed");
    let outcome = in_scratch_database(
        &url,
        &db,
        |url| async move { sequencer_scenario(&url).await },
    )
    .await;
    if let Err(e) = outcome {
        panic!("{e}");
    }
}

async fn sequencer_scenario(url: &str) -> Result<(), String> {
    let clock = Arc::new(ManualClock::new(start_time()));
    // Migrated first, then the lead taken by a session that will never number anything.
    drop(
        Store::open(url, options(&clock))
            .await
            .map_err(|e| format!("open: {e}"))?,
    );
    let mut hung = PgConnection::connect(url)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(SEQUENCER_LOCK)
        .execute(&mut hung)
        .await
        .map_err(|e| format!("take the lead: {e}"))?;

    let first = Store::open(url, options(&clock))
        .await
        .map_err(|e| format!("open: {e}"))?;
    let t = random_name("t");
    let id = first
        .create(&t, yes_no("Numbered while the leader hangs?"))
        .await
        .map_err(|e| format!("create: {e}"))?
        .record
        .id;
    let created = Instant::now();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let early = first
        .events_after(Some(&t), 0, 10)
        .await
        .map_err(|e| format!("events: {e}"))?;
    if !early.is_empty() {
        return Err(format!("numbered while another session led: {early:?}"));
    }
    // The pending count goes with the feed's position: as of no event, none was pending, though
    // the request is stored (its event waits in the inbox).
    match first.pending_at().await {
        Ok((0, 0)) => {}
        other => return Err(format!("pending before numbering: {other:?}")),
    }
    first
        .sync_feed()
        .await
        .map_err(|e| format!("the hung leader was not replaced: {e}"))?;
    let took = created.elapsed();
    if took < Duration::from_secs(2) || took > Duration::from_secs(8) {
        return Err(format!("the hung leader was replaced after {took:?}"));
    }
    let events = first
        .events_after(Some(&t), 0, 10)
        .await
        .map_err(|e| format!("events: {e}"))?;
    if events.len() != 1 || events[0].request_id != id || events[0].seq != 1 {
        return Err(format!("after the replacement the feed holds {events:?}"));
    }
    match first.pending_at().await {
        Ok((1, 1)) => {}
        other => return Err(format!("pending after numbering: {other:?}")),
    }
    if sqlx::query("SELECT 1").execute(&mut hung).await.is_ok() {
        return Err("the hung leader's session is still open".to_owned());
    }

    // `first` leads now; a second instance stands by, and takes over when `first` goes.
    let second = Store::open(url, options(&clock))
        .await
        .map_err(|e| format!("open: {e}"))?;
    drop(first);
    let gone = Instant::now();
    second
        .answer(&t, &id, &json!({"option": "yes"}), &alice())
        .await
        .map_err(|e| format!("answer: {e}"))?;
    second
        .sync_feed()
        .await
        .map_err(|e| format!("nobody took over: {e}"))?;
    let took = gone.elapsed();
    if took > Duration::from_secs(2) {
        return Err(format!("the lead passed on after {took:?}"));
    }
    let kinds: Vec<EventKind> = second
        .events_after(Some(&t), 0, 10)
        .await
        .map_err(|e| format!("events: {e}"))?
        .into_iter()
        .map(|e| e.kind)
        .collect();
    if kinds != [EventKind::Created, EventKind::Answered] {
        return Err(format!("the feed holds {kinds:?}"));
    }
    match second.verify_audit().await {
        Ok(Ok(2)) => Ok(()),
        other => Err(format!("verifying the chain: {other:?}")),
    }
}

/// A resolution numbered without its place kept on the request, as the sequencer of a release
/// before receipts (PostgreSQL schema 16) numbers one during a rolling upgrade: `place_resolution`
/// finds the place in the log, so the decision has its receipt again; a pending request is left
/// as it is.
#[tokio::test]
async fn postgres_a_resolution_numbered_without_its_place_has_it_found_in_the_log() {
    let Some(url) = postgres_url() else { return };
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = Store::open(&url, options(&clock)).await.expect("open");
    let t = random_name("t");
    let asked = store
        .create(&t, yes_no("Numbered by an older release?"))
        .await
        .expect("create")
        .record;
    store
        .answer(&t, &asked.id, &json!({"option": "yes"}), &alice())
        .await
        .expect("answer");
    let pending = store
        .create(&t, yes_no("Still open?"))
        .await
        .expect("create")
        .record;
    store.sync_feed().await.expect("sync the feed");
    let placed = store
        .get(&t, &asked.id)
        .await
        .expect("get")
        .expect("exists");
    let seq = placed.resolution.as_ref().and_then(|r| r.seq);
    assert!(
        seq.is_some(),
        "today's sequencer keeps the place: {placed:?}"
    );

    // What the older release's sequencer leaves: the event numbered, the request without it.
    let mut conn = PgConnection::connect(&url).await.expect("connect");
    sqlx::query(
        "UPDATE clarify_requests SET resolved_seq = NULL, resolved_principal = NULL WHERE id = $1",
    )
    .bind(&asked.id)
    .execute(&mut conn)
    .await
    .expect("forget the place");
    let unplaced = store
        .get(&t, &asked.id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(unplaced.resolution.as_ref().and_then(|r| r.seq), None);

    store
        .place_resolution(&t, &asked.id)
        .await
        .expect("place the resolution");
    let found = store.get(&t, &asked.id).await.expect("get");
    assert_eq!(
        found.as_ref(),
        Some(&placed),
        "the place and principal found again"
    );
    store
        .place_resolution(&t, &pending.id)
        .await
        .expect("a pending request");
    let still = store.get(&t, &pending.id).await.expect("get");
    assert_eq!(still, Some(pending), "a pending request is left as it is");
}
