//! What HTTP answers share, from the platforms here and from push services: how long they ask
//! a sender to wait. One reading of `Retry-After` for every sender in the workspace.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The longest wait obeyed: a longer ask is not followed beyond it, so one answer cannot park an
/// item past the retry window.
const LONGEST: Duration = Duration::from_secs(3_600);

/// How long an answer asked a sender to wait before trying again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// A length of time: `Retry-After` in delta-seconds, or a platform's own field.
    For(Duration),
    /// A moment: `Retry-After` as an HTTP date.
    Until(DateTime<Utc>),
}

impl RetryAfter {
    /// `Retry-After` in `headers`, in either of its forms, when present and readable.
    pub fn read(headers: &reqwest::header::HeaderMap) -> Option<Self> {
        let text = headers
            .get(reqwest::header::RETRY_AFTER)?
            .to_str()
            .ok()?
            .trim();
        match text.parse::<u64>() {
            Ok(seconds) => Some(Self::For(Duration::from_secs(seconds))),
            Err(_) => DateTime::parse_from_rfc2822(text)
                .ok()
                .map(|at| Self::Until(at.with_timezone(&Utc))),
        }
    }

    /// A wait in (possibly fractional) seconds a platform named in its body; `None` when it is
    /// not a finite, non-negative number.
    pub fn seconds(seconds: f64) -> Option<Self> {
        (seconds.is_finite() && seconds >= 0.0)
            .then(|| Self::For(Duration::from_secs_f64(seconds.min(LONGEST.as_secs_f64()))))
    }

    /// How long to wait from `now`: a date already past is no wait; at most an hour.
    pub fn wait(self, now: DateTime<Utc>) -> Duration {
        let wait = match self {
            Self::For(wait) => wait,
            Self::Until(at) => (at - now).to_std().unwrap_or(Duration::ZERO),
        };
        wait.min(LONGEST)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> reqwest::header::HeaderMap {
        let mut h = reqwest::header::HeaderMap::new();
        h.insert(
            reqwest::header::RETRY_AFTER,
            reqwest::header::HeaderValue::from_str(value).expect("a header value"),
        );
        h
    }

    fn retry_after(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
        RetryAfter::read(headers).map(|r| r.wait(now))
    }

    #[test]
    fn retry_after_reads_seconds_and_dates_and_caps_at_an_hour() {
        let now = DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .expect("a time")
            .with_timezone(&Utc);
        assert_eq!(
            retry_after(&headers("120"), now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            retry_after(&headers("Thu, 01 Jan 2026 00:01:30 GMT"), now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            retry_after(&headers("Wed, 31 Dec 2025 23:00:00 GMT"), now),
            Some(Duration::ZERO)
        );
        assert_eq!(
            retry_after(&headers("86400"), now),
            Some(Duration::from_secs(3_600))
        );
        assert_eq!(retry_after(&headers("soon"), now), None);
        assert_eq!(retry_after(&reqwest::header::HeaderMap::new(), now), None);
    }

    #[test]
    fn a_wait_named_in_a_body_is_fractional_and_capped() {
        let now = Utc::now();
        assert_eq!(
            RetryAfter::seconds(0.75).map(|r| r.wait(now)),
            Some(Duration::from_millis(750))
        );
        assert_eq!(
            RetryAfter::seconds(1e9).map(|r| r.wait(now)),
            Some(Duration::from_secs(3_600))
        );
        assert_eq!(RetryAfter::seconds(-1.0), None);
        assert_eq!(RetryAfter::seconds(f64::NAN), None);
    }
}
