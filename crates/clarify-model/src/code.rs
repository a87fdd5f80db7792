//! A request's short code: what a person types to name a request where nothing else can
//! (a text message, a phone's keypad is not one of them), `approve K7Q2X`.
//!
//! It is the last five characters of the request's id, upper-cased. Ids are 26 random Crockford
//! base32 characters, so two pending requests announced to the same person share a code about
//! once in 33 million; a channel looks a code up only among the requests it announced to the
//! person replying, so a code alone never reaches another person's request.

/// How many characters a short code has.
pub const SHORT_CODE_LEN: usize = 5;

/// The short code of request `id`: its last [`SHORT_CODE_LEN`] characters, upper-cased.
pub fn short_code(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    let start = chars.len().saturating_sub(SHORT_CODE_LEN);
    chars[start..]
        .iter()
        .flat_map(|c| c.to_uppercase())
        .collect()
}

/// `typed` read as a short code, normalised the way Crockford base32 reads it (case ignored,
/// `I` and `L` are `1`, `O` is `0`), or `None` if it cannot be one.
pub fn read_short_code(typed: &str) -> Option<String> {
    let typed = typed.trim();
    if typed.chars().count() != SHORT_CODE_LEN {
        return None;
    }
    typed
        .chars()
        .map(|c| match c.to_ascii_uppercase() {
            'I' | 'L' => Some('1'),
            'O' => Some('0'),
            c @ ('0'..='9' | 'A'..='Z') => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether `typed` (as [`read_short_code`] normalised it) is the short code of `id`.
pub fn is_short_code_of(typed: &str, id: &str) -> bool {
    read_short_code(typed).is_some_and(|c| read_short_code(&short_code(id)) == Some(c))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_is_the_ids_tail_and_reads_back_forgivingly() {
        let id = "01jq7v3x9k2m4n6p8r0s2t4v6w";
        assert_eq!(short_code(id), "T4V6W");
        assert!(is_short_code_of("t4v6w", id));
        assert!(is_short_code_of(" T4V6W ", id));
        assert!(!is_short_code_of("T4V6X", id));
        assert_eq!(read_short_code("k7qio"), Some("K7Q10".to_owned()));
        assert_eq!(read_short_code("abc"), None);
        assert_eq!(read_short_code("ab-cd"), None);
        assert_eq!(short_code("r000001"), "00001");
        assert_eq!(short_code("ab"), "AB");
    }
}
