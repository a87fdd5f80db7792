//! Small text helpers shared by validation, outcomes and replies.

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
    fn durations() {
        assert_eq!(humanize_seconds(600), "10 minutes");
        assert_eq!(humanize_seconds(3600), "1 hour");
        assert_eq!(humanize_seconds(5400), "1 hour 30 minutes");
        assert_eq!(humanize_seconds(90061), "1 day 1 hour");
        assert_eq!(humanize_seconds(1), "1 second");
        assert_eq!(humanize_seconds(0), "0 seconds");
    }
}
