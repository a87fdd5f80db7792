//! Replies typed into a text message (SMS, WhatsApp), which name no announcement: the person
//! replies `2`, `approve`, or `deny K7Q2X not now`, and the channel finds the request by the
//! short code when the reply names one, otherwise the newest request announced on the channel
//! that is still pending and that person may answer ([`Target::Latest`]). `extend 30m K7Q2X`
//! moves that request's deadline instead ([`Act::Extend`]).

use clarify_model::read_short_code;

use crate::act::Act;
use crate::platform::{Desk, Done, Refusal, Target};

/// `text` split into the short code it names (its first or last word, checked in that order
/// after the verb: `approve K7Q2X`, `K7Q2X approve`, `deny K7Q2X not now`) and the reply
/// without it; `None` when no word can be a code. A word that can be a code may still be part
/// of the answer (`deny check first`): [`answer_text`] tries the code and falls back to the
/// whole text.
pub fn split_code(text: &str) -> Option<(String, String)> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let without = |i: usize| {
        let mut rest = words.clone();
        rest.remove(i);
        rest.join(" ")
    };
    // The code follows the verb (`deny K7Q2X not now`), ends the reply (`approve K7Q2X`) or
    // starts it (`K7Q2X 2`).
    let candidates = [1, words.len().saturating_sub(1), 0];
    candidates
        .into_iter()
        .filter(|&i| i < words.len() && words.len() > 1)
        .find_map(|i| read_short_code(words[i]).map(|code| (code, without(i))))
}

/// Answers `text`, typed by `user` (the platform's id of them: a phone number) on `channel`:
/// by the request whose short code it names, or the newest pending one announced on the
/// channel that `user` may answer.
pub async fn answer_text<D: Desk>(
    desk: &D,
    channel: &str,
    user: &str,
    text: &str,
) -> Result<Done, Refusal> {
    if let Some(extension) = read_extend(text) {
        let (code, seconds) = extension.map_err(Refusal::new)?;
        let target = Target::Latest {
            from: user.to_owned(),
            code,
        };
        return desk
            .act(channel, user, target, Act::Extend { seconds })
            .await;
    }
    if let Some((code, rest)) = split_code(text) {
        let named = Target::Latest {
            from: user.to_owned(),
            code: Some(code),
        };
        if let Ok(record) = desk.find(channel, named).await {
            let target = Target::Request(record.id.clone());
            return desk.act(channel, user, target, Act::Typed(rest)).await;
        }
    }
    let newest = Target::Latest {
        from: user.to_owned(),
        code: None,
    };
    desk.act(channel, user, newest, Act::Typed(text.trim().to_owned()))
        .await
}

/// `extend 30m K7Q2X` (or `extend K7Q2X 30m`, or `extend 2h` for the newest request): the
/// short code named, if any, and the seconds; `None` when `text` does not start with
/// `extend`, and an error for a person when the rest is not a duration.
pub fn read_extend(text: &str) -> Option<Result<(Option<String>, u64), String>> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let (verb, rest) = words.split_first()?;
    if !verb.eq_ignore_ascii_case("extend") {
        return None;
    }
    let duration = |words: &[&str]| clarify_core::text::parse_duration_seconds(&words.join(""));
    // A unit can read as a code (`hours` as `H0URS`), so the whole rest is tried first.
    if let Ok(seconds) = duration(rest) {
        return Some(Ok((None, seconds)));
    }
    let with_code = [rest.len().saturating_sub(1), 0]
        .into_iter()
        .filter(|_| rest.len() > 1)
        .find_map(|i| {
            let code = read_short_code(rest[i])?;
            let mut others = rest.to_vec();
            others.remove(i);
            duration(&others).ok().map(|seconds| (Some(code), seconds))
        });
    Some(match with_code {
        Some(found) => Ok(found),
        None => duration(rest).map(|seconds| (None, seconds)).map_err(|_| {
            "To extend a request, reply with how long and its code, e.g. extend 30m K7Q2X."
                .to_owned()
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extend_reads_a_duration_and_a_code_in_either_order() {
        assert_eq!(
            read_extend("extend 30m k7q2x"),
            Some(Ok((Some("K7Q2X".into()), 1_800)))
        );
        assert_eq!(
            read_extend("Extend K7Q2X 2h"),
            Some(Ok((Some("K7Q2X".into()), 7_200)))
        );
        assert_eq!(
            read_extend("extend 30 min K7Q2X"),
            Some(Ok((Some("K7Q2X".into()), 1_800)))
        );
        assert_eq!(read_extend("extend 1d"), Some(Ok((None, 86_400))));
        assert_eq!(read_extend("extend 2 hours"), Some(Ok((None, 7_200))));
        assert!(matches!(read_extend("extend soon"), Some(Err(_))));
        assert!(matches!(read_extend("extend"), Some(Err(_))));
        assert_eq!(read_extend("approve K7Q2X"), None);
        assert_eq!(read_extend("extended warranty"), None);
    }

    #[test]
    fn a_code_is_found_after_the_verb_at_the_end_or_at_the_start() {
        let split = split_code;
        assert_eq!(
            split("approve k7q2x"),
            Some(("K7Q2X".into(), "approve".into()))
        );
        assert_eq!(
            split("deny K7Q2X not on Fridays"),
            Some(("K7Q2X".into(), "deny not on Fridays".into()))
        );
        assert_eq!(split("K7Q2X 2"), Some(("K7Q2X".into(), "2".into())));
        assert_eq!(split("2"), None);
        assert_eq!(split("approve"), None);
        assert_eq!(split("deny not now"), None);
        // A word that reads as a code may be part of the answer: `answer_text` tries the
        // code, then the whole text.
        assert_eq!(
            split("deny too risky"),
            Some(("R1SKY".into(), "deny too".into()))
        );
    }
}
