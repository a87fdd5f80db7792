//! How requests and outcomes look in a terminal.
//!
//! Styling (bold questions, dim hints) is used only when stdout is a terminal and `NO_COLOR` is
//! not set (or empty; `logs::colour_on`); piped output is plain text.

use std::fmt::Write as _;

use clarify_client::wire::{OutcomeBody, QuestionBody, RecordBody, VoteBody};
use serde_json::Value;

/// Whether to style output.
pub fn styled() -> bool {
    crate::logs::colour_on(&std::io::stdout())
}

/// `text` (which an agent may have written: its control characters are replaced) in bold.
pub fn bold(text: &str) -> String {
    let text = clarify_render::text::inert(text);
    if styled() {
        format!("\x1b[1m{text}\x1b[0m")
    } else {
        text
    }
}

/// `text` (its control characters replaced) dimmed.
pub fn dim(text: &str) -> String {
    let text = clarify_render::text::inert(text);
    if styled() {
        format!("\x1b[2m{text}\x1b[0m")
    } else {
        text
    }
}

/// `h:mm:ss` or `m:ss`.
pub fn clock(seconds: i64) -> String {
    let (h, m, s) = (seconds / 3600, (seconds % 3600) / 60, seconds % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// One line per question of an answered outcome: the label(s) or text.
pub fn answer_lines(outcome: &OutcomeBody) -> Vec<String> {
    outcome
        .questions
        .iter()
        .map(|q| answer_text(&q.answer))
        .collect()
}

fn answer_text(answer: &Value) -> String {
    match answer {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(answer_text).collect::<Vec<_>>().join(", "),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Who asked and how long is left, as the web inbox heads a request: `agent deployer · session
/// s1 · 14:59 left`, led by `High risk` for a high-risk request (as the inbox's badge says it,
/// whatever step-up is set to); `None` when there is nothing to say.
pub fn asked(record: &RecordBody) -> Option<String> {
    let mut parts = Vec::new();
    if record.risk == "high" {
        parts.push("High risk".to_owned());
    }
    if let Some(a) = &record.agent {
        parts.push(format!("agent {a}"));
    }
    if let Some(s) = &record.session {
        parts.push(format!("session {s}"));
    }
    let left = record
        .expires_at
        .as_deref()
        .and_then(clarify_client::wire::parse_time)
        .map(|at| (at - chrono::Utc::now()).num_seconds());
    match left {
        Some(s) if s > 0 => parts.push(format!("{} left", clock(s))),
        Some(_) => parts.push("expiring".to_owned()),
        None => parts.push("never expires".to_owned()),
    }
    Some(parts.join(" · "))
}

/// "skipped by alice", "expired: nobody answered in time", ...
pub fn status_sentence(record: &RecordBody) -> String {
    let by = record
        .answered_by
        .as_ref()
        .map(|n| format!(" by {n}"))
        .unwrap_or_default();
    match record.status.as_str() {
        "answered" => format!("answered{by}"),
        "skipped" => format!("the question was skipped{by}"),
        "expired" => "nobody answered in time; the request expired".to_owned(),
        "cancelled" => format!("the request was cancelled{by}"),
        other => other.to_owned(),
    }
}

/// What is asked, on one line, at most `max` characters: the request's summary (or, from an
/// older server without one, its first question).
fn summary(record: &RecordBody, max: usize) -> String {
    let text = match (record.summary.as_str(), record.questions.first()) {
        ("", Some(q)) => {
            q.header
                .as_ref()
                .map(|h| format!("[{h}] "))
                .unwrap_or_default()
                + &q.text
        }
        (summary, _) => summary.to_owned(),
    };
    let one_line: String = clarify_render::text::inert(&text)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    if one_line.chars().count() > max {
        let cut: String = one_line.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

/// The `list` table.
pub fn table(records: &[RecordBody]) -> String {
    let mut out = format!(
        "{:<26}  {:<9}  {:<20}  QUESTION\n",
        "ID", "STATUS", "CREATED"
    );
    for r in records {
        let created = &r.created_at;
        let created = created.get(..19).unwrap_or(created).replace('T', " ");
        let _ = writeln!(
            out,
            "{:<26}  {:<9}  {:<20}  {}",
            r.id,
            r.status,
            created,
            summary(r, 60)
        );
    }
    out
}

/// The display blocks: diffs with `+` and `-` (green and red on a terminal), code indented,
/// facts as `label: value`; plain in a pipe. Control characters the agent wrote are never
/// passed to the terminal.
pub fn display(record: &RecordBody) -> Option<String> {
    let blocks = record.blocks();
    if blocks.is_empty() {
        return None;
    }
    let markup: &dyn clarify_render::Markup = if styled() {
        &clarify_render::text::Ansi
    } else {
        &clarify_render::text::Plain
    };
    Some(clarify_render::render_blocks(
        &blocks,
        markup,
        usize::MAX,
        "",
    ))
}

/// The context, the display blocks, each question with its numbered options, for `show` and
/// `inbox`.
pub fn request(record: &RecordBody) -> String {
    let mut out = String::new();
    if let Some(context) = context(record) {
        let _ = writeln!(out, "{}\n", dim(&context));
    }
    if let Some(shown) = display(record) {
        let _ = writeln!(out, "{shown}\n");
    }
    if let Some(line) = quorum(record.approvals_required, &record.votes) {
        let _ = writeln!(out, "{line}\n");
    }
    let displayed = !record.display.is_empty();
    for q in &record.questions {
        out.push_str(&question(q, displayed));
    }
    out
}

/// The context as shown: its text, or its JSON object pretty-printed.
pub fn context(record: &RecordBody) -> Option<String> {
    match record.context.as_ref()? {
        Value::String(s) => Some(s.clone()),
        object @ Value::Object(_) => serde_json::to_string_pretty(object).ok(),
        _ => None,
    }
}

/// "1 of 2 approvals (by alice)" for a quorum request (more than one approval required) and its
/// votes; `None` for any other.
pub fn quorum(approvals_required: u32, votes: &[VoteBody]) -> Option<String> {
    let required = Some(approvals_required).filter(|n| *n > 1)?;
    let approvers: Vec<&str> = votes
        .iter()
        .filter(|v| v.decision == "approve")
        .map(|v| v.by.as_str())
        .collect();
    let by = if approvers.is_empty() {
        String::new()
    } else {
        format!(" (by {})", approvers.join(", "))
    };
    Some(format!("{} of {required} approvals{by}", approvers.len()))
}

/// One question: header, text, and what may be replied.
/// How a form field is asked for in the terminal: its label, type and limits, its options
/// numbered, and its default.
pub fn field_prompt(f: &clarify_core::Field) -> String {
    let mut out = format!("{} {}", bold(&f.label), dim(&format!("({})", f.hint())));
    if let Some(d) = &f.description {
        let _ = write!(out, "\n  {}", dim(d));
    }
    for (i, o) in f.kind.options().into_iter().flatten().enumerate() {
        let _ = write!(out, "\n  {}. {}", i + 1, o.label);
    }
    if let Some(d) = &f.default {
        let shown = match d {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let _ = write!(out, "\n  {}", dim(&format!("empty keeps {shown}")));
    }
    out
}

/// One question; `displayed` when display blocks above already show what an approval's action
/// does, so its arguments are not repeated.
pub fn question(q: &QuestionBody, displayed: bool) -> String {
    let mut out = String::new();
    if let Some(h) = &q.header {
        let _ = writeln!(out, "{}", dim(&format!("[{h}]")));
    }
    let _ = writeln!(out, "{}", bold(&q.text));
    let recommended = q.recommended.as_deref();
    match q.kind.as_str() {
        "single" | "multi" => {
            for (i, o) in q.options.iter().flatten().enumerate() {
                let mark = if recommended == Some(o.id.as_str()) {
                    " (recommended)"
                } else {
                    ""
                };
                let desc = o
                    .description
                    .as_ref()
                    .map(|d| dim(&format!(" — {d}")))
                    .unwrap_or_default();
                let letter = char::from(b'a' + u8::try_from(i % 26).unwrap_or(0));
                let _ = writeln!(
                    out,
                    "  {}. {letter}) {}{mark}{desc}",
                    i + 1,
                    clarify_render::text::inert(&o.label)
                );
            }
            let several = if q.kind == "multi" {
                "; several like 1,3"
            } else {
                ""
            };
            let other = if q.allow_other == Some(true) {
                ", or type your own answer"
            } else {
                ""
            };
            let _ = writeln!(
                out,
                "{}",
                dim(&format!(
                    "  reply with a number, letter or label{several}{other}"
                ))
            );
        }
        "approval" => {
            let action = q.action.as_ref();
            let _ = writeln!(
                out,
                "  action: {}",
                clarify_render::text::inert(action.map_or("", |a| a.name.as_str()))
            );
            if !displayed {
                let args =
                    serde_json::to_string_pretty(action.map_or(&Value::Null, |a| &a.arguments))
                        .unwrap_or_default();
                for line in args.lines() {
                    let _ = writeln!(out, "    {}", clarify_render::text::inert(line));
                }
            }
            let scopes: Vec<&str> = q.scopes.iter().flatten().map(String::as_str).collect();
            let _ = writeln!(
                out,
                "{}",
                dim(&format!(
                    "  reply approve or deny (scopes: {}; deny may add a reason), or revise followed by what to change",
                    scopes.join(", ")
                ))
            );
        }
        _ => {
            let _ = writeln!(out, "{}", dim("  type your answer"));
        }
    }
    out
}

/// The `show` view.
pub fn detail(record: &RecordBody) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}  {}", bold(&record.id), record.status);
    if record.risk == "high" {
        let _ = writeln!(out, "High risk");
    }
    let _ = writeln!(out, "created {}", record.created_at);
    if let Some(at) = &record.expires_at {
        let _ = writeln!(out, "expires {at}");
    }
    for (value, name) in [
        (&record.session, "session"),
        (&record.agent, "agent"),
        (&record.tool_call_id, "tool call"),
    ] {
        if let Some(s) = value {
            let _ = writeln!(out, "{name} {s}");
        }
    }
    out.push('\n');
    out.push_str(&request(record));
    if let Some(outcome) = &record.outcome {
        let _ = writeln!(
            out,
            "\n{} at {}",
            status_sentence(record),
            record.resolved_at.as_deref().unwrap_or("")
        );
        for (q, line) in outcome.questions.iter().zip(answer_lines(outcome)) {
            let _ = writeln!(out, "  {}: {line}", q.id);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_print_one_line_per_question() {
        let outcome = OutcomeBody {
            questions: [
                json!("yes"),
                json!(["EU", "US"]),
                json!("approve"),
                Value::Null,
            ]
            .into_iter()
            .map(|answer| clarify_client::wire::QuestionOutcomeBody {
                answer,
                ..Default::default()
            })
            .collect(),
            ..Default::default()
        };
        assert_eq!(answer_lines(&outcome), ["yes", "EU, US", "approve", ""]);
    }

    #[test]
    fn a_high_risk_request_is_headed_so_and_a_normal_one_is_not() {
        let record = |risk: &str| RecordBody {
            agent: Some("deployer".to_owned()),
            risk: risk.to_owned(),
            ..Default::default()
        };
        let (high, normal) = (record("high"), record("normal"));
        let head = asked(&high).unwrap_or_default();
        assert!(head.starts_with("High risk · agent deployer"), "{head}");
        let head = asked(&normal).unwrap_or_default();
        assert!(head.starts_with("agent deployer"), "{head}");
        assert!(detail(&high).lines().any(|l| l == "High risk"));
        assert!(!detail(&normal).contains("High risk"));
    }

    #[test]
    fn clocks_read_naturally() {
        assert_eq!(clock(59), "0:59");
        assert_eq!(clock(600), "10:00");
        assert_eq!(clock(3661), "1:01:01");
    }
}
