//! Slack's inbound side: `POST /hooks/slack/{name}` (interactivity payloads and Events API
//! callbacks, signed), and the Socket Mode connections of channels with `socket_mode = true`.
//! Both end in `respond`, which runs the shared answer path and says what to acknowledge with.
//!
//! Slack wants an acknowledgement within three seconds. Resolving a request is one store write;
//! opening a modal and telling a person something privately are Web API calls made after the
//! acknowledgement, in a task of their own.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use clarify_channels::inbound::InboundError;
use clarify_channels::slack::Slack;
use clarify_channels::slack::inbound::{Inbound, On, read, verify};
use clarify_channels::slack::render::modal;
use clarify_channels::{Channel, Platform};
use serde_json::{Value, json};

use crate::chat::answer::{self, Done, Target};
use crate::state::AppState;

/// The configured Slack channel called `name`.
fn channel<'a>(state: &'a AppState, name: &str) -> Option<(&'a Channel, &'a Slack)> {
    answer::configured(state, name, |p| match p {
        Platform::Slack(x) => Some(x),
        _ => None,
    })
}

/// `POST /hooks/slack/{name}`: verified before anything else is read.
pub(crate) async fn hook(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some((channel, slack)) = channel(&state, &name) else {
        return error(StatusCode::NOT_FOUND, "no Slack channel has this name");
    };
    let Some(secret) = slack.signing_secret.as_deref() else {
        return error(
            StatusCode::NOT_FOUND,
            "this Slack channel is answered over Socket Mode; it has no signing secret",
        );
    };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Err(e) = verify(
        secret,
        header("x-slack-request-timestamp"),
        header("x-slack-signature"),
        &body,
        state.store.now(),
    ) {
        tracing::warn!(channel = %name, error = %e, "refused an unverified Slack call");
        return error(StatusCode::UNAUTHORIZED, &e.to_string());
    }
    let inbound = read(&body);
    if let Err(InboundError::Malformed(e)) = &inbound {
        tracing::warn!(channel = %name, error = %e, "refused a Slack call clarify cannot read");
        return error(StatusCode::BAD_REQUEST, e);
    }
    match respond(&state, channel, slack, inbound).await {
        Some(payload) => Json(payload).into_response(),
        None => StatusCode::OK.into_response(),
    }
}

fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(json!({"error": message}))).into_response()
}

/// Acts on what Slack sent; returns the acknowledgement's payload, if it needs one.
pub(crate) async fn respond(
    state: &AppState,
    channel: &Channel,
    slack: &Slack,
    inbound: Result<Inbound, InboundError>,
) -> Option<Value> {
    let interaction = match inbound {
        Ok(Inbound::Act(i)) => i,
        Ok(Inbound::Challenge(challenge)) => return Some(json!({"challenge": challenge})),
        Ok(Inbound::Ignore(_)) => return None,
        Err(e) => {
            tracing::warn!(channel = %channel.name, error = %e, "ignored a Slack payload clarify cannot read");
            return None;
        }
    };
    let target = match interaction.on {
        On::Request(id) => Target::Request(id),
        On::Thread(message_ref) => Target::Message(message_ref),
    };
    let focus = match &interaction.act {
        clarify_channels::answer::Act::Submit { focus, .. } => Some(*focus),
        _ => None,
    };
    let done = answer::act(state, channel, &interaction.user, target, interaction.act).await;
    let client = state.http.clone();
    let for_modal = slack.clone();
    let slack = slack.clone();
    let user = interaction.user;
    let (place, thread) = (interaction.channel, interaction.thread_ts);
    let tell = move |text: String| {
        tokio::spawn(async move {
            if let Err(e) = slack
                .tell(&client, place.as_deref(), thread.as_deref(), &user, &text)
                .await
            {
                tracing::warn!(error = %e, "telling a Slack user failed");
            }
        });
    };
    match done {
        Ok(Done::Resolved(record)) => {
            if let Some(note) = answer::vote_note(&record) {
                tell(note);
            }
            None
        }
        Ok(Done::Open {
            record,
            focus,
            trigger,
        }) => {
            let Some(view) = modal(&record, focus) else {
                tell("This form is not available for this request any more.".to_owned());
                return None;
            };
            let client = state.http.clone();
            tokio::spawn(async move {
                if let Err(e) = for_modal.open_modal(&client, &trigger, &view).await {
                    tracing::warn!(error = %e, "opening a Slack modal failed");
                }
            });
            None
        }
        Ok(Done::Nothing(_)) => None,
        Err(refusal) => match focus {
            Some(_) => {
                // In a modal the refusal shows beside the input it concerns (or the first).
                let input = refusal
                    .input
                    .unwrap_or_else(|| clarify_channels::answer::input_id(0, None));
                Some(json!({
                    "response_action": "errors",
                    "errors": {input: clarify_channels::cut(&refusal.message, 2_000)},
                }))
            }
            None => {
                tell(refusal.message);
                None
            }
        },
    }
}

/// Keeps a Socket Mode connection for each Slack channel that asks for one, until shutdown.
pub(crate) fn spawn_sockets(state: &AppState) {
    for c in &state.config.channels {
        let Platform::Slack(slack) = &c.platform else {
            continue;
        };
        if !slack.socket_mode {
            continue;
        }
        let state = state.clone();
        let name = c.name.clone();
        let slack = slack.clone();
        let client = state.http.clone();
        tokio::spawn(async move {
            let shutdown = state.shutdown.clone();
            let handler_state = state.clone();
            let run = clarify_channels::slack::socket::run(slack, client, move |inbound| {
                let state = handler_state.clone();
                let name = name.clone();
                async move {
                    let (channel, slack) = channel(&state, &name)?;
                    respond(&state, channel, slack, inbound).await
                }
            });
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = run => {}
            }
        });
    }
}
