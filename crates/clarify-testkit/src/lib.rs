//! Support shared by clarify's test suites (not published): where the PostgreSQL tests find their
//! database, a webhook receiver's signature check, what a model provider requires of a
//! transcript, (feature `postgres`) a database of a test's own, (feature `mcp`) an MCP test
//! client, (feature `browser`) headless Chromium over WebDriver, and the circles of an import
//! graph ([`graph`]) and the paths of Rust source ([`source`]).

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

#[cfg(feature = "browser")]
pub mod browser;
pub mod graph;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod source;

/// The PostgreSQL database to test against (`CLARIFY_TEST_POSTGRES`), or `None`, after printing
/// that the PostgreSQL tests are skipped. With `CLARIFY_REQUIRE_SERVICES=1` (as CI sets it) a
/// missing database fails the test instead.
pub fn postgres_url() -> Option<String> {
    match std::env::var("CLARIFY_TEST_POSTGRES") {
        Ok(url) if !url.trim().is_empty() => Some(url.trim().to_owned()),
        _ => {
            assert!(
                std::env::var("CLARIFY_REQUIRE_SERVICES").as_deref() != Ok("1"),
                "CLARIFY_REQUIRE_SERVICES=1 requires PostgreSQL, but CLARIFY_TEST_POSTGRES is not \
                 set; set it, e.g. postgres://postgres@127.0.0.1:5432/test"
            );
            eprintln!(
                "skipped: PostgreSQL tests need CLARIFY_TEST_POSTGRES (./scripts/test sets it)"
            );
            None
        }
    }
}

/// `url` with its database replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find('?').map_or("", |i| &tail[i..]);
    format!("{scheme}://{authority}/{database}{query}")
}

/// Runs `scenario` with the URL of a database of its own, `name`, created for it on the server
/// at `url` and dropped after it (with any connection still open to it) whatever it returns; a
/// scenario that returns its failures rather than panicking leaves nothing behind.
#[cfg(feature = "postgres")]
pub async fn in_scratch_database<T, Fut>(
    url: &str,
    name: &str,
    scenario: impl FnOnce(String) -> Fut,
) -> T
where
    Fut: std::future::Future<Output = T>,
{
    use sqlx::Connection;
    let mut admin = sqlx::PgConnection::connect(url)
        .await
        .unwrap_or_else(|e| panic!("connecting to {url}: {e}"));
    sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("creating the database {name}: {e}"));
    let outcome = scenario(with_database(url, name)).await;
    sqlx::raw_sql(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .unwrap_or_else(|e| panic!("dropping the database {name}: {e}"));
    outcome
}

/// Checks a `Clarify-Signature: t=<unix>,v1=<hex>` header against `secret` and the raw `body`,
/// the way a webhook receiver would.
pub fn signature_valid(secret: &str, signature: &str, body: &[u8]) -> bool {
    let Some((t, v1)) = signature
        .split_once(',')
        .and_then(|(t, v1)| Some((t.strip_prefix("t=")?, v1.strip_prefix("v1=")?)))
    else {
        return false;
    };
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(t.as_bytes());
    mac.update(b".");
    mac.update(body);
    let expected: String = mac
        .finalize()
        .into_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    expected == v1
}

/// What a provider requires of the messages it is sent: every tool call answered by exactly one
/// result right after it (before the next non-tool message), every result answering a call, and
/// only the five chat roles (no clarify protocol messages).
pub fn assert_valid_for_provider(messages: &[Value]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        let role = m["role"].as_str().unwrap_or_default();
        assert!(
            ["system", "developer", "user", "assistant", "tool"].contains(&role),
            "a {role:?} message reached the model: {m}"
        );
        if role == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or_default();
            assert!(
                open.iter().any(|o| o == id),
                "result {id} answers no open call: {messages:#?}"
            );
            open.retain(|o| o != id);
            continue;
        }
        assert!(open.is_empty(), "calls {open:?} have no result before {m}");
        if let Some(list) = m["tool_calls"].as_array() {
            open = list
                .iter()
                .map(|c| c["id"].as_str().unwrap_or_default().to_owned())
                .collect();
        }
    }
    assert!(
        open.is_empty(),
        "calls {open:?} end the transcript without a result"
    );
}
