//! E-mail: a message over SMTP, answered through signed links.
//!
//! The announcement is a `multipart/alternative` message (plain text and HTML; everything the
//! agent wrote is escaped in the HTML) with the headline as its Subject. It carries the
//! question(s), the context, the options (the recommended one marked), an approval's action
//! and arguments, who asked, the expiry, and links: for one `single` question, one link per
//! option; for one approval, one per offered Approve scope and Deny; always the request's
//! answer link. A choice's link is the answer link with `?answer=<the answer body as URL-safe
//! base64>`: opening it only shows a confirmation page, and only that page's POST answers, so a
//! mail scanner that follows every link answers nothing. A quorum request counts votes by
//! person, which an anonymous link cannot cast, so it gets the answer link only, as do other
//! kinds and requests of several questions. Where the request names people (its responders, a
//! configured group's members), the message also lists a personal link for each
//! ([`Notice::personal`]): it answers, or votes, as that person.
//!
//! Recipients: the channel's `to`; without one, the addresses `[identities]` gives the
//! request's responders (see [`Notice::recipients`]). With none, the send is skipped.
//!
//! Threading: the announcement's `Message-ID` is its message reference; a reminder, an
//! escalation, a vote and the resolution are replies to it (`In-Reply-To`, `References`,
//! `Re: ` Subject). A sent mail cannot be edited, so a resolution is a reply saying how the
//! request ended.
//!
//! Transport (lettre's, on tokio): `smtps://` is implicit TLS (rustls, the Web PKI roots);
//! `smtp://` is plain SMTP, meant for a relay on the same host or network, unless the URL asks
//! for STARTTLS with `?tls=required` (refused when the server does not offer it) or
//! `?tls=opportunistic`. Credentials come from the URL's `user:password`, or the `password`
//! key (with the URL's user, or else the `from` address). SMTP's transient failures (`4xx`,
//! no connection) are retried; permanent ones (`5xx`) are not.

use std::fmt::Write;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use clarify_core::{Context, QuestionKind, Scope};
use clarify_store::EventKind;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use serde_json::{Value, json};

use crate::{Notice, SendError, Sent, cut, headline, outcome_text};

const PLATFORM: &str = "email";

/// How much of an approval's pretty arguments a message shows; the answer link has the rest.
const MAX_ARGUMENTS: usize = 20_000;

/// An e-mail channel: the SMTP server, its password if not in the URL, the sender, and the
/// fixed recipients (empty: the request's responders, through `[identities]`).
#[derive(Clone)]
pub struct Email {
    pub smtp_url: url::Url,
    pub password: Option<String>,
    pub from: String,
    pub to: Vec<String>,
}

impl std::fmt::Debug for Email {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut shown = self.smtp_url.clone();
        if shown.password().is_some() {
            let _ = shown.set_password(Some(".."));
        }
        f.debug_struct("Email")
            .field("smtp_url", &shown.as_str())
            .field("password", &self.password.as_ref().map(|_| ".."))
            .field("from", &self.from)
            .field("to", &self.to)
            .finish()
    }
}

/// A link that answers one way once confirmed: its label and its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Choice {
    pub label: String,
    pub url: String,
}

/// A composed message and its `Message-ID`.
#[derive(Debug)]
pub struct Composed {
    pub message: Message,
    pub message_id: String,
}

impl Email {
    pub(crate) async fn send(&self, notice: &Notice<'_>) -> Result<Sent, SendError> {
        let Some(composed) = self.compose(notice)? else {
            return Ok(Sent::Skipped {
                why: "no recipient: the channel has no `to`, and [identities] gives none of the request's responders an email: address",
            });
        };
        let transport = self.transport()?;
        transport.send(composed.message).await.map_err(smtp_error)?;
        Ok(Sent::Posted {
            message_ref: Some(composed.message_id),
        })
    }

    /// The recipients of `notice`: `to`, or else the responders' addresses.
    fn recipients<'a>(&'a self, notice: &'a Notice<'_>) -> &'a [String] {
        if self.to.is_empty() {
            &notice.recipients
        } else {
            &self.to
        }
    }

    /// The message for `notice`, or `None` when it has no recipient.
    pub fn compose(&self, notice: &Notice<'_>) -> Result<Option<Composed>, SendError> {
        let from: Mailbox = self.from.parse().map_err(|e| SendError::Failed {
            platform: PLATFORM,
            error: format!("the from address {:?} cannot be used: {e}", self.from),
            transient: false,
        })?;
        let to: Vec<Mailbox> = self
            .recipients(notice)
            .iter()
            .filter_map(|a| match a.parse::<Mailbox>() {
                Ok(m) => Some(m),
                Err(e) => {
                    tracing::warn!(address = %a, error = %e, "an e-mail recipient is not an address; left out");
                    None
                }
            })
            .collect();
        if to.is_empty() {
            return Ok(None);
        }
        let message_id = format!(
            "<{}.{:016x}@{}>",
            notice.record.id,
            rand::random::<u64>(),
            from.email.domain()
        );
        let follow_up = notice.event != EventKind::Created;
        let headline = cut(&headline(notice.record), 200);
        let subject = if follow_up {
            format!("Re: {headline}")
        } else {
            headline
        };
        let mut builder = Message::builder()
            .from(from)
            .subject(subject)
            .message_id(Some(message_id.clone()))
            .date_now();
        for m in to {
            builder = builder.to(m);
        }
        if let Some(announcement) = notice.announcement.filter(|_| follow_up) {
            builder = builder
                .in_reply_to(announcement.to_owned())
                .references(announcement.to_owned());
        }
        let (text, html) = bodies(notice);
        let message = builder
            .multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("the message could not be built: {e}"),
                transient: false,
            })?;
        Ok(Some(Composed {
            message,
            message_id,
        }))
    }

    fn transport(&self) -> Result<AsyncSmtpTransport<Tokio1Executor>, SendError> {
        let mut builder = AsyncSmtpTransport::<Tokio1Executor>::from_url(self.smtp_url.as_str())
            .map_err(|e| SendError::Failed {
                platform: PLATFORM,
                error: format!("smtp_url cannot be used: {e}"),
                transient: false,
            })?;
        if let Some(password) = &self.password {
            let user = percent_decode(self.smtp_url.username());
            let user = if user.is_empty() {
                self.from
                    .parse::<Mailbox>()
                    .map(|m| m.email.to_string())
                    .unwrap_or_default()
            } else {
                user
            };
            builder = builder.credentials(Credentials::new(user, password.clone()));
        }
        Ok(builder.timeout(Some(Duration::from_secs(30))).build())
    }
}

fn percent_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("u={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default()
}

/// An SMTP failure as a [`SendError`]: a reply code is `Failed`, transient for `4xx`; no
/// connection is `Unreachable`; a TLS or client-side failure will not pass by itself.
fn smtp_error(e: lettre::transport::smtp::Error) -> SendError {
    if let Some(code) = e.status() {
        let code = u16::from(code);
        return SendError::Failed {
            platform: PLATFORM,
            error: format!("the SMTP server answered {code}: {e}"),
            transient: (400..500).contains(&code),
        };
    }
    if e.is_tls() || e.is_client() {
        return SendError::Failed {
            platform: PLATFORM,
            error: e.to_string(),
            transient: false,
        };
    }
    SendError::Unreachable {
        platform: PLATFORM,
        detail: if e.is_timeout() {
            "no answer in time".to_owned()
        } else {
            e.to_string()
        },
    }
}

/// The links that answer `notice`'s request one way each, once confirmed: for one `single`
/// question each option, for one approval each offered Approve scope and Deny; none for
/// anything else (and none for a quorum request, whose votes are cast by person).
pub fn choices(notice: &Notice<'_>) -> Vec<Choice> {
    let request = &notice.record.request;
    if notice.open_only() {
        // A passkey confirmation is needed: only the page in clarify can ask for it.
        return Vec::new();
    }
    let link = |label: String, answer: Value| Choice {
        label,
        url: format!(
            "{}?answer={}",
            notice.answer_url,
            URL_SAFE_NO_PAD.encode(answer.to_string())
        ),
    };
    let ([q], false) = (request.questions.as_slice(), request.is_quorum()) else {
        return Vec::new();
    };
    let answer = |fields: Value| json!({"answers": {q.id.clone(): fields}});
    match &q.kind {
        QuestionKind::Approval(a) => {
            let mut out: Vec<Choice> = a
                .scopes
                .iter()
                .map(|scope| {
                    let label = match scope {
                        Scope::Once => "Approve".to_owned(),
                        Scope::Session => "Approve for this session".to_owned(),
                        Scope::Always => "Approve always".to_owned(),
                    };
                    link(
                        label,
                        answer(json!({"decision": "approve", "scope": scope.as_str()})),
                    )
                })
                .collect();
            out.push(link("Deny".to_owned(), answer(json!({"decision": "deny"}))));
            out
        }
        QuestionKind::Single(c) => c
            .options
            .iter()
            .map(|o| link(cut(&o.label, 200), answer(json!({"option": o.id}))))
            .collect(),
        _ => Vec::new(),
    }
}

/// The look of display blocks in a message: mail readers drop a page's stylesheet, so the few
/// rules the blocks' classes need travel in the message's head.
const DISPLAY_STYLE: &str = ".block{margin:0 0 1em}.block-title{font-size:1em;margin:0 0 .3em}\
.scroll{overflow-x:auto}.code,.diff-lines{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}\
.diff-lines{border-collapse:collapse}.diff-lines td{padding:0 .4em;white-space:pre;vertical-align:top}\
.diff-lines .num{color:#888;text-align:right}.diff-lines .add{background:#e6ffec}\
.diff-lines .del{background:#ffebe9}.diff-lines .hunk{color:#555;background:#f0f4ff}\
.diff-file{font-weight:bold;margin:.3em 0}.diff-stat .add{color:#1a7f37}.diff-stat .del{color:#cf222e}\
.facts div{display:flex;gap:.5em}.facts dt{font-weight:bold}.facts dd{margin:0}\
pre.code{background:#f6f8fa;padding:.5em}";

/// Escapes text for HTML content and quoted attribute values.
pub fn escape_html(text: &str) -> String {
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

/// The plain text and HTML bodies of `notice`'s message.
pub fn bodies(notice: &Notice<'_>) -> (String, String) {
    let record = notice.record;
    let request = &record.request;
    let mut text = String::new();
    let mut html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><style>{DISPLAY_STYLE}</style></head><body style=\"font-family: sans-serif\">",
    );
    let e = escape_html;
    let _ = write!(html, "<h2>{}</h2>", e(&headline(record)));
    let _ = writeln!(text, "{}\n", headline(record));

    if notice.resolves() || notice.event == EventKind::Voted {
        let outcome = outcome_text(record);
        let _ = writeln!(text, "{outcome}\n\n{}", notice.answer_url);
        let _ = write!(
            html,
            "<p><strong>{}</strong></p><p><a href=\"{}\">See the request in clarify</a></p></body></html>",
            e(&outcome),
            e(notice.answer_url)
        );
        return (text, html);
    }

    let intro = match notice.event {
        EventKind::Reminded => Some("Reminder: this request is still waiting for an answer."),
        EventKind::Escalated => Some("This request has been escalated to you."),
        _ => None,
    };
    if let Some(intro) = intro {
        let _ = writeln!(text, "{intro}\n");
        let _ = write!(html, "<p><em>{}</em></p>", e(intro));
    }
    match &request.context {
        Some(Context::Text(t)) => {
            let _ = writeln!(text, "{t}\n");
            let _ = write!(html, "<p style=\"white-space: pre-wrap\">{}</p>", e(t));
        }
        Some(Context::Json(map)) => {
            let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
            let _ = writeln!(text, "{pretty}\n");
            let _ = write!(html, "<pre>{}</pre>", e(&pretty));
        }
        None => {}
    }
    if !request.display.is_empty() {
        // Images are served to signed-in people only; a message shows their alt text.
        html.push_str(&clarify_render::html::blocks(&request.display, &|_| None));
        let shown = clarify_render::render_blocks(
            &request.display,
            &clarify_render::text::Plain,
            usize::MAX,
            "",
        );
        let _ = writeln!(text, "{shown}\n");
    }
    for q in &request.questions {
        let _ = writeln!(text, "{}", q.text);
        let _ = write!(html, "<p><strong>{}</strong></p>", e(&q.text));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                html.push_str("<ul>");
                for o in &c.options {
                    let recommended = c.recommended.as_deref() == Some(o.id.as_str());
                    let mark = if recommended { " (recommended)" } else { "" };
                    let _ = writeln!(text, "- {}{mark}", o.label);
                    let _ = write!(html, "<li>{}{mark}</li>", e(&o.label));
                }
                html.push_str("</ul>");
            }
            QuestionKind::Approval(a) if !request.display.is_empty() => {
                // The display blocks above show what the action does.
                let _ = writeln!(text, "Action: {}", a.action.name);
                let _ = write!(html, "<p>Action: <code>{}</code></p>", e(&a.action.name));
            }
            QuestionKind::Approval(a) => {
                let pretty = serde_json::to_string_pretty(&a.action.arguments).unwrap_or_default();
                let more = if pretty.chars().count() > MAX_ARGUMENTS {
                    " (cut: the rest is in clarify)"
                } else {
                    ""
                };
                let shown = cut(&pretty, MAX_ARGUMENTS);
                let _ = writeln!(text, "Action: {}\n{shown}{more}", a.action.name);
                let _ = write!(
                    html,
                    "<p>Action: <code>{}</code></p><pre>{}</pre>{}",
                    e(&a.action.name),
                    e(&shown),
                    if more.is_empty() {
                        String::new()
                    } else {
                        format!("<p>{}</p>", e(more.trim()))
                    }
                );
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
        text.push('\n');
    }

    let choices = choices(notice);
    if !choices.is_empty() {
        text.push_str("Answer (each link asks you to confirm):\n");
        html.push_str("<p>Answer (each link asks you to confirm):</p><p>");
        for c in &choices {
            let _ = writeln!(text, "- {}: {}", c.label, c.url);
            let _ = write!(
                html,
                "<a href=\"{}\" style=\"display: inline-block; margin: 0 0.5em 0.5em 0; padding: 0.4em 0.9em; border: 1px solid #888; border-radius: 4px; text-decoration: none\">{}</a> ",
                e(&c.url),
                e(&c.label)
            );
        }
        html.push_str("</p>");
        text.push('\n');
    }
    let approval = request
        .questions
        .iter()
        .any(|q| matches!(q.kind, QuestionKind::Approval(_)));
    let open = match (choices.is_empty(), approval) {
        _ if notice.open_only() => {
            let _ = writeln!(text, "{}\n", crate::STEP_UP_LINE);
            let _ = write!(html, "<p>{}</p>", e(crate::STEP_UP_LINE));
            crate::OPEN_IN_CLARIFY
        }
        (true, _) => "Answer in clarify",
        // Requesting changes takes a reason, which a link cannot carry: the page asks for it.
        (false, true) => "Request changes, or open the request in clarify",
        (false, false) => "Or open the request in clarify",
    };
    let _ = writeln!(text, "{open}: {}\n", notice.answer_url);
    let _ = write!(
        html,
        "<p><a href=\"{}\">{open}</a></p>",
        e(notice.answer_url)
    );
    if !notice.personal.is_empty() && !notice.open_only() {
        let lead = "Your own link: it answers as you (and votes, where approvals are counted)";
        let _ = writeln!(text, "{lead}:");
        let _ = write!(html, "<p>{lead}:</p><ul>");
        for (name, url) in &notice.personal {
            let _ = writeln!(text, "  {name}: {url}");
            let _ = write!(
                html,
                "<li><a href=\"{}\">Answer as {}</a></li>",
                e(url),
                e(name)
            );
        }
        text.push('\n');
        html.push_str("</ul>");
    }

    let mut footer: Vec<String> = crate::asked_by(request, str::to_owned, str::to_owned)
        .into_iter()
        .collect();
    if let Some(at) = record.expires_at {
        footer.push(format!("expires {}", at.format("%Y-%m-%d %H:%M UTC")));
    }
    if let Some(by) = &request.responders {
        footer.push(format!("for {}", by.join(", ")));
    }
    if request.is_quorum() {
        footer.push(format!(
            "needs {} approvals from named responders: {}",
            request.approvals_required,
            outcome_text(record)
        ));
    }
    if !footer.is_empty() {
        let line = footer.join(" · ");
        let _ = writeln!(text, "{line}");
        let _ = write!(html, "<p><small>{}</small></p>", e(&line));
    }
    html.push_str("</body></html>");
    (text, html)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use clarify_store::RequestRecord;

    use super::*;

    fn record(raw: Value) -> RequestRecord {
        let request = match clarify_core::parse_request(&raw, &clarify_core::Limits::default()) {
            Ok(r) => r,
            Err(e) => panic!("test request: {e}"),
        };
        RequestRecord {
            id: "r1".to_owned(),
            tenant: "default".to_owned(),
            request: Arc::new(request),
            status: clarify_core::Status::Pending,
            created_at: chrono::Utc::now(),
            expires_at: None,
            resolution: None,
            votes: Vec::new(),
            remind_at: None,
            escalated_at: None,
        }
    }

    fn notice(r: &RequestRecord) -> Notice<'_> {
        Notice {
            record: r,
            event: EventKind::Created,
            answer_url: "https://clarify.example/a/t",
            announcement: None,
            mention: Vec::new(),
            recipients: Vec::new(),
            action_key: b"test key",
            hook_url: "https://clarify.example/hooks/test/t",
            personal: Vec::new(),
            step_up: false,
        }
    }

    fn labels(r: &RequestRecord) -> Vec<String> {
        choices(&notice(r)).into_iter().map(|c| c.label).collect()
    }

    #[test]
    fn one_link_per_option_or_decision_and_none_for_the_rest() {
        let single = record(json!({"question": "Ship?", "choices": ["yes", "no", "later"]}));
        assert_eq!(labels(&single), ["yes", "no", "later"]);
        let approval = record(json!({"questions": [{"text": "Drop?", "kind": "approval",
            "action": {"name": "drop"}, "scopes": ["once", "session"]}]}));
        assert_eq!(
            labels(&approval),
            ["Approve", "Approve for this session", "Deny"]
        );
        let quorum = record(json!({"questions": [{"text": "Drop?", "kind": "approval",
            "action": {"name": "drop"}}], "approvals_required": 2}));
        assert!(labels(&quorum).is_empty());
        let open = record(json!({"question": "Why?"}));
        assert!(labels(&open).is_empty());
    }

    #[test]
    fn a_link_carries_its_answer_as_base64_json() {
        let r = record(json!({"question": "Ship?", "choices": ["yes", "no"]}));
        let first = choices(&notice(&r)).remove(0);
        let (base, encoded) = first.url.split_once("?answer=").expect("answer parameter");
        assert_eq!(base, "https://clarify.example/a/t");
        let decoded = URL_SAFE_NO_PAD.decode(encoded).expect("base64");
        let answer: Value = serde_json::from_slice(&decoded).expect("json");
        let q = r.request.questions[0].id.clone();
        assert_eq!(answer, json!({"answers": {q: {"option": "yes"}}}));
    }

    #[test]
    fn the_html_escapes_what_the_agent_wrote() {
        let r = record(json!({"question": "<script>alert(1)</script> & \"q\"",
                              "context": "a < b"}));
        let (text, html) = bodies(&notice(&r));
        assert!(text.contains("<script>alert(1)</script> & \"q\""), "{text}");
        assert!(!html.contains("<script>"), "{html}");
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;q&quot;"),
            "{html}"
        );
        assert!(html.contains("a &lt; b"), "{html}");
    }

    #[test]
    fn a_follow_up_replies_to_the_announcement() {
        let r = record(json!({"question": "Ship?", "choices": ["yes", "no"]}));
        let email = Email {
            smtp_url: "smtp://127.0.0.1:2525".parse().expect("url"),
            password: None,
            from: "Clarify <clarify@example.com>".to_owned(),
            to: vec!["alice@example.com".to_owned()],
        };
        let mut n = notice(&r);
        let first = email.compose(&n).expect("composed").expect("a recipient");
        assert!(first.message_id.starts_with("<r1."), "{}", first.message_id);
        assert!(first.message_id.ends_with("@example.com>"));
        n.event = EventKind::Reminded;
        n.announcement = Some(&first.message_id);
        let reply = email.compose(&n).expect("composed").expect("a recipient");
        let raw = String::from_utf8_lossy(&reply.message.formatted()).into_owned();
        assert!(
            raw.contains(&format!("In-Reply-To: {}", first.message_id)),
            "{raw}"
        );
        // The subject is the request's summary.
        assert!(raw.contains("Subject: Re: Ship?"), "{raw}");
        assert_ne!(reply.message_id, first.message_id);
    }

    #[test]
    fn without_to_or_responders_there_is_no_one_to_write_to() {
        let r = record(json!({"question": "Ship?"}));
        let email = Email {
            smtp_url: "smtp://127.0.0.1:2525".parse().expect("url"),
            password: None,
            from: "clarify@example.com".to_owned(),
            to: Vec::new(),
        };
        assert!(email.compose(&notice(&r)).expect("composed").is_none());
        let mut n = notice(&r);
        n.recipients = vec!["bob@example.com".to_owned()];
        assert!(email.compose(&n).expect("composed").is_some());
    }

    #[test]
    fn the_password_is_not_shown() {
        let email = Email {
            smtp_url: "smtps://me:hunter2@mail.example.com".parse().expect("url"),
            password: Some("other".to_owned()),
            from: "clarify@example.com".to_owned(),
            to: Vec::new(),
        };
        let shown = format!("{email:?}");
        assert!(
            !shown.contains("hunter2") && !shown.contains("other"),
            "{shown}"
        );
    }
}
