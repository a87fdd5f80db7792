//! Replies typed into a text message (SMS, WhatsApp), which name no announcement: the person
//! replies `2`, `approve`, or `deny K7Q2X not now`, and the channel finds the request by the
//! short code when the reply names one, otherwise the newest request announced on the channel
//! that is still pending and that person may answer ([`Target::Latest`]).

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

#[cfg(test)]
mod tests {
    use super::*;

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
