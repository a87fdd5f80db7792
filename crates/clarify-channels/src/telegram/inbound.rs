//! What Telegram sends, by long polling or to `POST /hooks/telegram/{name}`: updates (a button
//! pressed, a reply typed, a command), and the callback data of clarify's buttons ([`Press`]).
//! `hook` (webhook mode) and `poll` (polling mode) both end in `handle`, which acts through the
//! server's [`Desk`](crate::platform::Desk).

use std::collections::BTreeMap;
use std::time::Duration;

use clarify_core::{QuestionKind, Scope};
use serde_json::Value;

use super::Telegram;
use crate::act::{Act, Focus, Input, input_id};
use crate::inbound::{InboundError, malformed};
use crate::layout::words::{extended_note, outcome_text, vote_note};
use crate::notice::SendError;
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// What a button of a clarify message does: its callback data, read back by [`Press::decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// Option `n` of a `single` question.
    Option(usize),
    /// A `multi` question's buttons after a toggle: the options chosen now (bit `n`: option `n`).
    Toggle(u32),
    /// Done on a `multi` question with these options chosen.
    Done(u32),
    Approve(Scope),
    Deny,
    /// Deny with a reason: asks for a reply.
    Reason,
    /// Request changes: asks for a reply saying which.
    Revise,
    /// Other, or the answer of an `open` question: asks for a reply.
    Write,
    Skip,
}

impl Press {
    pub fn encode(self) -> String {
        match self {
            Self::Option(n) => format!("o{n}"),
            Self::Toggle(mask) => format!("t{mask:x}"),
            Self::Done(mask) => format!("m{mask:x}"),
            Self::Approve(Scope::Once) => "ao".to_owned(),
            Self::Approve(Scope::Session) => "as".to_owned(),
            Self::Approve(Scope::Always) => "aa".to_owned(),
            Self::Deny => "d".to_owned(),
            Self::Reason => "r".to_owned(),
            Self::Revise => "c".to_owned(),
            Self::Write => "w".to_owned(),
            Self::Skip => "s".to_owned(),
        }
    }

    /// The press `data` names; `None` for data clarify did not write.
    pub fn decode(data: &str) -> Option<Self> {
        let (head, rest) = data.split_at_checked(1)?;
        Some(match (head, rest) {
            ("o", n) => Self::Option(n.parse().ok()?),
            ("t", m) => Self::Toggle(u32::from_str_radix(m, 16).ok()?),
            ("m", m) => Self::Done(u32::from_str_radix(m, 16).ok()?),
            ("a", "o") => Self::Approve(Scope::Once),
            ("a", "s") => Self::Approve(Scope::Session),
            ("a", "a") => Self::Approve(Scope::Always),
            ("d", "") => Self::Deny,
            ("r", "") => Self::Reason,
            ("c", "") => Self::Revise,
            ("w", "") => Self::Write,
            ("s", "") => Self::Skip,
            _ => return None,
        })
    }

    /// The act a press stands for on a request of one question; `None` for presses that change
    /// only the message (a toggle) or ask for a reply.
    pub fn act(self) -> Option<Act> {
        use clarify_core::Decision;
        Some(match self {
            Self::Option(index) => Act::Option { question: 0, index },
            Self::Done(mask) => Act::Options {
                question: 0,
                indexes: indexes(mask),
            },
            Self::Approve(scope) => Act::Decide {
                question: 0,
                decision: Decision::Approve,
                scope,
            },
            Self::Deny => Act::Decide {
                question: 0,
                decision: Decision::Deny,
                scope: Scope::Once,
            },
            Self::Skip => Act::Skip,
            Self::Toggle(_) | Self::Reason | Self::Revise | Self::Write => return None,
        })
    }
}

/// The seconds and the request an extend button's data names (`x1800:<request id>`, written
/// by [`super::render::extend_data`]); `None` for any other data.
pub fn read_extend_data(data: &str) -> Option<(u64, String)> {
    let (seconds, request) = data.strip_prefix('x')?.split_once(':')?;
    let seconds: u64 = seconds.parse().ok().filter(|s| *s > 0)?;
    (!request.is_empty()).then(|| (seconds, request.to_owned()))
}

/// The option indexes a mask holds.
pub(super) fn indexes(mask: u32) -> Vec<usize> {
    (0..32).filter(|n| mask & (1 << n) != 0).collect()
}

/// What an update asks of clarify.
#[derive(Debug, Clone, PartialEq)]
pub enum Inbound {
    /// A button was pressed on message `message_ref` by `user`; the query must be answered.
    Press {
        query_id: String,
        user: String,
        message_ref: String,
        data: String,
    },
    /// `user` replied `text` to message `reply_to` (the bot's), whose prompt line, if it has
    /// one, names the announcement and what the reply is for.
    Reply {
        user: String,
        chat_id: String,
        message_id: i64,
        reply_to: String,
        prompt: Option<(String, Focus)>,
        text: String,
    },
    /// `/start` (or `/id`): the user asks which id to put into `[identities]`.
    Start { user: String, chat_id: String },
    /// `/link`: the user asks for a link that links their account to their clarify sign-in;
    /// `private` when sent in the bot's private chat, the only place such a link may go.
    Link {
        user: String,
        chat_id: String,
        private: bool,
    },
    /// Something clarify does not act on, and why.
    Ignore(&'static str),
}

/// The first line of a prompt's text names the announcement it belongs to: `#<message id>`.
/// Only the bot's own messages are read for it.
const PROMPT_MARK: &str = "↩ #";

/// Reads one update (`getUpdates` result item or webhook body); `Err` names what is missing.
/// `bot_id` is the bot's own user id, whose messages alone are read for prompts.
pub fn read(update: &Value, bot_id: Option<&str>) -> Result<Inbound, InboundError> {
    if !update.is_object() {
        return Err(malformed("an update must be a JSON object"));
    }
    if let Some(query) = update.get("callback_query") {
        let query_id =
            text_of(&query["id"]).ok_or_else(|| malformed("a callback query without an id"))?;
        let user = id_of(&query["from"]["id"])
            .ok_or_else(|| malformed("a callback query without from.id"))?;
        let message = &query["message"];
        let (Some(chat), Some(message_id)) =
            (id_of(&message["chat"]["id"]), id_of(&message["message_id"]))
        else {
            // An inline-mode message or one too old for Telegram to include.
            return Ok(Inbound::Ignore("a press on a message clarify cannot see"));
        };
        return Ok(Inbound::Press {
            query_id,
            user,
            message_ref: format!("{chat}:{message_id}"),
            data: query["data"].as_str().unwrap_or_default().to_owned(),
        });
    }
    let Some(message) = update.get("message") else {
        return Ok(Inbound::Ignore("an update clarify does not use"));
    };
    let Some(user) = id_of(&message["from"]["id"]) else {
        return Ok(Inbound::Ignore("a message without a sender"));
    };
    if message["from"]["is_bot"] == true {
        return Ok(Inbound::Ignore("a bot's message"));
    }
    let chat_id =
        id_of(&message["chat"]["id"]).ok_or_else(|| malformed("a message without chat.id"))?;
    let message_id = message["message_id"]
        .as_i64()
        .ok_or_else(|| malformed("a message without message_id"))?;
    let text = message["text"].as_str().unwrap_or_default().trim();
    let command = text.split_whitespace().next().unwrap_or_default();
    let command = command.split('@').next().unwrap_or_default();
    if command == "/start" || command == "/id" {
        return Ok(Inbound::Start { user, chat_id });
    }
    if command == "/link" {
        let private = message["chat"]["type"] == "private";
        return Ok(Inbound::Link {
            user,
            chat_id,
            private,
        });
    }
    let replied = &message["reply_to_message"];
    let Some(reply_to) = id_of(&replied["message_id"]) else {
        return Ok(Inbound::Ignore("a message that replies to nothing"));
    };
    if text.is_empty() {
        return Ok(Inbound::Ignore("a reply without text"));
    }
    let from_bot = match bot_id {
        Some(bot) => id_of(&replied["from"]["id"]).as_deref() == Some(bot),
        None => replied["from"]["is_bot"] == true,
    };
    let prompt = if from_bot {
        replied["text"].as_str().and_then(read_prompt)
    } else {
        None
    };
    Ok(Inbound::Reply {
        reply_to: format!("{chat_id}:{reply_to}"),
        user,
        chat_id,
        message_id,
        prompt,
        text: text.to_owned(),
    })
}

/// Checks a webhook call's `X-Telegram-Bot-Api-Secret-Token` header against the channel's
/// secret (the one given to `setWebhook`), in constant time.
pub fn verify(secret: &str, header: Option<&str>) -> Result<(), InboundError> {
    use subtle::ConstantTimeEq;
    let given = header.ok_or(InboundError::Unauthorized(
        "X-Telegram-Bot-Api-Secret-Token is required",
    ))?;
    let same = given.len() == secret.len() && bool::from(given.as_bytes().ct_eq(secret.as_bytes()));
    if same {
        Ok(())
    } else {
        Err(InboundError::Unauthorized(
            "X-Telegram-Bot-Api-Secret-Token does not match",
        ))
    }
}

/// Telegram ids are integers (users' may exceed 32 bits), chat usernames strings.
pub(super) fn id_of(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => n.as_i64().map(|n| n.to_string()),
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn text_of(v: &Value) -> Option<String> {
    v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

/// The prompt line of a reply prompt: `↩ #<message id> <focus>`.
pub(super) fn prompt_line(announcement_id: &str, focus: Focus) -> String {
    format!("{PROMPT_MARK}{announcement_id} {}", focus.encode())
}

fn read_prompt(text: &str) -> Option<(String, Focus)> {
    let line = text.lines().next()?.strip_prefix(PROMPT_MARK)?;
    let (id, focus) = line.split_once(' ')?;
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((id.to_owned(), Focus::decode(focus.trim())?))
}

/// The act of a reply to a prompt for `focus`: the typed text as that form's one input.
pub fn prompt_act(focus: Focus, text: &str) -> Act {
    let input = match focus {
        Focus::Other(n) => input_id(n, Some("other")),
        Focus::Deny(n) | Focus::Revise(n) => input_id(n, Some("reason")),
        Focus::Edit(n) => input_id(n, Some("arguments")),
        Focus::Open(n) | Focus::Form(n) => input_id(n, None),
        Focus::Request => input_id(0, None),
    };
    Act::Submit {
        focus,
        inputs: BTreeMap::from([(input, Input::Text(text.to_owned()))]),
    }
}

/// How long one `getUpdates` call waits for an update to arrive.
const POLL_WAIT: Duration = Duration::from_secs(25);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Answers an update pushed to `/hooks/telegram/{channel}` (webhook mode): the secret token
/// checked before the body is read (`401` otherwise, nothing changed).
pub(crate) async fn hook<D: Desk>(
    telegram: &Telegram,
    desk: &D,
    channel: &str,
    call: Call<'_>,
) -> HookReply {
    let Some(secret) = telegram.webhook_secret.as_deref() else {
        return HookReply::NotFound(
            "this Telegram channel polls getUpdates (mode = \"polling\"); it takes no webhook calls"
                .to_owned(),
        );
    };
    if let Err(e) = verify(secret, call.header("x-telegram-bot-api-secret-token")) {
        tracing::warn!(%channel, error = %e, "refused an unverified Telegram call");
        return HookReply::refused(e);
    }
    match crate::inbound::json(call.body).and_then(|v| read(&v, telegram.bot_id())) {
        Ok(update) => {
            handle(desk, channel, telegram, update).await;
            HookReply::Json(serde_json::json!({}))
        }
        Err(e) => {
            tracing::warn!(%channel, error = %e, "refused a Telegram update clarify cannot read");
            HookReply::refused(e)
        }
    }
}

/// Acts on one update, pushed or polled. A button press is answered (`answerCallbackQuery`) as
/// soon as the answer is recorded, which is one store write; the message itself is edited by
/// the channel worker, through the follow-up the store queued with the answer.
async fn handle<D: Desk>(desk: &D, channel: &str, telegram: &Telegram, update: Inbound) {
    let client = desk.http();
    let warn = |what: &str, e: SendError| {
        tracing::warn!(%channel, error = %e, "{what} failed");
    };
    match update {
        Inbound::Ignore(why) => {
            tracing::debug!(%channel, why, "ignored a Telegram update")
        }
        Inbound::Start { user, chat_id } => {
            let text = format!(
                "Your Telegram user id is {user}. To answer clarify requests here, ask an admin \
                 to add this line under [identities] in clarify's configuration:\n\
                 \"telegram:{user}\" = \"<your responder name>\""
            );
            if let Err(e) = telegram.say(client, &chat_id, None, &text).await {
                warn("telling a Telegram user their id", e);
            }
        }
        Inbound::Link {
            user,
            chat_id,
            private,
        } => {
            let text = if private {
                desk.link_text(&format!("telegram:{user}")).await
            } else {
                "Send /link to me in a private chat: a link posted here could be opened by \
                 anyone in this group."
                    .to_owned()
            };
            if let Err(e) = telegram.say(client, &chat_id, None, &text).await {
                warn("sending a Telegram user a link-account link", e);
            }
        }
        Inbound::Press {
            query_id,
            user,
            message_ref,
            data,
        } => {
            let (text, alert) = press(desk, channel, telegram, &user, &message_ref, &data).await;
            if let Err(e) = telegram
                .answer_press(client, &query_id, text.as_deref(), alert)
                .await
            {
                warn("answering a Telegram button press", e);
            }
        }
        Inbound::Reply {
            user,
            chat_id,
            message_id,
            reply_to,
            prompt,
            text,
        } => {
            let (target, act) = match prompt {
                Some((announcement, focus)) => (
                    Target::Message(format!("{chat_id}:{announcement}")),
                    prompt_act(focus, &text),
                ),
                None => {
                    // People talk in the chat too: only a reply to an announcement is an answer.
                    match desk.announced(channel, &reply_to).await {
                        Ok(true) => {}
                        Ok(false) => return,
                        Err(e) => {
                            tracing::warn!(error = %e, "looking up a replied-to Telegram message failed");
                            return;
                        }
                    }
                    (Target::Message(reply_to), Act::Typed(text))
                }
            };
            let note = match desk.act(channel, &user, target, act).await {
                // The announcement is edited to show the answer; a vote that did not decide
                // is worth a word, since the message changes little.
                Ok(Done::Resolved(record)) => vote_note(&record),
                Ok(Done::Nothing(_) | Done::Open { .. }) => None,
                Err(refusal) => Some(refusal.message),
            };
            if let Some(note) = note
                && let Err(e) = telegram
                    .say(client, &chat_id, Some(message_id), &note)
                    .await
            {
                warn("replying to a Telegram user", e);
            }
        }
    }
}

/// Acts on a button press; the notice to answer it with, and whether it must be read (an
/// alert) rather than glanced at.
async fn press<D: Desk>(
    desk: &D,
    channel: &str,
    telegram: &Telegram,
    user: &str,
    message_ref: &str,
    data: &str,
) -> (Option<String>, bool) {
    if let Some((seconds, request)) = read_extend_data(data) {
        let act = Act::Extend { seconds };
        return match desk.act(channel, user, Target::Request(request), act).await {
            Ok(Done::Resolved(record)) => (Some(extended_note(&record)), false),
            Ok(Done::Nothing(_) | Done::Open { .. }) => (None, false),
            Err(refusal) => (Some(refusal.message), true),
        };
    }
    let Some(press) = Press::decode(data) else {
        tracing::warn!(%channel, data, "a Telegram button clarify did not make");
        return (
            Some("clarify does not know this button; nothing was answered.".to_owned()),
            true,
        );
    };
    let target = || Target::Message(message_ref.to_owned());
    if let Some(act) = press.act() {
        return match desk.act(channel, user, target(), act).await {
            Ok(Done::Resolved(record)) => (
                Some(vote_note(&record).unwrap_or_else(|| outcome_text(&record))),
                false,
            ),
            Ok(Done::Nothing(_) | Done::Open { .. }) => (None, false),
            Err(refusal) => (Some(refusal.message), true),
        };
    }
    // A toggle or a request for a typed answer changes nothing yet, but only someone who may
    // answer gets to change the message.
    let record = match desk.act(channel, user, target(), Act::Nothing).await {
        Ok(Done::Nothing(record)) => record,
        Ok(_) => return (None, false),
        Err(refusal) => return (Some(refusal.message), true),
    };
    let client = desk.http();
    let answer_url = desk.answer_url(&record.id);
    let done = match press {
        Press::Toggle(chosen) => {
            telegram
                .redraw(client, message_ref, &record, &answer_url, chosen)
                .await
        }
        Press::Reason => {
            telegram
                .ask_reply(client, message_ref, &record, Focus::Deny(0), user)
                .await
        }
        Press::Revise => {
            telegram
                .ask_reply(client, message_ref, &record, Focus::Revise(0), user)
                .await
        }
        _ => {
            let focus = match record.request.questions.first().map(|q| &q.kind) {
                Some(QuestionKind::Open) => Focus::Open(0),
                _ => Focus::Other(0),
            };
            telegram
                .ask_reply(client, message_ref, &record, focus, user)
                .await
        }
    };
    match done {
        Ok(()) => (None, false),
        Err(e) => {
            tracing::warn!(%channel, error = %e, "updating a Telegram message failed");
            (
                Some("Telegram did not take the change just now; please try again.".to_owned()),
                true,
            )
        }
    }
}

/// Polls `getUpdates` for channel `channel` (polling mode, the default). Telegram forgets
/// updates below the offset it is asked for, so the offset, kept in the store, moves only past
/// updates that were acted on: a restart neither loses a click nor acts on one twice.
pub(crate) async fn poll<D: Desk>(telegram: Telegram, desk: D, channel: String) {
    let cursor = format!("telegram:{channel}");
    let mut failures: u32 = 0;
    loop {
        let fetched = match desk.cursor(&cursor).await {
            Ok(offset) => telegram
                .updates(desk.http(), offset, POLL_WAIT)
                .await
                .map_err(|e| (e.retry_after(desk.now()), e.to_string())),
            Err(e) => Err((None, format!("reading the update offset: {e}"))),
        };
        let updates = match fetched {
            Ok(updates) => {
                failures = 0;
                updates
            }
            Err((asked, error)) => {
                failures = failures.saturating_add(1);
                let wait = asked.unwrap_or_else(|| {
                    Duration::from_secs(1)
                        .saturating_mul(1 << failures.min(5))
                        .min(MAX_BACKOFF)
                });
                tracing::warn!(%channel, %error, ?wait, "polling Telegram failed; trying again");
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        for update in updates {
            let Some(id) = update["update_id"].as_i64() else {
                tracing::warn!(%channel, "a Telegram update without update_id");
                continue;
            };
            match read(&update, telegram.bot_id()) {
                Ok(update) => handle(&desk, &channel, &telegram, update).await,
                Err(e) => {
                    tracing::warn!(%channel, error = %e, "ignored a Telegram update clarify cannot read")
                }
            }
            if let Err(e) = desk.set_cursor(&cursor, id.saturating_add(1)).await {
                // The update comes again; acting on it again is refused as already answered.
                tracing::warn!(%channel, error = %e, "recording the Telegram update offset failed");
                break;
            }
        }
    }
}

#[cfg(test)]
mod extend_tests {
    use super::read_extend_data;

    #[test]
    fn an_extend_buttons_data_names_the_seconds_and_the_request() {
        let data = super::super::render::extend_data(1800, "3x4h9fr0mw4e701c3qxjjes2gs");
        assert!(data.len() <= 64, "{data}");
        assert_eq!(
            read_extend_data(&data),
            Some((1800, "3x4h9fr0mw4e701c3qxjjes2gs".to_owned()))
        );
        for other in ["ao", "x0:req", "x:req", "x1800:", "xsoon:req", "o1"] {
            assert_eq!(read_extend_data(other), None, "{other}");
        }
    }
}
