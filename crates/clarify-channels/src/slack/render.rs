//! Block Kit: a request as a Slack message, and the modals that answer it.
//!
//! Everything the agent wrote is escaped for mrkdwn (`&`, `<`, `>`, the only characters Slack
//! asks to escape; this also keeps an agent from mentioning `<!channel>` or linking) and cut to
//! Slack's limits after escaping: 3,000 characters per section, 150 per header, 75 per button
//! or option. Interactive elements carry only indexes; the request is named by the block id
//! `clarify:<request id>:<question index>`, and the live request is read again on a click.

use clarify_core::{Context, FieldKind, Question, QuestionKind, Scope, TextFormat};
use clarify_model::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::act::{Focus, input_id};
use crate::layout::{self, THE_REST};
use crate::layout::words::outcome_text;
use crate::notice::Notice;

/// Slack's limit on a section's text.
pub const MAX_SECTION: usize = 3_000;
const MAX_HEADER: usize = 150;
const MAX_BUTTON: usize = 75;
/// Buttons shown for a `single` question before a select takes their place.
pub const MAX_BUTTONS: usize = 5;
/// Checkboxes shown for a `multi` question before a multi-select takes their place.
pub const MAX_CHECKBOXES: usize = 10;
const MAX_TITLE: usize = 24;
/// Slack's limit on a text input's value.
pub const MAX_INPUT: usize = 3_000;

/// Escapes text for mrkdwn.
pub fn escape(text: &str) -> String {
    crate::text::escape_markup(text)
}

/// Display blocks shown in one message, at most; the rest are on the answer page.
const MAX_DISPLAY_SECTIONS: usize = 10;

/// Slack's mrkdwn, for display blocks. Agent text is escaped (`&`, `<`, `>`), so no `<!channel>`,
/// `<@user>` or `<url|link>` can form from it; links are made here only from checked URLs.
#[derive(Debug, Clone, Copy)]
pub struct Mrkdwn;

impl clarify_render::Markup for Mrkdwn {
    fn text(&self, s: &str) -> String {
        escape(s)
    }
    fn strong(&self, inner: &str) -> String {
        format!("*{inner}*")
    }
    fn emphasis(&self, inner: &str) -> String {
        format!("_{inner}_")
    }
    fn strike(&self, inner: &str) -> String {
        format!("~{inner}~")
    }
    fn code(&self, s: &str) -> String {
        format!("`{}`", escape(&s.replace('`', "'")))
    }
    fn link(&self, url: &str, label: &str) -> String {
        format!("<{}|{label}>", link_url(url))
    }
    fn pre(&self, s: &str, _language: Option<&str>) -> String {
        // A fence inside would close the block; a zero-width space keeps it open.
        format!("```\n{}\n```", escape(&s.replace("```", "``\u{200b}`")))
    }
    fn quote(&self, inner: &str) -> String {
        inner
            .lines()
            .map(|l| format!("&gt; {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A URL as Slack's `<url|text>` needs it: the characters that would end it encoded.
fn link_url(url: &str) -> String {
    url.replace('|', "%7C")
        .replace('<', "%3C")
        .replace('>', "%3E")
}

/// Sections showing the request's display blocks, each within a section's limit, the ones past
/// [`MAX_DISPLAY_SECTIONS`] left to the answer page.
fn display_sections(notice: &Notice<'_>) -> Vec<Value> {
    let blocks = &notice.record.request.display;
    let more = format!("<{}|{THE_REST}>", link_url(notice.answer_url));
    let mut out: Vec<Value> = blocks
        .iter()
        .take(MAX_DISPLAY_SECTIONS)
        .map(|b| {
            section(clarify_render::render_blocks(
                std::slice::from_ref(b),
                &Mrkdwn,
                MAX_SECTION,
                &more,
            ))
        })
        .collect();
    if blocks.len() > MAX_DISPLAY_SECTIONS {
        out.push(section(format!(
            "{} more blocks: {more}",
            blocks.len() - MAX_DISPLAY_SECTIONS
        )));
    }
    out
}

/// `text` escaped and cut so that the escaped text, with `…` when cut, has at most `max`
/// characters; an escape is never cut in half.
pub fn fit(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut used = 0;
    let total: usize = text.chars().map(escaped_len).sum();
    if total <= max {
        return escape(text);
    }
    for c in text.chars() {
        let n = escaped_len(c);
        if used + n > max.saturating_sub(1) {
            break;
        }
        used += n;
        out.push_str(&escape(c.encode_utf8(&mut [0; 4])));
    }
    out.push('…');
    out
}

fn escaped_len(c: char) -> usize {
    match c {
        '&' => 5,
        '<' | '>' => 4,
        _ => 1,
    }
}

/// Plain text (no mrkdwn, so nothing to escape) cut to `max` characters.
fn plain(text: &str, max: usize) -> Value {
    json!({"type": "plain_text", "text": crate::text::cut(text, max), "emoji": true})
}

fn section(mrkdwn: String) -> Value {
    json!({"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn}})
}

fn button(text: &str, action_id: &str, value: &str, style: Option<&str>) -> Value {
    let mut b = json!({
        "type": "button",
        "text": plain(text, MAX_BUTTON),
        "action_id": action_id,
        "value": value,
    });
    if let Some(style) = style {
        b["style"] = json!(style);
    }
    b
}

fn option(text: &str, value: &str) -> Value {
    json!({"text": plain(text, MAX_BUTTON), "value": value})
}

/// The block id naming question `n` of request `id` on the message.
pub fn block_id(request_id: &str, n: usize) -> String {
    format!("clarify:{request_id}:{n}")
}

pub use crate::layout::words::headline;

/// The message for `notice`: its fallback text (notifications, screen readers) and blocks.
/// Pending, it has the controls that answer it; resolved, it says how it ended and has none.
pub fn message(notice: &Notice<'_>, mention: &[String]) -> (String, Vec<Value>) {
    let record = notice.record;
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut blocks = vec![json!({"type": "header", "text": plain(&headline(record), MAX_HEADER)})];
    let mentions: Vec<String> = mention.iter().map(|m| mention_of(m)).collect();
    if pending && !mentions.is_empty() {
        blocks.push(section(mentions.join(" ")));
    }
    match &request.context {
        Some(Context::Text(t)) => blocks.push(section(fit(t, MAX_SECTION))),
        Some(Context::Json(map)) => {
            let pretty = serde_json::to_string_pretty(map).unwrap_or_default();
            blocks.push(section(code(&pretty, notice.answer_url)));
        }
        None => {}
    }
    blocks.extend(display_sections(notice));
    let whole_form = request.questions.len() > 1;
    // A request that needs a passkey confirmation is answered in clarify only.
    let answerable = pending && !notice.open_only();
    for (n, q) in request.questions.iter().enumerate() {
        blocks.extend(question_blocks(
            record,
            n,
            q,
            answerable && !whole_form,
            notice,
        ));
    }
    let mut controls = Vec::new();
    if answerable && whole_form {
        controls.push(button("Answer…", "form_request", "", Some("primary")));
    }
    if answerable && request.allow_skip {
        controls.push(button("Skip", "skip", "", None));
    }
    if pending && !answerable {
        blocks.push(section(escape(crate::layout::words::STEP_UP_LINE)));
    }
    if pending {
        let label = if answerable {
            "View in clarify"
        } else {
            crate::layout::words::OPEN_IN_CLARIFY
        };
        controls.push(json!({
            "type": "button",
            "text": plain(label, MAX_BUTTON),
            "action_id": "view",
            "url": notice.answer_url,
        }));
        // Anyone may ask to link their Slack account to their clarify sign-in.
        controls.push(button("Link account", "link_account", "", None));
        blocks.push(json!({
            "type": "actions",
            "block_id": format!("clarify:{}:request", record.id),
            "elements": controls,
        }));
    }
    let mut context = Vec::new();
    context.extend(crate::layout::words::asked_by(
        request,
        |a| format!("*{}*", escape(a)),
        |s| format!("`{}`", escape(s)),
    ));
    if pending {
        // Slack shows the time in each reader's zone; the context is cut as a whole below.
        let expiry = |at: chrono::DateTime<chrono::Utc>| {
            format!(
                "expires <!date^{}^{{date_short_pretty}} at {{time}}|{}>",
                at.timestamp(),
                layout::utc(at)
            )
        };
        context.extend(layout::pending_facts(record, |s, _| escape(s), expiry));
    }
    if !context.is_empty() {
        blocks.push(json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": crate::text::cut(&context.join(" · "), MAX_SECTION)}],
        }));
    }
    let mut text = headline(record);
    if !pending {
        let outcome = outcome_text(record);
        blocks.push(section(format!(
            "{} {}",
            status_icon(record),
            fit(&outcome, MAX_SECTION - 4)
        )));
        text = format!("{text}: {outcome}");
    } else if notice.event == EventKind::Escalated {
        text = format!("Escalated: {text}");
    }
    (crate::text::cut(&text, MAX_SECTION), blocks)
}

/// A follow-up in the announcement's thread: a reminder, or an escalation with its mentions.
pub fn thread_reply(notice: &Notice<'_>, mention: &[String]) -> String {
    let mentions: Vec<String> = mention.iter().map(|m| mention_of(m)).collect();
    crate::layout::words::follow_up_words(notice.event, notice.record, &mentions)
}

/// The blocks of a warning before expiry: its `text`, and an "Extend 30 min" button (action
/// `extend:<seconds>`, in a block naming the request as the announcement's blocks do). `None`
/// when the request takes answers only in clarify (step-up), where an extension is refused too.
pub fn extend_blocks(notice: &Notice<'_>, text: &str) -> Option<Value> {
    if notice.open_only() {
        return None;
    }
    let seconds = crate::act::EXTEND_BUTTON_SECONDS;
    Some(json!([
        {"type": "section", "text": {"type": "mrkdwn", "text": crate::text::cut(text, MAX_SECTION)}},
        {
            "type": "actions",
            "block_id": format!("clarify:{}:request", notice.record.id),
            "elements": [{
                "type": "button",
                "action_id": format!("extend:{seconds}"),
                "text": {"type": "plain_text", "text": crate::act::extend_label(seconds)},
            }],
        },
    ]))
}

/// `<@U123>` for a user, `<!subteam^S123>` for a user group.
fn mention_of(id: &str) -> String {
    if id.starts_with('S') {
        format!("<!subteam^{id}>")
    } else {
        format!("<@{id}>")
    }
}

fn status_icon(record: &RequestRecord) -> &'static str {
    use clarify_core::Status;
    let decided = |d: clarify_core::Decision| {
        record
            .outcome()
            .is_some_and(|o| o.questions.iter().any(|q| q.decision == Some(d)))
    };
    match record.status {
        Status::Answered if decided(clarify_core::Decision::Deny) => ":no_entry:",
        Status::Answered if decided(clarify_core::Decision::Revise) => ":pencil2:",
        Status::Answered => ":white_check_mark:",
        Status::Skipped => ":fast_forward:",
        Status::Expired => ":hourglass:",
        Status::Cancelled | Status::Pending => ":heavy_multiplication_x:",
    }
}

/// Pretty JSON in a code block, cut to a section with the answer link for the rest.
fn code(pretty: &str, answer_url: &str) -> String {
    let whole = format!("```{}```", escape(pretty));
    if whole.chars().count() <= MAX_SECTION {
        return whole;
    }
    let tail = format!("```\n(cut; <{answer_url}|the rest in clarify>)");
    let room = MAX_SECTION - tail.chars().count() - 3;
    format!("```{}{tail}", fit(pretty, room))
}

/// The blocks of question `n`: its text, and its controls while `interactive`.
fn question_blocks(
    record: &RequestRecord,
    n: usize,
    q: &Question,
    interactive: bool,
    notice: &Notice<'_>,
) -> Vec<Value> {
    let mut blocks = Vec::new();
    let title = match (&q.header, n, record.request.questions.len()) {
        (Some(h), _, count) if count > 1 => format!("*{}*\n{}", escape(h), escape(&q.text)),
        _ => escape(&q.text),
    };
    let mut text = crate::text::cut(&title, MAX_SECTION);
    if let Some(c) = q.kind.choices() {
        let described = c.options.iter().any(|o| o.description.is_some());
        if described || !interactive {
            for o in &c.options {
                let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                    " _(recommended)_"
                } else {
                    ""
                };
                let desc = o
                    .description
                    .as_deref()
                    .map(|d| format!(" — {}", escape(d)))
                    .unwrap_or_default();
                text.push_str(&format!("\n• *{}*{mark}{desc}", escape(&o.label)));
            }
            text = crate::text::cut(&text, MAX_SECTION);
        }
    }
    blocks.push(section(text));
    if let QuestionKind::Approval(a) = &q.kind {
        let action = format!("*Action:* `{}`", escape(&crate::text::cut(&a.action.name, 200)));
        if let Some(pretty) = layout::arguments(&record.request, a) {
            blocks.push(section(format!(
                "{action}\n{}",
                code(&pretty, notice.answer_url)
            )));
        } else {
            blocks.push(section(action));
        }
    }
    if let QuestionKind::Form(form) = &q.kind {
        let fields: Vec<String> = form
            .fields
            .iter()
            .map(|f| {
                let optional = if f.required { "" } else { ", optional" };
                format!("• {} ({}{optional})", escape(&f.label), f.kind.name())
            })
            .collect();
        blocks.push(section(crate::text::cut(&fields.join("\n"), MAX_SECTION)));
    }
    if !interactive {
        return blocks;
    }
    let mut elements = Vec::new();
    match &q.kind {
        QuestionKind::Single(c) => {
            let label = |o: &clarify_core::Choice| {
                if c.recommended.as_deref() == Some(o.id.as_str()) {
                    format!("{} (recommended)", o.label)
                } else {
                    o.label.clone()
                }
            };
            if c.options.len() <= MAX_BUTTONS {
                for (i, o) in c.options.iter().enumerate() {
                    let style =
                        (c.recommended.as_deref() == Some(o.id.as_str())).then_some("primary");
                    elements.push(button(
                        &label(o),
                        &format!("option:{i}"),
                        &i.to_string(),
                        style,
                    ));
                }
            } else {
                let options: Vec<Value> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| option(&label(o), &i.to_string()))
                    .collect();
                elements.push(json!({
                    "type": "static_select",
                    "action_id": "select",
                    "placeholder": plain("Choose…", MAX_BUTTON),
                    "options": options,
                }));
            }
            if c.allow_other {
                elements.push(button("Other…", "form_other", "", None));
            }
        }
        QuestionKind::Multi(c) => {
            let options: Vec<Value> = c
                .options
                .iter()
                .enumerate()
                .map(|(i, o)| option(&o.label, &i.to_string()))
                .collect();
            if c.options.len() <= MAX_CHECKBOXES {
                elements
                    .push(json!({"type": "checkboxes", "action_id": "checks", "options": options}));
            } else {
                elements.push(json!({
                    "type": "multi_static_select",
                    "action_id": "checks",
                    "placeholder": plain("Choose…", MAX_BUTTON),
                    "options": options,
                }));
            }
            elements.push(button("Submit", "submit", "", Some("primary")));
            if c.allow_other {
                elements.push(button("Other…", "form_other", "", None));
            }
        }
        QuestionKind::Open => elements.push(button("Answer…", "form_open", "", Some("primary"))),
        QuestionKind::Approval(a) => {
            for (i, scope) in a.scopes.iter().enumerate() {
                let label = match scope {
                    Scope::Once => "Approve",
                    Scope::Session => "Approve for this session",
                    Scope::Always => "Always approve",
                };
                let style = (i == 0).then_some("primary");
                elements.push(button(
                    label,
                    &format!("approve:{scope}"),
                    scope.as_str(),
                    style,
                ));
            }
            elements.push(button("Request changes…", "form_revise", "", None));
            elements.push(button("Deny", "deny", "deny", Some("danger")));
            elements.push(button("Deny with reason…", "form_deny", "", None));
            if a.allow_edit && editable(&a.action.arguments) {
                elements.push(button("Edit arguments…", "form_edit", "", None));
            }
        }
        QuestionKind::Form(_) => {
            elements.push(button("Fill in…", "form_form", "", Some("primary")))
        }
    }
    blocks.push(json!({
        "type": "actions",
        "block_id": block_id(&record.id, n),
        "elements": elements,
    }));
    blocks
}

/// Whether arguments fit a modal's text input to be edited there.
fn editable(arguments: &Value) -> bool {
    serde_json::to_string_pretty(arguments).is_ok_and(|p| p.chars().count() <= MAX_INPUT)
}

/// What a modal's `private_metadata` carries: the request, the form, and the announcement (to
/// answer privately in its channel).
pub fn metadata(request_id: &str, focus: Focus) -> String {
    format!("{request_id} {}", focus.encode())
}

/// The request id and focus [`metadata`] wrote.
pub fn read_metadata(text: &str) -> Option<(String, Focus)> {
    let (id, focus) = text.split_once(' ')?;
    Some((id.to_owned(), Focus::decode(focus)?))
}

/// The modal answering `focus` of the request; `None` when the request has nothing to ask there
/// (a stale button).
pub fn modal(record: &RequestRecord, focus: Focus) -> Option<Value> {
    let request = &record.request;
    let questions = &request.questions;
    let range = focus.questions(questions.len());
    if range.is_empty() {
        return None;
    }
    let mut blocks = Vec::new();
    let mut title = "Answer";
    for n in range {
        let q = &questions[n];
        if questions.len() > 1 || matches!(focus, Focus::Form(_) | Focus::Request) {
            blocks.push(section(crate::text::cut(&escape(&q.text), MAX_SECTION)));
        }
        match (&q.kind, focus) {
            (QuestionKind::Single(_), Focus::Other(_)) => {
                blocks.push(text_input(n, Some("other"), &q.text, true, true, None));
            }
            (QuestionKind::Multi(c), Focus::Other(_)) => {
                blocks.push(choices_input(n, "Options", &c.options, true, false));
                blocks.push(text_input(
                    n,
                    Some("other"),
                    "Your own answer",
                    true,
                    false,
                    None,
                ));
            }
            (QuestionKind::Open, _) => {
                blocks.push(text_input(n, None, &q.text, true, true, None));
            }
            (QuestionKind::Approval(_), Focus::Deny(_)) => {
                title = "Deny";
                blocks.push(text_input(n, Some("reason"), "Why deny?", true, true, None));
            }
            (QuestionKind::Approval(_), Focus::Revise(_)) => {
                title = "Request changes";
                blocks.push(text_input(
                    n,
                    Some("reason"),
                    "What should change?",
                    true,
                    true,
                    None,
                ));
            }
            (QuestionKind::Approval(a), Focus::Edit(_)) => {
                title = "Edit and approve";
                let pretty = serde_json::to_string_pretty(&a.action.arguments).ok()?;
                if pretty.chars().count() > MAX_INPUT {
                    return None;
                }
                blocks.push(text_input(
                    n,
                    Some("arguments"),
                    &format!("Arguments of {} (JSON)", a.action.name),
                    true,
                    true,
                    Some(&pretty),
                ));
                if a.scopes.len() > 1 {
                    let options: Vec<Value> = a
                        .scopes
                        .iter()
                        .map(|s| option(scope_label(*s), s.as_str()))
                        .collect();
                    blocks.push(json!({
                        "type": "input",
                        "block_id": input_id(n, Some("scope")),
                        "label": plain("Approve for", 2_000),
                        "element": {"type": "radio_buttons", "action_id": "v", "options": options,
                                    "initial_option": options[0]},
                    }));
                }
            }
            (QuestionKind::Single(c), _) => {
                let options: Vec<Value> = c
                    .options
                    .iter()
                    .enumerate()
                    .map(|(i, o)| option(&o.label, &i.to_string()))
                    .collect();
                blocks.push(json!({
                    "type": "input",
                    "block_id": input_id(n, None),
                    "optional": c.allow_other,
                    "label": plain(q.header.as_deref().unwrap_or("Choose one"), 2_000),
                    "element": {"type": "static_select", "action_id": "v", "options": options,
                                "placeholder": plain("Choose…", MAX_BUTTON)},
                }));
                if c.allow_other {
                    blocks.push(text_input(
                        n,
                        Some("other"),
                        "Or your own answer",
                        true,
                        false,
                        None,
                    ));
                }
            }
            (QuestionKind::Multi(c), _) => {
                blocks.push(choices_input(n, "Choose", &c.options, c.allow_other, false));
                if c.allow_other {
                    blocks.push(text_input(
                        n,
                        Some("other"),
                        "Your own answer",
                        true,
                        false,
                        None,
                    ));
                }
            }
            (QuestionKind::Approval(a), _) => {
                let mut options: Vec<Value> = a
                    .scopes
                    .iter()
                    .map(|s| option(scope_label(*s), &format!("approve:{s}")))
                    .collect();
                options.push(option("Request changes (say which below)", "revise"));
                options.push(option("Deny", "deny"));
                blocks.push(json!({
                    "type": "input",
                    "block_id": input_id(n, None),
                    "label": plain(&format!("Run {}?", a.action.name), 2_000),
                    "element": {"type": "radio_buttons", "action_id": "v", "options": options},
                }));
                blocks.push(text_input(n, Some("reason"), "Reason", true, false, None));
            }
            (QuestionKind::Form(form), _) => {
                title = "Fill in";
                for field in &form.fields {
                    blocks.push(field_input(n, field));
                }
            }
        }
    }
    Some(json!({
        "type": "modal",
        "callback_id": "clarify",
        "private_metadata": metadata(&record.id, focus),
        "title": plain(title, MAX_TITLE),
        "submit": plain("Submit", MAX_TITLE),
        "close": plain("Cancel", MAX_TITLE),
        "blocks": blocks,
    }))
}

fn scope_label(scope: Scope) -> &'static str {
    match scope {
        Scope::Once => "Approve once",
        Scope::Session => "Approve for this session",
        Scope::Always => "Always approve",
    }
}

fn text_input(
    n: usize,
    part: Option<&str>,
    label: &str,
    multiline: bool,
    required: bool,
    initial: Option<&str>,
) -> Value {
    let mut element = json!({
        "type": "plain_text_input",
        "action_id": "v",
        "multiline": multiline,
        "max_length": MAX_INPUT,
    });
    if let Some(initial) = initial {
        element["initial_value"] = json!(initial);
    }
    json!({
        "type": "input",
        "block_id": input_id(n, part),
        "optional": !required,
        "label": plain(label, 2_000),
        "element": element,
    })
}

fn choices_input(
    n: usize,
    label: &str,
    options: &[clarify_core::Choice],
    optional: bool,
    ids: bool,
) -> Value {
    let options: Vec<Value> = options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let value = if ids { o.id.clone() } else { i.to_string() };
            option(&o.label, &value)
        })
        .collect();
    let element = if options.len() <= MAX_CHECKBOXES {
        json!({"type": "checkboxes", "action_id": "v", "options": options})
    } else {
        json!({"type": "multi_static_select", "action_id": "v", "options": options,
               "placeholder": plain("Choose…", MAX_BUTTON)})
    };
    json!({
        "type": "input",
        "block_id": input_id(n, None),
        "optional": optional,
        "label": plain(label, 2_000),
        "element": element,
    })
}

/// One form field as a modal input; choice fields answer with option ids.
fn field_input(n: usize, field: &clarify_core::Field) -> Value {
    let part = format!("f.{}", field.id);
    let hint = field.description.as_deref();
    let mut block = match &field.kind {
        FieldKind::Choice { options } => {
            let opts: Vec<Value> = options.iter().map(|o| option(&o.label, &o.id)).collect();
            let mut element = json!({"type": "static_select", "action_id": "v", "options": opts,
                                     "placeholder": plain("Choose…", MAX_BUTTON)});
            if let Some(d) = field.default.as_ref().and_then(Value::as_str)
                && let Some(o) = options.iter().find(|o| o.id == d)
            {
                element["initial_option"] = option(&o.label, &o.id);
            }
            json!({"type": "input", "block_id": input_id(n, Some(&part)), "element": element})
        }
        FieldKind::Choices { options, .. } => {
            let mut b = choices_input(n, &field.label, options, !field.required, true);
            b["block_id"] = json!(input_id(n, Some(&part)));
            b
        }
        FieldKind::Boolean => {
            let yes = option("Yes", "true");
            let mut element = json!({"type": "checkboxes", "action_id": "v", "options": [yes]});
            if field.default == Some(Value::Bool(true)) {
                element["initial_options"] = json!([yes]);
            }
            // A checkbox left clear is "no", so the field never needs an answer here.
            json!({"type": "input", "block_id": input_id(n, Some(&part)), "element": element,
                   "optional": true})
        }
        FieldKind::Text { format, .. } => {
            let mut element = json!({"type": "plain_text_input", "action_id": "v",
                                     "max_length": MAX_INPUT});
            if let Some(d) = field.default.as_ref().and_then(Value::as_str) {
                element["initial_value"] = json!(crate::text::cut(d, MAX_INPUT));
            }
            if let Some(f) = format {
                let shape = match f {
                    TextFormat::Email => "name@example.com",
                    TextFormat::Url => "https://…",
                    TextFormat::Date => "YYYY-MM-DD",
                    TextFormat::Datetime => "YYYY-MM-DD HH:MM (UTC)",
                };
                element["placeholder"] = plain(shape, 150);
            }
            json!({"type": "input", "block_id": input_id(n, Some(&part)), "element": element})
        }
        FieldKind::Number { .. } | FieldKind::Integer { .. } => {
            let mut element = json!({"type": "plain_text_input", "action_id": "v",
                                     "max_length": 100});
            if let Some(d) = &field.default {
                element["initial_value"] = json!(d.to_string());
            }
            json!({"type": "input", "block_id": input_id(n, Some(&part)), "element": element})
        }
    };
    block["label"] = plain(&field.label, 2_000);
    if block.get("optional").is_none() {
        block["optional"] = json!(!field.required);
    }
    if let Some(h) = hint {
        block["hint"] = plain(h, 2_000);
    }
    block
}
