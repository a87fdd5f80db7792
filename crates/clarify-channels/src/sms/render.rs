//! How a request reads in a text message (SMS, and WhatsApp through Twilio): one plain message
//! that names the request's short code and says how to answer by reply, within what Twilio
//! sends as one message.

use clarify_core::QuestionKind;
use clarify_model::{EventKind, RequestRecord, short_code};

use crate::layout::words::{STEP_UP_LINE, headline, outcome_text};
use crate::notice::Notice;
use crate::text::cut;

/// The longest `Body` Twilio takes (it splits it into as many SMS segments as it needs).
pub const MAX_BODY: usize = 1_600;
/// Room for the headline and the question's text: a text message is read on a lock screen,
/// and the answer link has the rest.
const MAX_QUESTION: usize = 320;
const MAX_HEADLINE: usize = 120;
const MAX_CONTEXT: usize = 200;
const MAX_LABEL: usize = 60;
/// How many options a text lists: more would not be read on a phone.
const MAX_OPTIONS: usize = 9;

/// The text of `notice`: the announcement (or, for a reminder or an escalation, the same with
/// a first line saying so), or a short line saying how the request ended.
pub fn body(notice: &Notice<'_>) -> String {
    let record = notice.record;
    let code = short_code(&record.id);
    if notice.resolves() {
        return cut(
            &format!(
                "[{code}] {}\n{}.",
                cut(&headline(record), MAX_HEADLINE),
                outcome_text(record)
            ),
            MAX_BODY,
        );
    }
    let lead = match notice.event {
        EventKind::Reminded => "Reminder: still waiting for your answer.\n",
        EventKind::Escalated => "Escalated: this request now waits for you too.\n",
        _ => "",
    };
    let tail = if notice.open_only() {
        format!("{STEP_UP_LINE}\n{}", notice.answer_url)
    } else {
        format!("{}\n{}", how_to_answer(record, &code), notice.answer_url)
    };
    let head = format!(
        "{lead}[{code}] {}\n{}",
        cut(&headline(record), MAX_HEADLINE),
        question_text(record, !notice.open_only())
    );
    let room = MAX_BODY.saturating_sub(tail.chars().count() + 1);
    format!("{}\n{tail}", cut(head.trim_end(), room))
}

/// The question, the context and, where a reply can choose, the numbered options.
fn question_text(record: &RequestRecord, choices: bool) -> String {
    let request = &record.request;
    let mut out = String::new();
    if let Some(context) = &request.context {
        let text = match context {
            clarify_core::Context::Text(t) => t.clone(),
            clarify_core::Context::Json(map) => serde_json::Value::Object(map.clone()).to_string(),
        };
        out.push_str(&cut(&text, MAX_CONTEXT));
        out.push('\n');
    }
    for q in &request.questions {
        out.push_str(&cut(&q.text, MAX_QUESTION));
        out.push('\n');
        match &q.kind {
            QuestionKind::Approval(a) => {
                out.push_str(&format!("Action: {}\n", cut(&a.action.name, MAX_LABEL)));
                if choices && request.questions.len() == 1 {
                    out.push_str("1. Approve\n2. Deny\n");
                }
            }
            QuestionKind::Single(c) | QuestionKind::Multi(c) if choices => {
                for (i, o) in c.options.iter().take(MAX_OPTIONS).enumerate() {
                    let mark = if c.recommended.as_deref() == Some(o.id.as_str()) {
                        " (recommended)"
                    } else {
                        ""
                    };
                    out.push_str(&format!("{}. {}{mark}\n", i + 1, cut(&o.label, MAX_LABEL)));
                }
                if c.options.len() > MAX_OPTIONS {
                    out.push_str(&format!(
                        "({} more options at the link)\n",
                        c.options.len() - MAX_OPTIONS
                    ));
                }
            }
            _ => {}
        }
    }
    out
}

/// How a reply answers the request, naming its code for when several wait.
fn how_to_answer(record: &RequestRecord, code: &str) -> String {
    let request = &record.request;
    let [q] = request.questions.as_slice() else {
        return "Answer at the link:".to_owned();
    };
    match &q.kind {
        QuestionKind::Approval(_) => format!(
            "Reply 1 to approve, 2 to deny, or approve {code} / deny {code} <reason>; or open:"
        ),
        QuestionKind::Single(_) => format!(
            "Reply with a number or an option's name ({code} 2 names this request); or open:"
        ),
        QuestionKind::Multi(_) => {
            format!("Reply with numbers, such as 1,3 ({code} 1,3 names this request); or open:")
        }
        QuestionKind::Open => {
            format!("Reply with your answer ({code} <answer> names this request); or open:")
        }
        QuestionKind::Form(_) => "Answer at the link:".to_owned(),
    }
}
