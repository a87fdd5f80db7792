//! Databases written by earlier `clarify` binaries, opened by this one.
//!
//! `crates/clarify/tests/fixtures/upgrades/` holds, for a few earlier schema versions, a SQLite
//! file and a `pg_dump` that the binary of that commit recorded through its own HTTP API
//! (`scripts/past-fixtures`, run by hand), each with a manifest of what it holds. Each is opened
//! here by today's binary, which migrates it once, and then: every table keeps its rows, the
//! audit chain verifies, the keys recorded then authenticate (the revoked one does not), every
//! recorded request reads back as it was, and each pending one is answerable, its waiter on a
//! long-poll woken by the answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clarify_client::{Answered, Client};
use clarify_testkit::{in_scratch_database, postgres_url};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::{Api, Server, run, temp_dir};

/// What `scripts/past-fixtures` wrote beside a fixture.
#[derive(Debug, Deserialize)]
struct Manifest {
    commit: String,
    backend: String,
    schema: i64,
    keys: BTreeMap<String, RecordedKey>,
    requests: Vec<Recorded>,
    /// Rows of each table, as the old binary left them.
    rows: BTreeMap<String, i64>,
}

#[derive(Debug, Deserialize)]
struct RecordedKey {
    token: String,
    #[serde(default)]
    revoked: bool,
}

#[derive(Debug, Deserialize)]
struct Recorded {
    label: String,
    id: Option<String>,
    status: Option<String>,
    answered_by: Option<String>,
    answer: Option<String>,
    grant: Option<Value>,
    push_subscription: Option<String>,
    person: Option<String>,
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrades")
}

/// The manifests of one backend's fixtures, oldest schema first.
fn manifests(backend: &str) -> Vec<(PathBuf, Manifest)> {
    let mut found: Vec<(PathBuf, Manifest)> = std::fs::read_dir(fixtures())
        .expect("the upgrade fixtures")
        .map(|e| e.expect("a fixture").path())
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{backend}-")))
        })
        .map(|p| {
            let text = std::fs::read_to_string(&p).expect("a manifest");
            let manifest: Manifest =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(manifest.backend, backend, "{}", p.display());
            (p, manifest)
        })
        .collect();
    found.sort_by_key(|(_, m)| m.schema);
    assert!(
        !found.is_empty(),
        "no {backend} fixtures in {}",
        fixtures().display()
    );
    found
}

fn token<'a>(m: &'a Manifest, name: &str) -> &'a str {
    &m.keys
        .get(name)
        .unwrap_or_else(|| panic!("{}: no key {name}", m.commit))
        .token
}

/// `clarify audit verify` on `db`, which also migrates it; the number of events it verified.
fn audit_verifies(db: &str, what: &str) -> u64 {
    let (code, out, err) = run(&["audit", "verify", "--db", db]);
    assert_eq!(code, 0, "{what}: audit verify failed: {out}{err}");
    out.split("verifies: ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("{what}: audit verify said {out:?}"))
}

/// Everything a user would notice after the upgrade, checked on a server started on the
/// migrated database `db`; `rows` reads a table's rows there.
async fn serves_as_before(m: &Manifest, db: &str, rows: impl AsyncFn(&str) -> i64) {
    let what = format!("{} {} (schema {})", m.backend, &m.commit[..7], m.schema);
    let events_before = m.rows.get(&table(m, "events")).copied().unwrap_or_default();
    let verified = audit_verifies(db, &what);
    assert_eq!(
        verified, events_before as u64,
        "{what}: the chain covers every recorded event"
    );
    // PostgreSQL's `clarify_schema` gains a row per version applied; every other table keeps its
    // rows as they were.
    for (name, count) in m.rows.iter().filter(|(name, _)| *name != "clarify_schema") {
        assert_eq!(rows(name.as_str()).await, *count, "{what}: rows of {name}");
    }

    let server = Server::start(db, &[]).await;
    for (name, key) in &m.keys {
        let (status, _) = Api::new(&server.url, &key.token).get("/v1/requests").await;
        let expected = if key.revoked { 401 } else { 200 };
        assert_eq!(status, expected, "{what}: the key of {name}");
    }
    let agent =
        Client::new(&server.url, Some(token(m, "fixture-agent").to_owned())).expect("a client");
    let admin =
        Client::new(&server.url, Some(token(m, "fixture-admin").to_owned())).expect("a client");
    let person =
        |name: &str| Client::new(&server.url, Some(token(m, name).to_owned())).expect("a client");

    for r in &m.requests {
        let Some(id) = &r.id else { continue };
        let record = agent.get(id).await.expect("the recorded request");
        assert_eq!(
            Some(&record.status),
            r.status.as_ref(),
            "{what}: {}",
            r.label
        );
        if let Some(by) = &r.answered_by {
            assert_eq!(
                record.answered_by.as_deref(),
                Some(by.as_str()),
                "{what}: {}",
                r.label
            );
        }
        if let Some(answer) = &r.answer {
            let outcome = record
                .outcome
                .as_ref()
                .expect("an answered request's outcome");
            assert_eq!(
                outcome.questions[0].answer,
                json!(answer),
                "{what}: {}",
                r.label
            );
        }
        if let Some(grant) = &r.grant {
            let grants = admin.grants(None).await.expect("grants");
            assert!(
                grants.iter().any(|g| g.get("tool") == grant.get("tool")
                    && g.get("arguments") == grant.get("arguments")),
                "{what}: the grant of {}: {grants:?}",
                r.label
            );
        }
    }
    for r in m.requests.iter().filter(|r| r.push_subscription.is_some()) {
        let person = r.person.as_deref().expect("the subscription's person");
        let (status, listed) = Api::new(&server.url, token(m, person))
            .get("/v1/push/subscriptions")
            .await;
        assert_eq!(status, 200, "{what}: {listed}");
        assert!(
            listed
                .to_string()
                .contains(r.push_subscription.as_deref().unwrap_or_default()),
            "{what}: {person}'s push subscription: {listed}"
        );
    }

    // Each pending request is answered, and an agent waiting on it is woken by the answer.
    let mut answered = 0;
    for r in &m.requests {
        let (Some(id), Some("pending")) = (&r.id, r.status.as_deref()) else {
            continue;
        };
        let waiter = {
            let agent = agent.clone();
            let id = id.clone();
            tokio::spawn(async move { agent.wait(&id, 30).await })
        };
        tokio::time::sleep(Duration::from_millis(300)).await;
        let record = agent.get(id).await.expect("the pending request");
        let approval = record.questions.iter().any(|q| q.kind == "approval");
        // A quorum request's recorded vote is alice's; bob's second decides it.
        let (who, body) = match (approval, record.approvals_required > 1) {
            (true, true) => ("bob", json!({"decision": "approve"})),
            (true, false) => ("alice", json!({"decision": "approve"})),
            (false, _) => {
                let option = record.questions[0]
                    .options
                    .as_ref()
                    .and_then(|o| o.first())
                    .map(|o| o.id.clone());
                ("alice", json!({"option": option}))
            }
        };
        let outcome = person(who).answer(id, &body).await;
        assert!(
            matches!(outcome, Ok(Answered::Resolved(_))),
            "{what}: answering {}: {outcome:?}",
            r.label
        );
        let woken = tokio::time::timeout(Duration::from_secs(10), waiter)
            .await
            .unwrap_or_else(|_| panic!("{what}: the waiter on {} was not woken", r.label))
            .expect("the waiter")
            .expect("the wait");
        assert_eq!(woken.status, "answered", "{what}: {}", r.label);
        answered += 1;
    }
    assert!(answered >= 2, "{what}: the fixture holds pending requests");
    server.terminate();
    let after = audit_verifies(db, &what);
    assert!(
        after > verified,
        "{what}: the answers after the upgrade extend the chain ({verified} then {after})"
    );
}

/// The table `name` as the backend spells it.
fn table(m: &Manifest, name: &str) -> String {
    if m.backend == "postgres" {
        format!("clarify_{name}")
    } else {
        name.to_owned()
    }
}

#[tokio::test]
async fn every_earlier_sqlite_database_opens_migrated_with_nothing_lost_and_its_waiters_answered() {
    for (path, m) in manifests("sqlite") {
        let dir = temp_dir("upgrade");
        let file = dir.join("clarify.db");
        std::fs::copy(path.with_extension("db"), &file).expect("the fixture copied");
        let db = format!("sqlite://{}", file.display());
        let rows = async |name: &str| -> i64 {
            let conn = rusqlite::Connection::open(&file).expect("the migrated file");
            conn.query_row(&format!("SELECT count(*) FROM \"{name}\""), [], |r| {
                r.get(0)
            })
            .expect("a count")
        };
        serves_as_before(&m, &db, rows).await;
        let conn = rusqlite::Connection::open(&file).expect("the migrated file");
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .expect("the schema version");
        assert!(
            version > m.schema,
            "{}: migrated past schema {}",
            m.commit,
            m.schema
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[tokio::test]
async fn every_earlier_postgres_database_opens_migrated_once_with_nothing_lost_and_its_waiters_answered()
 {
    let Some(pg) = postgres_url() else { return };
    for (path, m) in manifests("postgres") {
        let dump = std::fs::read_to_string(path.with_extension("sql")).expect("the dump");
        let name = format!(
            "clarify_upgrade_{}_{}",
            &m.commit[..7],
            crate::support::unique()
        );
        in_scratch_database(&pg, &name, |url| async move {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(&url)
                .await
                .expect("the database");
            sqlx::raw_sql(&dump)
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("{}: restoring the dump: {e}", m.commit));
            // The dump empties the search path of its own connection only.
            drop(conn);
            let mut conn = sqlx::PgConnection::connect(&url)
                .await
                .expect("the database");
            let rows = async |table: &str| -> i64 {
                let mut conn = sqlx::PgConnection::connect(&url)
                    .await
                    .expect("the database");
                sqlx::query_scalar(&format!("SELECT count(*) FROM \"{table}\""))
                    .fetch_one(&mut conn)
                    .await
                    .expect("a count")
            };
            serves_as_before(&m, &url, rows).await;
            // Every version applied, in order, the recorded ones kept.
            let applied: Vec<i64> =
                sqlx::query_scalar("SELECT version FROM clarify_schema ORDER BY version")
                    .fetch_all(&mut conn)
                    .await
                    .expect("the applied versions");
            assert!(
                applied.iter().copied().eq(1..=applied.len() as i64)
                    && applied.last().is_some_and(|v| *v > m.schema),
                "{}: migrated past schema {}: {applied:?}",
                m.commit,
                m.schema
            );
        })
        .await;
    }
}

/// The oldest SQLite fixture grown to `n` requests, each a copy of its answered request with
/// that request's events, written in the old schema; returns the file.
fn grown(m: &Manifest, fixture: &Path, n: u32, dir: &Path) -> PathBuf {
    let file = dir.join("clarify.db");
    std::fs::copy(fixture, &file).expect("the fixture copied");
    let answered = m
        .requests
        .iter()
        .find(|r| r.status.as_deref() == Some("answered") && r.answered_by.is_some())
        .and_then(|r| r.id.clone())
        .expect("an answered request");
    let conn = rusqlite::Connection::open(&file).expect("the fixture");
    let columns = |table: &str| -> Vec<String> {
        let mut stmt = conn
            .prepare(&format!("SELECT name FROM pragma_table_info('{table}')"))
            .expect("the columns");
        stmt.query_map([], |r| r.get(0))
            .expect("the columns")
            .collect::<Result<_, _>>()
            .expect("the columns")
    };
    // Each copy's id is the original's with the copy's number; `seq` is left to SQLite.
    let copy = |table: &str, id_column: &str| -> String {
        let cols: Vec<String> = columns(table).into_iter().filter(|c| c != "seq").collect();
        let values: Vec<String> = cols
            .iter()
            .map(|c| {
                if c == id_column {
                    format!("{c} || '-' || n.i")
                } else {
                    c.clone()
                }
            })
            .collect();
        format!(
            "INSERT INTO {table} ({}) SELECT {} FROM {table}, n WHERE {id_column} = ?1 ORDER BY n.i",
            cols.join(", "),
            values.join(", ")
        )
    };
    let count =
        format!("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n})");
    conn.execute_batch("BEGIN").expect("begin");
    // The events first, so each copy's are in the log in the order of the requests they tell of.
    conn.execute(
        &format!("{count} {}", copy("events", "request_id")),
        [&answered],
    )
    .expect("the copies' events");
    conn.execute(&format!("{count} {}", copy("requests", "id")), [&answered])
        .expect("the copies");
    conn.execute_batch("COMMIT").expect("commit");
    file
}

/// The figure `upgrade-100k-requests`: how long today's binary takes to open (and so migrate)
/// a database of 100,000 answered requests written in the oldest schema there is a fixture of.
/// Run with `cargo test -p clarify --test it upgrades::migrating -- --ignored --nocapture`.
#[tokio::test]
#[ignore = "a measurement: prints the figure for BENCHMARKS.md"]
async fn migrating_100k_requests_from_the_oldest_schema() {
    let (path, m) = manifests("sqlite").swap_remove(0);
    let dir = temp_dir("upgrade-100k");
    let file = grown(&m, &path.with_extension("db"), 100_000, &dir);
    let db = format!("sqlite://{}", file.display());
    let started = std::time::Instant::now();
    let (code, _, err) = run(&["keys", "list", "--db", &db]);
    let took = started.elapsed();
    assert_eq!(code, 0, "{err}");
    let conn = rusqlite::Connection::open(&file).expect("the migrated file");
    let requests: i64 = conn
        .query_row("SELECT count(*) FROM requests", [], |r| r.get(0))
        .expect("a count");
    assert!(requests > 100_000, "{requests}");
    println!(
        "upgrade-100k-requests: schema {} ({}) to today's, {requests} requests: {:.1} s",
        m.schema,
        &m.commit[..7],
        took.as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
