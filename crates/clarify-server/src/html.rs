//! Server-rendered HTML: the signed-link answer page and plain message pages.
//!
//! Every string that came from a request (written by an agent, so untrusted) passes through
//! [`escape`]; pages carry a Content-Security-Policy that allows no script and no inline style,
//! so even a missed escape could not run anything.

use std::fmt::Write;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use clarify_core::{Context, QuestionKind};
use clarify_store::RequestRecord;

/// The policy of every HTML page this module renders.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · clarify</title></head><body><main>{body}</main></body></html>\n",
        escape(title)
    );
    let mut response = (status, Html(html)).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// A page that only says something.
pub fn message_page(status: StatusCode, title: &str, message: &str) -> Response {
    page(
        status,
        title,
        &format!("<h1>{}</h1><p>{}</p>", escape(title), escape(message)),
    )
}

/// The inbox entry page.
pub async fn inbox() -> Response {
    page(
        StatusCode::OK,
        "Inbox",
        "<h1>clarify</h1><p>Pending requests are listed at <a href=\"/v1/requests?status=pending\">/v1/requests</a>; \
         answer them with <code>clarify inbox</code> or through their answer links.</p>",
    )
}

/// The answer form of a signed link, or what became of its request.
pub fn link_page(record: &RequestRecord, error: Option<&str>) -> Response {
    let request = &record.request;
    let mut body = String::new();
    if record.status.is_resolved() {
        let by = record
            .resolution
            .as_ref()
            .and_then(|r| r.actor.name.clone())
            .map(|n| format!(" by {}", escape(&n)))
            .unwrap_or_default();
        let _ = write!(
            body,
            "<h1>This request is {}</h1><p>It was {}{by}. This link no longer answers it.</p>",
            escape(record.status.as_str()),
            escape(record.status.as_str()),
        );
        return page(StatusCode::OK, "Request resolved", &body);
    }
    body.push_str("<h1>A question for you</h1>");
    if let Some(error) = error {
        let _ = write!(
            body,
            "<p role=\"alert\"><strong>{}</strong></p>",
            escape(error)
        );
    }
    match &request.context {
        Some(Context::Text(t)) => {
            let _ = write!(body, "<p>{}</p>", escape(t));
        }
        Some(Context::Json(map)) => {
            let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
            let _ = write!(body, "<pre>{}</pre>", escape(&pretty));
        }
        None => {}
    }
    if let Some(at) = record.expires_at {
        let _ = write!(
            body,
            "<p>Answer before {}.</p>",
            escape(&crate::wire::time(at))
        );
    }
    body.push_str("<form method=\"post\">");
    for q in &request.questions {
        let id = escape(&q.id);
        body.push_str("<fieldset>");
        if let Some(h) = &q.header {
            let _ = write!(body, "<legend>{}</legend>", escape(h));
        }
        let _ = write!(body, "<p>{}</p>", escape(&q.text));
        match &q.kind {
            QuestionKind::Open => {
                let _ = write!(
                    body,
                    "<textarea name=\"{id}.text\" rows=\"4\" cols=\"60\"></textarea>"
                );
            }
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let (input, field) = match &q.kind {
                    QuestionKind::Single(_) => ("radio", "option"),
                    _ => ("checkbox", "options"),
                };
                for o in &c.options {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " (recommended)"
                    } else {
                        ""
                    };
                    let desc = o
                        .description
                        .as_ref()
                        .map(|d| format!(" — {}", escape(d)))
                        .unwrap_or_default();
                    let _ = write!(
                        body,
                        "<label><input type=\"{input}\" name=\"{id}.{field}\" value=\"{}\"> {}{mark}{desc}</label><br>",
                        escape(&o.id),
                        escape(&o.label)
                    );
                }
                if c.allow_other {
                    let _ = write!(
                        body,
                        "<label>Other: <input type=\"text\" name=\"{id}.other\"></label>"
                    );
                }
            }
            QuestionKind::Approval(a) => {
                let args = serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                let _ = write!(
                    body,
                    "<p>Action: <code>{}</code></p><pre>{}</pre>\
                     <label><input type=\"radio\" name=\"{id}.decision\" value=\"approve\"> Approve</label> \
                     <label><input type=\"radio\" name=\"{id}.decision\" value=\"deny\"> Deny</label><br>",
                    escape(&a.action.name),
                    escape(&args)
                );
                if a.scopes.len() > 1 {
                    let _ = write!(body, "<label>Scope: <select name=\"{id}.scope\">");
                    for s in &a.scopes {
                        let _ = write!(body, "<option value=\"{0}\">{0}</option>", s.as_str());
                    }
                    body.push_str("</select></label><br>");
                }
                if a.allow_edit {
                    let _ = write!(
                        body,
                        "<label>Edited arguments (JSON):<br><textarea name=\"{id}.edited_arguments\" rows=\"6\" cols=\"60\">{}</textarea></label><br>",
                        escape(&args)
                    );
                }
                let _ = write!(
                    body,
                    "<label>Reason: <input type=\"text\" name=\"{id}.reason\"></label>"
                );
            }
        }
        body.push_str("</fieldset>");
    }
    body.push_str("<button type=\"submit\">Send answer</button>");
    if request.allow_skip {
        body.push_str(" <button type=\"submit\" name=\"skip\" value=\"1\">Skip</button>");
    }
    body.push_str("</form>");
    page(
        if error.is_some() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::OK
        },
        "Answer",
        &body,
    )
}
