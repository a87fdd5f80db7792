//! The model: `POST {base}/chat/completions` of any OpenAI-compatible endpoint.
//!
//! Only what every compatible server understands is sent (`model`, `messages`, `tools`), and the
//! reply's message is read with the transcript's types, so provider-specific fields in it are
//! kept in the history. Overload and server errors (429, 5xx) and dropped connections are retried
//! a few times with growing pauses; anything else is reported with the provider's own message.

use std::time::Duration;

use clarify_core::transcript::Message;
use serde_json::{Value, json};

use crate::error::AgentError;

/// A chat-completions endpoint and the model to use there.
#[derive(Debug, Clone)]
pub struct Provider {
    url: String,
    key: Option<String>,
    model: String,
    http: reqwest::Client,
}

/// How many times one completion is tried.
const ATTEMPTS: u32 = 4;

impl Provider {
    /// The endpoint under `base_url` (e.g. `https://api.openai.com/v1`).
    pub fn new(base_url: &str, key: Option<String>, model: &str) -> Result<Self, AgentError> {
        let base = base_url.trim().trim_end_matches('/');
        let url = format!("{base}/chat/completions");
        let usage = |why: &str| AgentError::Usage(format!("OPENAI_BASE_URL {base_url:?} {why}"));
        let parsed = reqwest::Url::parse(&url).map_err(|e| usage(&format!("is not a URL: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(usage("must be an http:// or https:// URL"));
        }
        if model.trim().is_empty() {
            return Err(AgentError::Usage(
                "no model given; set OPENAI_MODEL (or pass --model)".to_owned(),
            ));
        }
        let http = clarify_client::http::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .user_agent(concat!("clarify-example-agent/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AgentError::Provider {
                url: url.clone(),
                detail: e.to_string(),
            })?;
        Ok(Self {
            url,
            key: key.filter(|k| !k.trim().is_empty()),
            model: model.trim().to_owned(),
            http,
        })
    }

    /// The model's next message after `messages`, offered `tools`.
    pub async fn complete(
        &self,
        messages: &[Message],
        tools: &[Value],
    ) -> Result<Message, AgentError> {
        let body = json!({"model": self.model, "messages": messages, "tools": tools});
        let mut pause = Duration::from_secs(1);
        let mut attempt = 1;
        loop {
            match self.attempt(&body).await {
                Ok(message) => return Ok(message),
                Err(Failure::Transient(detail)) if attempt < ATTEMPTS => {
                    eprintln!("the model provider failed ({detail}); retrying in {pause:?}");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                    attempt += 1;
                }
                Err(Failure::Transient(detail) | Failure::Final(detail)) => {
                    return Err(AgentError::Provider {
                        url: self.url.clone(),
                        detail,
                    });
                }
            }
        }
    }

    async fn attempt(&self, body: &Value) -> Result<Message, Failure> {
        let mut request = self.http.post(&self.url).json(body);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|e| {
            let detail = e.to_string();
            if e.is_connect() || e.is_timeout() || e.is_request() {
                Failure::Transient(detail)
            } else {
                Failure::Final(detail)
            }
        })?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| Failure::Transient(e.to_string()))?;
        let value: Option<Value> = serde_json::from_str(&text).ok();
        if !status.is_success() {
            let message = value
                .as_ref()
                .and_then(|v| v["error"]["message"].as_str())
                .map_or_else(|| shorten(&text), str::to_owned);
            let detail = format!("HTTP {}: {message}", status.as_u16());
            return Err(if status.as_u16() == 429 || status.is_server_error() {
                Failure::Transient(detail)
            } else {
                Failure::Final(detail)
            });
        }
        let Some(value) = value else {
            return Err(Failure::Final(format!(
                "the reply is not JSON: {}",
                shorten(&text)
            )));
        };
        let message = value["choices"][0]["message"].clone();
        if message.is_null() {
            return Err(Failure::Final(format!(
                "the reply has no choices[0].message: {}",
                shorten(&text)
            )));
        }
        match serde_json::from_value::<Message>(message) {
            Ok(message @ Message::Assistant(_)) => Ok(message),
            Ok(other) => Err(Failure::Final(format!(
                "the reply is a {} message, not an assistant message",
                other.role()
            ))),
            Err(e) => Err(Failure::Final(format!(
                "the reply's message is malformed: {e}"
            ))),
        }
    }
}

enum Failure {
    /// Worth another try.
    Transient(String),
    Final(String),
}

/// At most 300 characters of a body, for an error message.
fn shorten(text: &str) -> String {
    let mut short: String = text.chars().take(300).collect();
    if short.len() < text.len() {
        short.push('…');
    }
    short
}
