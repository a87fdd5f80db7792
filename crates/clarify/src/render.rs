//! How requests and outcomes look in a terminal.
//!
//! Styling (bold questions, dim hints) is used only when stdout is a terminal and `NO_COLOR` is
//! not set (or empty; `logs::colour_on`); piped output is plain text.

use std::fmt::Write as _;

use clarify_client::Record;
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
pub fn answer_lines(outcome: &Value) -> Vec<String> {
    outcome["questions"]
        .as_array()
        .map(|qs| qs.iter().map(|q| answer_text(&q["answer"])).collect())
        .unwrap_or_default()
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
pub fn asked(record: &Record) -> Option<String> {
    let v = &record.0;
    let mut parts = Vec::new();
    if v["risk"] == "high" {
        parts.push("High risk".to_owned());
    }
    if let Some(a) = v["agent"].as_str() {
        parts.push(format!("agent {a}"));
    }
    if let Some(s) = v["session"].as_str() {
        parts.push(format!("session {s}"));
    }
    let left = v["expires_at"]
        .as_str()
        .and_then(|at| chrono::DateTime::parse_from_rfc3339(at).ok())
        .map(|at| (at.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_seconds());
    match left {
        Some(s) if s > 0 => parts.push(format!("{} left", clock(s))),
        Some(_) => parts.push("expiring".to_owned()),
        None => parts.push("never expires".to_owned()),
    }
    Some(parts.join(" · "))
}

/// "skipped by alice", "expired: nobody answered in time", ...
pub fn status_sentence(record: &Record) -> String {
    let by = record
        .answered_by()
        .map(|n| format!(" by {n}"))
        .unwrap_or_default();
    match record.status() {
        "answered" => format!("answered{by}"),
        "skipped" => format!("the question was skipped{by}"),
        "expired" => "nobody answered in time; the request expired".to_owned(),
        "cancelled" => format!("the request was cancelled{by}"),
        other => other.to_owned(),
    }
}

/// What is asked, on one line, at most `max` characters: the request's summary (or, from an
/// older server without one, its first question).
fn summary(record: &Record, max: usize) -> String {
    let q = &record.0["questions"][0];
    let text = match record.summary() {
        "" => {
            q["header"]
                .as_str()
                .map(|h| format!("[{h}] "))
                .unwrap_or_default()
                + q["text"].as_str().unwrap_or("")
        }
        summary => summary.to_owned(),
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
pub fn table(records: &[Record]) -> String {
    let mut out = format!(
        "{:<26}  {:<9}  {:<20}  QUESTION\n",
        "ID", "STATUS", "CREATED"
    );
    for r in records {
        let created = r.0["created_at"].as_str().unwrap_or("");
        let created = created.get(..19).unwrap_or(created).replace('T', " ");
        let _ = writeln!(
            out,
            "{:<26}  {:<9}  {:<20}  {}",
            r.id(),
            r.status(),
            created,
            summary(r, 60)
        );
    }
    out
}

/// The display blocks: diffs with `+` and `-` (green and red on a terminal), code indented,
/// facts as `label: value`; plain in a pipe. Control characters the agent wrote are never
/// passed to the terminal.
pub fn display(record: &Record) -> Option<String> {
    let blocks = record.display();
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
pub fn request(record: &Record) -> String {
    let mut out = String::new();
    let v = &record.0;
    match &v["context"] {
        Value::String(s) => {
            let _ = writeln!(out, "{}\n", dim(s));
        }
        Value::Object(_) => {
            let pretty = serde_json::to_string_pretty(&v["context"]).unwrap_or_default();
            let _ = writeln!(out, "{}\n", dim(&pretty));
        }
        _ => {}
    }
    if let Some(shown) = display(record) {
        let _ = writeln!(out, "{shown}\n");
    }
    if let Some(line) = quorum(v) {
        let _ = writeln!(out, "{line}\n");
    }
    let displayed = v["display"].as_array().is_some_and(|d| !d.is_empty());
    for q in v["questions"].as_array().into_iter().flatten() {
        out.push_str(&question(q, displayed));
    }
    out
}

/// "1 of 2 approvals (by alice)" for a quorum request's record; `None` for any other.
pub fn quorum(record: &Value) -> Option<String> {
    let required = record["approvals_required"].as_u64().filter(|n| *n > 1)?;
    let approvers: Vec<&str> = record["votes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["decision"] == "approve")
        .filter_map(|v| v["by"].as_str())
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
pub fn question(q: &Value, displayed: bool) -> String {
    let mut out = String::new();
    if let Some(h) = q["header"].as_str() {
        let _ = writeln!(out, "{}", dim(&format!("[{h}]")));
    }
    let _ = writeln!(out, "{}", bold(q["text"].as_str().unwrap_or("")));
    let recommended = q["recommended"].as_str();
    match q["kind"].as_str() {
        Some("single" | "multi") => {
            for (i, o) in q["options"].as_array().into_iter().flatten().enumerate() {
                let mark = if o["id"].as_str() == recommended && recommended.is_some() {
                    " (recommended)"
                } else {
                    ""
                };
                let desc = o["description"]
                    .as_str()
                    .map(|d| dim(&format!(" — {d}")))
                    .unwrap_or_default();
                let letter = char::from(b'a' + u8::try_from(i % 26).unwrap_or(0));
                let _ = writeln!(
                    out,
                    "  {}. {letter}) {}{mark}{desc}",
                    i + 1,
                    clarify_render::text::inert(o["label"].as_str().unwrap_or(""))
                );
            }
            let several = if q["kind"] == "multi" {
                "; several like 1,3"
            } else {
                ""
            };
            let other = if q["allow_other"] == Value::Bool(true) {
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
        Some("approval") => {
            let action = &q["action"];
            let _ = writeln!(
                out,
                "  action: {}",
                clarify_render::text::inert(action["name"].as_str().unwrap_or(""))
            );
            if !displayed {
                let args = serde_json::to_string_pretty(&action["arguments"]).unwrap_or_default();
                for line in args.lines() {
                    let _ = writeln!(out, "    {}", clarify_render::text::inert(line));
                }
            }
            let scopes: Vec<&str> = q["scopes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
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
pub fn detail(record: &Record) -> String {
    let v = &record.0;
    let mut out = String::new();
    let _ = writeln!(out, "{}  {}", bold(record.id()), record.status());
    if v["risk"] == "high" {
        let _ = writeln!(out, "High risk");
    }
    let _ = writeln!(out, "created {}", v["created_at"].as_str().unwrap_or(""));
    if let Some(at) = v["expires_at"].as_str() {
        let _ = writeln!(out, "expires {at}");
    }
    for (field, name) in [
        ("session", "session"),
        ("agent", "agent"),
        ("tool_call_id", "tool call"),
    ] {
        if let Some(s) = v[field].as_str() {
            let _ = writeln!(out, "{name} {s}");
        }
    }
    out.push('\n');
    out.push_str(&request(record));
    if let Some(outcome) = record.outcome() {
        let _ = writeln!(
            out,
            "\n{} at {}",
            status_sentence(record),
            v["resolved_at"].as_str().unwrap_or("")
        );
        for (q, line) in outcome["questions"]
            .as_array()
            .into_iter()
            .flatten()
            .zip(answer_lines(outcome))
        {
            let _ = writeln!(out, "  {}: {line}", q["id"].as_str().unwrap_or(""));
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
        let outcome = json!({"questions": [
            {"answer": "yes"}, {"answer": ["EU", "US"]}, {"answer": "approve"}, {"answer": null}
        ]});
        assert_eq!(answer_lines(&outcome), ["yes", "EU, US", "approve", ""]);
    }

    #[test]
    fn a_high_risk_request_is_headed_so_and_a_normal_one_is_not() {
        let high = Record(json!({"agent": "deployer", "risk": "high"}));
        let normal = Record(json!({"agent": "deployer", "risk": "normal"}));
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
