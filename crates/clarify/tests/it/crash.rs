//! Crash test: `clarify serve` is killed with SIGKILL at random moments under a mixed load of
//! agents asking and responders answering over HTTP, and restarted on the same port each time.
//! The same at scale: three instances on one PostgreSQL database under 64 agents and six
//! responders spread over them (each agent asks one instance and waits on the next), one
//! instance killed mid-run.
//!
//! The clients keep their own records of what the server acknowledged (a 2xx received), and
//! nothing else counts: after the last restart every invariant is checked against those records.
//! Acknowledged requests exist, and no others; acknowledged answers are stored exactly as
//! acknowledged; no request was resolved twice; every waiting client reconnected and got its
//! outcome; every webhook queued by a resolution was delivered with a valid signature; a client
//! following the event stream of each instance from the start, reconnecting with
//! `Last-Event-ID` whenever its instance goes down, saw every event once, in the order of the
//! log, with no gap. At scale, the audit chain verifies too. The kill moments come from a
//! seeded RNG whose seed is printed (set `CLARIFY_CRASH_SEED` to replay it).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use clarify_client::{Client, ClientError};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use clarify_testkit::{in_scratch_database, postgres_url, signature_valid};

use crate::support::{Api, Server, create_key, run, sqlite_url, temp_dir, unique};

/// How a run is laid out: how many instances share the store, how many agents and responders
/// spread over them, and how instances are killed.
#[derive(Debug, Clone)]
struct Plan {
    instances: usize,
    agents: usize,
    responders: usize,
    /// SIGKILL/restart cycles.
    kills: usize,
    /// Milliseconds of load before each kill.
    before_kill: std::ops::Range<u64>,
    /// Milliseconds an instance stays down.
    down: std::ops::Range<u64>,
    /// Load after the last restart.
    after: Duration,
    /// A pause between one agent's requests, in milliseconds.
    think: std::ops::Range<u64>,
}

/// One instance, killed 24 times.
fn one_instance() -> Plan {
    Plan {
        instances: 1,
        agents: 3,
        responders: 3,
        kills: 24,
        before_kill: 100..1_200,
        down: 0..300,
        after: Duration::ZERO,
        think: 20..100,
    }
}

/// Three instances, 64 agents, one instance killed mid-run.
fn three_instances() -> Plan {
    Plan {
        instances: 3,
        agents: 64,
        responders: 6,
        kills: 1,
        before_kill: 2_000..3_000,
        down: 500..1_000,
        after: Duration::from_secs(3),
        think: 300..900,
    }
}
/// A retried webhook comes back quickly, and one claimed by a killed server is free again after
/// the timeout plus the 5 s margin.
/// The webhook receiver listens on 127.0.0.1, which the outbound guard refuses unless allowed.
const SERVE_FLAGS: [&str; 8] = [
    "--webhook-first-retry",
    "200ms",
    "--webhook-timeout",
    "1s",
    "--outbound-allow",
    "127.0.0.0/8",
    // The instances of one deployment share its public address, which receipts name as their
    // issuer: an outcome read from any instance is the one another acknowledged.
    "--public-url",
    "https://clarify.crash.test",
];
/// The bound on every wait after the load stops; far above what a healthy run needs.
const PATIENCE: Duration = Duration::from_secs(60);

/// A request the server acknowledged creating.
#[derive(Debug, Clone)]
struct Asked {
    text: String,
    hooked: bool,
}

/// An answer the server acknowledged with `200`.
#[derive(Debug, Clone)]
struct Answered {
    id: String,
    responder: String,
    outcome: Value,
}

/// What the clients saw; only acknowledged work is recorded.
#[derive(Debug, Default)]
struct Ledger {
    asked: Mutex<HashMap<String, Asked>>,
    answered: Mutex<Vec<Answered>>,
    /// The outcome each waiting client received, or why it got none.
    received: Mutex<HashMap<String, Result<Value, String>>>,
    /// Responses no client should ever get (a 404 for a listed request, a 422 for a valid
    /// answer, a 500).
    unexpected: Mutex<Vec<String>>,
    conflicts: AtomicUsize,
    unknown: AtomicUsize,
    retried_creates: AtomicUsize,
}

fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A webhook receiver on a real socket that answers `200` and keeps every call.
#[derive(Debug, Default)]
struct Hooks {
    calls: Mutex<Vec<(HeaderMap, Bytes)>>,
}

async fn hook(State(hooks): State<Arc<Hooks>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    locked(&hooks.calls).push((headers, body));
    StatusCode::OK
}

async fn start_receiver() -> (String, Arc<Hooks>) {
    let hooks = Arc::new(Hooks::default());
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(hooks.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the receiver");
    let addr: SocketAddr = listener.local_addr().expect("receiver address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/hook"), hooks)
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// Whether a failed call may simply be tried again: the server was down or cut off mid-reply.
fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Unreachable { .. } | ClientError::Protocol(_) => true,
        ClientError::Api { status, .. } => *status == 503,
        ClientError::InvalidUrl { .. } => false,
    }
}

/// One agent: asks through `client`, with an idempotency key so a create whose reply was lost
/// is sent again until acknowledged, then hands the request to a client waiting through
/// `waiting` (another instance, when there are several) and asks again.
#[allow(clippy::too_many_arguments)]
async fn agent(
    n: usize,
    client: Client,
    waiting: Client,
    think: std::ops::Range<u64>,
    hook_url: String,
    seed: u64,
    ledger: Arc<Ledger>,
    stop: Arc<AtomicBool>,
    waiters: Arc<Mutex<Vec<tokio::task::JoinHandle<()>>>>,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut i = 0;
    while !stop.load(Ordering::SeqCst) {
        i += 1;
        let text = format!("crash agent {n} request {i}");
        let hooked = i % 3 == 0;
        let mut body = json!({"question": text, "idempotency_key": format!("a{n}-{i}")});
        if i % 2 == 0 {
            body["choices"] = json!(["alpha", "beta", "gamma"]);
        }
        if hooked {
            body["callback_url"] = json!(hook_url);
        }
        let started = Instant::now();
        let record = loop {
            match client.create(&body).await {
                Ok((record, _)) => break Some(record),
                Err(e) if transient(&e) && started.elapsed() < PATIENCE => {
                    ledger.retried_creates.fetch_add(1, Ordering::Relaxed);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(e) => {
                    locked(&ledger.unexpected).push(format!("create {text}: {e}"));
                    break None;
                }
            }
        };
        let Some(record) = record else { continue };
        let id = record.id;
        locked(&ledger.asked).insert(id.clone(), Asked { text, hooked });
        let (client, ledger) = (waiting.clone(), ledger.clone());
        locked(&waiters).push(tokio::spawn(async move {
            let waited = tokio::time::timeout(3 * PATIENCE, client.wait_resolved(&id, |_| {}))
                .await
                .map_err(|_| "still waiting when the test gave up".to_owned())
                .and_then(|r| r.map_err(|e| e.to_string()))
                .map(|record| serde_json::to_value(record.outcome).expect("JSON"));
            locked(&ledger.received).insert(id, waited);
        }));
        tokio::time::sleep(Duration::from_millis(rng.random_range(think.clone()))).await;
    }
}

/// One responder: answers a random pending request, until no request is pending once the agents
/// have stopped. A reply lost to a kill leaves the answer unknown; it is not sent again.
async fn responder(
    name: String,
    client: Client,
    seed: u64,
    ledger: Arc<Ledger>,
    agents_done: Arc<AtomicBool>,
) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let filter = clarify_client::ListFilter {
        status: Some("pending".to_owned()),
        limit: Some(20),
        ..Default::default()
    };
    let started = Instant::now();
    loop {
        let done = agents_done.load(Ordering::SeqCst);
        let page = match client.list(&filter).await {
            Ok(page) => page,
            Err(e) if transient(&e) => {
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Err(e) => {
                locked(&ledger.unexpected).push(format!("list as {name}: {e}"));
                return;
            }
        };
        if page.requests.is_empty() {
            if done || started.elapsed() > 10 * PATIENCE {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        let record = &page.requests[rng.random_range(0..page.requests.len())];
        let id = record.id.clone();
        let options = record
            .questions
            .first()
            .and_then(|q| q.options.clone())
            .unwrap_or_default();
        let body = if options.is_empty() {
            json!({"text": format!("{name} says {}", rng.random_range(0..1_000_000))})
        } else {
            json!({"option": options[rng.random_range(0..options.len())].id})
        };
        match client.answer(&id, &body).await {
            Ok(clarify_client::Answered::Resolved(outcome)) => {
                locked(&ledger.answered).push(Answered {
                    id,
                    responder: name.clone(),
                    outcome: serde_json::to_value(outcome).expect("JSON"),
                });
            }
            Ok(clarify_client::Answered::Voted(record)) => locked(&ledger.unexpected)
                .push(format!("answer {id} as {name}: a vote on {}", record.id)),
            Err(ClientError::Api { status: 409, .. }) => {
                ledger.conflicts.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) if transient(&e) => {
                ledger.unknown.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => locked(&ledger.unexpected).push(format!("answer {id} as {name}: {e}")),
        }
        if !done {
            tokio::time::sleep(Duration::from_millis(rng.random_range(5..60))).await;
        }
    }
}

/// Waits for `task` at most `within`; a task still running then is a failure.
async fn finish<T>(what: &str, within: Duration, task: tokio::task::JoinHandle<T>) -> T {
    tokio::time::timeout(within, task)
        .await
        .unwrap_or_else(|_| panic!("{what} did not finish within {within:?}"))
        .unwrap_or_else(|e| panic!("{what} failed: {e}"))
}

/// Every request of the caller's tenant, by id.
async fn all_requests(api: &Api) -> BTreeMap<String, Value> {
    let mut found = BTreeMap::new();
    let mut cursor = String::new();
    loop {
        let (status, page) = api.get(&format!("/v1/requests?limit=500{cursor}")).await;
        assert_eq!(status, 200, "{page}");
        for r in page["requests"].as_array().cloned().unwrap_or_default() {
            let id = r["id"].as_str().expect("record id").to_owned();
            assert!(found.insert(id.clone(), r).is_none(), "{id} listed twice");
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = format!("&cursor={c}"),
            None => return found,
        }
    }
}

/// One event as a stream delivered it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    /// The SSE `id`: the event's sequence in the log.
    seq: u64,
    name: String,
    request: String,
}

/// Moves the complete SSE blocks at the front of `text` into `seen` (keep-alive comments and
/// anything without an `id` are skipped).
fn parse_events(text: &mut String, seen: &mut Vec<Seen>) {
    while let Some(end) = text.find("\n\n") {
        let block: String = text.drain(..end + 2).collect();
        let (mut seq, mut name, mut data) = (None, None, None);
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                seq = v.trim().parse::<u64>().ok();
            } else if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data = serde_json::from_str::<Value>(v.trim()).ok();
            }
        }
        if let (Some(seq), Some(name), Some(data)) = (seq, name, data) {
            let request = data["id"].as_str().unwrap_or_default().to_owned();
            seen.push(Seen { seq, name, request });
        }
    }
}

/// Follows the event stream of the server at `url` from the start, as a client would: whenever
/// the stream breaks (the server was killed) it connects again, with `Last-Event-ID` set to the
/// last event it saw. Returns what it saw once `expected` is set (non-zero) and that many events
/// arrived and a further second brought no more, or once [`PATIENCE`] has passed since it was
/// set (the caller then finds what is missing).
async fn follow(url: String, key: String, expected: Arc<AtomicUsize>) -> Vec<Seen> {
    let client = clarify_client::http::client().expect("an HTTP client");
    let mut seen: Vec<Seen> = Vec::new();
    let mut deadline: Option<Instant> = None;
    loop {
        let last = seen.last().map_or(0, |e| e.seq);
        let connected = client
            .get(format!("{url}/v1/events"))
            .bearer_auth(&key)
            .header("last-event-id", last.to_string())
            .send()
            .await;
        if let Ok(mut response) = connected.and_then(|r| r.error_for_status()) {
            let mut text = String::new();
            loop {
                let want = expected.load(Ordering::SeqCst);
                if want > 0 {
                    let until = *deadline.get_or_insert_with(|| Instant::now() + PATIENCE);
                    if Instant::now() > until {
                        return seen;
                    }
                }
                let enough = want > 0 && seen.len() >= want;
                let wait = Duration::from_millis(if enough { 1_000 } else { 200 });
                match tokio::time::timeout(wait, response.chunk()).await {
                    Ok(Ok(Some(chunk))) => {
                        text.push_str(&String::from_utf8_lossy(&chunk));
                        parse_events(&mut text, &mut seen);
                    }
                    Ok(Ok(None) | Err(_)) => break,
                    Err(_) if enough => return seen,
                    Err(_) => {}
                }
            }
        }
        if deadline.is_some_and(|until| Instant::now() > until) {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs the load of `plan` against `db`, killing instances as it says, then checks every
/// invariant.
async fn crash_and_check(db: &str, tenant: &str, plan: Plan) {
    let seed = std::env::var("CLARIFY_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(unique);
    println!("crash test on {tenant}: seed {seed} (replay with CLARIFY_CRASH_SEED={seed})");
    let mut rng = SmallRng::seed_from_u64(seed);
    let suffix = unique();
    let admin = create_key(db, "admin", &format!("root-{suffix}"), tenant);
    let agent_key = create_key(db, "agent", &format!("agent-{suffix}"), tenant);
    let responders: Vec<(String, String)> = (0..plan.responders)
        .map(|i| {
            let name = format!("r{i}-{suffix}");
            let key = create_key(db, "responder", &name, tenant);
            (name, key)
        })
        .collect();
    let (hook_url, hooks) = start_receiver().await;

    let mut servers = Vec::new();
    for _ in 0..plan.instances {
        servers.push(Server::start(db, &SERVE_FLAGS).await);
    }
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    let api = Api::new(&urls[0], &admin);
    let (status, secret) = api.get("/v1/webhook-secret").await;
    assert_eq!(status, 200, "{secret}");
    let secret = secret["secret"].as_str().expect("secret").to_owned();

    // A client following each instance's event stream from the start, all along.
    let expected_events = Arc::new(AtomicUsize::new(0));
    let followers: Vec<_> = urls
        .iter()
        .map(|url| tokio::spawn(follow(url.clone(), admin.clone(), expected_events.clone())))
        .collect();

    let ledger = Arc::new(Ledger::default());
    let stop = Arc::new(AtomicBool::new(false));
    let agents_done = Arc::new(AtomicBool::new(false));
    let waiters = Arc::new(Mutex::new(Vec::new()));
    let agent_client = |i: usize| Client::new(&urls[i % urls.len()], Some(agent_key.clone()));
    let agents: Vec<_> = (0..plan.agents)
        .map(|n| {
            tokio::spawn(agent(
                n,
                agent_client(n).expect("client"),
                agent_client(n + 1).expect("client"),
                plan.think.clone(),
                hook_url.clone(),
                seed.wrapping_add(n as u64),
                ledger.clone(),
                stop.clone(),
                waiters.clone(),
            ))
        })
        .collect();
    let answering: Vec<_> = responders
        .iter()
        .enumerate()
        .map(|(i, (name, key))| {
            tokio::spawn(responder(
                name.clone(),
                Client::new(&urls[i % urls.len()], Some(key.clone())).expect("client"),
                seed.wrapping_add(1_000 + i as u64),
                ledger.clone(),
                agents_done.clone(),
            ))
        })
        .collect();

    let started = Instant::now();
    // With several instances the second is the one that dies, so the first stays up to
    // check against.
    let victim = usize::from(plan.instances > 1);
    for _ in 0..plan.kills {
        tokio::time::sleep(Duration::from_millis(
            rng.random_range(plan.before_kill.clone()),
        ))
        .await;
        let port = servers[victim].port;
        servers[victim].kill();
        tokio::time::sleep(Duration::from_millis(rng.random_range(plan.down.clone()))).await;
        servers[victim] = Server::start_on(port, db, &SERVE_FLAGS).await;
    }
    tokio::time::sleep(plan.after).await;
    let load = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    for task in agents {
        finish("an agent", PATIENCE, task).await;
    }
    agents_done.store(true, Ordering::SeqCst);
    for task in answering {
        finish("a responder", PATIENCE, task).await;
    }
    let waiting: Vec<_> = std::mem::take(&mut *locked(&waiters));
    for task in waiting {
        finish("a waiting client", PATIENCE, task).await;
    }

    let unexpected = locked(&ledger.unexpected).clone();
    assert!(
        unexpected.is_empty(),
        "unexpected responses: {unexpected:#?}"
    );
    let asked = locked(&ledger.asked).clone();
    let answered = locked(&ledger.answered).clone();
    let received = locked(&ledger.received).clone();
    assert!(
        asked.len() > 100 && answered.len() > 50,
        "too little load to prove anything: {} asked, {} answered",
        asked.len(),
        answered.len()
    );

    // Acknowledged requests exist, as asked, and nothing else does.
    let stored = all_requests(&api).await;
    for (id, a) in &asked {
        let record = stored
            .get(id)
            .unwrap_or_else(|| panic!("acknowledged request {id} ({}) is lost", a.text));
        assert_eq!(record["questions"][0]["text"], a.text.as_str(), "{id}");
        assert_eq!(record["callback_url"].is_string(), a.hooked, "{id}");
    }
    assert_eq!(
        stored.len(),
        asked.len(),
        "the store holds exactly the acknowledged requests"
    );

    // One acknowledged answer per request at most, stored exactly as acknowledged.
    let mut acks: HashMap<&str, &Answered> = HashMap::new();
    for a in &answered {
        if let Some(first) = acks.insert(&a.id, a) {
            panic!(
                "{} was answered twice: by {} and by {}",
                a.id, first.responder, a.responder
            );
        }
        let record = &stored[&a.id];
        assert_eq!(record["status"], "answered", "{}", a.id);
        assert_eq!(
            record["outcome"], a.outcome,
            "{}: the stored outcome differs from the acknowledged one",
            a.id
        );
        assert_eq!(a.outcome["answered_by"], a.responder.as_str());
    }

    // Every follower saw the whole log of the tenant, each event once, in order, whatever
    // instance it followed and however often that instance died; so does a client reading it
    // from the start now.
    expected_events.store(2 * stored.len(), Ordering::SeqCst);
    let log = follow(urls[0].clone(), admin.clone(), expected_events.clone()).await;
    assert_eq!(log.len(), 2 * stored.len(), "the event log is incomplete");
    assert!(
        log.windows(2).all(|w| w[0].seq < w[1].seq),
        "the event log is out of order"
    );
    for (n, follower) in followers.into_iter().enumerate() {
        let seen = finish("a follower", 2 * PATIENCE, follower).await;
        if let Some(at) = (0..seen.len().max(log.len())).find(|&i| seen.get(i) != log.get(i)) {
            panic!(
                "the stream of instance {n} differs from the log at its event {at}: it saw \
                 {:?} where the log has {:?} ({} events seen, {} in the log)",
                seen.get(at),
                log.get(at),
                seen.len(),
                log.len()
            );
        }
    }
    let mut events: HashMap<&str, Vec<&str>> = HashMap::new();
    for e in &log {
        events.entry(&e.request).or_default().push(&e.name);
    }

    // Every request resolved once, and every waiting client got the stored outcome.
    for (id, record) in &stored {
        assert_eq!(record["status"], "answered", "{id} was left unresolved");
        assert_eq!(
            events.get(id.as_str()).cloned().unwrap_or_default(),
            ["request.created", "request.answered"],
            "{id}: created once and resolved once"
        );
        match received.get(id) {
            Some(Ok(outcome)) => assert_eq!(
                outcome, &record["outcome"],
                "{id}: the waiting client got another outcome than the stored one"
            ),
            Some(Err(e)) => panic!("the client waiting for {id} got no outcome: {e}"),
            None => panic!("no client waited for {id}"),
        }
    }

    // Every webhook queued by a resolution arrives, signed, carrying the stored outcome.
    let hooked: Vec<&String> = asked
        .iter()
        .filter(|(_, a)| a.hooked)
        .map(|(id, _)| id)
        .collect();
    let deadline = Instant::now() + PATIENCE;
    let by_request = loop {
        let mut by_request: HashMap<String, Vec<(String, bool, Value)>> = HashMap::new();
        for (headers, body) in locked(&hooks.calls).iter() {
            let delivery = header(headers, "clarify-delivery").to_owned();
            let valid = signature_valid(&secret, header(headers, "clarify-signature"), body);
            let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
            let id = body["request_id"].as_str().unwrap_or_default().to_owned();
            by_request
                .entry(id)
                .or_default()
                .push((delivery, valid, body));
        }
        let missing = hooked
            .iter()
            .filter(|id| !by_request.contains_key(id.as_str()))
            .count();
        if missing == 0 {
            break by_request;
        }
        assert!(
            Instant::now() < deadline,
            "{missing} of {} webhooks never arrived",
            hooked.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut duplicates = 0;
    for id in &hooked {
        let calls = &by_request[id.as_str()];
        let first = &calls[0].0;
        assert!(
            !first.is_empty(),
            "{id}: a delivery without Clarify-Delivery"
        );
        for (delivery, valid, body) in calls {
            assert!(valid, "{id}: a delivery with a bad signature");
            assert_eq!(delivery, first, "{id}: one resolution, one delivery id");
            assert_eq!(body, &stored[id.as_str()]["outcome"], "{id}");
        }
        duplicates += calls.len() - 1;
    }
    assert_eq!(
        by_request.len(),
        hooked.len(),
        "webhooks only for requests with a callback"
    );

    if plan.instances > 1 {
        let (code, out, err) = run(&["audit", "verify", "--db", db]);
        assert_eq!(code, 0, "the audit chain does not verify: {out}{err}");
    }

    println!(
        "crash test on {tenant}: {} instances, {} kills in {load:.1?}; {} requests acknowledged \
         ({} creates retried), {} answers acknowledged, {} conflicts, {} answers lost to a kill, \
         {} webhooks ({duplicates} delivered again after a kill)",
        plan.instances,
        plan.kills,
        asked.len(),
        ledger.retried_creates.load(Ordering::Relaxed),
        answered.len(),
        ledger.conflicts.load(Ordering::Relaxed),
        ledger.unknown.load(Ordering::Relaxed),
        hooked.len(),
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_on_sqlite_loses_nothing_acknowledged() {
    let dir = temp_dir("crash");
    crash_and_check(&sqlite_url(&dir), "default", one_instance()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_on_postgres_loses_nothing_acknowledged() {
    let Some(pg) = postgres_url() else { return };
    crash_and_check(&pg, &format!("crash-{}", unique()), one_instance()).await;
}

/// Three instances on a database of their own, so the audit chain checked at the end is theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_of_one_of_three_instances_on_postgres_loses_nothing() {
    let Some(pg) = postgres_url() else { return };
    let db = format!("clarify_test_scale_{}", unique());
    in_scratch_database(&pg, &db, |url| async move {
        crash_and_check(&url, &format!("scale-{}", unique()), three_instances()).await;
    })
    .await;
}
