//! Server-rendered HTML: the signed-link answer page and plain message pages.
//!
//! Every string that came from a request (written by an agent, so untrusted) passes through
//! [`escape`]. Every page carries [`CSP`]: scripts only from this
//! server's own files, no inline script or style, so even a missed escape could not run
//! anything. The link page works as a plain form; when script runs, the inbox's request view
//! (`assets/link.js`) takes its place.

use std::fmt::Write;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use clarify_core::{Context, QuestionKind, Risk};
use clarify_model::wire::time;
use clarify_store::RequestRecord;
use serde_json::Value;

use crate::web::inbox::asset_path;
use clarify_render::html::escape;

/// The policy of every HTML page rendered here; the inbox page's adds `data:` images (see
/// `inbox::PAGE_CSP`).
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

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
    page_with_head(status, title, body, main_id, script, "")
}

/// [`page`] with more in its `<head>` (`head`, trusted markup made here).
fn page_with_head(
    status: StatusCode,
    title: &str,
    body: &str,
    main_id: Option<&str>,
    script: Option<&str>,
    head: &str,
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
         <link rel=\"stylesheet\" href=\"{}\">{head}{script}</head>\
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

/// The inbox's sections, the navigation of its top bar: `(id, address, label)`. The inbox page
/// and the Insights page both draw it from here, so they cannot drift apart.
const SECTIONS: [(&str, &str, &str); 4] = [
    ("pending", "/#/", "Pending"),
    ("history", "/#/history", "History"),
    ("insights", "/insights", "Insights"),
    ("settings", "/settings", "Settings"),
];

/// The top bar's navigation, with `current` (a section's id) marked as the page shown; the
/// inbox's script marks its own sections. Pending carries the inbox's live count, which only
/// the inbox's script fills in.
pub fn tabs(current: Option<&str>) -> String {
    let mut nav = String::from("<nav class=\"tabs\" aria-label=\"Sections\">");
    for (id, href, label) in SECTIONS {
        let mark = if current == Some(id) {
            " aria-current=\"page\""
        } else {
            ""
        };
        let count = if id == "pending" {
            "<span class=\"count\" id=\"pending-count\" hidden></span>"
        } else {
            ""
        };
        let _ = write!(
            nav,
            "<a id=\"tab-{id}\" href=\"{href}\"{mark}>{label}{count}</a>"
        );
    }
    nav.push_str("</nav>");
    nav
}

/// The top bar's account button: below desktop width the account (who is signed in, the
/// notification controls, Log out) does not fit beside the sections, so it is a popover that
/// this button opens. A popover needs no script (the Insights page has none), closes on Escape
/// and on a tap elsewhere, and the browser tells screen readers whether it is open.
pub const ACCOUNT_TOGGLE: &str = "<button type=\"button\" class=\"account-toggle\" \
     id=\"account-toggle\" popovertarget=\"account-menu\" aria-label=\"Account\">\
     <svg viewBox=\"0 0 24 24\" width=\"22\" height=\"22\" aria-hidden=\"true\" focusable=\"false\">\
     <circle cx=\"12\" cy=\"8\" r=\"4\" fill=\"none\" stroke=\"currentColor\" stroke-width=\"2\"/>\
     <path d=\"M4 21c0-4.4 3.6-7 8-7s8 2.6 8 7\" fill=\"none\" stroke=\"currentColor\" \
     stroke-width=\"2\" stroke-linecap=\"round\"/></svg></button>";

/// The Insights page, inside the inbox's frame: its top bar (the same sections, with Insights
/// current, and who is signed in as `name` with `role`), then `body` (the filters and the
/// charts, made by `web::insights`) in a panel, with the charts' stylesheet beside the inbox's.
/// No script: the charts are drawn on the server, and Log out is the inbox's (`/#/logout`).
pub fn insights_page(body: &str, name: &str, role: &str) -> Response {
    let icon = asset_path("icon.svg");
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>Insights · clarify</title>\
         <link rel=\"icon\" href=\"{icon}\" type=\"image/svg+xml\">\
         <link rel=\"stylesheet\" href=\"{}\">\
         <link rel=\"stylesheet\" href=\"{}\"></head>\
         <body><a class=\"skip-link\" href=\"#app\">Skip to the insights</a>\
         <header class=\"topbar\" id=\"topbar\">\
         <a class=\"brand\" href=\"/#/\"><img src=\"{icon}\" alt=\"\" width=\"22\" height=\"22\">\
         <span class=\"brand-name\">clarify</span></a>{}<span class=\"spacer\"></span>\
         {ACCOUNT_TOGGLE}<div class=\"account\" id=\"account-menu\" popover role=\"group\" aria-label=\"Account\">\
         <span id=\"who\"><span class=\"who\">{}</span><span class=\"chip\">{}</span></span>\
         <a class=\"linkish\" id=\"logout\" href=\"/#/logout\">Log out</a></div></header>\
         <main id=\"app\" class=\"insights-page\" tabindex=\"-1\">\
         <section class=\"panel\" aria-labelledby=\"insights-title\">{body}</section>\
         </main></body></html>\n",
        asset_path("clarify.css"),
        asset_path("insights.css"),
        tabs(Some("insights")),
        escape(name),
        escape(role),
    );
    let mut response = document(StatusCode::OK, html);
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

/// The page the service worker shows when a page cannot be loaded (`/offline`, kept in its
/// cache): it says why nothing can be answered and that nothing waits to be sent.
pub fn offline_page() -> Response {
    page(
        StatusCode::OK,
        "Offline",
        "<h1>You are offline</h1>\
         <p id=\"offline\">clarify cannot reach its server from here, so it cannot show or answer \
         requests right now. Nothing is kept to be sent later: an answer needs the network, and \
         you will see whether it was taken.</p>\
         <p><a href=\"/\">Try again</a></p>",
        None,
        None,
    )
}

/// The page of a link-account link: a button that links the chat account, and whom the
/// browser is signed in as (`name`), or that it must sign in first.
pub fn link_account_page(account: &str, name: Option<&str>) -> Response {
    let who = match name {
        Some(name) => format!(
            "<p id=\"signed-in\">You are signed in as <strong>{}</strong>; the chat account will answer as you.</p>",
            escape(name)
        ),
        None => {
            "<p id=\"signed-in\">If you are not signed in to the <a href=\"/\">inbox</a> in this \
                 browser, sign in there first, then come back here.</p>"
                .to_owned()
        }
    };
    page(
        StatusCode::OK,
        "Link your chat account",
        &format!(
            "<h1>Link your chat account</h1><p>A chat account asked clarify for this link. \
             Linking it lets you answer requests from the chat as yourself.</p>\
             <p>Chat account: <strong id=\"account\">{}</strong>. Link it only if it is yours: \
             whoever uses it will answer as you.</p>{who}\
             <form method=\"post\"><button type=\"submit\" class=\"btn primary\" id=\"link-account\">Link this chat account to me</button></form>",
            escape(account)
        ),
        None,
        None,
    )
}

/// After signing in through the identity provider: says who, then opens the inbox. The page
/// moves on by itself (a refresh, not a redirect), so the browser counts the inbox's load as
/// this site's own and sends the session cookie, which is `SameSite=Strict`, with it; after a
/// redirect chain that began at the provider it would not.
pub fn signed_in_page(name: &str) -> Response {
    page_with_head(
        StatusCode::OK,
        "Signed in",
        &format!(
            "<h1>Signed in</h1><p id=\"signed-in\">You are signed in as {}.</p>\
             <p><a class=\"btn primary\" href=\"/\">Open the inbox</a></p>",
            escape(name)
        ),
        None,
        None,
        "<meta http-equiv=\"refresh\" content=\"0; url=/\">",
    )
}

/// The answer form of a signed link, or what became of its request.
/// "1 of 2 approvals (by alice)", and any deny, as a paragraph.
fn quorum_summary(record: &RequestRecord) -> String {
    let approvers: Vec<String> = record
        .votes
        .iter()
        .filter(|v| v.decision == clarify_core::Decision::Approve)
        .map(|v| escape(&v.by))
        .collect();
    let by = if approvers.is_empty() {
        String::new()
    } else {
        format!(" (by {})", approvers.join(", "))
    };
    format!(
        "<p><strong>{} of {} approvals</strong>{by}</p>",
        approvers.len(),
        record.request.approvals_required
    )
}

/// The answer page of a signed link; `display` is the request's display fragment
/// ([`crate::web::display::html`]), shown above its questions.
/// The answer page of a link; `person` names whom a personal link answers as.
pub fn link_page(
    record: &RequestRecord,
    person: Option<&str>,
    error: Option<&str>,
    display: &str,
) -> Response {
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
        return page(StatusCode::OK, "Request resolved", &body, None, None);
    }
    let _ = write!(
        body,
        "<p class=\"meta\">A question for you</p><h1>{}</h1>",
        escape(&request.summary)
    );
    if request.risk == Risk::High {
        body.push_str("<p class=\"meta\"><span class=\"risk\" id=\"risk\">High risk</span></p>");
    }
    if let Some(person) = person {
        let _ = write!(
            body,
            "<p class=\"meta\" id=\"person\" data-person=\"{0}\">You answer as {0}.</p>",
            escape(person)
        );
    }
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
    body.push_str(display);
    if let Some(at) = record.expires_at {
        let _ = write!(body, "<p>Answer before {}.</p>", escape(&time(at)));
    }
    if request.is_quorum() && person.is_some() {
        body.push_str(&quorum_summary(record));
    } else if request.is_quorum() {
        // Votes are counted per named responder; whoever holds a link is nobody in particular.
        body.push_str(&quorum_summary(record));
        for q in &request.questions {
            let _ = write!(body, "<p>{}</p>", escape(&q.text));
        }
        let _ = write!(
            body,
            "<p>This request needs {} approvals from named responders, so it cannot be \
             answered through this link. Answer it in the clarify inbox, in the terminal \
             (<code>clarify inbox</code>) or over the API, with your own key.</p>",
            request.approvals_required
        );
        return page(
            StatusCode::OK,
            "A question for you",
            &body,
            Some("link"),
            Some("link.js"),
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
            QuestionKind::Form(form) => {
                for f in &form.fields {
                    form_field(&mut body, &id, f);
                }
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
                // The display above shows what the action does; the arguments as sent stay a
                // click away, exactly.
                let shown = if request.display.is_empty() {
                    format!("<pre>{}</pre>", escape(&args))
                } else {
                    format!(
                        "<details><summary>Arguments as sent</summary><pre>{}</pre></details>",
                        escape(&args)
                    )
                };
                let _ = write!(
                    body,
                    "<p>Action: <code>{}</code></p>{shown}\
                     <label><input type=\"radio\" name=\"{id}.decision\" value=\"approve\"> Approve</label> \
                     <label><input type=\"radio\" name=\"{id}.decision\" value=\"revise\"> Request changes</label> \
                     <label><input type=\"radio\" name=\"{id}.decision\" value=\"deny\"> Deny</label><br>",
                    escape(&a.action.name),
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
                    "<label>Reason (to request changes, say which): <input type=\"text\" name=\"{id}.reason\"></label>"
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

/// The page a link with a chosen answer opens (an e-mail's option links): what the answer
/// says, one `(question, answer in words)` per question, and a form that POSTs `fields` (the
/// link page's own form fields) to the link only when confirmed. Opening it changes nothing,
/// so a mail scanner that follows every link answers nothing. `token` is the link's own, for a
/// relative link to its answer page.
pub fn confirm_page(
    record: &RequestRecord,
    token: &str,
    lines: &[(String, String)],
    fields: &[(String, String)],
) -> Response {
    let mut body = String::from("<h1>Confirm your answer</h1>");
    for (question, words) in lines {
        let _ = write!(
            body,
            "<p>{}</p><p><strong>{}</strong></p>",
            escape(question),
            escape(words)
        );
    }
    if let Some(at) = record.expires_at {
        let _ = write!(body, "<p>Answer before {}.</p>", escape(&time(at)));
    }
    body.push_str("<form method=\"post\">");
    for (name, value) in fields {
        let _ = write!(
            body,
            "<input type=\"hidden\" name=\"{}\" value=\"{}\">",
            escape(name),
            escape(value)
        );
    }
    body.push_str("<button type=\"submit\">Confirm</button></form>");
    let _ = write!(
        body,
        "<p>Not what you meant? <a href=\"./{}\">Answer differently</a>.</p>",
        escape(token)
    );
    page(StatusCode::OK, "Confirm your answer", &body, None, None)
}

/// One input of a form question on the link page, named `<question>.values.<field>`; what is
/// typed is read back by `clarify_core::form::value_from_text`.
fn form_field(body: &mut String, question: &str, f: &clarify_core::Field) {
    use clarify_core::{FieldKind, TextFormat};
    let name = format!("{question}.values.{}", escape(&f.id));
    let required = if f.required { " required" } else { "" };
    let default = f.default.as_ref();
    let default_text = match default {
        Some(Value::String(s)) => escape(s),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let _ = write!(
        body,
        "<label>{}{}<br>",
        escape(&f.label),
        if f.required { " *" } else { "" }
    );
    match &f.kind {
        FieldKind::Text {
            max_length, format, ..
        } => {
            let input = match format {
                Some(TextFormat::Email) => "email",
                Some(TextFormat::Url) => "url",
                Some(TextFormat::Date) => "date",
                // A datetime-local value has no zone; it is read as UTC.
                Some(TextFormat::Datetime) => "datetime-local",
                None => "text",
            };
            let max = max_length
                .map(|m| format!(" maxlength=\"{m}\""))
                .unwrap_or_default();
            let _ = write!(
                body,
                "<input type=\"{input}\" name=\"{name}\" value=\"{default_text}\"{max}{required}>"
            );
        }
        FieldKind::Number { minimum, maximum } => {
            let min = minimum.map(|m| format!(" min=\"{m}\"")).unwrap_or_default();
            let max = maximum.map(|m| format!(" max=\"{m}\"")).unwrap_or_default();
            let _ = write!(
                body,
                "<input type=\"number\" step=\"any\" name=\"{name}\" value=\"{default_text}\"{min}{max}{required}>"
            );
        }
        FieldKind::Integer { minimum, maximum } => {
            let min = minimum.map(|m| format!(" min=\"{m}\"")).unwrap_or_default();
            let max = maximum.map(|m| format!(" max=\"{m}\"")).unwrap_or_default();
            let _ = write!(
                body,
                "<input type=\"number\" step=\"1\" name=\"{name}\" value=\"{default_text}\"{min}{max}{required}>"
            );
        }
        FieldKind::Boolean => {
            // A select rather than a checkbox: an unchecked box sends nothing, which would read
            // as "not answered" instead of "no".
            let pick = |v: bool| {
                if default == Some(&Value::Bool(v)) {
                    " selected"
                } else {
                    ""
                }
            };
            let _ = write!(
                body,
                "<select name=\"{name}\"{required}><option value=\"\"></option>\
                 <option value=\"yes\"{}>Yes</option><option value=\"no\"{}>No</option></select>",
                pick(true),
                pick(false)
            );
        }
        FieldKind::Choice { options } => {
            let _ = write!(
                body,
                "<select name=\"{name}\"{required}><option value=\"\"></option>"
            );
            for o in options {
                let selected = if default.and_then(Value::as_str) == Some(o.id.as_str()) {
                    " selected"
                } else {
                    ""
                };
                let _ = write!(
                    body,
                    "<option value=\"{}\"{selected}>{}</option>",
                    escape(&o.id),
                    escape(&o.label)
                );
            }
            body.push_str("</select>");
        }
        FieldKind::Choices { options, .. } => {
            for o in options {
                let checked = default
                    .and_then(Value::as_array)
                    .is_some_and(|d| d.iter().any(|v| v.as_str() == Some(o.id.as_str())));
                let _ = write!(
                    body,
                    "<label><input type=\"checkbox\" name=\"{name}\" value=\"{}\"{}> {}</label> ",
                    escape(&o.id),
                    if checked { " checked" } else { "" },
                    escape(&o.label)
                );
            }
        }
    }
    if let Some(d) = &f.description {
        let _ = write!(body, "<br><small>{}</small>", escape(d));
    }
    body.push_str("</label><br>");
}
