//! How a request looks on Teams: an Adaptive Card 1.5 whose agent text sits in `TextRun`s,
//! with `Action.Execute` controls and `Action.ShowCard` forms, and the invoke responses.

use clarify_core::{Context, QuestionKind, Scope};
use clarify_model::RequestRecord;
use serde_json::{Value, json};

use super::CARD;
use crate::act::{Focus, input_id};
use crate::layout::{self, THE_REST};
use crate::layout::words::{headline, outcome_text};
use crate::notice::Notice;
use crate::text::cut;

/// Room for display blocks on a card (a bot's message may be about 28 KB in all).
const MAX_DISPLAY: usize = 8_000;
const MAX_TEXT: usize = 2_000;
const MAX_BUTTONS: usize = 5;

fn run(text: &str) -> Value {
    json!({"type": "TextRun", "text": text})
}

/// Agent text, inert: a `TextRun` is never read as markdown.
fn inert(text: &str, max: usize) -> Value {
    json!({"type": "RichTextBlock", "inlines": [run(&cut(text, max))]})
}

fn heading(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": cut(text, 200), "weight": "bolder", "size": "medium"}]})
}

fn small(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": text, "isSubtle": true, "size": "small"}]})
}

fn mono(text: &str) -> Value {
    json!({"type": "RichTextBlock", "inlines": [
        {"type": "TextRun", "text": text, "fontType": "monospace"}]})
}

fn execute(title: &str, verb: &str, request: &str, style: Option<&str>) -> Value {
    let mut a = json!({"type": "Action.Execute", "title": cut(title, 60), "verb": verb,
                       "data": {"request": request}});
    if let Some(style) = style {
        a["style"] = json!(style);
    }
    a
}

/// An `Action.ShowCard` holding `inputs` and a Submit that sends them as `form:<focus>`.
fn form(title: &str, focus: Focus, request: &str, inputs: Vec<Value>) -> Value {
    json!({"type": "Action.ShowCard", "title": cut(title, 60), "card": {
        "type": "AdaptiveCard", "body": inputs,
        "actions": [execute("Submit", &format!("form:{}", focus.encode()), request, Some("positive"))],
    }})
}

fn text_input(id: String, label: &str, default: Option<String>, required: bool) -> Value {
    let mut i = json!({"type": "Input.Text", "id": id, "label": cut(label, 100),
                       "isMultiline": true, "isRequired": required, "maxLength": 4_000});
    if required {
        i["errorMessage"] = json!("Required");
    }
    if let Some(d) = default.filter(|d| d.chars().count() <= 4_000) {
        i["value"] = json!(d);
    }
    i
}

/// The card of `notice`: for a request that needs a passkey confirmation, without inputs,
/// answer actions or refresh, only "Open in clarify" and the line saying why.
pub(crate) fn notice_card(notice: &Notice<'_>) -> Value {
    let mut card = card(notice.record, notice.answer_url);
    if !notice.open_only() {
        return card;
    }
    if let Some(body) = card["body"].as_array_mut() {
        body.retain(|b| !b["type"].as_str().is_some_and(|t| t.starts_with("Input.")));
        body.push(inert(crate::layout::words::STEP_UP_LINE, MAX_TEXT));
    }
    card["actions"] = json!([{"type": "Action.OpenUrl", "title": crate::layout::words::OPEN_IN_CLARIFY, "url": notice.answer_url}]);
    if let Some(card) = card.as_object_mut() {
        card.remove("refresh");
    }
    card
}

/// The Adaptive Card (1.5) for `record` as it is now.
pub fn card(record: &RequestRecord, answer_url: &str) -> Value {
    let request = &record.request;
    let pending = !record.status.is_resolved();
    let mut body = vec![heading(&headline(record))];
    match &request.context {
        Some(Context::Text(t)) => body.push(inert(t, MAX_TEXT)),
        Some(Context::Json(map)) => body.push(mono(&cut(
            &serde_json::to_string_pretty(map).unwrap_or_default(),
            MAX_TEXT,
        ))),
        None => {}
    }
    let more = format!("{THE_REST}: {answer_url}");
    if let Some(display) =
        crate::layout::words::display_text(record, &clarify_render::text::Plain, MAX_DISPLAY, &more)
    {
        body.push(json!({"type": "Container", "style": "emphasis", "items": [mono(&display)]}));
    }
    for q in &request.questions {
        body.push(json!({"type": "RichTextBlock", "inlines": [
            {"type": "TextRun", "text": cut(&q.text, MAX_TEXT), "weight": "bolder"}]}));
        match &q.kind {
            QuestionKind::Single(c) | QuestionKind::Multi(c) => {
                let lines = layout::option_lines(c, |l| cut(l, 100), " (recommended)", None);
                body.push(inert(&lines.join("\n"), MAX_TEXT));
            }
            QuestionKind::Approval(a) => {
                body.push(json!({"type": "RichTextBlock", "inlines": [
                    run(layout::ACTION),
                    {"type": "TextRun", "text": cut(&a.action.name, 100), "fontType": "monospace"}]}));
                if let Some(pretty) = layout::arguments(request, a) {
                    let mut shown = cut(&pretty, MAX_TEXT);
                    if pretty.chars().count() > MAX_TEXT {
                        shown.push_str(&format!("\n(cut: {more})"));
                    }
                    body.push(mono(&shown));
                }
            }
            QuestionKind::Open | QuestionKind::Form(_) => {}
        }
    }
    let mut footer: Vec<String> = crate::layout::words::asked_by(request, |a| cut(a, 60), |s| cut(s, 60))
        .into_iter()
        .collect();
    if pending {
        footer.extend(layout::pending_facts(record, cut, layout::expires));
    }
    if !footer.is_empty() {
        body.push(small(&footer.join(" · ")));
    }
    if !pending {
        body.push(json!({"type": "RichTextBlock", "inlines": [
            {"type": "TextRun", "text": cut(&outcome_text(record), MAX_TEXT), "weight": "bolder",
             "color": "accent"}]}));
    }
    let (inputs, mut actions) = controls(record);
    body.extend(inputs);
    actions.push(json!({"type": "Action.OpenUrl", "title": if pending { "Open in clarify" } else { "Open the record" }, "url": answer_url}));
    let mut card = json!({
        "type": "AdaptiveCard",
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "version": "1.5",
        "body": body,
        "actions": actions,
    });
    if pending {
        // Each viewer's client asks for the card as it is now.
        card["refresh"] = json!({"action": execute("Refresh", "refresh", &record.id, None)});
    }
    card
}

/// The inputs on the card and its actions, for a pending request of one question.
fn controls(record: &RequestRecord) -> (Vec<Value>, Vec<Value>) {
    let request = &record.request;
    let id = record.id.as_str();
    let (mut inputs, mut actions) = (Vec::new(), Vec::new());
    if record.status.is_resolved() {
        return (inputs, actions);
    }
    if let [q] = request.questions.as_slice() {
        match &q.kind {
            QuestionKind::Single(c) => {
                if c.options.len() <= MAX_BUTTONS {
                    for (i, o) in c.options.iter().enumerate() {
                        let style =
                            (c.recommended.as_deref() == Some(o.id.as_str())).then_some("positive");
                        actions.push(execute(&o.label, &format!("o:{i}"), id, style));
                    }
                } else {
                    inputs.push(choice_set(c, false));
                    actions.push(execute("Submit", "sel", id, Some("positive")));
                }
                if c.allow_other {
                    actions.push(other_answer(id));
                }
            }
            QuestionKind::Multi(c) => {
                inputs.push(choice_set(c, true));
                actions.push(execute("Submit", "multi", id, Some("positive")));
                if c.allow_other {
                    actions.push(other_answer(id));
                }
            }
            QuestionKind::Open => actions.push(form(
                "Answer…",
                Focus::Open(0),
                id,
                vec![text_input(input_id(0, None), "Your answer", None, true)],
            )),
            QuestionKind::Form(f) => actions.push(form(
                "Fill in…",
                Focus::Form(0),
                id,
                f.fields.iter().map(field_input).collect(),
            )),
            QuestionKind::Approval(a) => {
                for s in &a.scopes {
                    let label = match s {
                        Scope::Once => "Approve",
                        Scope::Session => "Approve for this session",
                        Scope::Always => "Approve always",
                    };
                    actions.push(execute(
                        label,
                        &format!("a:{}", s.as_str()),
                        id,
                        Some("positive"),
                    ));
                }
                actions.push(execute("Deny", "d", id, Some("destructive")));
                actions.push(form(
                    "Request changes…",
                    Focus::Revise(0),
                    id,
                    vec![text_input(
                        input_id(0, Some("reason")),
                        "What should change?",
                        None,
                        true,
                    )],
                ));
                actions.push(form(
                    "Deny with reason…",
                    Focus::Deny(0),
                    id,
                    vec![text_input(
                        input_id(0, Some("reason")),
                        "Reason",
                        None,
                        true,
                    )],
                ));
                if a.allow_edit {
                    actions.push(form(
                        "Edit arguments…",
                        Focus::Edit(0),
                        id,
                        vec![text_input(
                            input_id(0, Some("arguments")),
                            "Arguments (a JSON object)",
                            serde_json::to_string_pretty(&a.action.arguments).ok(),
                            true,
                        )],
                    ));
                }
            }
        }
    }
    if request.allow_skip {
        actions.push(execute("Skip", "s", id, None));
    }
    (inputs, actions)
}

/// The form that answers a choice question in one's own words.
fn other_answer(request: &str) -> Value {
    let input = text_input(input_id(0, Some("other")), "Your answer", None, true);
    form("Other…", Focus::Other(0), request, vec![input])
}

fn choice_set(c: &clarify_core::Choices, multi: bool) -> Value {
    let choices: Vec<Value> = c
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let mut title = cut(&o.label, 100);
            if c.recommended.as_deref() == Some(o.id.as_str()) {
                title.push_str(" (recommended)");
            }
            json!({"title": title, "value": i.to_string()})
        })
        .collect();
    json!({"type": "Input.ChoiceSet", "id": input_id(0, None), "isMultiSelect": multi,
           "style": if multi { "expanded" } else { "compact" },
           "label": if multi { "Choose one or more" } else { "Choose one" }, "choices": choices})
}

/// A form field as a card input: a toggle for a boolean, a choice set for options, text for the
/// rest (read by core's `value_from_text`, with a placeholder saying what fits).
fn field_input(field: &clarify_core::Field) -> Value {
    use clarify_core::form::FieldKind;
    let id = crate::form::field_id(field);
    let required = field.required && field.default.is_none();
    let mut input = match &field.kind {
        FieldKind::Boolean => json!({"type": "Input.Toggle", "title": cut(&field.label, 100),
                                     "valueOn": "yes", "valueOff": "no"}),
        FieldKind::Choice { options } | FieldKind::Choices { options, .. } => json!({
            "type": "Input.ChoiceSet",
            "isMultiSelect": matches!(field.kind, FieldKind::Choices { .. }),
            "choices": options.iter().map(|o| json!({"title": cut(&o.label, 100), "value": o.id})).collect::<Vec<_>>(),
        }),
        _ => json!({"type": "Input.Text", "placeholder": cut(&field.hint(), 100)}),
    };
    input["id"] = json!(id);
    input["label"] = json!(cut(&field.label, 100));
    input["isRequired"] = json!(required);
    if required {
        input["errorMessage"] = json!("Required");
    }
    // A multi-select's value is its choices joined by a bare comma.
    if let Some(default) = crate::form::typed_default(field, ",") {
        input["value"] = json!(default);
    }
    input
}

/// The invoke response that shows `card` to the clicker in place of the old one.
pub fn card_response(card: Value) -> Value {
    json!({"statusCode": 200, "type": CARD, "value": card})
}

/// The invoke response that shows `text` to the clicker only; the card stays.
pub fn private(text: &str) -> Value {
    json!({"statusCode": 200, "type": "application/vnd.microsoft.activity.message",
           "value": cut(text, 2_000)})
}
