//! Text as the platforms take it: cut to a limit, escaped so nothing the agent wrote becomes
//! markup, and a message reference split into its parts. Each lives here once; a platform keeps
//! its own variant only where its wire format differs (and says why there).

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// `&`, `<` and `>` escaped as `&amp;`, `&lt;` and `&gt;`: all that Slack's mrkdwn and
/// Telegram's HTML parse mode need so that nothing the agent wrote becomes markup.
pub fn escape_markup(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to `max` characters, then made inert in `markup`: the platforms whose markup is
/// escaped character by character (Discord, Mattermost, Telegram) count what a reader sees, so
/// the escapes do not use up the limit.
pub(crate) fn fit(markup: &dyn clarify_render::Markup, text: &str, max: usize) -> String {
    markup.text(&cut(text, max))
}

/// The place and the message id of a `<place>:<id>` reference (Slack's channel and `ts`,
/// Discord's channel and message); a bare id is in `place`, the configured one.
pub(crate) fn split_ref<'a>(message_ref: &'a str, place: &'a str) -> (&'a str, &'a str) {
    message_ref.split_once(':').unwrap_or((place, message_ref))
}

/// The bytes of a hex string (either case), or `None` if it is not hex.
pub(crate) fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_short_text_and_marks_a_cut() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("abcdefghij", 5), "abcd…");
        assert_eq!(cut("ééééé", 3), "éé…");
    }
}
