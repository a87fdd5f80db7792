//! Socket Mode: Slack sends interactions and events over a WebSocket that clarify opens, so a
//! server behind a firewall, with no public URL, can still be answered from Slack.
//!
//! [`run`] asks `apps.connections.open` (with the app-level token) for a WebSocket URL, connects,
//! and hands every envelope's payload to the handler, acknowledging it by `envelope_id` with the
//! handler's response payload (a modal's `response_action: errors`). Slack re-sends an envelope
//! it did not see acknowledged; an id seen before is acknowledged again and not handled twice.
//! On `disconnect` (Slack rotates connections every few hours) a new connection is opened at
//! once; on a lost connection, after a backoff of 1 s doubling to 30 s.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::Message;

use super::Slack;
use super::inbound::{Inbound, InboundError, read_event, read_interaction};

/// How many envelope ids are remembered to drop duplicates.
pub(super) const REMEMBERED: usize = 1_000;
/// A connection silent this long (Slack pings far more often) is taken for lost.
const SILENCE: Duration = Duration::from_secs(120);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Keeps a Socket Mode connection for `slack` until the task is dropped, handing each
/// verified-by-connection payload to `handle`, whose answer is the acknowledgement's payload.
pub async fn run<H, F>(slack: Slack, client: reqwest::Client, handle: H)
where
    H: Fn(Result<Inbound, InboundError>) -> F + Send + Sync + 'static,
    F: Future<Output = Option<Value>> + Send + 'static,
{
    let handle = Arc::new(handle);
    let mut seen = Seen::default();
    let mut failures: u32 = 0;
    loop {
        match session(&slack, &client, &handle, &mut seen).await {
            Ok(reason) => {
                tracing::info!(channel = %slack.channel, %reason, "Slack asked to reconnect");
                failures = 0;
            }
            Err(error) => {
                failures = failures.saturating_add(1);
                let wait = Duration::from_secs(1)
                    .saturating_mul(1 << failures.min(5))
                    .min(MAX_BACKOFF);
                tracing::warn!(channel = %slack.channel, %error, ?wait, "Slack Socket Mode connection failed; reconnecting");
                tokio::time::sleep(wait).await;
            }
        }
    }
}

/// One connection: returns Slack's reason when it asks to reconnect, or why it was lost.
async fn session<H, F>(
    slack: &Slack,
    client: &reqwest::Client,
    handle: &Arc<H>,
    seen: &mut Seen,
) -> Result<String, String>
where
    H: Fn(Result<Inbound, InboundError>) -> F + Send + Sync + 'static,
    F: Future<Output = Option<Value>> + Send + 'static,
{
    let token = slack
        .app_token
        .as_deref()
        .ok_or("Socket Mode needs an app-level token (app_token)")?;
    let opened = slack
        .call_with(client, "apps.connections.open", &json!({}), token)
        .await
        .map_err(|e| e.to_string())?;
    let url = opened["url"]
        .as_str()
        .ok_or("apps.connections.open gave no url")?;
    let (socket, _) = tokio_tungstenite::connect_async(url)
        .await
        .map_err(|e| format!("connecting to the Socket Mode URL: {e}"))?;
    let (mut sink, mut stream) = socket.split();
    let (acks, mut to_ack) = mpsc::channel::<Value>(64);
    loop {
        tokio::select! {
            ack = to_ack.recv() => {
                // `acks` is held here too, so the channel never closes while connected.
                let Some(ack) = ack else { continue };
                sink.send(Message::text(ack.to_string()))
                    .await
                    .map_err(|e| format!("acknowledging: {e}"))?;
            }
            message = tokio::time::timeout(SILENCE, stream.next()) => {
                let message = match message {
                    Err(_) => return Err("no message or ping for two minutes".to_owned()),
                    Ok(None) => return Err("the connection closed".to_owned()),
                    Ok(Some(Err(e))) => return Err(e.to_string()),
                    Ok(Some(Ok(m))) => m,
                };
                let text = match message {
                    Message::Text(t) => t,
                    Message::Close(frame) => {
                        return Err(format!("Slack closed the connection: {frame:?}"));
                    }
                    // Pings are answered by the library as it reads.
                    _ => continue,
                };
                let Ok(envelope) = serde_json::from_str::<Value>(&text) else {
                    tracing::warn!("Slack sent a Socket Mode message that is not JSON");
                    continue;
                };
                match envelope["type"].as_str() {
                    Some("hello") => {
                        tracing::info!(channel = %slack.channel, "Slack Socket Mode connected");
                        continue;
                    }
                    Some("disconnect") => {
                        return Ok(envelope["reason"].as_str().unwrap_or("disconnect").to_owned());
                    }
                    _ => {}
                }
                let Some(id) = envelope["envelope_id"].as_str().map(str::to_owned) else {
                    continue;
                };
                if !seen.first_time(&id) {
                    // Slack sent it again (our acknowledgement was late or lost).
                    let _ = acks.send(json!({"envelope_id": id})).await;
                    continue;
                }
                let inbound = match envelope["type"].as_str() {
                    Some("interactive") => read_interaction(&envelope["payload"]),
                    Some("events_api") => read_event(&envelope["payload"]),
                    _ => Ok(Inbound::Ignore("an envelope type clarify does not use")),
                };
                let handle = Arc::clone(handle);
                let acks = acks.clone();
                tokio::spawn(async move {
                    let mut ack = json!({"envelope_id": id});
                    if let Some(payload) = handle(inbound).await {
                        ack["payload"] = payload;
                    }
                    let _ = acks.send(ack).await;
                });
            }
        }
    }
}

/// The envelope ids seen lately.
#[derive(Debug, Default)]
pub(super) struct Seen {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Seen {
    /// Whether `id` is new; remembers it.
    pub(super) fn first_time(&mut self, id: &str) -> bool {
        if self.ids.contains(id) {
            return false;
        }
        self.ids.insert(id.to_owned());
        self.order.push_back(id.to_owned());
        if self.order.len() > REMEMBERED
            && let Some(old) = self.order.pop_front()
        {
            self.ids.remove(&old);
        }
        true
    }
}
