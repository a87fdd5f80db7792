//! Telegram's inbound side: updates pushed to `POST /hooks/telegram/{name}` (webhook mode,
//! checked against the secret token before the body is read) or fetched by long polling
//! `getUpdates` (the default). Both end in `handle`, which runs the shared answer path.
//!
//! A button press is answered (`answerCallbackQuery`) as soon as the answer is recorded, which
//! is one store write; the message itself is edited by the channel worker, through the
//! follow-up the store queued with the answer. Polling keeps its offset in the store and moves
//! it past an update only once that update was acted on, so a restart neither loses a click nor
//! acts on one twice.

use std::time::Duration;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_channels::answer::{Act, Focus};
use clarify_channels::telegram::Telegram;
use clarify_channels::telegram::inbound::{Inbound, Press, prompt_act, read, verify};
use clarify_channels::{Channel, Platform};
use clarify_core::QuestionKind;
use serde_json::json;

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// How long one `getUpdates` call waits for an update to arrive.
const POLL_WAIT: Duration = Duration::from_secs(25);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The configured Telegram channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a Telegram)> {
    answer::configured(state, name, |p| match p {
        Platform::Telegram(x) => Some(x),
        _ => None,
    })
}

/// `POST /hooks/telegram/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((channel, telegram)) = channel(&state, &name) else {
        return error(StatusCode::NOT_FOUND, "no Telegram channel has this name");
    };
    let Some(secret) = telegram.webhook_secret.as_deref() else {
        return error(
            StatusCode::NOT_FOUND,
            "this Telegram channel polls getUpdates (mode = \"polling\"); it takes no webhook calls",
        );
    };
    let given = headers
        .get("x-telegram-bot-api-secret-token")
        .and_then(|v| v.to_str().ok());
    if let Err(e) = verify(secret, given) {
        tracing::warn!(channel = %name, error = %e, "refused an unverified Telegram call");
        return error(StatusCode::UNAUTHORIZED, &e.to_string());
    }
    let update = clarify_channels::inbound::json(&body).and_then(|v| read(&v, telegram.bot_id()));
    match update {
        Ok(update) => {
            handle(&state, channel, telegram, update).await;
            Json(json!({})).into_response()
        }
        Err(e) => {
            tracing::warn!(channel = %name, error = %e, "refused a Telegram update clarify cannot read");
            error(StatusCode::BAD_REQUEST, &e.to_string())
        }
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// Acts on one update.
pub(crate) async fn handle(
    state: &AppState,
    channel: &Channel,
    telegram: &Telegram,
    update: Inbound,
) {
    let client = &state.http;
    let warn = |what: &str, e: clarify_channels::SendError| {
        tracing::warn!(channel = %channel.name, error = %e, "{what} failed");
    };
    match update {
        Inbound::Ignore(why) => {
            tracing::debug!(channel = %channel.name, why, "ignored a Telegram update")
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
                answer::link_text(state, &format!("telegram:{user}")).await
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
            let (text, alert) = press(state, channel, telegram, &user, &message_ref, &data).await;
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
                    match state.store.announced_as(&channel.name, &reply_to).await {
                        Ok(Some(_)) => {}
                        Ok(None) => return,
                        Err(e) => {
                            tracing::warn!(error = %e, "looking up a replied-to Telegram message failed");
                            return;
                        }
                    }
                    (Target::Message(reply_to), Act::Typed(text))
                }
            };
            let note = match answer::act(state, channel, &user, target, act).await {
                // The announcement is edited to show the answer; a vote that did not decide
                // is worth a word, since the message changes little.
                Ok(Done::Resolved(record)) => answer::vote_note(&record),
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
async fn press(
    state: &AppState,
    channel: &Channel,
    telegram: &Telegram,
    user: &str,
    message_ref: &str,
    data: &str,
) -> (Option<String>, bool) {
    let Some(press) = Press::decode(data) else {
        tracing::warn!(channel = %channel.name, data, "a Telegram button clarify did not make");
        return (
            Some("clarify does not know this button; nothing was answered.".to_owned()),
            true,
        );
    };
    let target = || Target::Message(message_ref.to_owned());
    if let Some(act) = press.act() {
        return match answer::act(state, channel, user, target(), act).await {
            Ok(Done::Resolved(record)) => (
                Some(
                    answer::vote_note(&record)
                        .unwrap_or_else(|| clarify_channels::outcome_text(&record)),
                ),
                false,
            ),
            Ok(Done::Nothing(_) | Done::Open { .. }) => (None, false),
            Err(refusal) => (Some(refusal.message), true),
        };
    }
    // A toggle or a request for a typed answer changes nothing yet, but only someone who may
    // answer gets to change the message.
    let record = match answer::act(state, channel, user, target(), Act::Nothing).await {
        Ok(Done::Nothing(record)) => record,
        Ok(_) => return (None, false),
        Err(refusal) => return (Some(refusal.message), true),
    };
    let client = &state.http;
    let answer_url = state.answer_url(&record.id);
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
            tracing::warn!(channel = %channel.name, error = %e, "updating a Telegram message failed");
            (
                Some("Telegram did not take the change just now; please try again.".to_owned()),
                true,
            )
        }
    }
}

/// Polls `getUpdates` for each Telegram channel in polling mode, until shutdown.
pub(crate) fn spawn_pollers(state: &AppState) {
    for c in &state.config.channels {
        let Platform::Telegram(telegram) = &c.platform else {
            continue;
        };
        if telegram.webhook_secret.is_some() {
            continue;
        }
        let state = state.clone();
        let name = c.name.clone();
        tokio::spawn(async move {
            let shutdown = state.shutdown.clone();
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = poll(&state, &name) => {}
            }
        });
    }
}

/// The polling loop of channel `name`. Telegram forgets updates below the offset it is asked
/// for, so the offset moves only past updates that were acted on.
async fn poll(state: &AppState, name: &str) {
    let Some((channel, telegram)) = channel(state, name) else {
        return;
    };
    let cursor = format!("telegram:{name}");
    let mut failures: u32 = 0;
    loop {
        let fetched = match state.store.cursor(&cursor).await {
            Ok(offset) => telegram
                .updates(&state.http, offset, POLL_WAIT)
                .await
                .map_err(|e| (e.retry_after(state.store.now()), e.to_string())),
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
                tracing::warn!(channel = %name, %error, ?wait, "polling Telegram failed; trying again");
                tokio::time::sleep(wait).await;
                continue;
            }
        };
        for update in updates {
            let Some(id) = update["update_id"].as_i64() else {
                tracing::warn!(channel = %name, "a Telegram update without update_id");
                continue;
            };
            match read(&update, telegram.bot_id()) {
                Ok(update) => handle(state, channel, telegram, update).await,
                Err(e) => {
                    tracing::warn!(channel = %name, error = %e, "ignored a Telegram update clarify cannot read")
                }
            }
            if let Err(e) = state.store.set_cursor(&cursor, id.saturating_add(1)).await {
                // The update comes again; acting on it again is refused as already answered.
                tracing::warn!(channel = %name, error = %e, "recording the Telegram update offset failed");
                break;
            }
        }
    }
}
