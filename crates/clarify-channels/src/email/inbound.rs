//! Answers by e-mail reply: Mailgun's inbound routing (`forward()` to
//! `/hooks/email/{name}`) posts each reply to an announcement as form fields (URL-encoded, or
//! `multipart/form-data` when the mail has attachments). The call is verified first: `signature`
//! is the hex HMAC-SHA256 of `timestamp` + `token` with the domain's webhook signing key, the
//! timestamp within five minutes of now, and a token seen in that time refused (kept through the
//! server's `Desk`), so a captured post cannot be replayed.
//!
//! The reply is matched to the announcement by its thread (`In-Reply-To`, then `References`:
//! the announcement's `Message-ID` is its message reference) and answered as the sender (`from`,
//! mapped through `[identities]` as `email:<address>`, or a linked account) by the shared
//! typed-reply path: its first line (`approve`, `deny too risky`, `2`, an option's label, the
//! text of an open question). Quoted text (`>` lines, "On … wrote:", a forwarded original) and
//! the signature are left out. A reply from someone who may not answer changes nothing: the
//! server's desk records it as a `refused` event in the request's history (sender and channel),
//! and the refusal is logged, as is a reply to no announcement clarify knows.

use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use super::Email;
use crate::act::Act;
use crate::inbound::{InboundError, malformed};
use crate::layout::words::outcome_text;
use crate::platform::{Call, Desk, Done, HookReply, Target};

/// How far a post's timestamp may be from now.
pub const MAX_SKEW_SECONDS: i64 = 300;

/// A reply as Mailgun posts it, verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The sender's address, from the `From` header (`alice@example.com`).
    pub from: String,
    /// The message ids the reply names, nearest first: `In-Reply-To`, then `References` from
    /// the last.
    pub thread: Vec<String>,
    /// The answer: the reply's first line of its own text.
    pub answer: String,
}

/// The fields of a form body, by its `content_type`: URL-encoded or `multipart/form-data`
/// (files left out).
pub fn fields(content_type: &str, body: &[u8]) -> Result<Vec<(String, String)>, InboundError> {
    let mime = content_type.split(';').next().unwrap_or_default().trim();
    match mime.to_ascii_lowercase().as_str() {
        "application/x-www-form-urlencoded" => Ok(url::form_urlencoded::parse(body)
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect()),
        "multipart/form-data" => {
            let boundary = content_type
                .split(';')
                .filter_map(|p| p.trim().split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
                .map(|(_, v)| v.trim().trim_matches('"').to_owned())
                .filter(|b| !b.is_empty())
                .ok_or_else(|| malformed("a multipart body without a boundary"))?;
            multipart(&boundary, body)
        }
        other => Err(malformed(format!(
            "the body is {other:?}, not a form (application/x-www-form-urlencoded or multipart/form-data)"
        ))),
    }
}

/// The text fields of a `multipart/form-data` body; parts with a file name are left out.
fn multipart(boundary: &str, body: &[u8]) -> Result<Vec<(String, String)>, InboundError> {
    let delimiter = format!("--{boundary}");
    let text = String::from_utf8_lossy(body);
    let mut found = Vec::new();
    for part in text.split(delimiter.as_str()).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let part = part.strip_prefix("\r\n").unwrap_or(part);
        let Some((head, value)) = part.split_once("\r\n\r\n") else {
            return Err(malformed("a multipart part without headers"));
        };
        let disposition = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition:"))
            .unwrap_or_default();
        let param = |name: &str| {
            disposition.split(';').find_map(|p| {
                let (k, v) = p.trim().split_once('=')?;
                (k.trim() == name).then(|| v.trim().trim_matches('"').to_owned())
            })
        };
        if param("filename").is_some() {
            continue;
        }
        let Some(name) = param("name") else {
            return Err(malformed("a multipart part without a name"));
        };
        found.push((name, value.strip_suffix("\r\n").unwrap_or(value).to_owned()));
    }
    Ok(found)
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Checks Mailgun's `timestamp`, `token` and `signature` fields with `signing_key`: the HMAC in
/// constant time, and the timestamp within [`MAX_SKEW_SECONDS`] of `now`.
pub fn verify(
    signing_key: &str,
    fields: &[(String, String)],
    now: DateTime<Utc>,
) -> Result<(), InboundError> {
    let (Some(timestamp), Some(token), Some(signature)) = (
        field(fields, "timestamp"),
        field(fields, "token"),
        field(fields, "signature"),
    ) else {
        return Err(InboundError::Unauthorized(
            "timestamp, token and signature are required",
        ));
    };
    let digest = crate::text::decode_hex(signature.trim())
        .ok_or(InboundError::Unauthorized("the signature is not hex"))?;
    let mut mac = Hmac::<Sha256>::new_from_slice(signing_key.as_bytes())
        .map_err(|_| InboundError::Unauthorized("the signing key is unusable"))?;
    mac.update(timestamp.as_bytes());
    mac.update(token.as_bytes());
    mac.verify_slice(&digest)
        .map_err(|_| InboundError::Unauthorized("the signature does not match"))?;
    let at: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| InboundError::Unauthorized("the timestamp is not a number"))?;
    if (now.timestamp() - at).abs() > MAX_SKEW_SECONDS {
        return Err(InboundError::Unauthorized(
            "the timestamp is more than five minutes from now",
        ));
    }
    Ok(())
}

/// Reads a verified post into a [`Reply`].
pub fn read(fields: &[(String, String)]) -> Result<Reply, InboundError> {
    let from = field(fields, "from")
        .or_else(|| field(fields, "sender"))
        .and_then(address)
        .ok_or_else(|| malformed("a reply without a sender's address (from)"))?;
    let mut thread = Vec::new();
    for id in field(fields, "In-Reply-To")
        .map(ids)
        .unwrap_or_default()
        .into_iter()
        .chain(
            field(fields, "References")
                .map(ids)
                .unwrap_or_default()
                .into_iter()
                .rev(),
        )
    {
        if !thread.contains(&id) {
            thread.push(id);
        }
    }
    let text = field(fields, "stripped-text")
        .filter(|t| !t.trim().is_empty())
        .or_else(|| field(fields, "body-plain"))
        .unwrap_or_default();
    Ok(Reply {
        from,
        thread,
        answer: first_line(text).unwrap_or_default(),
    })
}

/// The address in a `From` value: `Alice <alice@example.com>` or `alice@example.com`.
pub fn address(from: &str) -> Option<String> {
    let from = from.trim();
    let inner = match (from.rfind('<'), from.rfind('>')) {
        (Some(start), Some(end)) if start < end => &from[start + 1..end],
        _ => from,
    };
    let inner = inner.trim();
    let (local, domain) = inner.split_once('@')?;
    (!local.is_empty() && domain.contains('.') && !inner.contains(char::is_whitespace))
        .then(|| inner.to_owned())
}

/// The `<…>` message ids in a header's value.
fn ids(value: &str) -> Vec<String> {
    value
        .split('<')
        .skip(1)
        .filter_map(|s| s.split_once('>').map(|(id, _)| format!("<{}>", id.trim())))
        .filter(|id| id.len() > 2)
        .collect()
}

/// The first line of the reply's own text: the quote (`>` lines, "On … wrote:", a forwarded or
/// "Original Message" header) and the signature (`-- `) end it.
pub fn first_line(text: &str) -> Option<String> {
    for line in text.lines() {
        let trimmed = line.trim();
        let lower = trimmed.to_ascii_lowercase();
        let quote_starts = trimmed.starts_with('>')
            || line.trim_end() == "--"
            || (lower.starts_with("on ") && lower.ends_with("wrote:"))
            || lower.starts_with("-----original message-----")
            || lower.starts_with("---------- forwarded message");
        if quote_starts {
            return None;
        }
        if !trimmed.is_empty() {
            return Some(trimmed.to_owned());
        }
    }
    None
}

/// The kept key of the tokens channel `channel` saw in the last [`MAX_SKEW_SECONDS`].
fn tokens_key(channel: &str) -> String {
    format!("email:mailgun_tokens:{channel}")
}

/// Records `token` as seen at `at`; `false` when it was seen already.
async fn fresh_token<D: Desk>(desk: &D, channel: &str, token: &str, now: DateTime<Utc>) -> bool {
    let key = tokens_key(channel);
    let mut seen: Vec<(i64, String)> = match desk.kept(&key).await {
        Ok(Some(bytes)) => serde_json::from_slice(&bytes).unwrap_or_default(),
        Ok(None) => Vec::new(),
        Err(e) => {
            tracing::warn!(%channel, error = %e, "reading the Mailgun tokens seen failed");
            Vec::new()
        }
    };
    // Past the skew a post is refused by its timestamp, so its token need not be kept.
    seen.retain(|(at, _)| now.timestamp() - at <= 2 * MAX_SKEW_SECONDS);
    if seen.iter().any(|(_, t)| t == token) {
        return false;
    }
    seen.push((now.timestamp(), token.to_owned()));
    let bytes = serde_json::to_vec(&seen).unwrap_or_default();
    if let Err(e) = desk.keep(&key, bytes).await {
        tracing::warn!(%channel, error = %e, "keeping the Mailgun tokens seen failed");
    }
    true
}

/// Answers Mailgun's post of a reply: verified (signature, timestamp, a token not seen before)
/// before anything else is read, `401` otherwise with nothing changed.
pub(crate) async fn hook<D: Desk>(email: &Email, desk: &D, channel: &str, call: Call<'_>) -> HookReply {
    let Some(key) = email.mailgun_signing_key.as_deref() else {
        return HookReply::NotFound(
            "this e-mail channel takes no replies: it has no mailgun_signing_key".to_owned(),
        );
    };
    let refuse = |e: InboundError| {
        tracing::warn!(%channel, error = %e, "refused an e-mail reply post");
        HookReply::refused(e)
    };
    let content_type = call.header("content-type").unwrap_or_default();
    // The signature travels in the body: the form is parsed, but nothing of it is used first.
    let fields = match fields(content_type, call.body) {
        Ok(f) => f,
        Err(_) => {
            return refuse(InboundError::Unauthorized(
                "timestamp, token and signature are required",
            ));
        }
    };
    let now = desk.now();
    if let Err(e) = verify(key, &fields, now) {
        return refuse(e);
    }
    let token = field(&fields, "token").unwrap_or_default();
    if !fresh_token(desk, channel, token, now).await {
        return refuse(InboundError::Unauthorized("this token was used already"));
    }
    let reply = match read(&fields) {
        Ok(r) => r,
        Err(e) => return refuse(e),
    };
    handle(desk, channel, reply).await;
    HookReply::Ok
}

/// Answers the request the reply's thread names as its sender; what changes nothing is logged
/// with why.
async fn handle<D: Desk>(desk: &D, channel: &str, reply: Reply) {
    let from = reply.from.as_str();
    let mut found = None;
    for id in &reply.thread {
        if let Ok(record) = desk.find(channel, Target::Message(id.clone())).await {
            found = Some(record);
            break;
        }
    }
    let Some(record) = found else {
        tracing::warn!(%channel, %from, thread = ?reply.thread, "an e-mail reply names no announcement of this channel; nothing changed");
        return;
    };
    if reply.answer.is_empty() {
        tracing::warn!(%channel, %from, request = %record.id, "an e-mail reply has no text of its own; nothing changed");
        return;
    }
    let request = record.id.clone();
    let done = desk
        .act(
            channel,
            from,
            Target::Request(record.id),
            Act::Typed(reply.answer.clone()),
        )
        .await;
    match done {
        Ok(Done::Resolved(record)) => {
            tracing::info!(%channel, %from, %request, outcome = %outcome_text(&record), "an e-mail reply answered");
        }
        Ok(Done::Nothing(_) | Done::Open { .. }) => {
            tracing::info!(%channel, %from, %request, "an e-mail reply changed nothing");
        }
        Err(refusal) => {
            tracing::warn!(%channel, %from, %request, answer = %reply.answer, refusal = %refusal.message, "refused an e-mail reply; nothing changed");
        }
    }
}
