//! What a call says, as TwiML: the request read inside a one-digit `<Gather>`, the choice
//! repeated for confirmation, and the last words before hanging up. Everything the agent wrote
//! is XML-escaped and cut to what a person listens to.

use clarify_core::{Decision, QuestionKind, Scope};
use clarify_model::RequestRecord;

use crate::act::Act;
use crate::layout::words::headline;
use crate::text::cut;
use crate::twilio::{escape, twiml};

/// What is read of a question: a call is listened to, not skimmed.
const MAX_SPOKEN: usize = 400;
const MAX_LABEL: usize = 60;
/// How long `<Gather>` waits for a key, in seconds.
const WAIT: u8 = 8;

/// What a key does on a request: its words and its act.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    pub words: String,
    pub act: Act,
}

/// The keys that answer `record` (key `n` is `keys[n - 1]`), or why a keypad cannot: a request
/// of one approval (1 approves with its narrowest offered scope, 2 denies) or one `single`
/// question of at most nine options.
pub fn keys(record: &RequestRecord) -> Result<Vec<Key>, &'static str> {
    let request = &record.request;
    let [q] = request.questions.as_slice() else {
        return Err("This request has several questions, which a phone's keys cannot answer.");
    };
    match &q.kind {
        QuestionKind::Approval(a) => Ok(vec![
            Key {
                words: "approve".to_owned(),
                act: Act::Decide {
                    question: 0,
                    decision: Decision::Approve,
                    scope: a.scopes.first().copied().unwrap_or(Scope::Once),
                },
            },
            Key {
                words: "deny".to_owned(),
                act: Act::Decide {
                    question: 0,
                    decision: Decision::Deny,
                    scope: Scope::Once,
                },
            },
        ]),
        QuestionKind::Single(c) if c.options.len() <= 9 => Ok(c
            .options
            .iter()
            .enumerate()
            .map(|(index, o)| Key {
                words: cut(&o.label, MAX_LABEL),
                act: Act::Option { question: 0, index },
            })
            .collect()),
        QuestionKind::Single(_) => {
            Err("This question has more options than a phone has keys.")
        }
        QuestionKind::Multi(_) | QuestionKind::Open | QuestionKind::Form(_) => {
            Err("This question needs a written answer, which a phone's keys cannot give.")
        }
    }
}

/// `<Say>` `text` in `language`.
pub fn say(language: &str, text: &str) -> String {
    format!(
        "<Say language=\"{}\">{}</Say>",
        escape(language),
        escape(text)
    )
}

/// What the request is, in words: the headline, then the question.
fn spoken(record: &RequestRecord) -> String {
    let request = &record.request;
    let mut words = format!("clarify has a request for you. {}.", headline(record));
    for q in &request.questions {
        words.push(' ');
        words.push_str(&cut(&q.text, MAX_SPOKEN));
        if let QuestionKind::Approval(a) = &q.kind {
            words.push_str(&format!(" The action is {}.", cut(&a.action.name, MAX_LABEL)));
        }
    }
    words
}

/// The call's first words: the request read, and its keys inside a `<Gather>` posting to
/// `press_url`; or, where no key may answer (`no_keys`), why, and the advice to open the link.
pub fn ask(
    language: &str,
    record: &RequestRecord,
    keys: Result<&[Key], &str>,
    press_url: &str,
) -> String {
    let read = spoken(record);
    let keys = match keys {
        Ok(keys) => keys,
        Err(why) => {
            return goodbye(
                language,
                &format!(
                    "{read} {why} Open the link clarify sent you by text or e-mail to answer. \
                     Goodbye."
                ),
            );
        }
    };
    // An approval's keys are verbs ("to approve"), an option's are names ("for eu-west").
    let single = matches!(
        record.request.questions.first().map(|q| &q.kind),
        Some(QuestionKind::Single(_))
    );
    let choices: Vec<String> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| {
            let link = if single { "for" } else { "to" };
            format!("Press {} {link} {}.", i + 1, k.words)
        })
        .collect();
    let choices = choices.join(" ");
    twiml(&format!(
        "<Gather numDigits=\"1\" action=\"{}\" method=\"POST\" timeout=\"{WAIT}\">{}</Gather>{}<Hangup/>",
        escape(press_url),
        say(language, &format!("{read} {choices}")),
        say(language, "No key was pressed, so nothing was answered. Goodbye.")
    ))
}

/// The key pressed repeated, and a `<Gather>` posting to `confirm_url` for 1 to confirm.
pub fn confirm(language: &str, digit: usize, key: &Key, confirm_url: &str) -> String {
    twiml(&format!(
        "<Gather numDigits=\"1\" action=\"{}\" method=\"POST\" timeout=\"{WAIT}\">{}</Gather>{}<Hangup/>",
        escape(confirm_url),
        say(
            language,
            &format!(
                "You pressed {digit}: {}. Press 1 to confirm, or any other key to hear the request again.",
                key.words
            )
        ),
        say(language, "Nothing was confirmed, so nothing was answered. Goodbye.")
    ))
}

/// `text`, then back to the start of the call at `ask_url`.
pub fn again(language: &str, text: &str, ask_url: &str) -> String {
    twiml(&format!(
        "{}<Redirect method=\"POST\">{}</Redirect>",
        say(language, text),
        escape(ask_url)
    ))
}

/// `text`, then the call ends.
pub fn goodbye(language: &str, text: &str) -> String {
    twiml(&format!("{}<Hangup/>", say(language, text)))
}

/// The call ends without a word (an answering machine took it).
pub fn hang_up() -> String {
    twiml("<Hangup/>")
}
