//! Server-rendered HTML: the signed-link answer page and plain message pages.
//!
//! Every string that came from a request (written by an agent, so untrusted) passes through
//! [`escape`]. Every page carries [`CSP`]: scripts only from this server's own files, no inline
//! script or style, so even a missed escape could not run anything. The link page works as a
//! plain form; when script runs, the inbox's request view (`assets/link.js`) takes its place.

use std::fmt::Write;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use clarify_core::{Context, QuestionKind};
use clarify_store::RequestRecord;
use serde_json::Value;

use crate::inbox::asset_path;
use crate::wire::RecordBody;

/// The policy of every HTML page: the inbox and the pages rendered here.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

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

/// An HTML response under the pages' policy.
pub fn document(status: StatusCode, html: String) -> Response {
    let mut response = (status, Html(html)).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

/// A page: the shared stylesheet, `body` in `<main>` (with `main_id`), and `script` if any.
fn page(
    status: StatusCode,
    title: &str,
    body: &str,
    main_id: Option<&str>,
    script: Option<&str>,
) -> Response {
    let script = script
        .map(|name| {
            format!(
                "<script type=\"module\" src=\"{}\"></script>",
                asset_path(name)
            )
        })
        .unwrap_or_default();
    let id = main_id
        .map(|id| format!(" id=\"{id}\""))
        .unwrap_or_default();
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · clarify</title>\
         <link rel=\"icon\" href=\"{}\" type=\"image/svg+xml\">\
         <link rel=\"stylesheet\" href=\"{}\">{script}</head>\
         <body><main class=\"page\"{id}>{body}</main></body></html>\n",
        escape(title),
        asset_path("icon.svg"),
        asset_path("clarify.css"),
    );
    let mut response = document(status, html);
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
        None,
        None,
    )
}

/// A posted link form the server refused: why, and what was sent, to show the form again as it
/// was with the message next to the field at fault.
#[derive(Debug, Default)]
pub struct Refused {
    pub message: String,
    /// The posted `name=value` pairs.
    pub typed: Vec<(String, String)>,
}

impl Refused {
    /// `(question id, field id)` when the message names one form field
    /// (`answers.<question>.values.<field>: ...`), as the answer parser's messages do.
    fn field(&self) -> Option<(&str, &str)> {
        let (path, _) = self.message.split_once(": ")?;
        let rest = path.strip_prefix("answers.")?;
        let (question, field) = rest.split_once(".values.")?;
        Some((question, field))
    }

    /// What was typed for input `name`.
    fn typed(&self, name: &str) -> impl Iterator<Item = &str> {
        self.typed
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The answer form of a signed link, or what became of its request.
pub fn link_page(record: &RequestRecord, refused: Option<&Refused>) -> Response {
    let request = &record.request;
    let error = refused.map(|r| r.message.as_str());
    // Forms and quorum are drawn from the record as the API shows it, the one shape the inbox
    // and this page share.
    let wire = serde_json::to_value(RecordBody::new(record, None)).unwrap_or_default();
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
        return page(StatusCode::OK, "Request resolved", &body, None, None);
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
    let required = wire["approvals_required"].as_u64().unwrap_or(1);
    if required > 1 {
        quorum_notice(&mut body, &wire, required);
        // The one refusal a link meets here is that it cannot vote.
        return page(
            if error.is_some() {
                StatusCode::FORBIDDEN
            } else {
                StatusCode::OK
            },
            "Answer",
            &body,
            Some("link"),
            Some("link.js"),
        );
    }
    body.push_str("<form method=\"post\">");
    for (index, q) in request.questions.iter().enumerate() {
        let id = escape(&q.id);
        body.push_str("<fieldset>");
        if let Some(h) = &q.header {
            let _ = write!(body, "<legend>{}</legend>", escape(h));
        }
        let _ = write!(body, "<p>{}</p>", escape(&q.text));
        let shown = &wire["questions"][index];
        if shown["kind"] == "form" {
            form_fields(&mut body, &q.id, shown, refused);
            body.push_str("</fieldset>");
            continue;
        }
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
                match a.scopes.as_slice() {
                    [] | [clarify_core::Scope::Once] => {}
                    // The one scope offered is not the default: send it, or an approval fails.
                    [only] => {
                        let _ = write!(
                            body,
                            "<input type=\"hidden\" name=\"{id}.scope\" value=\"{}\">",
                            only.as_str()
                        );
                    }
                    scopes => {
                        let _ = write!(body, "<label>Scope: <select name=\"{id}.scope\">");
                        for s in scopes {
                            let _ = write!(body, "<option value=\"{0}\">{0}</option>", s.as_str());
                        }
                        body.push_str("</select></label><br>");
                    }
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
        Some("link"),
        Some("link.js"),
    )
}

/// A request that needs several approvals cannot be answered by whoever holds its link: say so,
/// with the approvals so far.
fn quorum_notice(body: &mut String, wire: &Value, required: u64) {
    let approvers: Vec<&str> = wire["votes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["decision"] == "approve")
        .filter_map(|v| v["by"].as_str())
        .collect();
    let by = if approvers.is_empty() {
        "nobody has approved yet".to_owned()
    } else {
        format!("approved by {}", escape(&approvers.join(", ")))
    };
    for q in wire["questions"].as_array().into_iter().flatten() {
        let _ = write!(
            body,
            "<p>{}</p>",
            escape(q["text"].as_str().unwrap_or_default())
        );
        if let Some(action) = q.get("action") {
            let args = serde_json::to_string_pretty(&action["arguments"]).unwrap_or_default();
            let _ = write!(
                body,
                "<p>Action: <code>{}</code></p><pre>{}</pre>",
                escape(action["name"].as_str().unwrap_or_default()),
                escape(&args)
            );
        }
    }
    let _ = write!(
        body,
        "<p class=\"quorum\"><strong>{} of {required} approvals</strong> · {by}</p>\
         <p role=\"note\"><strong>This request needs approvals from {required} signed-in responders.</strong> \
         An answer link cannot vote: open the request in the inbox, signed in, to approve or deny it.</p>",
        approvers.len(),
    );
}

/// The inputs of a form question, named `<question id>.<field id>`, with their labels,
/// descriptions and defaults, or what was typed when the form comes back refused.
fn form_fields(body: &mut String, question: &str, shown: &Value, refused: Option<&Refused>) {
    let at_fault = refused.and_then(Refused::field);
    body.push_str("<p>Fields marked * are required.</p>");
    for (n, field) in shown["fields"].as_array().into_iter().flatten().enumerate() {
        let field_id = field["id"].as_str().unwrap_or_default();
        let name = escape(&format!("{question}.{field_id}"));
        let dom = format!("f-{}-{n}", escape(question));
        let label = escape(field["label"].as_str().unwrap_or_default());
        let required = field["required"].as_bool().unwrap_or(true);
        let mark = if required { " *" } else { " (optional)" };
        let kind = field["type"].as_str().unwrap_or("text");
        let typed: Option<Vec<&str>> =
            refused.map(|r| r.typed(&format!("{question}.{field_id}")).collect());
        let default = &field["default"];
        let text_of = |v: &Value| match v {
            Value::String(s) => s.clone(),
            Value::Null => String::new(),
            v => v.to_string(),
        };
        let value = match &typed {
            Some(t) => t.first().map(|s| (*s).to_owned()).unwrap_or_default(),
            None => text_of(default),
        };
        let error = match at_fault {
            Some((q, f)) if q == question && f == field_id => refused
                .and_then(|r| r.message.split_once(": "))
                .map(|(_, m)| m.to_owned()),
            _ => None,
        };
        let described = format!(
            "{}{}",
            if field.get("description").is_some() {
                format!("{dom}-desc ")
            } else {
                String::new()
            },
            if error.is_some() {
                format!("{dom}-err")
            } else {
                String::new()
            },
        );
        let aria = if described.trim().is_empty() {
            String::new()
        } else {
            format!(" aria-describedby=\"{}\"", described.trim())
        };
        let invalid = if error.is_some() {
            " aria-invalid=\"true\""
        } else {
            ""
        };
        let req = if required && kind != "boolean" {
            " required"
        } else {
            ""
        };
        body.push_str("<div class=\"form-field\">");
        match kind {
            "boolean" => {
                let checked = match &typed {
                    // A hidden "false" goes first, so an unchecked box still sends a value.
                    Some(t) => t.contains(&"true"),
                    None => default == &Value::Bool(true),
                };
                let _ = write!(
                    body,
                    "<input type=\"hidden\" name=\"{name}\" value=\"false\">\
                     <label><input type=\"checkbox\" id=\"{dom}\" name=\"{name}\" value=\"true\"{}{aria}{invalid}> {label}{mark}</label>",
                    if checked { " checked" } else { "" }
                );
            }
            "choice" | "choices" => {
                let many = kind == "choices";
                if many {
                    let _ = write!(
                        body,
                        "<fieldset id=\"{dom}\"><legend>{label}{mark}</legend>"
                    );
                } else {
                    let _ = write!(body, "<label for=\"{dom}\">{label}{mark}</label><br>");
                }
                let chosen: Vec<String> = match &typed {
                    Some(t) => t.iter().map(|s| (*s).to_owned()).collect(),
                    None => match default {
                        Value::Array(a) => a.iter().map(text_of).collect(),
                        Value::Null => Vec::new(),
                        v => vec![text_of(v)],
                    },
                };
                let options = field["options"].as_array().cloned().unwrap_or_default();
                if many {
                    for o in &options {
                        let oid = o["id"].as_str().unwrap_or_default();
                        let desc = o["description"]
                            .as_str()
                            .map(|d| format!(" — {}", escape(d)))
                            .unwrap_or_default();
                        let _ = write!(
                            body,
                            "<label><input type=\"checkbox\" name=\"{name}\" value=\"{}\"{}{aria}{invalid}> {}{desc}</label><br>",
                            escape(oid),
                            if chosen.iter().any(|c| c == oid) {
                                " checked"
                            } else {
                                ""
                            },
                            escape(o["label"].as_str().unwrap_or_default()),
                        );
                    }
                    body.push_str("</fieldset>");
                } else {
                    let _ = write!(
                        body,
                        "<select id=\"{dom}\" name=\"{name}\"{req}{aria}{invalid}><option value=\"\">{}</option>",
                        if required { "Choose…" } else { "None" }
                    );
                    for o in &options {
                        let oid = o["id"].as_str().unwrap_or_default();
                        let desc = o["description"]
                            .as_str()
                            .map(|d| format!(" — {}", escape(d)))
                            .unwrap_or_default();
                        let _ = write!(
                            body,
                            "<option value=\"{}\"{}>{}{desc}</option>",
                            escape(oid),
                            if chosen.iter().any(|c| c == oid) {
                                " selected"
                            } else {
                                ""
                            },
                            escape(o["label"].as_str().unwrap_or_default()),
                        );
                    }
                    body.push_str("</select>");
                }
            }
            _ => {
                let (input_type, extra) = match (kind, field["format"].as_str()) {
                    ("integer", _) => ("number", "step=\"1\"".to_owned()),
                    ("number", _) => ("number", "step=\"any\"".to_owned()),
                    (_, Some("email")) => ("email", String::new()),
                    (_, Some("url")) => ("url", String::new()),
                    (_, Some("date")) => ("date", String::new()),
                    // A datetime is typed as RFC 3339 text: a datetime-local input has no zone.
                    (_, Some("datetime")) => {
                        ("text", "placeholder=\"2026-12-01T09:30:00Z\"".to_owned())
                    }
                    _ => ("text", String::new()),
                };
                let mut limits = String::new();
                for (key, attr) in [
                    ("minimum", "min"),
                    ("maximum", "max"),
                    ("min_length", "minlength"),
                    ("max_length", "maxlength"),
                ] {
                    if let Some(n) = field.get(key).filter(|v| v.is_number()) {
                        let _ = write!(limits, " {attr}=\"{n}\"");
                    }
                }
                let _ = write!(
                    body,
                    "<label for=\"{dom}\">{label}{mark}</label><br>\
                     <input type=\"{input_type}\" id=\"{dom}\" name=\"{name}\" value=\"{}\" {extra}{limits}{req}{aria}{invalid}>",
                    escape(&value)
                );
            }
        }
        if let Some(d) = field["description"].as_str() {
            let _ = write!(
                body,
                "<p class=\"field-desc\" id=\"{dom}-desc\">{}</p>",
                escape(d)
            );
        }
        if let Some(e) = error {
            let _ = write!(
                body,
                "<p class=\"field-error\" id=\"{dom}-err\" role=\"alert\">{}</p>",
                escape(&e)
            );
        }
        body.push_str("</div>");
    }
}
