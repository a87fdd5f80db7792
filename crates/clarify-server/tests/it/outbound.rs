//! The outbound guard on webhooks: what a `callback_url` may reach. Every address form the
//! issue names is refused by default (a `422` at creation naming the rule) and delivered to
//! when `outbound_allow` allows it; a name that resolves to a refused address by the time of
//! delivery is refused then, recorded and never retried; a receiver's redirect is not followed.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::response::IntoResponse;
use chrono::TimeDelta;
use clarify_server::shared::outbound::Lookup;
use clarify_server::{Config, OutboundGuard};
use clarify_store::StoreOptions;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

const PATIENCE: Duration = Duration::from_secs(5);

/// A receiver on 127.0.0.1 that counts the POSTs it gets and answers each with `status`, and
/// `location` when given.
struct Receiver {
    port: u16,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Receiver {
    async fn start(status: AxumStatus, location: Option<String>) -> Self {
        let hits = Arc::new(AtomicUsize::new(0));
        let counted = hits.clone();
        let app = axum::Router::new().fallback(move |_: HeaderMap| {
            let counted = counted.clone();
            let location = location.clone();
            async move {
                counted.fetch_add(1, Ordering::SeqCst);
                match location {
                    Some(to) => (status, [("location", to)]).into_response(),
                    None => status.into_response(),
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { port, hits, task }
    }

    async fn ok() -> Self {
        Self::start(AxumStatus::OK, None).await
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A server whose guard allows `allow` (and resolves names with `lookup`, when given).
async fn server(allow: &[&str], lookup: Option<Arc<dyn Lookup>>) -> TestServer {
    let mut guard = OutboundGuard::allowing(allow).expect("valid entries");
    if let Some(lookup) = lookup {
        guard = guard.with_lookup(lookup);
    }
    TestServer::build("memory:", StoreOptions::default(), move |c: &mut Config| {
        c.outbound = guard;
        c.webhooks.first_backoff = TimeDelta::milliseconds(50);
        c.webhooks.poll = Duration::from_millis(50);
    })
    .await
}

/// Creates a request with `callback_url` and answers it; its id.
async fn ask_and_answer(s: &TestServer, callback_url: &str) -> String {
    let record = s
        .ask(
            &s.admin,
            json!({"question": "Go?", "callback_url": callback_url}),
        )
        .await;
    let id = record["id"].as_str().expect("id").to_owned();
    let (status, body) = s
        .post(
            &format!("/v1/requests/{id}/answer"),
            &s.admin,
            json!({"text": "yes"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    id
}

/// The webhook delivery of request `id`, once it is no longer pending.
async fn settled(s: &TestServer, id: &str) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let (status, body) = s
            .get(&format!("/v1/requests/{id}/deliveries"), &s.admin)
            .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let delivery = &body["deliveries"][0];
        if delivery.is_object() && delivery["status"] != "pending" {
            return delivery.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the delivery of {id} is still pending: {body}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn every_spelling_of_an_internal_address_is_refused_at_creation() {
    let s = server(&[], None).await;
    for (url, named) in [
        ("http://127.0.0.1/", "(loopback 127.0.0.1)"),
        ("http://[::1]/", "(loopback ::1)"),
        (
            "http://169.254.169.254/latest/meta-data/",
            "(link-local 169.254.169.254)",
        ),
        ("http://10.0.0.1/", "(private 10.0.0.1)"),
        ("http://192.168.1.20:8080/", "(private 192.168.1.20)"),
        ("http://100.64.0.1/", "(shared (CGNAT) 100.64.0.1)"),
        ("http://0.0.0.0/", "(unspecified 0.0.0.0)"),
        ("http://[fd12::1]/", "(private fd12::1)"),
        ("http://224.0.0.1/", "(multicast 224.0.0.1)"),
        // Decimal and octal IPv4 are read as the address they spell.
        ("http://2130706433/", "(loopback 127.0.0.1)"),
        ("http://0177.0.0.1/", "(loopback 127.0.0.1)"),
        ("http://[::ffff:127.0.0.1]/", "(loopback ::ffff:127.0.0.1)"),
        (
            "http://[::ffff:169.254.169.254]/",
            "(link-local ::ffff:169.254.169.254)",
        ),
        // A name is resolved, and refused when every address it has is.
        (
            "http://localhost:5432/",
            "(localhost resolves to a loopback address)",
        ),
    ] {
        let (status, body) = s
            .post(
                "/v1/requests",
                &s.admin,
                json!({"question": "Go?", "callback_url": url}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{url}: {body}");
        assert_eq!(code(&body), "address_not_allowed", "{url}");
        let message = body["error"]["message"].as_str().expect("a message");
        assert_eq!(
            message,
            format!(
                "callback_url: address not allowed {named}; allow it with [server] outbound_allow"
            ),
            "{url}"
        );
        assert_eq!(body["error"]["field"], "callback_url");
    }
    let (_, page) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(page["requests"], json!([]), "nothing was created");
}

#[tokio::test]
async fn every_spelling_of_an_allowed_address_is_delivered_to() {
    let receiver = Receiver::ok().await;
    let port = receiver.port;
    let s = server(&["127.0.0.0/8"], None).await;
    let urls = [
        format!("http://127.0.0.1:{port}/hook"),
        format!("http://2130706433:{port}/hook"),
        format!("http://0177.0.0.1:{port}/hook"),
        format!("http://127.1:{port}/hook"),
        // localhost may resolve to ::1 as well, which 127.0.0.0/8 does not allow: its
        // 127.0.0.1 is what is connected to.
        format!("http://localhost:{port}/hook"),
    ];
    for url in &urls {
        let id = ask_and_answer(&s, url).await;
        let delivery = settled(&s, &id).await;
        assert_eq!(delivery["status"], "delivered", "{url}: {delivery}");
        assert_eq!(delivery["attempts"][0]["status_code"], 200, "{url}");
    }
    assert_eq!(receiver.hits(), urls.len());
    // An allowed range does not allow what is outside it.
    let (status, body) = s
        .post(
            "/v1/requests",
            &s.admin,
            json!({"question": "Go?", "callback_url": "http://[::1]/"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");

    // The other forms, each allowed by its own entry, are accepted at creation.
    let s = server(
        &[
            "::1",
            "169.254.169.254",
            "10.0.0.0/8",
            "0.0.0.0/32",
            "::ffff:127.0.0.1/128",
        ],
        None,
    )
    .await;
    for url in [
        "http://[::1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://0.0.0.0/",
        "http://[::ffff:127.0.0.1]/",
    ] {
        let (status, body) = s
            .post(
                "/v1/requests",
                &s.admin,
                json!({"question": "Go?", "callback_url": url}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{url}: {body}");
    }
}

/// A name server that answers each name with the next of its answers (the last one for good):
/// a name that is public when checked and internal when connected to.
#[derive(Debug)]
struct Rebinding {
    answers: Mutex<HashMap<String, Vec<IpAddr>>>,
}

impl Lookup for Rebinding {
    fn lookup(
        &self,
        host: &str,
    ) -> Pin<Box<dyn std::future::Future<Output = io::Result<Vec<IpAddr>>> + Send>> {
        let mut answers = self.answers.lock().unwrap_or_else(|p| p.into_inner());
        let answer = match answers.get_mut(host) {
            Some(list) if list.len() > 1 => Ok(vec![list.remove(0)]),
            Some(list) => Ok(list.clone()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such name")),
        };
        Box::pin(async move { answer })
    }
}

#[tokio::test]
async fn a_name_resolving_to_a_refused_address_at_delivery_is_refused_and_not_retried() {
    let receiver = Receiver::ok().await;
    let rebinding = Rebinding {
        answers: Mutex::new(HashMap::from([(
            "hooks.example".to_owned(),
            vec![
                "93.184.216.34".parse().expect("ip"),
                "127.0.0.1".parse().expect("ip"),
            ],
        )])),
    };
    let s = server(&[], Some(Arc::new(rebinding))).await;
    let url = format!("http://hooks.example:{}/hook", receiver.port);
    // Public when the request is created; loopback when the delivery connects.
    let id = ask_and_answer(&s, &url).await;
    let delivery = settled(&s, &id).await;
    assert_eq!(delivery["status"], "failed", "{delivery}");
    let attempts = delivery["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 1, "never retried: {delivery}");
    assert_eq!(
        attempts[0]["error"],
        "refused: address not allowed (hooks.example resolves to a loopback address)"
    );
    assert_eq!(attempts[0]["status_code"], json!(null));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.hits(), 0, "nothing reached the receiver");
    let (_, again) = s
        .get(&format!("/v1/requests/{id}/deliveries"), &s.admin)
        .await;
    assert_eq!(
        again["deliveries"][0]["attempts"].as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn an_address_allowed_when_created_and_refused_when_delivered_is_refused() {
    let receiver = Receiver::ok().await;
    let url = format!("http://127.0.0.1:{}/hook", receiver.port);
    let allowing = server(&["127.0.0.0/8"], None).await;
    let id = allowing
        .ask(
            &allowing.admin,
            json!({"question": "Go?", "callback_url": url}),
        )
        .await["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // The next server on this store no longer allows it.
    let (store, _) = allowing.halt().await;
    let s = TestServer::on_store(store, |c| {
        c.webhooks.poll = Duration::from_millis(50);
    })
    .await;
    s.post(
        &format!("/v1/requests/{id}/answer"),
        &s.admin,
        json!({"text": "yes"}),
    )
    .await;
    let delivery = settled(&s, &id).await;
    assert_eq!(delivery["status"], "failed", "{delivery}");
    assert_eq!(
        delivery["attempts"][0]["error"],
        "refused: address not allowed (loopback 127.0.0.1)"
    );
    assert_eq!(receiver.hits(), 0);
}

#[tokio::test]
async fn a_redirect_to_a_refused_address_is_not_followed() {
    // The inner receiver is on 127.0.0.1, which only the name `localhost` is allowed to reach.
    let inner = Receiver::ok().await;
    let outer = Receiver::start(
        AxumStatus::TEMPORARY_REDIRECT,
        Some(format!("http://127.0.0.1:{}/hook", inner.port)),
    )
    .await;
    let s = server(&["localhost"], None).await;
    let id = ask_and_answer(&s, &format!("http://localhost:{}/hook", outer.port)).await;
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let attempt = loop {
        let (_, body) = s
            .get(&format!("/v1/requests/{id}/deliveries"), &s.admin)
            .await;
        let attempt = &body["deliveries"][0]["attempts"][0];
        if attempt.is_object() {
            break attempt.clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no attempt: {body}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(attempt["status_code"], 307, "{attempt}");
    assert_eq!(
        attempt["error"],
        "the receiver answered 307 Temporary Redirect"
    );
    assert!(outer.hits() >= 1);
    assert_eq!(inner.hits(), 0, "the redirect was followed");
}

#[tokio::test]
async fn a_refused_callback_url_through_mcp_is_refused_before_anything_is_stored() {
    let s = server(&[], None).await;
    let key = s
        .key(clarify_store::Role::Agent, "mcp-bot", "default")
        .await;
    let transport = rmcp::transport::StreamableHttpClientTransport::with_client(
        clarify_client::http::client().expect("an HTTP client"),
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("{}/mcp", s.url),
        )
        .auth_header(key),
    );
    let agent = clarify_testkit::mcp::McpAgent::connect_with(
        transport,
        rmcp::model::ProtocolVersion::V_2025_06_18,
    )
    .await;
    let refused = agent
        .call(
            "ask_human_async",
            json!({"question": "Go?", "callback_url": "http://169.254.169.254/latest/meta-data/"}),
        )
        .await;
    assert_eq!(refused.is_error, Some(true));
    let text = clarify_testkit::mcp::text(&refused);
    assert!(
        text.contains(
            "callback_url: address not allowed (link-local 169.254.169.254); allow it with \
             [server] outbound_allow"
        ),
        "{text}"
    );
    let (_, page) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(page["requests"], json!([]), "nothing was created");
}
