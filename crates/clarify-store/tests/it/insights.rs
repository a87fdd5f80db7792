//! Insights: the figures of a store filled with known requests, the same on every backend
//! (answered at known times, through known surfaces, by known people; one expired with its
//! default, one cancelled, one still pending), with each filter and a range.

use chrono::{TimeDelta, Timelike as _};
use clarify_core::Status;
use std::sync::Arc;

use clarify_store::{Actor, Clock as _, Insights, InsightsQuery, ManualClock, Store, StoreError};
use serde_json::{Value, json};

use crate::support::{
    Env, SHORT, TempDir, in_scratch_database, options, postgres_url, random_name, request,
    start_time,
};

conformance! {
    every: [insights_count_known_requests, a_broad_reading_over_months_equals_the_one_day_by_day],
    durable: [],
}

fn approval(tool: &str, agent: &str, tags: &[&str]) -> Value {
    json!({
        "questions": [{"kind": "approval", "text": format!("Run {tool}?"),
                       "action": {"name": tool, "arguments": {}}}],
        "agent": agent,
        "tags": tags,
    })
}

async fn read(store: &Store, tenant: &str, q: InsightsQuery) -> Insights {
    store.insights(tenant, &q).await.expect("insights")
}

fn statuses(i: &Insights) -> Vec<(&'static str, u64)> {
    i.by_status.iter().map(|(k, v)| (*k, *v)).collect()
}

async fn insights_count_known_requests(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    // The clock starts at the real time and moves about ten minutes below, and every figure is
    // read as today's: started just before midnight (UTC), the answers would fall on the next
    // day. So the clock first moves past midnight then.
    let left_today = 86_400 - i64::from(env.now().num_seconds_from_midnight());
    if left_today < 2 * SHORT as i64 {
        env.advance(left_today + 60);
    }
    let t = &env.tenant;
    let create = |raw: Value| {
        let store = store.clone();
        async move {
            store
                .create(t, request(raw))
                .await
                .expect("create")
                .record
                .id
        }
    };
    let alice = Actor::new("alice", "inbox");
    let bob = Actor::new("bob", "slack");
    let deploy_ok = create(approval("deploy", "ci", &["prod"])).await;
    let deploy_no = create(approval("deploy", "ci", &[])).await;
    let deploy_revise = create(approval("deploy", "ci", &[])).await;
    let shell_ok = create(approval("shell", "dev", &["prod"])).await;
    let open = create(json!({"question": "Which region?", "agent": "dev"})).await;
    let mut defaulted = approval("shell", "dev", &[]);
    defaulted["timeout_seconds"] = json!(SHORT);
    defaulted["on_timeout"] = json!({"decision": "deny"});
    let defaulted = create(defaulted).await;
    let cancelled =
        create(json!({"question": "Now?", "choices": ["yes", "no"], "agent": "ci"})).await;
    let pending = create(approval("deploy", "ci", &[])).await;

    let answer = |id: String, body: Value, who: Actor| {
        let store = store.clone();
        async move {
            let r = store.answer(t, &id, &body, &who).await.expect("answer");
            assert_eq!(r.status, Status::Answered);
        }
    };
    env.advance(5);
    answer(open, json!({"text": "eu-west"}), alice.clone()).await;
    env.advance(5);
    answer(deploy_ok, json!({"decision": "approve"}), alice.clone()).await;
    env.advance(20);
    answer(
        deploy_no,
        json!({"decision": "deny", "reason": "not today"}),
        bob.clone(),
    )
    .await;
    env.advance(30);
    answer(
        deploy_revise,
        json!({"decision": "revise", "reason": "canary first"}),
        alice.clone(),
    )
    .await;
    env.advance(60);
    answer(shell_ok, json!({"decision": "approve"}), bob.clone()).await;
    store
        .cancel(t, &cancelled, &Actor::new("ci", "api"))
        .await
        .expect("cancel");
    env.advance(SHORT as i64 - 120 + 1);
    store.expire_due().await.expect("expire");
    let r = store
        .get(t, &defaulted)
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(r.status, Status::Expired);
    assert_eq!(
        store.get(t, &pending).await.expect("get").map(|r| r.status),
        Some(Status::Pending)
    );

    // Everything.
    let all = read(&store, t, InsightsQuery::default()).await;
    let today = env.now().date_naive();
    assert_eq!((all.from, all.to), (today - TimeDelta::days(29), today));
    assert_eq!(
        statuses(&all),
        vec![
            ("answered", 5),
            ("cancelled", 1),
            ("expired", 1),
            ("pending", 1),
            ("skipped", 0)
        ]
    );
    // People decided in 5, 10, 30, 60 and 120 seconds; the expiry and the cancel took nobody's.
    let ttd = &all.time_to_decision;
    assert_eq!(
        (ttd.count, ttd.p50, ttd.p90, ttd.p99),
        (5, Some(30.0), Some(120.0), Some(120.0))
    );
    assert_eq!(ttd.per_day.len(), 30);
    let last = ttd.per_day.last().expect("today");
    assert_eq!((last.day, last.resolved, last.count), (today, 7, 5));
    assert!(
        ttd.per_day[..29]
            .iter()
            .all(|d| d.resolved == 0 && d.p50.is_none())
    );
    let tools: Vec<_> = all
        .by_tool
        .iter()
        .map(|t| {
            (
                t.tool.as_str(),
                [
                    t.approve,
                    t.revise,
                    t.deny,
                    t.expired,
                    t.defaults,
                    t.cancelled,
                    t.fast_approvals,
                ],
                t.approve_p50,
            )
        })
        .collect();
    assert_eq!(
        tools,
        vec![
            ("deploy", [1, 1, 1, 0, 0, 0, 1], Some(10.0)),
            ("shell", [1, 0, 0, 1, 1, 0, 0], Some(120.0)),
        ]
    );
    let responders: Vec<_> = all
        .by_responder
        .iter()
        .map(|r| {
            (
                r.responder.as_str(),
                r.decisions,
                [r.approve, r.revise, r.deny],
                r.p50,
            )
        })
        .collect();
    assert_eq!(
        responders,
        vec![
            ("alice", 3, [1, 1, 0], Some(10.0)),
            ("bob", 2, [1, 0, 1], Some(30.0))
        ]
    );
    let surfaces: Vec<_> = all
        .by_surface
        .iter()
        .map(|s| (s.surface.as_str(), s.decisions))
        .collect();
    assert_eq!(surfaces, vec![("inbox", 3), ("slack", 2), ("api", 1)]);
    assert_eq!(all.defaults_applied, 1);
    let ages: Vec<_> = all
        .pending_by_age
        .iter()
        .filter(|a| a.count > 0)
        .map(|a| (a.age, a.count))
        .collect();
    assert_eq!(ages, vec![("5m_to_15m", 1)]);

    // Each filter.
    let q = |change: fn(&mut InsightsQuery)| {
        let mut q = InsightsQuery::default();
        change(&mut q);
        q
    };
    let deploy = read(&store, t, q(|q| q.tool = Some("deploy".into()))).await;
    assert_eq!(
        statuses(&deploy),
        vec![
            ("answered", 3),
            ("cancelled", 0),
            ("expired", 0),
            ("pending", 1),
            ("skipped", 0)
        ]
    );
    let prod = read(&store, t, q(|q| q.tag = Some("prod".into()))).await;
    assert_eq!(prod.by_status.get("answered"), Some(&2));
    assert_eq!(prod.by_status.get("pending"), Some(&0));
    assert_eq!(prod.time_to_decision.p50, Some(10.0));
    let by_bob = read(&store, t, q(|q| q.responder = Some("bob".into()))).await;
    assert_eq!(by_bob.time_to_decision.count, 2);
    assert_eq!(by_bob.by_surface.len(), 1);
    assert_eq!(by_bob.by_surface[0].surface, "slack");
    let inbox = read(&store, t, q(|q| q.channel = Some("inbox".into()))).await;
    assert_eq!(inbox.by_status.get("answered"), Some(&3));
    let dev = read(&store, t, q(|q| q.agent = Some("dev".into()))).await;
    assert_eq!(dev.by_status.get("answered"), Some(&2));
    assert_eq!(dev.by_status.get("expired"), Some(&1));
    assert_eq!(dev.by_status.get("pending"), Some(&0));
    assert_eq!(dev.defaults_applied, 1);
    let nobody = read(&store, t, q(|q| q.responder = Some("carol".into()))).await;
    assert_eq!(nobody.time_to_decision.count, 0);
    assert_eq!(nobody.time_to_decision.p50, None);

    // A range without today, and one that is no range.
    let yesterday = today - TimeDelta::days(1);
    let before = read(
        &store,
        t,
        InsightsQuery {
            from: Some(yesterday - TimeDelta::days(6)),
            to: Some(yesterday),
            ..InsightsQuery::default()
        },
    )
    .await;
    assert_eq!(before.by_status.get("answered"), Some(&0));
    assert_eq!(before.time_to_decision.per_day.len(), 7);
    let wrong = store
        .insights(
            t,
            &InsightsQuery {
                from: Some(today),
                to: Some(yesterday),
                ..InsightsQuery::default()
            },
        )
        .await;
    assert!(matches!(wrong, Err(StoreError::InvalidQuery(m)) if m.contains("after")));

    // Another tenant sees none of it.
    let other = read(&store, &env.other_tenant(), InsightsQuery::default()).await;
    assert_eq!(other.time_to_decision.count, 0);
    assert!(other.by_tool.is_empty());
}

/// About four months of decisions, resolved every other day or so, by two people through two
/// surfaces, over four tools, some tagged, a few expiring with their default.
async fn four_months(store: &Store, tenant: &str, advance: impl Fn(i64)) {
    let people = [Actor::new("alice", "inbox"), Actor::new("bob", "slack")];
    for i in 0..60_usize {
        let tags: &[&str] = if i % 3 == 0 { &["prod"] } else { &[] };
        let mut raw = approval(["deploy", "shell", "migrate", "read"][i % 4], "ci", tags);
        if i % 11 == 0 {
            raw["timeout_seconds"] = json!(SHORT);
            raw["on_timeout"] = json!({"decision": "deny"});
        }
        let id = store
            .create(tenant, request(raw))
            .await
            .expect("create")
            .record
            .id;
        advance(30 * (i as i64 % 9) + 5);
        if i % 11 == 0 {
            advance(SHORT as i64);
            store.expire_due().await.expect("expire");
        } else {
            let decision = ["approve", "approve", "deny", "revise"][i % 4];
            store
                .answer(
                    tenant,
                    &id,
                    &json!({"decision": decision, "reason": "as agreed"}),
                    &people[i % 2],
                )
                .await
                .expect("answer");
        }
        advance(86_400 * 2 + 3_600 * (i as i64 % 5));
    }
}

/// A reading with every request matched by a filter, so it is read day by day.
fn narrowed(q: &InsightsQuery) -> InsightsQuery {
    InsightsQuery {
        agent: Some("ci".to_owned()),
        ..q.clone()
    }
}

async fn a_broad_reading_over_months_equals_the_one_day_by_day(store: Store, env: Env) {
    let _clock = env.exclusive_clock().await;
    let t = &env.tenant;
    four_months(&store, t, |s| env.advance(s)).await;
    let today = env.now().date_naive();
    for tag in [None, Some("prod".to_owned())] {
        let broad = InsightsQuery {
            from: Some(today - TimeDelta::days(130)),
            to: Some(today),
            tag,
            ..InsightsQuery::default()
        };
        let months = read(&store, t, broad.clone()).await;
        let days = read(&store, t, narrowed(&broad)).await;
        assert_eq!(months, days, "the same figures either way");
        assert!(months.time_to_decision.count > 10);
        assert_eq!(months.time_to_decision.per_day.len(), 131);
    }
    let all = read(
        &store,
        t,
        InsightsQuery {
            from: Some(today - TimeDelta::days(130)),
            to: Some(today),
            ..InsightsQuery::default()
        },
    )
    .await;
    assert_eq!(all.by_status.get("answered"), Some(&54));
    assert_eq!(
        (all.by_status.get("expired"), all.defaults_applied),
        (Some(&6), 6)
    );
    let deploy = all
        .by_tool
        .iter()
        .find(|x| x.tool == "deploy")
        .expect("deploy");
    assert_eq!((deploy.approve, deploy.expired), (13, 2));
}

/// A year's reading as a store kept it before the coarser rollups existed, and after the
/// migration that makes them (the first reading fills them from the day rollup): the same
/// figures.
async fn migrated(url: &str, drop_grains: impl AsyncFnOnce(&str)) {
    let clock = Arc::new(ManualClock::new(start_time()));
    let store = Store::open(url, options(&clock)).await.expect("open");
    four_months(&store, "t", |s| clock.advance(TimeDelta::seconds(s))).await;
    let today = clock.now().date_naive();
    let year = InsightsQuery {
        from: Some(today - TimeDelta::days(364)),
        to: Some(today),
        ..InsightsQuery::default()
    };
    let before = read(&store, "t", year.clone()).await;
    assert_eq!(before.by_status.get("answered"), Some(&54));
    drop(store);
    drop_grains(url).await;
    let store = Store::open(url, options(&clock)).await.expect("migrated");
    assert_eq!(read(&store, "t", year.clone()).await, before);
    assert_eq!(read(&store, "t", narrowed(&year)).await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_migration_fills_the_coarser_rollups_from_the_days() {
    let dir = TempDir::new();
    let path = dir.0.join("clarify.db");
    let url = format!("sqlite://{}", path.display());
    migrated(&url, async |_| {
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch(
            "DROP TABLE insights_months; DROP TABLE insights_days; \
             DROP TABLE insights_compacted; DROP TABLE push_subscriptions; \
             DROP TABLE receipts_spent; ALTER TABLE requests DROP COLUMN resolved_seq; \
             ALTER TABLE requests DROP COLUMN resolved_principal; \
             DROP INDEX requests_warn; ALTER TABLE requests DROP COLUMN warn_at; \
             ALTER TABLE requests DROP COLUMN warn_before; \
             ALTER TABLE requests DROP COLUMN on_call; \
             PRAGMA user_version = 15;",
        )
        .expect("back to schema 15");
    })
    .await;

    let Some(pg) = postgres_url() else { return };
    let db = random_name("clarify_test_grains");
    in_scratch_database(&pg, &db, |url| async move {
        migrated(&url, async |url| {
            use sqlx::Connection as _;
            let mut conn = sqlx::PgConnection::connect(url).await.expect("connect");
            sqlx::raw_sql(
                "DROP TABLE clarify_insights_months, clarify_insights_days, \
                 clarify_insights_compacted, clarify_push_subscriptions, \
                 clarify_receipts_spent; \
                 ALTER TABLE clarify_requests DROP COLUMN resolved_seq, \
                 DROP COLUMN resolved_principal, DROP COLUMN warn_at, \
                 DROP COLUMN warn_before, DROP COLUMN on_call; \
                 DELETE FROM clarify_schema WHERE version >= 15;",
            )
            .execute(&mut conn)
            .await
            .expect("back to schema 14");
        })
        .await
    })
    .await;
}
