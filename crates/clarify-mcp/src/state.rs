//! Sealed `requestState` for protocol 2026-07-28, where a tool call that needs the client's user
//! returns `input_required` and the client retries it with the answers and the state echoed back.
//!
//! The state names the clarify request the retry answers. A client could send anything back, so
//! the state is sealed with rmcp's request-state codec (HMAC-SHA256) under a server secret, with
//! the caller (the API key's id over HTTP, this process over stdio) and the tool as associated
//! data: a state altered, made up, or presented by another key or for another tool does not
//! open. It carries its own expiry, read against the store's clock, and a single-use nonce that
//! the store redeems once ([`clarify_store::Store::redeem_once`]), so a replayed state answers
//! nothing, on every instance sharing the store. Without a store (`clarify mcp` against a remote
//! server) the secret and the used nonces live in this process, which is the whole session on
//! stdio. The state holds no secret of its own: the request id is the caller's anyway.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, TimeDelta, Utc};
use clarify_store::Store;
use rand::RngCore;
use rmcp::model::{RequestStateCodec, SealOptions};
use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// The store's name of the sealing secret, shared by every instance.
const SECRET_NAME: &str = "mcp_request_state";
/// Mixed into the associated data, so a state can be told from any other sealed value.
const DOMAIN: &str = "clarify/mcp/request-state/v1";

/// Seals and opens request states.
#[derive(Debug, Clone)]
pub(crate) struct RequestStates {
    nonces: Nonces,
    ttl: TimeDelta,
}

#[derive(Debug, Clone)]
enum Nonces {
    /// Redeemed through the store, shared by every instance.
    Store(Store),
    /// Kept by this process, with its own secret.
    Process {
        secret: Arc<Vec<u8>>,
        used: Arc<Mutex<HashMap<String, DateTime<Utc>>>>,
    },
}

/// What a sealed state holds.
#[derive(Debug, Serialize, Deserialize)]
struct Payload {
    /// The clarify request the retry answers.
    request: String,
    /// Redeemed once.
    nonce: String,
    /// Unix milliseconds after which the state is refused.
    expires: i64,
}

/// Why a state was refused; the message is the JSON-RPC error's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum StateError {
    #[error(
        "requestState was not issued by this server for this key and tool (altered, made up, or from another caller); call the tool again without it"
    )]
    Forged,
    #[error("requestState has expired; call the tool again without it")]
    Expired,
    #[error(
        "requestState was already used; each one answers once, so call the tool again without it"
    )]
    Used,
}

impl RequestStates {
    /// States redeemed through `store`, valid for `ttl`.
    pub(crate) fn stored(store: Store, ttl: TimeDelta) -> Self {
        Self {
            nonces: Nonces::Store(store),
            ttl,
        }
    }

    /// States kept by this process alone.
    pub(crate) fn in_process(ttl: TimeDelta) -> Self {
        let mut secret = vec![0u8; 32];
        rand::rng().fill_bytes(&mut secret);
        Self {
            nonces: Nonces::Process {
                secret: Arc::new(secret),
                used: Arc::default(),
            },
            ttl,
        }
    }

    fn now(&self) -> DateTime<Utc> {
        match &self.nonces {
            Nonces::Store(store) => store.now(),
            Nonces::Process { .. } => Utc::now(),
        }
    }

    async fn codec(&self) -> Result<RequestStateCodec, ToolError> {
        let secret = match &self.nonces {
            Nonces::Store(store) => store.secret(SECRET_NAME).await?,
            Nonces::Process { secret, .. } => secret.as_ref().clone(),
        };
        RequestStateCodec::try_new(secret)
            .map_err(|e| ToolError::Unreachable(format!("the request-state key is unusable: {e}")))
    }

    /// A state for `holder` calling `tool`, answering request `request`.
    pub(crate) async fn seal(
        &self,
        holder: &str,
        tool: &str,
        request: &str,
    ) -> Result<String, ToolError> {
        let nonce = match &self.nonces {
            Nonces::Store(store) => store.issue_once(holder, self.ttl).await?,
            Nonces::Process { .. } => {
                let mut bytes = [0u8; 16];
                rand::rng().fill_bytes(&mut bytes);
                bytes.iter().map(|b| format!("{b:02x}")).collect()
            }
        };
        let payload = Payload {
            request: request.to_owned(),
            nonce,
            expires: (self.now() + self.ttl).timestamp_millis(),
        };
        let associated = associated_data(holder, tool);
        self.codec()
            .await?
            .seal_json_with(
                &payload,
                &SealOptions::new().associated_data(associated.as_bytes()),
            )
            .map_err(|e| ToolError::Unreachable(format!("cannot seal the request state: {e}")))
    }

    /// The request a state from `holder` calling `tool` answers; uses the state up.
    pub(crate) async fn open(
        &self,
        holder: &str,
        tool: &str,
        sealed: &str,
    ) -> Result<Result<String, StateError>, ToolError> {
        let associated = associated_data(holder, tool);
        let Ok(payload) = self
            .codec()
            .await?
            .open_json_with::<Payload>(sealed, associated.as_bytes())
        else {
            return Ok(Err(StateError::Forged));
        };
        let now = self.now();
        if now.timestamp_millis() > payload.expires {
            return Ok(Err(StateError::Expired));
        }
        let fresh = match &self.nonces {
            Nonces::Store(store) => store
                .redeem_once(&payload.nonce)
                .await?
                .is_some_and(|h| h == holder),
            Nonces::Process { used, .. } => {
                let mut used = used.lock().unwrap_or_else(|p| p.into_inner());
                used.retain(|_, expires| *expires > now);
                let expires = DateTime::from_timestamp_millis(payload.expires).unwrap_or(now);
                used.insert(payload.nonce, expires).is_none()
            }
        };
        Ok(if fresh {
            Ok(payload.request)
        } else {
            Err(StateError::Used)
        })
    }
}

fn associated_data(holder: &str, tool: &str) -> String {
    format!("{DOMAIN}\n{holder}\n{tool}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clarify_store::{ManualClock, StoreOptions};

    async fn states() -> (RequestStates, Arc<ManualClock>) {
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let options = StoreOptions {
            clock: clock.clone(),
            ..StoreOptions::default()
        };
        let store = Store::open("memory:", options).await.expect("store");
        (RequestStates::stored(store, TimeDelta::minutes(30)), clock)
    }

    #[tokio::test]
    async fn a_state_opens_once_for_its_holder_and_tool() {
        let (states, _) = states().await;
        let sealed = states
            .seal("key1", "ask_human", "r1")
            .await
            .expect("sealed");
        assert_eq!(
            states
                .open("key2", "ask_human", &sealed)
                .await
                .expect("read"),
            Err(StateError::Forged),
            "another key"
        );
        assert_eq!(
            states
                .open("key1", "approve_tool_use", &sealed)
                .await
                .expect("read"),
            Err(StateError::Forged),
            "another tool"
        );
        let mut altered = sealed.clone().into_bytes();
        let last = altered.len() - 1;
        altered[last] = if altered[last] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(altered).expect("utf-8");
        assert_eq!(
            states
                .open("key1", "ask_human", &altered)
                .await
                .expect("read"),
            Err(StateError::Forged),
            "altered"
        );
        assert_eq!(
            states
                .open("key1", "ask_human", &sealed)
                .await
                .expect("read"),
            Ok("r1".to_owned())
        );
        assert_eq!(
            states
                .open("key1", "ask_human", &sealed)
                .await
                .expect("read"),
            Err(StateError::Used),
            "replayed"
        );
        let (other, _) = self::states().await;
        assert_eq!(
            other
                .open("key1", "ask_human", &sealed)
                .await
                .expect("read"),
            Err(StateError::Forged),
            "another server's secret"
        );
    }

    #[tokio::test]
    async fn a_state_expires_on_the_stores_clock() {
        let (states, clock) = states().await;
        let sealed = states
            .seal("key1", "ask_human", "r1")
            .await
            .expect("sealed");
        clock.advance(TimeDelta::minutes(31));
        assert_eq!(
            states
                .open("key1", "ask_human", &sealed)
                .await
                .expect("read"),
            Err(StateError::Expired)
        );
    }

    #[tokio::test]
    async fn in_process_states_also_open_once() {
        let states = RequestStates::in_process(TimeDelta::minutes(5));
        let sealed = states
            .seal("stdio", "ask_human", "r9")
            .await
            .expect("sealed");
        assert_eq!(
            states
                .open("stdio", "ask_human", &sealed)
                .await
                .expect("read"),
            Ok("r9".to_owned())
        );
        assert_eq!(
            states
                .open("stdio", "ask_human", &sealed)
                .await
                .expect("read"),
            Err(StateError::Used)
        );
    }
}
