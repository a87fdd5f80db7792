//! Display blocks on every platform, from the same fixtures: a diff arrives as a preformatted
//! block within the platform's limits (cut with a link to the rest when it does not fit), and
//! nothing the agent wrote becomes markup or a mass mention anywhere.

use std::sync::Arc;

use clarify_model::{EventKind, RequestRecord};
use serde_json::{Value, json};

use crate::notice::Notice;

const EVIL: &str =
    "<!channel> @everyone @here <script>alert(1)</script> <b>bold</b> [x](javascript:alert(1)) ```";

fn record(display: Value) -> RequestRecord {
    let raw = json!({
        "summary": "Edit src/payments.py (+2 \u{2212}1)",
        "questions": [{"text": "Allow the agent to run Edit?", "kind": "approval",
                       "action": {"name": "Edit", "arguments": {"file_path": "src/payments.py"}}}],
        "display": display,
    });
    pending(&raw)
}

/// A pending record of the request `raw`, as the channel worker hands one to a platform.
pub(crate) fn pending(raw: &Value) -> RequestRecord {
    let request = match clarify_core::parse_request(raw, &clarify_core::Limits::default()) {
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
        on_call: Vec::new(),
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

/// A small change, shown whole.
fn small() -> RequestRecord {
    record(json!([
        {"type": "markdown", "title": "Why", "text": EVIL},
        {"type": "diff", "path": "src/payments.py", "diff": "@@ -3,2 +3,3 @@\n def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:\n+        log.warning(\"<@U123> paid\")\n"},
    ]))
}

/// A 2,000-line change: past every chat platform's limit.
fn large() -> RequestRecord {
    let mut diff = String::from("@@ -1,2000 +1,2000 @@\n");
    for i in 0..2_000 {
        diff.push_str(&format!("-old line {i}\n+new line {i}\n"));
    }
    record(json!([{"type": "diff", "path": "big.txt", "diff": diff}]))
}

fn slack_texts(r: &RequestRecord) -> Vec<String> {
    let (_, blocks) = crate::slack::render::message(&notice(r), &[]);
    blocks
        .iter()
        .filter(|b| b["type"] == "section")
        .filter_map(|b| b["text"]["text"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn slack_shows_the_diff_preformatted_and_the_agents_text_inert() {
    let texts = slack_texts(&small());
    let all = texts.join("\n");
    assert!(
        all.contains("*Why*\n&lt;!channel&gt; @everyone @here &lt;script&gt;"),
        "{all}"
    );
    assert!(
        !all.contains("<!channel>") && !all.contains("<@U123>") && !all.contains("<javascript"),
        "{all}"
    );
    assert!(all.contains("```\nsrc/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n def refund(order, amount):\n-    if amount &gt; order.total:\n+    if amount &gt; order.paid:\n"), "{all}");
    assert!(
        all.contains("*Action:* `Edit`"),
        "the action is named: {all}"
    );
    assert!(
        !all.contains("file_path"),
        "no raw JSON beside the display: {all}"
    );

    for text in slack_texts(&large()) {
        assert!(
            text.chars().count() <= crate::slack::render::MAX_SECTION,
            "{} chars",
            text.chars().count()
        );
    }
    let cut = slack_texts(&large()).join("\n");
    assert!(cut.contains("+new line 0\n"), "{cut}");
    assert!(
        cut.contains("\n```\n<https://clarify.example/a/t|The rest is on the answer page>"),
        "closed, then the link: {cut}"
    );
}

#[test]
fn discord_shows_a_diff_block_and_mentions_nobody() {
    let message = crate::discord::message(&small(), "https://clarify.example/a/t", &[]);
    let content = message["content"].as_str().unwrap_or_default();
    assert!(
        content.contains("```diff\nsrc/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n"),
        "{content}"
    );
    assert!(
        content.contains("\\@everyone") && content.contains("\\<script\\>"),
        "{content}"
    );
    assert_eq!(message["allowed_mentions"]["parse"], json!([]));

    let message = crate::discord::message(&large(), "https://clarify.example/a/t", &[]);
    let content = message["content"].as_str().unwrap_or_default();
    assert!(
        content.chars().count() <= crate::discord::MAX_CONTENT,
        "{}",
        content.chars().count()
    );
    assert!(content.contains("+new line 0\n"), "{content}");
    assert!(
        content.contains("\n```\n[The rest is on the answer page](<https://clarify.example/a/t>)"),
        "{content}"
    );
}

#[test]
fn telegram_shows_a_highlighted_diff_and_no_html_of_the_agents() {
    let r = small();
    let text = crate::telegram::message_text(&notice(&r), &[]);
    assert!(
        text.contains(
            "<pre><code class=\"language-diff\">src/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("&lt;script&gt;") && !text.contains("<script") && !text.contains("<b>bold"),
        "{text}"
    );

    let r = large();
    let text = crate::telegram::message_text(&notice(&r), &[]);
    assert!(
        clarify_render::Markup::len(&crate::telegram::Html, &text) <= crate::telegram::MAX_TEXT
    );
    assert!(text.contains("+new line 0\n"), "{text}");
    assert!(text.contains("</code></pre>\n<a href=\"https://clarify.example/a/t\">The rest is on the answer page</a>"), "{text}");
}

#[test]
fn email_carries_the_diff_as_a_table_and_as_text() {
    let r = small();
    let (text, html) = crate::email::bodies(&notice(&r));
    assert!(text.contains("src/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:"), "{text}");
    assert!(html.contains("<td class=\"mark\" title=\"removed\">\u{2212}</td><td class=\"text\">    if amount &gt; order.total:</td>"), "{html}");
    assert!(
        !html.contains("<script")
            && !html.contains("<b>bold")
            && !html.contains("href=\"javascript"),
        "{html}"
    );
    assert!(
        text.contains(
            "Request changes, or open the request in clarify: https://clarify.example/a/t"
        ),
        "{text}"
    );
}

#[test]
fn ntfy_titles_the_push_with_the_summary() {
    let r = large();
    let ntfy = crate::ntfy::Ntfy {
        url: "https://ntfy.example".parse().expect("url"),
        topic: "t".to_owned(),
        token: None,
    };
    let message = ntfy.message(&notice(&r));
    assert_eq!(message["title"], "Edit src/payments.py (+2 \u{2212}1)");
    let body = message["message"].as_str().unwrap_or_default();
    assert!(body.contains("+new line 0"), "{body}");
    assert!(
        body.contains("(The rest is on the answer page: https://clarify.example/a/t)"),
        "{body}"
    );
}

#[test]
fn mattermost_shows_a_diff_block_and_mentions_nobody() {
    let text = crate::mattermost::text(&small(), "https://clarify.example/a/t", &[]);
    assert!(
        text.contains("```diff\nsrc/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n"),
        "{text}"
    );
    assert!(
        !text.contains("@everyone") && !text.contains("@here") && text.contains("\\<script\\>"),
        "{text}"
    );
    let text = crate::mattermost::text(&large(), "https://clarify.example/a/t", &[]);
    assert!(text.chars().count() <= crate::mattermost::MAX_MESSAGE);
    assert!(text.contains("+new line 0\n"), "{text}");
    assert!(
        text.contains("\n```\n[The rest is on the answer page](https://clarify.example/a/t)"),
        "{text}"
    );
}

/// The text of every `TextRun` on a Teams card, and whether it is monospace.
fn runs(card: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut stack = vec![card.clone()];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                if map.get("type").and_then(Value::as_str) == Some("TextRun") {
                    let text = map.get("text").and_then(Value::as_str).unwrap_or_default();
                    let mono = map.get("fontType").and_then(Value::as_str) == Some("monospace");
                    out.push((text.to_owned(), mono));
                }
                stack.extend(map.into_iter().map(|(_, v)| v));
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    out
}

#[test]
fn teams_shows_the_diff_monospace_and_no_markdown_of_the_agents() {
    let card = crate::teams::card(&small(), "https://clarify.example/a/t");
    let text = card.to_string();
    assert!(
        !text.contains("\"TextBlock\""),
        "agent text only in TextRuns: {text}"
    );
    let runs = runs(&card);
    assert!(
        runs.iter().any(|(t, mono)| *mono
            && t.contains("src/payments.py  +2 \u{2212}1\n@@ -3,2 +3,3 @@\n")
            && t.contains(EVIL.split(' ').next().unwrap_or_default())),
        "{runs:?}"
    );
    let card = crate::teams::card(&large(), "https://clarify.example/a/t");
    assert!(
        card.to_string().len() < 28_000,
        "{}",
        card.to_string().len()
    );
    assert!(
        runs_contain(
            &card,
            "The rest is on the answer page: https://clarify.example/a/t"
        ),
        "cut with the link"
    );
}

fn runs_contain(card: &Value, needle: &str) -> bool {
    runs(card).iter().any(|(t, _)| t.contains(needle))
}

#[test]
fn google_chat_escapes_the_agents_html_and_fits_the_message() {
    let message = crate::google_chat::message(&small(), "https://clarify.example/a/t");
    let text = message.to_string();
    assert!(
        text.contains("&lt;script&gt;") && !text.contains("<script") && !text.contains("<b>bold"),
        "{text}"
    );
    assert!(
        text.contains("src/payments.py  +2 \u{2212}1<br>@@ -3,2 +3,3 @@<br>"),
        "{text}"
    );
    let message = crate::google_chat::message(&large(), "https://clarify.example/a/t");
    assert!(
        message.to_string().len() <= 32_000,
        "{}",
        message.to_string().len()
    );
    assert!(
        message
            .to_string()
            .contains("The rest is on the answer page: https://clarify.example/a/t")
    );
}

#[test]
fn an_on_call_footer_names_who_was_found_and_a_schedule_that_could_not_be_read() {
    let mut r = pending(&json!({
        "question": "Roll back payments?", "choices": ["yes", "no"],
        "responders": ["oncall:pagerduty:PSCHED1", "oncall:opsgenie:payments", "carol"],
    }));
    let shift =
        |responder: &str, people: &[&str], unreadable: Option<&str>| clarify_model::OnCallShift {
            responder: responder.to_owned(),
            people: people.iter().map(|p| (*p).to_owned()).collect(),
            unreadable: unreadable.map(str::to_owned),
            read_at: chrono::Utc::now(),
        };
    let why = "on-call Opsgenie schedule payments could not be read: Opsgenie answered 503 \
               Service Unavailable";
    r.on_call = vec![
        shift("oncall:pagerduty:PSCHED1", &["alice"], None),
        shift("oncall:opsgenie:payments", &[], Some(why)),
    ];
    // Every text of the Slack message, its footer's context included.
    fn strings(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(s.clone()),
            Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
            Value::Object(o) => o.values().for_each(|v| strings(v, out)),
            _ => {}
        }
    }
    let slack_all = |r: &RequestRecord| {
        let (_, blocks) = crate::slack::render::message(&notice(r), &[]);
        let mut out = Vec::new();
        strings(&json!(blocks), &mut out);
        out.join("\n")
    };
    let text = slack_all(&r);
    assert!(
        text.contains("for oncall:pagerduty:PSCHED1 (alice), oncall:opsgenie:payments, carol"),
        "{text}"
    );
    assert!(
        text.contains(&format!("{why}; notified the other responders")),
        "{text}"
    );
    // Read again at the escalation, the schedule no longer shows as unreadable.
    r.on_call
        .push(shift("oncall:opsgenie:payments", &["dave"], None));
    let text = slack_all(&r);
    assert!(!text.contains("could not be read"), "{text}");
    assert!(text.contains("oncall:opsgenie:payments (dave)"), "{text}");
}
