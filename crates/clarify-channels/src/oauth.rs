//! OAuth 2.0 bearer tokens for the platforms whose APIs take one from a token endpoint
//! (Microsoft's Bot Connector by client credentials, Google Chat by a signed service-account
//! assertion), and the JSON calls made with them. Both report errors as
//! `{"error": {"message"}}` (the token endpoint as `error` / `error_description`) and send
//! `Retry-After` when they throttle.

use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::Mutex;

use crate::notice::SendError;
use crate::text::cut;

/// A token is renewed this long before it expires, so a call never carries one that lapses on
/// the way.
const RENEW_BEFORE: Duration = Duration::from_secs(300);

/// A bearer token and when to renew it; empty until first asked for, and after a `401`.
pub(crate) type TokenCache = Mutex<Option<(String, Instant)>>;

/// The cached token, or a new one asked for with the request `fetch` makes, kept in `cache`.
pub(crate) async fn token(
    cache: &TokenCache,
    platform: &'static str,
    fetch: impl FnOnce() -> Result<reqwest::RequestBuilder, SendError>,
) -> Result<String, SendError> {
    let mut cached = cache.lock().await;
    if let Some((token, until)) = cached.as_ref()
        && Instant::now() < *until
    {
        return Ok(token.clone());
    }
    let response = fetch()?.send().await.map_err(|e| SendError::Unreachable {
        platform,
        detail: format!("the token endpoint: {e}"),
    })?;
    let status = response.status();
    let wait = crate::http::RetryAfter::read(response.headers());
    let answer: Value = response.json().await.unwrap_or_default();
    let (Some(token), true) = (answer["access_token"].as_str(), status.is_success()) else {
        return Err(SendError::Refused {
            platform,
            status: status.as_u16(),
            detail: format!(
                "the token endpoint: {}",
                answer["error_description"]
                    .as_str()
                    .or(answer["error"].as_str())
                    .unwrap_or("no access_token")
            ),
            retry_after: wait,
        });
    };
    let lasts = Duration::from_secs(answer["expires_in"].as_u64().unwrap_or(3_600));
    *cached = Some((
        token.to_owned(),
        Instant::now() + lasts.saturating_sub(RENEW_BEFORE),
    ));
    Ok(token.to_owned())
}

/// Sends `request` (a JSON call carrying the token from `cache`) and reads its JSON answer, or
/// the refusal with the platform's message and `Retry-After`. A `401` empties `cache`: the token
/// may have been revoked early, so the next call asks for a new one.
pub(crate) async fn call(
    cache: &TokenCache,
    platform: &'static str,
    path: &str,
    request: reqwest::RequestBuilder,
) -> Result<Value, SendError> {
    let response = request.send().await.map_err(|e| SendError::Unreachable {
        platform,
        detail: format!("{path}: {e}"),
    })?;
    let status = response.status();
    let wait = crate::http::RetryAfter::read(response.headers());
    let text = response.text().await.unwrap_or_default();
    let answer: Option<Value> = serde_json::from_str(&text).ok();
    if status.is_success() {
        return Ok(answer.unwrap_or_default());
    }
    if status.as_u16() == 401 {
        *cache.lock().await = None;
    }
    let detail = answer
        .as_ref()
        .and_then(|a| a["error"]["message"].as_str().map(str::to_owned))
        .unwrap_or_else(|| cut(text.trim(), 200));
    Err(SendError::Refused {
        platform,
        status: status.as_u16(),
        detail: format!("{path}: {detail}"),
        retry_after: wait,
    })
}
