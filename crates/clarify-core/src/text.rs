//! Small text helpers shared by validation, outcomes and replies, and by every crate that cuts
//! text to a limit ([`cut`]) or writes bytes as hex ([`hex`]): one rule each, so no surface
//! cuts or spells differently from another.

/// The option id derived from a label: lowercase ASCII letters and digits, other runs of
/// characters folded into one `-`, at most 48 characters. Empty when the label has no ASCII
/// letter or digit; the caller then numbers the option instead.
pub fn slug(label: &str) -> String {
    let mut out = String::new();
    let mut pending_dash = false;
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c.to_ascii_lowercase());
            if out.len() >= 48 {
                break;
            }
        } else {
            pending_dash = true;
        }
    }
    out
}

/// A value taken from the input, quoted for an error message. A long one is cut to its first 80
/// characters and its length given, so a message never echoes a whole oversized input back.
pub fn quoted(value: &str) -> String {
    const SHOWN: usize = 80;
    match value.char_indices().nth(SHOWN) {
        None => format!("{value:?}"),
        Some((cut, _)) => format!(
            "{:?}… ({} characters)",
            &value[..cut],
            value.chars().count()
        ),
    }
}

/// Whether `id` may serve as a question or option id: 1 to 64 ASCII letters, digits, `-`, `_`
/// or `.`, so it is safe in URLs, JSON keys and command-line flags.
pub fn is_valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A duration in words a person would use: the two largest non-zero units, e.g. `10 minutes`,
/// `1 hour 30 minutes`, `2 days`.
pub fn humanize_seconds(seconds: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (86_400, "day"),
        (3_600, "hour"),
        (60, "minute"),
        (1, "second"),
    ];
    if seconds == 0 {
        return "0 seconds".to_owned();
    }
    let mut rest = seconds;
    let mut parts = Vec::new();
    for (size, name) in UNITS {
        let n = rest / size;
        if n > 0 {
            rest -= n * size;
            parts.push(format!("{n} {name}{}", if n == 1 { "" } else { "s" }));
        }
        if parts.len() == 2 || (rest == 0 && !parts.is_empty()) {
            break;
        }
    }
    parts.join(" ")
}

/// A duration a person writes, in whole seconds: `90`, `90s`, `30m`, `30 min`, `2h`, `1d` (a
/// number, then a unit: `s`, `m`, `h`, `d`, or their words, `sec`, `min`, `minutes`, `hours`,
/// ...). The error says what was wrong, for a person.
pub fn parse_duration_seconds(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().map_err(|_| {
        format!(
            "{} is not a duration; write e.g. 30m, 2h or 1d",
            quoted(text)
        )
    })?;
    let size: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "s" | "sec" | "secs" | "second" | "seconds" => 1,
        "m" | "min" | "mins" | "minute" | "minutes" => 60,
        "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
        "d" | "day" | "days" => 86_400,
        other => {
            return Err(format!(
                "unknown unit {} in {}; use s, m, h or d",
                quoted(other),
                quoted(text)
            ));
        }
    };
    n.checked_mul(size)
        .ok_or_else(|| format!("{} is too long", quoted(text)))
}

/// `"Postgres (recommended)"` → `"Postgres"`, ignoring case; other text unchanged. A repeated
/// suffix is removed entirely, so no label keeps a "(recommended)" mark.
pub(crate) fn strip_recommended_suffix(s: &str) -> &str {
    const SUFFIX: &str = "(recommended)";
    let mut t = s.trim();
    while t.len() >= SUFFIX.len()
        && t.is_char_boundary(t.len() - SUFFIX.len())
        && t[t.len() - SUFFIX.len()..].eq_ignore_ascii_case(SUFFIX)
    {
        t = t[..t.len() - SUFFIX.len()].trim_end();
    }
    t
}

/// `text` cut to at most `max` characters: unchanged when it fits; otherwise its first `max - 1`
/// characters, without the whitespace they end in, and `…`, so a reader sees that something is
/// missing and the result still fits the limit. Characters, not bytes, are counted (what the
/// contract's limits count), so a cut never splits one.
pub fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((at, _)) if chars(text) > max => format!("{}…", text[..at].trim_end()),
        _ => text.to_owned(),
    }
}

/// Lowercase hex of `bytes`, without a formatter per byte (a hash is hexed for every event).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

/// Character count, which is what the contract's length limits count.
pub(crate) fn chars(s: &str) -> usize {
    s.chars().count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("Yes, deploy it!"), "yes-deploy-it");
        assert_eq!(slug("  --Prod  "), "prod");
        assert_eq!(slug("日本"), "");
        assert_eq!(slug("A+B"), "a-b");
    }

    #[test]
    fn cut_keeps_what_fits_and_marks_a_cut_within_the_limit() {
        assert_eq!(cut("", 5), "");
        assert_eq!(cut("", 0), "");
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("exact", 5), "exact");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
        assert_eq!(cut("abcdefghij", 1), "…");
        // Multi-byte characters count as one each and are never split.
        assert_eq!(cut("ééééé", 5), "ééééé");
        assert_eq!(cut("ééééé", 3), "éé…");
        assert_eq!(cut("日本語のテキスト", 4), "日本語…");
        // The ellipsis follows the last word kept, not the space after it.
        assert_eq!(cut("deploy the service", 8), "deploy…");
        assert!(cut(&"x".repeat(100), 32).chars().count() <= 32);
    }

    #[test]
    fn hex_is_lowercase_two_digits_a_byte() {
        assert_eq!(hex(&[]), "");
        assert_eq!(hex(&[0, 1, 0x0f, 0x10, 0xab, 0xff]), "00010f10abff");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration_seconds("30m"), Ok(1800));
        assert_eq!(parse_duration_seconds("30 min"), Ok(1800));
        assert_eq!(parse_duration_seconds("2h"), Ok(7200));
        assert_eq!(parse_duration_seconds("1d"), Ok(86_400));
        assert_eq!(parse_duration_seconds("90"), Ok(90));
        assert_eq!(parse_duration_seconds("0s"), Ok(0));
        for bad in [
            "",
            "soon",
            "m",
            "5 fortnights",
            "-5m",
            "99999999999999999999s",
        ] {
            assert!(parse_duration_seconds(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(humanize_seconds(600), "10 minutes");
        assert_eq!(humanize_seconds(3600), "1 hour");
        assert_eq!(humanize_seconds(5400), "1 hour 30 minutes");
        assert_eq!(humanize_seconds(90061), "1 day 1 hour");
        assert_eq!(humanize_seconds(1), "1 second");
        assert_eq!(humanize_seconds(0), "0 seconds");
    }
}
