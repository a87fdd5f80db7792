//! A typed HTTP client for a clarify server.
//!
//! Used by the `clarify` command's client commands, by the MCP server's remote mode, and by Rust
//! agents that talk to a server rather than opening a store. Records and outcomes are read into
//! the types the server writes them from ([`clarify_model::wire`], re-exported here as [`wire`]),
//! which keep the fields they do not know, so a newer server's extra fields pass through
//! untouched.
//!
//! Grants (`session` and `always` approvals remembered by the server) are checked, listed and
//! revoked with [`Client::check_grant`], [`Client::grants`] and [`Client::revoke_grant`].
//!
//! [`Client::wait_resolved`] long-polls until the request is resolved, reconnecting with backoff
//! when the server is briefly unreachable (a restart, another instance taking over).

pub mod http;

use std::time::Duration;

pub use clarify_model::wire::{self, OutcomeBody, RecordBody};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// What went wrong talking to the server.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("invalid server URL {url:?}: {reason}")]
    InvalidUrl { url: String, reason: String },
    #[error("{}", unreachable_message(url, detail, *sent))]
    Unreachable {
        url: String,
        detail: String,
        /// Whether the call may have reached the server: false when no connection was made.
        sent: bool,
    },
    /// The server refused the call; `code` is its stable error code.
    #[error("{message}")]
    Api {
        status: u16,
        code: String,
        message: String,
        /// On `409 already_resolved`: the request as resolved first.
        record: Option<Box<RecordBody>>,
    },
    #[error("the server sent something unexpected: {0}")]
    Protocol(String),
}

impl ClientError {
    /// The API error code, when the server refused the call.
    pub fn code(&self) -> Option<&str> {
        match self {
            Self::Api { code, .. } => Some(code),
            _ => None,
        }
    }
}

/// What an answer came to: the outcome, or, on a quorum request still short of its approvals,
/// the request with the vote counted (`202`).
#[derive(Debug, Clone, PartialEq)]
pub enum Answered {
    Resolved(Box<OutcomeBody>),
    Voted(Box<RecordBody>),
}

/// Filters of a list call.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub status: Option<String>,
    pub session: Option<String>,
    pub agent: Option<String>,
    pub tag: Option<String>,
    pub limit: Option<usize>,
    pub cursor: Option<String>,
}

/// One page of requests, newest first.
#[derive(Debug, Clone)]
pub struct Page {
    pub requests: Vec<RecordBody>,
    pub next_cursor: Option<String>,
}

/// A client of one server, with one key.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Client {
    /// A client of the server at `base_url` (e.g. `http://127.0.0.1:7420`).
    pub fn new(base_url: &str, token: Option<String>) -> Result<Self, ClientError> {
        let parsed = url::Url::parse(base_url).map_err(|e| ClientError::InvalidUrl {
            url: base_url.to_owned(),
            reason: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(ClientError::InvalidUrl {
                url: base_url.to_owned(),
                reason: "use an http:// or https:// URL".to_owned(),
            });
        }
        let http = http::builder()
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("clarify-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ClientError::Protocol(e.to_string()))?;
        Ok(Self {
            base: base_url.trim_end_matches('/').to_owned(),
            token: token.filter(|t| !t.is_empty()),
            http,
        })
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// Creates a request from any accepted body shape; returns the record and whether it is new
    /// (false when an idempotency key or `dedupe` returned an existing one).
    pub async fn create(&self, body: &Value) -> Result<(RecordBody, bool), ClientError> {
        let (status, value) = self
            .send(reqwest::Method::POST, "/v1/requests", &[], Some(body), None)
            .await?;
        Ok((read(value)?, status == 201))
    }

    /// Creates a request like [`Client::create`], and survives the server going away after the
    /// call may have reached it (a restart, a proxy timing out, a `503` while the store is out of
    /// reach): it sends the call again, backing off, for up to `within`. The body gets an
    /// `idempotency_key` unless it has one, so however many attempts reached the server, it
    /// keeps one request. Nothing answering the first attempt is an error at once, since no
    /// server was seen. `on_retry` hears about each failed attempt that is retried.
    pub async fn create_retrying(
        &self,
        body: &Value,
        within: Duration,
        mut on_retry: impl FnMut(&ClientError),
    ) -> Result<(RecordBody, bool), ClientError> {
        let mut body = body.clone();
        if let Some(fields) = body.as_object_mut()
            && fields.get("idempotency_key").is_none_or(Value::is_null)
        {
            fields.insert(
                "idempotency_key".to_owned(),
                Value::String(idempotency_key()),
            );
        }
        let deadline = tokio::time::Instant::now() + within;
        let mut backoff = Duration::from_millis(200);
        let mut seen = false;
        loop {
            let error = match self.create(&body).await {
                Ok(created) => return Ok(created),
                Err(e) => e,
            };
            seen |= match &error {
                ClientError::Unreachable { sent, .. } => *sent,
                ClientError::Api { status, .. } => matches!(status, 502..=504),
                _ => false,
            };
            let transient = match &error {
                ClientError::Unreachable { .. } => true,
                ClientError::Api { status, .. } => matches!(status, 502..=504),
                _ => false,
            };
            if !(seen && transient) || tokio::time::Instant::now() + backoff > deadline {
                return Err(error);
            }
            on_retry(&error);
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }

    /// The name of the caller's key (`GET /v1/session`).
    pub async fn whoami(&self) -> Result<String, ClientError> {
        let (_, body) = self
            .send(reqwest::Method::GET, "/v1/session", &[], None, None)
            .await?;
        Ok(body["name"].as_str().unwrap_or_default().to_owned())
    }

    pub async fn get(&self, id: &str) -> Result<RecordBody, ClientError> {
        let path = format!("/v1/requests/{}", segment(id));
        read(
            self.send(reqwest::Method::GET, &path, &[], None, None)
                .await?
                .1,
        )
    }

    pub async fn list(&self, filter: &ListFilter) -> Result<Page, ClientError> {
        let mut query = Vec::new();
        for (name, value) in [
            ("status", &filter.status),
            ("session", &filter.session),
            ("agent", &filter.agent),
            ("tag", &filter.tag),
            ("cursor", &filter.cursor),
        ] {
            if let Some(v) = value {
                query.push((name, v.clone()));
            }
        }
        if let Some(limit) = filter.limit {
            query.push(("limit", limit.to_string()));
        }
        let (_, value) = self
            .send(reqwest::Method::GET, "/v1/requests", &query, None, None)
            .await?;
        #[derive(serde::Deserialize)]
        struct PageBody {
            requests: Vec<RecordBody>,
            next_cursor: Option<String>,
        }
        let page: PageBody = read(value)?;
        Ok(Page {
            requests: page.requests,
            next_cursor: page.next_cursor,
        })
    }

    /// The caller's key as the server sees it (`GET /v1/session`): `name`, `role`, `tenant`.
    pub async fn session(&self) -> Result<Value, ClientError> {
        let (_, body) = self
            .send(reqwest::Method::GET, "/v1/session", &[], None, None)
            .await?;
        Ok(body)
    }

    /// The caller tenant's figures from `from` to `to` (`YYYY-MM-DD`), `GET /v1/insights`.
    pub async fn insights(&self, from: &str, to: &str) -> Result<Value, ClientError> {
        let query = [("from", from.to_owned()), ("to", to.to_owned())];
        let (_, body) = self
            .send(reqwest::Method::GET, "/v1/insights", &query, None, None)
            .await?;
        Ok(body)
    }

    /// At most `limit` of the caller tenant's audit events after sequence number `after`,
    /// oldest first (`GET /v1/audit`, admins): `{"events", "next_after"}`.
    pub async fn audit(&self, after: u64, limit: u32) -> Result<Value, ClientError> {
        let query = [("after", after.to_string()), ("limit", limit.to_string())];
        let (_, body) = self
            .send(reqwest::Method::GET, "/v1/audit", &query, None, None)
            .await?;
        Ok(body)
    }

    /// Answers (or skips, with `{"skip": true}`) a request: its outcome, or on a quorum
    /// request still short of its approvals, the request with the vote counted.
    pub async fn answer(&self, id: &str, body: &Value) -> Result<Answered, ClientError> {
        let path = format!("/v1/requests/{}/answer", segment(id));
        let (status, value) = self
            .send(reqwest::Method::POST, &path, &[], Some(body), None)
            .await?;
        Ok(if status == 202 {
            Answered::Voted(Box::new(read(value)?))
        } else {
            Answered::Resolved(Box::new(read(value)?))
        })
    }

    /// Records the answer (or skip) this key's MCP client took from its user for a request this
    /// key created, with the `client_answer_token` the creating response carried; returns the
    /// outcome (`answered_via: "mcp"`).
    pub async fn client_answer(
        &self,
        id: &str,
        token: &str,
        body: &Value,
    ) -> Result<OutcomeBody, ClientError> {
        let path = format!("/v1/requests/{}/client-answer", segment(id));
        let headers = [("x-clarify-client-answer", token)];
        read(
            self.send_with(
                reqwest::Method::POST,
                &path,
                &[],
                &headers,
                Some(body),
                None,
            )
            .await?
            .1,
        )
    }

    pub async fn cancel(&self, id: &str) -> Result<RecordBody, ClientError> {
        let path = format!("/v1/requests/{}/cancel", segment(id));
        let empty = Value::Object(serde_json::Map::new());
        read(
            self.send(reqwest::Method::POST, &path, &[], Some(&empty), None)
                .await?
                .1,
        )
    }

    /// Moves a pending request's deadline `by` later (`"30m"`, `"2h"`, `"1d"`, or seconds), as
    /// someone who may answer it; the record with its new `expires_at`.
    pub async fn extend(&self, id: &str, by: &str) -> Result<RecordBody, ClientError> {
        let path = format!("/v1/requests/{}/extend", segment(id));
        let body = serde_json::json!({ "by": by });
        read(
            self.send(reqwest::Method::POST, &path, &[], Some(&body), None)
                .await?
                .1,
        )
    }

    /// One long-poll: the record once resolved, or still pending after `seconds` (at most 60).
    pub async fn wait(&self, id: &str, seconds: u64) -> Result<RecordBody, ClientError> {
        let path = format!("/v1/requests/{}/wait", segment(id));
        let seconds = seconds.min(60);
        let query = [("timeout_seconds", seconds.to_string())];
        let timeout = Duration::from_secs(seconds + 15);
        read(
            self.send(reqwest::Method::GET, &path, &query, None, Some(timeout))
                .await?
                .1,
        )
    }

    /// Long-polls until the request is resolved, reconnecting with backoff (up to 5 s apart)
    /// while the server is unreachable. `on_retry` hears about each reconnection.
    pub async fn wait_resolved(
        &self,
        id: &str,
        mut on_retry: impl FnMut(&ClientError),
    ) -> Result<RecordBody, ClientError> {
        let mut backoff = Duration::from_millis(200);
        loop {
            match self.wait(id, 60).await {
                Ok(record) if record.is_resolved() => return Ok(record),
                Ok(_) => backoff = Duration::from_millis(200),
                Err(e @ (ClientError::Unreachable { .. } | ClientError::Protocol(_))) => {
                    on_retry(&e);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(ClientError::Api { status, .. })
                    if status == 503 || status == 502 || status == 504 =>
                {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Whether a grant lets `action` (`{"name", "arguments"}`) run in `session` without asking:
    /// the server's `{"granted", "grant"}`.
    pub async fn check_grant(
        &self,
        action: &Value,
        session: Option<&str>,
    ) -> Result<Value, ClientError> {
        let mut body = serde_json::Map::new();
        body.insert("action".to_owned(), action.clone());
        if let Some(session) = session {
            body.insert("session".to_owned(), Value::from(session));
        }
        Ok(self
            .send(
                reqwest::Method::POST,
                "/v1/grants/check",
                &[],
                Some(&Value::Object(body)),
                None,
            )
            .await?
            .1)
    }

    /// What the server's rules decide for a call (`POST /v1/policy/check`): `body` is
    /// `{"action", "session"?, "agent"?, "tags"?, "cwd"?, "on_behalf_of"?}`; the answer
    /// `{"decision": "allow" | "deny" | "ask", "rule", "reason", "ask", "errors"}`.
    pub async fn check_policy(&self, body: &Value) -> Result<Value, ClientError> {
        Ok(self
            .send(
                reqwest::Method::POST,
                "/v1/policy/check",
                &[],
                Some(body),
                None,
            )
            .await?
            .1)
    }

    /// The tenant's grants, oldest first; with `session`, only that session's.
    pub async fn grants(&self, session: Option<&str>) -> Result<Vec<Value>, ClientError> {
        let query: Vec<(&str, String)> = session
            .map(|s| ("session", s.to_owned()))
            .into_iter()
            .collect();
        let (_, value) = self
            .send(reqwest::Method::GET, "/v1/grants", &query, None, None)
            .await?;
        value["grants"]
            .as_array()
            .cloned()
            .ok_or_else(|| ClientError::Protocol("a grant list without `grants`".to_owned()))
    }

    /// Revokes grant `id`; returns it as it was.
    pub async fn revoke_grant(&self, id: &str) -> Result<Value, ClientError> {
        let path = format!("/v1/grants/{}", segment(id));
        Ok(self
            .send(reqwest::Method::DELETE, &path, &[], None, None)
            .await?
            .1)
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<(u16, Value), ClientError> {
        self.send_with(method, path, query, &[], body, timeout)
            .await
    }

    /// [`Client::send`] with extra request headers.
    async fn send_with(
        &self,
        method: reqwest::Method,
        path: &str,
        query: &[(&str, String)],
        headers: &[(&str, &str)],
        body: Option<&Value>,
        timeout: Option<Duration>,
    ) -> Result<(u16, Value), ClientError> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url).query(query);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request = request.timeout(timeout.unwrap_or(Duration::from_secs(30)));
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        let status = response.status().as_u16();
        let text = response.text().await.map_err(|e| self.unreachable(&e))?;
        let value: Value = serde_json::from_str(&text).map_err(|_| {
            ClientError::Protocol(format!(
                "HTTP {status} with a body that is not JSON; is {} a clarify server?",
                self.base
            ))
        })?;
        if (200..300).contains(&status) {
            return Ok((status, value));
        }
        let code = value["error"]["code"]
            .as_str()
            .unwrap_or("unknown")
            .to_owned();
        let mut message = value["error"]["message"]
            .as_str()
            .unwrap_or("the server refused the call")
            .to_owned();
        if status == 401 {
            message.push_str("; set CLARIFY_TOKEN to an API key");
            // The server's own message may already say how to make one.
            if !message.contains("clarify keys create") {
                message.push_str(" (create one with `clarify keys create`)");
            }
        }
        // The record a conflict carries is a courtesy: one this client cannot read is left out.
        let record = value
            .get("record")
            .filter(|r| r.is_object())
            .and_then(|r| serde_json::from_value(r.clone()).ok())
            .map(Box::new);
        Err(ClientError::Api {
            status,
            code,
            message,
            record,
        })
    }

    fn unreachable(&self, e: &reqwest::Error) -> ClientError {
        let detail = if e.is_timeout() {
            TIMED_OUT.to_owned()
        } else if e.is_connect() {
            "connection refused".to_owned()
        } else {
            e.to_string()
        };
        ClientError::Unreachable {
            url: self.base.clone(),
            detail,
            sent: !e.is_connect(),
        }
    }
}

const TIMED_OUT: &str = "timed out";

/// A body the server sent, read into the type it is written from.
fn read<T: DeserializeOwned>(value: Value) -> Result<T, ClientError> {
    serde_json::from_value(value).map_err(|e| {
        ClientError::Protocol(format!(
            "the server sent a body this client cannot read: {e}"
        ))
    })
}

fn unreachable_message(url: &str, detail: &str, sent: bool) -> String {
    if sent && detail == TIMED_OUT {
        format!("{url} did not reply in time")
    } else if sent {
        format!("the connection to {url} broke before the reply came ({detail})")
    } else {
        format!(
            "nothing answers at {url} ({detail}); is `clarify serve` running there? Set CLARIFY_URL to its address"
        )
    }
}

/// A fresh idempotency key: 128 random bits, in hex.
fn idempotency_key() -> String {
    format!("clarify-{:032x}", rand::random::<u128>())
}

/// A request id as one URL path segment.
fn segment(id: &str) -> String {
    url::form_urlencoded::byte_serialize(id.as_bytes()).collect()
}
