//! What the platforms' HTTP answers share: how long they ask a sender to wait.

use std::time::Duration;

/// `Retry-After` in seconds (the only form the platforms here send), if present and sane.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds.min(3_600)))
}
