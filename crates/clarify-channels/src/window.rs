//! WhatsApp's 24-hour customer-service window, which both WhatsApp channels (through Twilio and
//! through the Cloud API) keep per number: a free-form message reaches a number only within 24
//! hours of its last message to the sender; outside it, only an approved template. Each message a
//! person sends is kept (through the server's [`Desk`]) as their number's last, under a key the
//! channel names.

use chrono::{DateTime, TimeDelta, Utc};

use crate::platform::Desk;

/// How long after a person's last message free-form messages reach them.
const WINDOW: TimeDelta = TimeDelta::hours(24);

/// Whether a number whose last message arrived at `last` is inside its window at `now`.
pub fn in_window(last: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
    last.is_some_and(|at| now - at < WINDOW)
}

/// Keeps now as the time of the last message of the number `key` names.
pub(crate) async fn wrote<D: Desk>(desk: &D, channel: &str, key: &str) {
    if let Err(e) = desk.keep(key, desk.now().to_rfc3339().into_bytes()).await {
        tracing::warn!(%channel, error = %e, "keeping a WhatsApp number's last message failed");
    }
}

/// The numbers of `numbers` inside their window now, the key of each given by `key`.
pub(crate) async fn open<D: Desk>(
    desk: &D,
    numbers: &[String],
    key: impl Fn(&str) -> String,
) -> Vec<String> {
    let now = desk.now();
    let mut open = Vec::new();
    for number in numbers {
        let last = match desk.kept(&key(number)).await {
            Ok(kept) => kept.and_then(|b| read_time(&b)),
            Err(e) => {
                tracing::warn!(error = %e, "reading a WhatsApp number's last message failed");
                None
            }
        };
        if in_window(last, now) {
            open.push(number.clone());
        }
    }
    open
}

/// A kept time, as RFC 3339 text.
fn read_time(bytes: &[u8]) -> Option<DateTime<Utc>> {
    let text = std::str::from_utf8(bytes).ok()?;
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}
