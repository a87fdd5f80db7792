//! A fake Twilio REST API on 127.0.0.1: `POST /2010-04-01/Accounts/{AccountSid}/Messages.json`
//! and `.../Calls.json`, form-encoded, with the account SID and auth token checked as basic
//! auth, answering `201` with the resource as Twilio shapes it (`sid`, `status`, …) or an error
//! as Twilio shapes it (`{"code", "message", "more_info", "status"}`); and [`Twilio::call`],
//! which calls a channel's hook as Twilio does (a form body and `X-Twilio-Signature`, computed
//! here from Twilio's documented rule, not by clarify's code).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::{Map, Value, json};

use crate::fake_calls::Calls;

pub const ACCOUNT_SID: &str = "AC00000000000000000000000000000001";
pub const AUTH_TOKEN: &str = "twilio-auth-token-0123456789abcdef";
pub const FROM: &str = "+14155550100";

#[derive(Default)]
struct Recorded {
    calls: Calls,
    next: AtomicUsize,
}

pub struct FakeTwilio {
    pub api_url: String,
    state: Arc<Recorded>,
}

impl FakeTwilio {
    pub async fn start() -> Self {
        let state = Arc::new(Recorded::default());
        let app = axum::Router::new()
            .route(
                "/2010-04-01/Accounts/{account}/{resource}",
                axum::routing::post(create),
            )
            .with_state(Arc::clone(&state));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let api_url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { api_url, state }
    }

    /// The form parameters of every `Messages` or `Calls` resource created, in order.
    pub fn created(&self, resource: &str) -> Vec<Value> {
        self.state
            .calls
            .of(resource)
            .into_iter()
            .map(|(_, form)| form)
            .collect()
    }

    /// Waits until `n` resources of `resource` were created; their form parameters.
    pub async fn wait_for(&self, resource: &str, n: usize) -> Vec<Value> {
        let found = self.state.calls.wait_for(resource, n).await;
        found.into_iter().map(|(_, form)| form).collect()
    }
}

/// Twilio's signature of a call to `url` with `params`, keyed by `token`: the base64
/// HMAC-SHA1 of the URL followed by each parameter, sorted by name, as name then value.
pub fn sign(token: &str, url: &str, params: &[(&str, &str)]) -> String {
    let mut sorted = params.to_vec();
    sorted.sort();
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(token.as_bytes()).expect("key");
    mac.update(url.as_bytes());
    for (name, value) in sorted {
        mac.update(name.as_bytes());
        mac.update(value.as_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// How a test calls a channel's hook: as Twilio (signed with the channel's auth token), with
/// another signature, or with none.
pub enum Signed<'a> {
    ByTwilio,
    As(&'a str),
    Not,
}

/// Posts `params` to `url` as Twilio does; the status and the body (TwiML, or an error).
pub async fn call(
    client: &reqwest::Client,
    url: &str,
    params: &[(&str, &str)],
    signed: Signed<'_>,
) -> (StatusCode, String) {
    let mut post = client.post(url).form(params);
    match signed {
        Signed::ByTwilio => post = post.header("X-Twilio-Signature", sign(AUTH_TOKEN, url, params)),
        Signed::As(signature) => post = post.header("X-Twilio-Signature", signature),
        Signed::Not => {}
    }
    let response = post.send().await.expect("hook");
    let status = StatusCode::from_u16(response.status().as_u16()).expect("status");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.text().await.expect("body");
    if status == StatusCode::OK && !body.is_empty() {
        assert!(
            content_type.starts_with("text/xml"),
            "{content_type}: {body}"
        );
    }
    (status, body)
}

/// The text of the `<Message>` of a TwiML reply, unescaped.
pub fn message_text(twiml: &str) -> String {
    let start = twiml.find("<Message>").map_or(0, |i| i + "<Message>".len());
    let end = twiml.find("</Message>").unwrap_or(twiml.len());
    unescape(&twiml[start..end])
}

pub fn unescape(xml: &str) -> String {
    xml.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn error(status: StatusCode, code: u32, message: &str) -> Response {
    let body = json!({
        "code": code,
        "message": message,
        "more_info": format!("https://www.twilio.com/docs/errors/{code}"),
        "status": status.as_u16(),
    });
    (status, Json(body)).into_response()
}

async fn create(
    State(state): State<Arc<Recorded>>,
    Path((account, resource)): Path<(String, String)>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{ACCOUNT_SID}:{AUTH_TOKEN}"))
    );
    let authorized = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == expected);
    if !authorized || account != ACCOUNT_SID {
        return error(StatusCode::UNAUTHORIZED, 20003, "Authenticate");
    }
    let form: Map<String, Value> = url::form_urlencoded::parse(body.as_bytes())
        .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
        .collect();
    let text = |name: &str| form.get(name).and_then(Value::as_str).unwrap_or("");
    let n = state.next.fetch_add(1, Ordering::SeqCst);
    let (kind, sid) = match resource.as_str() {
        "Messages.json" => {
            if text("To").is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    21604,
                    "A 'To' phone number is required.",
                );
            }
            if text("From").is_empty() && text("MessagingServiceSid").is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    21603,
                    "A 'From' phone number is required.",
                );
            }
            // A template (Content API) instead of a body: its SID, and its variables as a JSON
            // object of strings.
            let content = text("ContentSid");
            if !content.is_empty() {
                let sid_ok = content.len() == 34
                    && content.starts_with("HX")
                    && content[2..].chars().all(|c| c.is_ascii_hexdigit());
                let variables_ok = serde_json::from_str::<Map<String, Value>>(
                    form.get("ContentVariables")
                        .and_then(Value::as_str)
                        .unwrap_or("{}"),
                )
                .is_ok_and(|v| v.values().all(Value::is_string));
                if !sid_ok || !variables_ok || !text("Body").is_empty() {
                    return error(
                        StatusCode::BAD_REQUEST,
                        21656,
                        "The ContentSid or ContentVariables parameter is invalid.",
                    );
                }
            } else if text("Body").is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    21619,
                    "A text message body or media urls must be specified.",
                );
            } else if text("Body").chars().count() > 1_600 {
                return error(
                    StatusCode::BAD_REQUEST,
                    21617,
                    "The concatenated message body exceeds the 1600 character limit.",
                );
            }
            ("Messages", format!("SM{n:032x}"))
        }
        "Calls.json" => {
            if text("To").is_empty() || text("From").is_empty() {
                return error(
                    StatusCode::BAD_REQUEST,
                    21201,
                    "No 'To' number is specified",
                );
            }
            if text("Url").is_empty() && text("Twiml").is_empty() {
                return error(StatusCode::BAD_REQUEST, 21205, "Url parameter is required.");
            }
            ("Calls", format!("CA{n:032x}"))
        }
        _ => {
            return error(
                StatusCode::NOT_FOUND,
                20404,
                "The requested resource was not found",
            );
        }
    };
    state.calls.record(kind, "", Value::Object(form.clone()));
    let resource = json!({
        "sid": sid,
        "account_sid": ACCOUNT_SID,
        "to": text("To"),
        "from": text("From"),
        "body": form.get("Body"),
        "status": "queued",
        "api_version": "2010-04-01",
        "uri": format!("/2010-04-01/Accounts/{ACCOUNT_SID}/{kind}/{sid}.json"),
    });
    (StatusCode::CREATED, Json(resource)).into_response()
}
