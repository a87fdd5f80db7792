//! A rolling upgrade: the previous release's `clarify serve` and today's on one PostgreSQL
//! database at once, behind a round-robin proxy, while agents create and wait and a person
//! answers through it; then the old instance drains.
//!
//! The previous release is the commit named in `tests/fixtures/upgrades/previous-release`, its
//! binary built once by `scripts/past-build --shared` (scripts/test runs it and passes the path
//! in `CLARIFY_TEST_PREVIOUS_RELEASE`) and cached in `~/.cache/clarify/past/<commit>/clarify`.
//! Without it the test says so and skips, or fails under `CLARIFY_REQUIRE_SERVICES=1`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use clarify_client::{Client, ClientError, RecordBody};
use clarify_testkit::{in_scratch_database, postgres_url};
use serde_json::json;
use sqlx::Connection;
use tokio::task::JoinHandle;

use crate::support::{Api, RoundRobin, Server, run, temp_dir, unique};

/// The previous release's commit, as `tests/fixtures/upgrades/previous-release` names it.
fn previous_commit() -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrades/previous-release");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let commit = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_else(|| panic!("{} names no commit", file.display()));
    assert!(
        commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit()),
        "{}: {commit:?} is not a full commit hash",
        file.display()
    );
    commit.to_owned()
}

/// The previous release's `clarify`: `CLARIFY_TEST_PREVIOUS_RELEASE`, else where
/// `scripts/past-build` caches it; `None` when it is not built.
fn previous_release(commit: &str) -> Option<PathBuf> {
    let binary = match std::env::var_os("CLARIFY_TEST_PREVIOUS_RELEASE") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => {
            let cache = std::env::var_os("CLARIFY_PAST_CACHE")
                .map(PathBuf::from)
                .or_else(|| {
                    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/clarify"))
                })?;
            cache.join("past").join(commit).join("clarify")
        }
    };
    binary.is_file().then_some(binary)
}

/// One long-waiting agent on `url`: creates a request (retrying under its idempotency key) and
/// long-polls until it is resolved; its id goes to `created` as soon as it is acknowledged.
fn agent(
    url: &str,
    key: &str,
    text: String,
    created: tokio::sync::mpsc::UnboundedSender<String>,
) -> JoinHandle<Result<RecordBody, ClientError>> {
    // A client of its own: its connections go through the proxy to whichever instance is next.
    let client = Client::new(url, Some(key.to_owned()));
    tokio::spawn(async move {
        let client = client?;
        let body = json!({"questions": [{"text": text, "kind": "single",
            "options": ["yes", "no"]}]});
        let (record, _) = client
            .create_retrying(&body, Duration::from_secs(60), |_| {})
            .await?;
        let _ = created.send(record.id.clone());
        client.wait_resolved(&record.id, |_| {}).await
    })
}

/// The sum of the samples of metric `name` that `server` exports (its own counts).
async fn metric(server: &Server, key: &str, name: &str) -> f64 {
    let (status, text) = {
        let response = clarify_client::http::client()
            .expect("an HTTP client")
            .get(format!("{}/metrics", server.url))
            .bearer_auth(key)
            .send()
            .await
            .expect("metrics");
        (
            response.status(),
            response.text().await.expect("metrics text"),
        )
    };
    assert!(status.is_success(), "{}/metrics: {status}", server.url);
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()))
        .sum()
}

/// The pending requests' ids, oldest first, read through `url`.
async fn pending(url: &str, key: &str) -> Vec<String> {
    let (status, page) = Api::new(url, key)
        .get("/v1/requests?status=pending&limit=100")
        .await;
    assert_eq!(status, 200, "{page}");
    // RFC 3339 times of one zone, which sort as strings.
    let mut ids: Vec<(String, String)> = page["requests"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| {
            Some((
                r["created_at"].as_str()?.to_owned(),
                r["id"].as_str()?.to_owned(),
            ))
        })
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}

/// Answers request `id` "yes" as the person of `key`, with a client of its own on `url` (through
/// the proxy: a new connection, so the next instance in turn takes it).
async fn answer_yes(url: &str, key: &str, id: &str) {
    let client = Client::new(url, Some(key.to_owned())).expect("a client");
    let record = client.get(id).await.expect("the request");
    let option = record.questions[0]
        .options
        .as_ref()
        .and_then(|o| o.first())
        .map(|o| o.id.clone())
        .expect("an option");
    client
        .answer(id, &json!({"option": option}))
        .await
        .unwrap_or_else(|e| panic!("answering {id} through {url}: {e}"));
}

/// The keys the test makes: the admin's, the agents' and the person's who answers.
struct Keys {
    admin: String,
    agent: String,
    person: String,
}

/// Creates a request on `creator`, long-polls on it at `waiter`, answers it at `answerer` once
/// the wait has begun, and returns how long the waiter took to be woken after the answer.
async fn woken_across(
    (creator, waiter, answerer): (&Server, &Server, &Server),
    keys: &Keys,
) -> Duration {
    let Keys {
        admin,
        agent: agent_key,
        person: person_key,
    } = keys;
    let agent = Client::new(&creator.url, Some(agent_key.to_owned())).expect("a client");
    let body = json!({"questions": [{"text": "Wake across?", "kind": "single",
        "options": ["yes", "no"]}]});
    let (record, _) = agent.create(&body).await.expect("created");
    let id = record.id.clone();
    let before = metric(waiter, admin, "clarify_waiters").await;
    let waiting = {
        let agent = Client::new(&waiter.url, Some(agent_key.to_owned())).expect("a client");
        let id = id.clone();
        tokio::spawn(async move {
            let record = agent.wait(&id, 30).await;
            (record, Instant::now())
        })
    };
    // The long-poll has reached its instance once its waiters gauge counts it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while metric(waiter, admin, "clarify_waiters").await <= before {
        assert!(
            Instant::now() < deadline,
            "the wait on {} did not begin",
            waiter.url
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let answered = Instant::now();
    answer_yes(&answerer.url, person_key, &id).await;
    let (record, at) = tokio::time::timeout(Duration::from_secs(10), waiting)
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the waiter on {} was not woken by the answer on {}",
                waiter.url, answerer.url
            )
        })
        .expect("the waiter");
    let record = record.expect("the wait");
    assert_eq!(
        record.status, "answered",
        "the waiter on {} got {record:?}",
        waiter.url
    );
    at.duration_since(answered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_previous_release_and_todays_serve_one_database_at_once_with_nothing_lost_or_doubled() {
    let Some(pg) = postgres_url() else { return };
    let commit = previous_commit();
    let Some(old_bin) = previous_release(&commit) else {
        assert!(
            std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
            "CLARIFY_REQUIRE_SERVICES=1 requires the previous release's clarify ({}), which is \
             not built: run scripts/past-build --shared {commit}, or scripts/test",
            &commit[..7]
        );
        eprintln!(
            "skipped: the previous release's clarify ({}) is not built; scripts/test builds it \
             with scripts/past-build --shared",
            &commit[..7]
        );
        return;
    };
    // The binary is the previous release's: its version names the commit.
    let (code, version, err) = crate::support::run_command(Command::new(&old_bin).arg("--version"));
    assert_eq!(code, 0, "{}: {err}", old_bin.display());
    assert!(
        version.contains(&format!("+past.{}", &commit[..12])),
        "{} is not the previous release's build: {version}",
        old_bin.display()
    );
    let db = format!("clarify_test_two_releases_{}", unique());
    in_scratch_database(&pg, &db, |url| async move {
        let dir = temp_dir("two-releases");
        // The admin key comes from a file given to both, made by the old binary.
        let (code, generated, err) =
            crate::support::run_command(Command::new(&old_bin).args(["keys", "generate"]));
        assert_eq!(code, 0, "keys generate: {err}");
        let admin = generated.trim().to_owned();
        let key_file = dir.join("admin.key");
        std::fs::write(&key_file, format!("{admin}\n")).expect("write the key");
        let key_file = key_file.display().to_string();
        let extra = ["--admin-key-file", key_file.as_str()];

        // The previous release starts first on the empty database and makes its schema.
        let old = Server::start_binary(&old_bin, &url, &extra).await;
        let mut conn = sqlx::PgConnection::connect(&url).await.expect("connect");
        let schema = async |conn: &mut sqlx::PgConnection| -> i64 {
            sqlx::query_scalar("SELECT max(version) FROM clarify_schema")
                .fetch_one(conn)
                .await
                .expect("the schema version")
        };
        let old_schema = schema(&mut conn).await;
        let proxy = RoundRobin::start(vec![old.addr()]).await;

        // Keys made once, through the old release, used on both.
        let api = Api::new(&proxy.url, &admin);
        let make_key = async |name: &str, role: &str| -> String {
            let (status, made) = api
                .post("/v1/keys", json!({"name": name, "role": role}))
                .await;
            assert_eq!(status, 201, "{made}");
            made["token"].as_str().expect("the key's token").to_owned()
        };
        let agent_key = make_key("agents", "agent").await;
        let alice = make_key("alice", "responder").await;

        let (created_tx, mut created_rx) = tokio::sync::mpsc::unbounded_channel();
        let mut agents = Vec::new();
        // Agents waiting on the old release alone.
        for i in 0..4 {
            agents.push(agent(
                &proxy.url,
                &agent_key,
                format!("Before the upgrade {i}?"),
                created_tx.clone(),
            ));
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while metric(&old, &admin, "clarify_waiters").await < 4.0 {
            assert!(
                Instant::now() < deadline,
                "the first agents did not all wait"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let created_before = metric(&old, &admin, "clarify_requests_created_total").await;

        // Today's release starts on the same database and migrates it while the old one
        // serves and its agents wait.
        let new = Server::start(&url, &extra).await;
        let new_schema = schema(&mut conn).await;
        assert!(
            new_schema > old_schema,
            "today's migrated the schema: {old_schema} then {new_schema}"
        );
        assert!(
            metric(&old, &admin, "clarify_waiters").await >= 4.0,
            "the old instance kept its waiting agents through the migration"
        );
        proxy.add(new.addr());

        // Agents through the proxy while both serve: each one's connection goes to the next
        // instance in turn.
        for i in 0..12 {
            agents.push(agent(
                &proxy.url,
                &agent_key,
                format!("During the upgrade {i}?"),
                created_tx.clone(),
            ));
        }
        drop(created_tx);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (on_old, on_new) = (
                metric(&old, &admin, "clarify_waiters").await,
                metric(&new, &admin, "clarify_waiters").await,
            );
            if on_old + on_new >= 16.0 {
                assert!(
                    on_old >= 1.0 && on_new >= 1.0,
                    "agents wait on both: {on_old} and {on_new}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the agents did not all wait: {on_old} and {on_new}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }

        // An answer taken by one release wakes an agent waiting on the other, both ways.
        let keys = Keys {
            admin: admin.clone(),
            agent: agent_key.clone(),
            person: alice.clone(),
        };
        let old_to_new = woken_across((&new, &new, &old), &keys).await;
        let new_to_old = woken_across((&old, &old, &new), &keys).await;

        // Half the waiting agents' requests answered through the proxy, one connection each,
        // so the instances take them in turn.
        let open = pending(&proxy.url, &agent_key).await;
        assert_eq!(open.len(), 16, "every agent's request is pending: {open:?}");
        for id in &open[..8] {
            answer_yes(&proxy.url, &alice, id).await;
        }
        let served: Vec<(f64, f64)> = {
            let mut served = Vec::new();
            for server in [&old, &new] {
                served.push((
                    metric(server, &admin, "clarify_requests_created_total").await,
                    metric(server, &admin, "clarify_requests_resolved_total").await,
                ));
            }
            served
        };
        let ((old_created, old_answered), (new_created, new_answered)) = (served[0], served[1]);
        // Each took one of the wake checks' creates and answers, and some of the proxy's.
        let old_created = old_created - created_before;
        assert!(
            old_created >= 2.0 && old_answered >= 2.0 && new_created >= 2.0 && new_answered >= 2.0,
            "after the migration both releases took creates and answers: the old one \
             {old_created} and {old_answered}, today's {new_created} and {new_answered}"
        );
        let proxied = (proxy.taken(old.addr()), proxy.taken(new.addr()));

        // The old instance drains as a pod is stopped; its waiting agents poll again and reach
        // today's, which answers the rest.
        let mut old = old;
        let draining = metric(&old, &admin, "clarify_waiters").await;
        assert!(
            draining >= 1.0,
            "agents wait on the old instance as it drains"
        );
        old.terminate();
        assert_eq!(
            old.wait_exit(Duration::from_secs(30)),
            Some(0),
            "{}",
            old.stderr()
        );
        let rest = pending(&proxy.url, &agent_key).await;
        assert_eq!(rest.len(), 8, "{rest:?}");
        for id in &rest {
            answer_yes(&proxy.url, &alice, id).await;
        }
        let mut acknowledged = Vec::new();
        while let Some(id) = created_rx.recv().await {
            acknowledged.push(id);
        }
        for agent in agents {
            let record = tokio::time::timeout(Duration::from_secs(30), agent)
                .await
                .expect("every agent is answered")
                .expect("the agent")
                .expect("the agent got its outcome");
            assert_eq!(record.status, "answered", "{record:?}");
            assert_eq!(record.answered_by.as_deref(), Some("alice"), "{record:?}");
            let answer = record.outcome.as_ref().map(|o| &o.questions[0].answer);
            assert_eq!(answer, Some(&json!("yes")), "{record:?}");
        }
        assert_eq!(acknowledged.len(), 16);

        // In the database: every request made once and answered once.
        let requests: Vec<(String, String)> =
            sqlx::query_as("SELECT id, status FROM clarify_requests ORDER BY seq")
                .fetch_all(&mut conn)
                .await
                .expect("the requests");
        assert_eq!(
            requests.len(),
            18,
            "16 agents' and the 2 wake checks': {requests:?}"
        );
        assert!(
            acknowledged
                .iter()
                .all(|id| requests.iter().any(|(r, _)| r == id)),
            "every acknowledged request is stored"
        );
        assert!(
            requests.iter().all(|(_, s)| s == "answered"),
            "{requests:?}"
        );
        let events: Vec<(String, String, i64)> = sqlx::query_as(
            "SELECT request_id, kind, count(*) FROM clarify_events GROUP BY request_id, kind",
        )
        .fetch_all(&mut conn)
        .await
        .expect("the events");
        for (id, _) in &requests {
            for kind in ["created", "answered"] {
                let n = events
                    .iter()
                    .find(|(r, k, _)| r == id && k == kind)
                    .map_or(0, |(_, _, n)| *n);
                assert_eq!(n, 1, "{id}: {kind} events: {events:?}");
            }
        }
        // Each decision read through today's instance carries its signed receipt, whichever
        // release took the answer and whichever numbered it in the chain: read first (GET), then
        // waited on, it has the same.
        let reader = Client::new(&new.url, Some(agent_key.clone())).expect("a client");
        for (id, _) in &requests {
            let read = reader.get(id).await.expect("the request");
            let receipt = read.outcome.as_ref().and_then(|o| o.receipt.clone());
            assert!(receipt.is_some(), "{id} has no receipt: {read:?}");
            let waited = reader.wait(id, 1).await.expect("the request");
            let again = waited.outcome.as_ref().and_then(|o| o.receipt.clone());
            assert_eq!(again, receipt, "{id}: the receipt waited on");
        }
        // The insights count each decision once, whichever release's sequencer numbered it.
        let day = |days: i64| {
            (chrono::Utc::now() + chrono::Duration::days(days))
                .format("%Y-%m-%d")
                .to_string()
        };
        let (status, insights) = Api::new(&new.url, &admin)
            .get(&format!("/v1/insights?from={}&to={}", day(-1), day(1)))
            .await;
        assert_eq!(status, 200, "{insights}");
        assert_eq!(insights["by_status"]["answered"], 18, "{insights}");
        let stored_events: i64 = sqlx::query_scalar("SELECT count(*) FROM clarify_events")
            .fetch_one(&mut conn)
            .await
            .expect("count events");
        drop(new);

        // The audit chain, written by both releases, verifies.
        let (code, out, err) = run(&["audit", "verify", "--db", &url]);
        assert_eq!(code, 0, "audit verify: {out}{err}");
        let verified: Option<i64> = out
            .split("verifies: ")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.replace(',', "").parse().ok());
        assert_eq!(
            verified,
            Some(stored_events),
            "the chain covers every event: {out}"
        );
        eprintln!(
            "two releases: schema {old_schema} ({}) beside {new_schema}; 18 requests created and \
             answered, lost 0, doubled 0; after the migration the old one created {old_created} \
             and answered {old_answered}, today's created {new_created} and answered \
             {new_answered} (the proxy's connections: {} and {}); {draining} agents waited on the \
             old one as it drained; an answer on the old woke a waiter on today's in {} ms, one on \
             today's a waiter on the old in {} ms",
            &commit[..7],
            proxied.0,
            proxied.1,
            old_to_new.as_millis(),
            new_to_old.as_millis()
        );
    })
    .await;
}
