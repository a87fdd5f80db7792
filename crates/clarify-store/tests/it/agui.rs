//! AG-UI runs waiting for people, against every backend: stored, read by thread, claimed by
//! exactly one of several racing claims, released, leased again once a lease lapses, finished
//! with their events, and kept across a restart.
//!
//! PostgreSQL cases share one database, so the waiting runs of other cases and earlier runs
//! may be there too: each case looks only at its own runs (its tenant and random ids).

use chrono::TimeDelta;
use clarify_store::{AguiRun, Store};

use crate::support::{Env, random_name};

conformance! {
    every: [
        a_waiting_run_is_claimed_by_one_and_finished_with_its_events,
        a_lapsed_lease_frees_a_run_for_another_claim,
    ],
    durable: [
        a_waiting_run_survives_reopening,
    ],
}

async fn insert(store: &Store, env: &Env, thread: &str) -> AguiRun {
    store
        .agui_insert(
            &random_name("run"),
            &env.tenant,
            "planner",
            thread,
            r#"{"input":{"threadId":"t"}}"#.to_owned(),
        )
        .await
        .expect("insert")
}

/// This case's waiting runs, read page by page as the resume worker reads them.
async fn waiting_ids(store: &Store, env: &Env) -> Vec<String> {
    let mut ids = Vec::new();
    let mut after = 0;
    loop {
        let page = store.agui_waiting(after).await.expect("waiting");
        let Some(last) = page.last() else {
            return ids;
        };
        assert!(last.seq > after, "pages move on");
        after = last.seq;
        ids.extend(
            page.into_iter()
                .filter(|r| r.tenant == env.tenant)
                .map(|r| r.id),
        );
    }
}

async fn a_waiting_run_is_claimed_by_one_and_finished_with_its_events(store: Store, env: Env) {
    let first = insert(&store, &env, "thread-1").await;
    let second = insert(&store, &env, "thread-1").await;
    let other = insert(&store, &env, "thread-2").await;
    let runs = store
        .agui_runs(&env.tenant, "planner", "thread-1")
        .await
        .expect("runs");
    assert_eq!(
        runs.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        [first.id.as_str(), second.id.as_str()],
        "a thread's runs, oldest first"
    );
    assert_eq!(runs[0].data, first.data);
    assert!(!runs[0].done && runs[0].lease_until.is_none());
    assert!(
        store
            .agui_runs(&env.tenant, "other-agent", "thread-1")
            .await
            .expect("runs")
            .is_empty(),
        "another agent's thread of the same name is another thread"
    );
    assert_eq!(
        waiting_ids(&store, &env).await,
        [first.id.clone(), second.id.clone(), other.id.clone()]
    );
    assert!(
        first.seq < second.seq && second.seq < other.seq,
        "stored in order"
    );
    let after_first: Vec<String> = store
        .agui_waiting(first.seq)
        .await
        .expect("waiting")
        .into_iter()
        .filter(|r| r.tenant == env.tenant)
        .map(|r| r.id)
        .collect();
    assert_eq!(
        after_first,
        [second.id.clone(), other.id.clone()],
        "a page starts after a run"
    );

    // Eight claims race; one wins.
    let claims: Vec<_> = (0..8)
        .map(|_| {
            let (store, id) = (store.clone(), first.id.clone());
            tokio::spawn(async move { store.agui_claim(&id, TimeDelta::minutes(5)).await })
        })
        .collect();
    let mut won = 0;
    for claim in claims {
        if claim.await.expect("task").expect("claim") {
            won += 1;
        }
    }
    assert_eq!(won, 1, "exactly one claim wins");
    assert_eq!(
        waiting_ids(&store, &env).await,
        [second.id.clone(), other.id.clone()],
        "a claimed run is not waiting"
    );

    store.agui_release(&first.id, None).await.expect("release");
    assert!(waiting_ids(&store, &env).await.contains(&first.id));
    assert!(
        store
            .agui_claim(&first.id, TimeDelta::minutes(5))
            .await
            .expect("claim")
    );
    store
        .agui_finish(&first.id, Some(r#"[{"type":"RUN_STARTED"}]"#.to_owned()))
        .await
        .expect("finish");
    let runs = store
        .agui_runs(&env.tenant, "planner", "thread-1")
        .await
        .expect("runs");
    assert!(runs[0].done);
    assert_eq!(
        runs[0].events.as_deref(),
        Some(r#"[{"type":"RUN_STARTED"}]"#)
    );
    assert!(
        !store
            .agui_claim(&first.id, TimeDelta::minutes(5))
            .await
            .expect("claim"),
        "a resumed run is never claimed again"
    );
    assert!(!waiting_ids(&store, &env).await.contains(&first.id));
    for run in [&second, &other] {
        store.agui_finish(&run.id, None).await.expect("finish");
    }
}

async fn a_lapsed_lease_frees_a_run_for_another_claim(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let run = insert(&store, &env, "thread-lapse").await;
    assert!(
        store
            .agui_claim(&run.id, TimeDelta::seconds(60))
            .await
            .expect("claim")
    );
    env.advance(30);
    assert!(
        !store
            .agui_claim(&run.id, TimeDelta::seconds(60))
            .await
            .expect("claim"),
        "held for 30 s more"
    );
    // A failed resume gives the run back for a later try.
    store
        .agui_release(&run.id, Some(TimeDelta::seconds(10)))
        .await
        .expect("release");
    assert!(!waiting_ids(&store, &env).await.contains(&run.id));
    env.advance(11);
    assert!(waiting_ids(&store, &env).await.contains(&run.id));
    assert!(
        store
            .agui_claim(&run.id, TimeDelta::seconds(60))
            .await
            .expect("claim"),
        "the instance that held it is gone: another takes it"
    );
    store.agui_finish(&run.id, None).await.expect("finish");
}

async fn a_waiting_run_survives_reopening(store: Store, env: Env) {
    let run = insert(&store, &env, "thread-restart").await;
    drop(store);
    let store = env.open().await;
    let runs = store
        .agui_runs(&env.tenant, "planner", "thread-restart")
        .await
        .expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!((&runs[0].id, &runs[0].data), (&run.id, &run.data));
    assert!(!runs[0].done);
    assert!(waiting_ids(&store, &env).await.contains(&run.id));
    store.agui_finish(&run.id, None).await.expect("finish");
}
