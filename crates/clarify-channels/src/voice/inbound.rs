//! What Twilio calls `POST /hooks/voice/<name>` with while a call clarify placed is under way:
//! the call picked up (`Url`), a key pressed (a `<Gather>`'s `action`), and the call's end
//! (`StatusCallback`). Each is verified by `X-Twilio-Signature` first; the step and the request
//! are read from the URL's query, which the signature covers ([`Step`]).

use super::Voice;
use super::render::{self, Key};
use crate::inbound::{InboundError, malformed};
use crate::layout::words::outcome_text;
use crate::platform::{Call, Desk, Done, HookReply, Target};
use crate::twilio::{self, param, required};

/// Where a call is; carried in the query of the URL Twilio calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// The call was picked up: read the request and gather a key. `passkey`: the request needs
    /// a passkey confirmation, so no key may answer it.
    Ask { passkey: bool },
    /// A key was pressed: repeat it and ask for confirmation.
    Press,
    /// Key `choice` was pressed and the confirmation's key is in `Digits`.
    Confirm { choice: usize },
    /// The call ended (`CallStatus`).
    Status,
}

impl Step {
    /// The URL of this step of a call about `request`, under the channel's `hook_url`.
    pub fn url(self, hook_url: &str, request: &str) -> String {
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        query.append_pair("request", request);
        match self {
            Self::Ask { passkey: false } => {}
            Self::Ask { passkey: true } => {
                query.append_pair("passkey", "1");
            }
            Self::Press => {
                query.append_pair("step", "press");
            }
            Self::Confirm { choice } => {
                query.append_pair("step", "confirm");
                query.append_pair("choice", &choice.to_string());
            }
            Self::Status => {
                query.append_pair("step", "status");
            }
        }
        format!("{hook_url}?{}", query.finish())
    }

    /// The request and the step a (verified) call's `query` names.
    pub fn read(query: Option<&str>) -> Result<(String, Self), InboundError> {
        let pairs: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
            .into_owned()
            .collect();
        let Some(request) = param(&pairs, "request").filter(|r| !r.is_empty()) else {
            return Err(malformed("the URL names no request"));
        };
        let step = match param(&pairs, "step") {
            None => Self::Ask {
                passkey: param(&pairs, "passkey") == Some("1"),
            },
            Some("press") => Self::Press,
            Some("confirm") => Self::Confirm {
                choice: param(&pairs, "choice")
                    .and_then(|c| c.parse().ok())
                    .ok_or_else(|| malformed("the URL names no choice"))?,
            },
            Some("status") => Self::Status,
            Some(other) => return Err(malformed(format!("{other:?} is no step of a call"))),
        };
        Ok((request.to_owned(), step))
    }
}

/// Whether Twilio's answering-machine detection says no person took the call.
fn machine(answered_by: Option<&str>) -> bool {
    answered_by.is_some_and(|a| a.starts_with("machine") || a == "fax")
}

/// Answers one of a call's callbacks.
pub(crate) async fn hook<D: Desk>(voice: &Voice, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
    let hook_url = desk.hook_url(channel);
    let params = match twilio::verified(&voice.account.auth_token, &hook_url, &call) {
        Ok(params) => params,
        Err(e) => return HookReply::refused(e),
    };
    let language = voice.language.as_str();
    let (request, step) = match Step::read(call.query) {
        Ok(read) => read,
        // The number's own webhook pointed here: a call clarify did not place.
        Err(_) => {
            return HookReply::Xml(render::goodbye(
                language,
                "This is clarify. It calls you when a request waits for your answer. Goodbye.",
            ));
        }
    };
    let ask_url = Step::Ask { passkey: false }.url(&hook_url, &request);
    let record = match step {
        Step::Status => {
            // No answer, busy, failed or done: nothing changes; the request's reminders and
            // escalation go on while it waits.
            tracing::info!(
                channel,
                request,
                status = param(&params, "CallStatus").unwrap_or("unknown"),
                answered_by = param(&params, "AnsweredBy").unwrap_or("unknown"),
                "a voice call ended"
            );
            return HookReply::Ok;
        }
        Step::Ask { .. } if machine(param(&params, "AnsweredBy")) => {
            tracing::info!(channel, request, "a voice call reached an answering machine; nothing answered");
            return HookReply::Xml(render::hang_up());
        }
        _ => match desk.find(channel, Target::Request(request.clone())).await {
            Ok(record) => record,
            Err(refusal) => return HookReply::Xml(render::goodbye(language, &refusal.message)),
        },
    };
    if record.status.is_resolved() {
        return HookReply::Xml(render::goodbye(
            language,
            &format!("This request is already resolved. {}. Goodbye.", outcome_text(&record)),
        ));
    }
    let keys = render::keys(&record);
    let reply = match step {
        Step::Ask { passkey: true } => render::ask(
            language,
            &record,
            Err("Answering it needs a passkey confirmation."),
            "",
        ),
        Step::Ask { passkey: false } => render::ask(
            language,
            &record,
            keys.as_deref().map_err(|why| *why),
            &Step::Press.url(&hook_url, &request),
        ),
        Step::Press => {
            let digit = param(&params, "Digits").unwrap_or("");
            match chosen(&keys, digit) {
                Some((n, key)) => render::confirm(
                    language,
                    n,
                    key,
                    &Step::Confirm { choice: n }.url(&hook_url, &request),
                ),
                None => render::again(
                    language,
                    &format!("There is no choice {digit}."),
                    &ask_url,
                ),
            }
        }
        Step::Confirm { choice } => {
            if param(&params, "Digits") != Some("1") {
                return HookReply::Xml(render::again(language, "Not confirmed.", &ask_url));
            }
            let Some((_, key)) = chosen(&keys, &choice.to_string()) else {
                return HookReply::Malformed(format!("there is no choice {choice}"));
            };
            // The person is the one called.
            let person = match required(&params, "To") {
                Ok(to) => to.to_owned(),
                Err(e) => return HookReply::refused(e),
            };
            let target = Target::Request(record.id.clone());
            let said = match desk.act(channel, &person, target, key.act.clone()).await {
                Ok(Done::Resolved(record)) => format!(
                    "Thank you. {}. Goodbye.",
                    crate::layout::words::vote_note(&record)
                        .unwrap_or_else(|| outcome_text(&record))
                        .trim_end_matches('.')
                ),
                Ok(Done::Nothing(_) | Done::Open { .. }) => {
                    "Nothing was answered. Goodbye.".to_owned()
                }
                Err(refusal) => format!("{} Goodbye.", refusal.message),
            };
            render::goodbye(language, &said)
        }
        Step::Status => return HookReply::Ok,
    };
    HookReply::Xml(reply)
}

/// The key `digit` names among `keys`, with its number.
fn chosen<'a>(keys: &'a Result<Vec<Key>, &'static str>, digit: &str) -> Option<(usize, &'a Key)> {
    let n: usize = digit.trim().parse().ok()?;
    let keys = keys.as_ref().ok()?;
    keys.get(n.checked_sub(1)?).map(|key| (n, key))
}
