//! How a request looks on Telegram: the message's HTML text, its inline keyboard, and the
//! prompts that ask for a typed reply. What the text says is the layout's (`crate::layout`);
//! here is only Telegram's dialect of it.

use clarify_core::{QuestionKind, Scope};
use clarify_model::RequestRecord;
use clarify_render::Markup;
use serde_json::{Value, json};

use super::inbound::{Press, prompt_line};
use crate::act::Focus;
use crate::layout::{self, Dialect, Limits};
use crate::text::fit;
use crate::layout::words::headline;
use crate::notice::Notice;
use crate::text::cut;

/// Telegram's limit on a message's text, counted after entities are parsed.
pub const MAX_TEXT: usize = 4_096;

/// Options shown as buttons; more are answered through the answer link.
const MAX_OPTION_BUTTONS: usize = 24;

/// `&`, `<` and `>` escaped for Telegram's HTML parse mode.
pub fn escape(text: &str) -> String {
    crate::text::escape_markup(text)
}

/// Telegram's HTML parse mode, for display blocks: agent text is escaped, so no tag or entity
/// forms from it; diffs are `<pre><code class="language-diff">`, which Telegram highlights.
#[derive(Debug, Clone, Copy)]
pub struct Html;

impl Markup for Html {
    fn text(&self, s: &str) -> String {
        escape(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("<b>{inner}</b>")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("<i>{inner}</i>")
    }
    fn strike(&self, inner: &str) -> String {
        format!("<s>{inner}</s>")
    }
    fn code(&self, s: &str) -> String {
        format!("<code>{}</code>", escape(s))
    }
    fn link(&self, url: &str, label: &str) -> String {
        format!(
            "<a href=\"{}\">{label}</a>",
            escape(url).replace('"', "&quot;")
        )
    }
    fn pre(&self, s: &str, language: Option<&str>) -> String {
        match language {
            // Display languages are validated names (letters, digits, `+#-_.`).
            Some(lang) => format!(
                "<pre><code class=\"language-{}\">{}</code></pre>",
                escape(lang),
                escape(s)
            ),
            None => format!("<pre>{}</pre>", escape(s)),
        }
    }
    fn quote(&self, inner: &str) -> String {
        format!("<blockquote>{inner}</blockquote>")
    }
    /// What Telegram counts: the text once tags are read and entities decoded.
    fn len(&self, s: &str) -> usize {
        let mut n = 0;
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            match c {
                '<' => {
                    for c in chars.by_ref() {
                        if c == '>' {
                            break;
                        }
                    }
                }
                '&' => {
                    for c in chars.by_ref() {
                        if c == ';' {
                            break;
                        }
                    }
                    n += 1;
                }
                _ => n += 1,
            }
        }
        n
    }
}

/// A mention of user `id` that works without a username.
pub(super) fn mention_of(id: &str) -> String {
    format!("<a href=\"tg://user?id={}\">{}</a>", escape(id), escape(id))
}

/// A Telegram message ends its footer saying a reply answers it (when one can) and marks
/// mentions as links, which need no username.
impl Dialect for Html {
    const LIMITS: Limits = Limits {
        message: MAX_TEXT,
        fallback: 1_000,
        display: 2_000,
        context: 1_000,
        json: 800,
        question: 1_000,
        option: 200,
        description: None,
        action: 200,
        arguments: 1_500,
        names: 100,
        outcome: 1_000,
    };
    fn mention(&self, id: &str) -> String {
        mention_of(id)
    }
    fn answer_link(&self, url: &str, label: &str) -> String {
        self.link(url, label)
    }
    fn cut_note(&self, answer_url: &str) -> String {
        format!(
            "<a href=\"{}\">(cut: the rest in clarify)</a>",
            escape(answer_url)
        )
    }
    fn json(&self, pretty: &str) -> String {
        self.pre(pretty, None)
    }
    fn hint(&self, record: &RequestRecord) -> Option<&'static str> {
        answered_by_reply(record).then_some("reply to this message to answer")
    }
}

/// The message's text (HTML) for `notice`: pending, what is asked; resolved, how it ended.
pub fn message_text(notice: &Notice<'_>, mention: &[String]) -> String {
    layout::message(&Html, notice.record, notice.answer_url, mention)
}

/// Whether a reply typed to the announcement can answer it (one question that is not a form).
fn answered_by_reply(record: &RequestRecord) -> bool {
    match record.request.questions.as_slice() {
        [q] => !matches!(q.kind, QuestionKind::Form(_)),
        _ => false,
    }
}

/// The keyboard of a warning before expiry: "Extend 30 min", whose callback data
/// ([`extend_data`]) names the request, since the warning is not its announcement. `None` when
/// the request takes answers only in clarify (step-up), where an extension is refused too.
pub fn extend_keyboard(notice: &Notice<'_>) -> Option<Value> {
    if notice.open_only() {
        return None;
    }
    let seconds = crate::act::EXTEND_BUTTON_SECONDS;
    let data = extend_data(seconds, &notice.record.id);
    let label = crate::act::extend_label(seconds);
    Some(json!({"inline_keyboard": [[{"text": label, "callback_data": data}]]}))
}

/// The callback data of an extend button: `x<seconds>:<request id>`, read back by
/// [`super::inbound::read_extend_data`].
pub fn extend_data(seconds: u64, request: &str) -> String {
    format!("x{seconds}:{request}")
}

fn button(text: &str, press: Press) -> Value {
    json!({"text": cut(text, 64), "callback_data": press.encode()})
}

fn link(text: &str, url: &str) -> Value {
    json!({"text": text, "url": url})
}

/// The keyboard of `notice`'s message: only "Open in clarify" for a request that needs a
/// passkey confirmation.
pub(crate) fn notice_keyboard(notice: &Notice<'_>) -> Value {
    if notice.open_only() {
        return json!({"inline_keyboard": [[link(crate::layout::words::OPEN_IN_CLARIFY, notice.answer_url)]]});
    }
    keyboard(notice.record, notice.answer_url, 0)
}

/// The inline keyboard of a pending request's message; `chosen` the options of a `multi`
/// question chosen so far. Empty once resolved.
pub fn keyboard(record: &RequestRecord, answer_url: &str, chosen: u32) -> Value {
    if record.status.is_resolved() {
        return json!({"inline_keyboard": []});
    }
    let request = &record.request;
    let mut rows: Vec<Vec<Value>> = Vec::new();
    let mut by_link = true;
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) if c.options.len() <= MAX_OPTION_BUTTONS => {
                by_link = false;
                for (i, o) in c.options.iter().enumerate() {
                    let star = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        "⭐ "
                    } else {
                        ""
                    };
                    rows.push(vec![button(
                        &format!("{star}{}", o.label),
                        Press::Option(i),
                    )]);
                }
                if c.allow_other {
                    rows.push(vec![button("Other…", Press::Write)]);
                }
            }
            QuestionKind::Multi(c) if c.options.len() <= MAX_OPTION_BUTTONS => {
                by_link = false;
                for (i, o) in c.options.iter().enumerate() {
                    let bit = 1_u32 << i;
                    let mark = if chosen & bit != 0 { "✅" } else { "⬜" };
                    rows.push(vec![button(
                        &format!("{mark} {}", o.label),
                        Press::Toggle(chosen ^ bit),
                    )]);
                }
                let mut last = vec![button("Done", Press::Done(chosen))];
                if c.allow_other {
                    last.push(button("Other…", Press::Write));
                }
                rows.push(last);
            }
            QuestionKind::Open => {
                by_link = false;
                rows.push(vec![button("Answer…", Press::Write)]);
            }
            QuestionKind::Approval(a) => {
                by_link = false;
                let approve: Vec<Value> = a
                    .scopes
                    .iter()
                    .map(|s| {
                        let label = match s {
                            Scope::Once => "✅ Approve",
                            Scope::Session => "✅ For this session",
                            Scope::Always => "✅ Always",
                        };
                        button(label, Press::Approve(*s))
                    })
                    .collect();
                rows.push(approve);
                rows.push(vec![
                    button("⛔ Deny", Press::Deny),
                    button("Deny with reason…", Press::Reason),
                ]);
                rows.push(vec![button("✍️ Request changes…", Press::Revise)]);
                if a.allow_edit {
                    rows.push(vec![link("✏️ Edit arguments…", answer_url)]);
                }
            }
            _ => {}
        }
    }
    let mut last = Vec::new();
    if request.allow_skip {
        last.push(button("Skip", Press::Skip));
    }
    last.push(link(
        if by_link {
            "Answer in clarify"
        } else {
            "Open in clarify"
        },
        answer_url,
    ));
    rows.push(last);
    json!({"inline_keyboard": rows})
}

/// The text of a reply prompt for `focus` of the request announced as message `announcement`.
pub(super) fn prompt_text(
    record: &RequestRecord,
    announcement: &str,
    focus: Focus,
    user: &str,
) -> String {
    let what = match focus {
        Focus::Deny(_) => "Why deny? Reply to this message with the reason.",
        Focus::Revise(_) => "What should change? Reply to this message to say.",
        Focus::Other(_) => "Reply to this message with your own answer.",
        _ => "Reply to this message with your answer.",
    };
    format!(
        "{}\n{} {}\n<i>{}</i>",
        escape(&prompt_line(announcement, focus)),
        mention_of(user),
        what,
        fit(&Html, &headline(record), 200)
    )
}
