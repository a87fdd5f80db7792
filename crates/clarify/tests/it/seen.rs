//! What the person deciding sees, end to end: Claude Code's `Edit` of a file, raised through
//! `clarify hook claude-code` against a real `clarify serve`, opened in the inbox in Chromium at
//! desktop and phone width, where the change reads as removed and added lines with their markers
//! and numbers (not JSON), and approved there; and `clarify show` in a pipe.

use std::path::{Path, PathBuf};

use clarify_testkit::browser::Browser;
use serde_json::json;

use crate::hooks::{finished, hook, pending, server};
use crate::support::{BIN, temp_dir, unique};

const PAYMENTS: &str = "import log\n\n\ndef refund(order, amount):\n    \"\"\"Refund part of a paid order.\"\"\"\n    if amount > order.total:\n        raise ValueError(\"refund above the order total\")\n    order.refund(amount)\n    log.info(\"refunded %s on %s\", amount, order.id)\n";

/// A project with `src/payments.py`, and Claude Code's `Edit` event changing it.
fn edit_event(session: &str) -> (PathBuf, serde_json::Value) {
    let dir = temp_dir("seen");
    std::fs::create_dir_all(dir.join("src")).expect("src");
    std::fs::write(dir.join("src/payments.py"), PAYMENTS).expect("file written");
    let transcript = dir.join("transcript.jsonl");
    std::fs::write(
        &transcript,
        json!({"type": "assistant", "message": {"role": "assistant", "content": [{"type": "text",
            "text": "Refunds must not exceed what the customer **paid**: `order.total` includes unpaid instalments."}]}})
        .to_string(),
    )
    .expect("transcript written");
    let event = json!({
        "session_id": session,
        "cwd": dir.display().to_string(),
        "transcript_path": transcript.display().to_string(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Edit",
        "tool_input": {
            "file_path": dir.join("src/payments.py").display().to_string(),
            "old_string": "    if amount > order.total:\n        raise ValueError(\"refund above the order total\")\n",
            "new_string": "    if amount > order.paid:\n        raise ValueError(\"refund above the amount paid\")\n",
        },
        "tool_use_id": format!("toolu_{}", unique()),
    });
    (dir, event)
}

/// The diff rows the page shows, as `marker|old|new|text`.
const ROWS: &str = "return [...document.querySelectorAll('.diff-lines tr.add, .diff-lines tr.del')].map((tr) => \
     [...tr.querySelectorAll('td')].map((td) => td.textContent).join('|'))";

#[tokio::test]
async fn an_edit_raised_by_the_hook_reads_as_lines_in_the_inbox_at_desktop_and_phone_width() {
    let (server, api) = server().await;
    let login = server.printed(|w| w.contains("/login/")).await;
    let session = format!("s-{}", unique());
    // Other work waiting beside it, as an inbox usually has.
    for body in [
        json!({"question": "Which database should the billing service use?",
               "choices": ["PostgreSQL", "SQLite"], "agent": "architect", "session": "billing"}),
        json!({"question": "Send the quarterly report to the board?", "kind": "approval",
               "action": {"name": "send_email", "arguments": {"to": "board@example.com", "subject": "Q3 report"}},
               "agent": "assistant", "session": "reports"}),
    ] {
        let (status, reply) = api.post("/v1/requests", body).await;
        assert_eq!(status, 201, "{reply}");
    }
    let (_dir, event) = edit_event(&session);
    let running = hook("claude-code", &server.url, &api.key, &[], &event);
    let record = pending(&api, &session).await;
    let id = record["id"].as_str().expect("id").to_owned();
    assert_eq!(record["summary"], "Edit src/payments.py (+2 \u{2212}2)");

    let want_rows = json!([
        "\u{2212}|6||    if amount > order.total:",
        "\u{2212}|7||        raise ValueError(\"refund above the order total\")",
        "+||6|    if amount > order.paid:",
        "+||7|        raise ValueError(\"refund above the amount paid\")",
    ]);
    // The rows' cells in order: old number, new number, marker, text.
    let reorder = |rows: serde_json::Value| -> serde_json::Value {
        rows.as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r.as_str())
            .map(|r| {
                let cells: Vec<&str> = r.split('|').collect();
                json!(format!(
                    "{}|{}|{}|{}",
                    cells[2],
                    cells[0],
                    cells[1],
                    cells[3..].join("|")
                ))
            })
            .collect()
    };

    for phone in [false, true] {
        let launched = if phone {
            Browser::launch_phone(390, 844).await
        } else {
            Browser::launch(1280, 900).await
        };
        let Some(b) = launched else {
            running.abort();
            return;
        };
        let name = if phone { "edit_phone" } else { "edit_desktop" };
        b.run(name, async {
            if phone {
                // The login link works once; the phone signs in with the admin key instead.
                b.goto(&server.url).await;
                b.type_into("//input[@type = 'password']", &api.key).await;
                b.click("//button[@type = 'submit']").await;
            } else {
                b.goto(&login).await;
            }
            b.until(
                "the inbox, live",
                "return document.getElementById('live').dataset.state === 'live'",
                vec![],
            )
            .await;
            b.goto(&format!("{}/#/requests/{id}", server.url)).await;
            b.wait_for("//h3[@class = 'block-title'][. = 'Why']").await;
            b.wait_for("//table[@class = 'diff-lines']//tr[@class = 'del']")
                .await;
            assert_eq!(reorder(b.js(ROWS, vec![]).await), want_rows);
            b.wait_for("//span[@class = 'diff-path'][. = 'src/payments.py']")
                .await;
            // Nothing of the arguments' JSON is in view: they are folded under "Arguments as sent".
            let shown = b
                .js(
                    "return document.querySelector('.request').innerText",
                    vec![],
                )
                .await;
            assert!(
                !shown.as_str().unwrap_or_default().contains("old_string"),
                "{shown}"
            );
            // A long line scrolls inside its block; the page itself does not scroll sideways.
            let sideways = b
                .js(
                    "return document.documentElement.scrollWidth > window.innerWidth + 1",
                    vec![],
                )
                .await;
            assert_eq!(sideways, json!(false), "the page scrolls sideways");
            let png = b.client.screenshot().await.expect("screenshot");
            keep_screenshot(name, &png);
            if phone {
                b.click("//button[contains(@class, 'approve')]").await;
                b.click("//button[@type = 'submit'][. = 'Send answer']")
                    .await;
                b.wait_for("//strong[. = 'Answer sent.']").await;
            }
        })
        .await;
    }
    let out = finished(running).await.json();
    assert_eq!(
        out["hookSpecificOutput"]["permissionDecision"], "allow",
        "{out}"
    );
}

/// Keeps a screenshot beside the build; with `CLARIFY_SCREENSHOTS=1` (`./scripts/screenshot`),
/// also as the README's and the handbook's pictures.
fn keep_screenshot(name: &str, png: &[u8]) {
    let dir = std::env::temp_dir().join("clarify-screenshots");
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = std::fs::write(dir.join(format!("{name}.png")), png);
    }
    if std::env::var("CLARIFY_SCREENSHOTS").as_deref() == Ok("1") {
        let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs");
        let targets = match name {
            "edit_desktop" => vec![docs.join("inbox.png"), docs.join("src/images/inbox.png")],
            _ => vec![docs.join("src/images/inbox-phone.png")],
        };
        for target in targets {
            std::fs::write(&target, png).expect("screenshot written");
            eprintln!("wrote {}", target.display());
        }
    }
}

#[tokio::test]
async fn clarify_show_prints_a_diff_with_markers_in_a_pipe() {
    let (server, api) = server().await;
    let session = format!("s-{}", unique());
    let (_dir, event) = edit_event(&session);
    let running = hook("claude-code", &server.url, &api.key, &[], &event);
    let record = pending(&api, &session).await;
    let id = record["id"].as_str().expect("id");
    let out = std::process::Command::new(BIN)
        .args(["show", id])
        .env("CLARIFY_URL", &server.url)
        .env("CLARIFY_TOKEN", &api.key)
        .output()
        .expect("clarify show runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(!text.contains('\x1b'), "no colour in a pipe: {text:?}");
    assert!(text.contains("Why\nRefunds must not exceed what the customer paid: order.total includes unpaid instalments."), "{text}");
    assert!(
        text.contains("src/payments.py  +2 \u{2212}2\n@@ -3,7 +3,7 @@\n \n def refund(order, amount):\n     \"\"\"Refund part of a paid order.\"\"\"\n-    if amount > order.total:\n-        raise ValueError(\"refund above the order total\")\n+    if amount > order.paid:\n+        raise ValueError(\"refund above the amount paid\")\n"),
        "{text}"
    );
    assert!(text.contains("  action: Edit\n"), "{text}");
    assert!(
        !text.contains("old_string"),
        "the arguments are not repeated: {text}"
    );
    let (_, listed) = (
        (),
        String::from_utf8_lossy(
            &std::process::Command::new(BIN)
                .args(["list"])
                .env("CLARIFY_URL", &server.url)
                .env("CLARIFY_TOKEN", &api.key)
                .output()
                .expect("clarify list runs")
                .stdout,
        )
        .into_owned(),
    );
    assert!(
        listed.contains("Edit src/payments.py (+2 \u{2212}2)"),
        "{listed}"
    );
    running.abort();
}
