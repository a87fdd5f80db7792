//! What the person sees, over HTTP: display blocks in the record and on the pages, images served
//! from clarify's own origin, each bad block a 422 naming it, requests for changes, revisions.

use base64::Engine;
use clarify_store::Role;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, code};

/// A 1×1 PNG.
fn png() -> Vec<u8> {
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.extend_from_slice(&[
        0, 0, 0, 13, b'I', b'H', b'D', b'R', 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0,
    ]);
    b
}

fn data_url(media: &str, bytes: &[u8]) -> String {
    format!(
        "data:{media};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// An approval to edit `big.txt` with a 2,000-line diff: past every chat platform's limit, so each
/// channel must cut it and link to the rest.
pub(crate) fn big_edit() -> Value {
    let mut diff = String::from("@@ -1,2000 +1,2000 @@\n");
    for i in 0..2_000 {
        diff.push_str(&format!("-old line {i}\n+new line {i}\n"));
    }
    json!({
        "questions": [{"text": "Allow the agent to run Edit?", "kind": "approval",
                       "action": {"name": "Edit", "arguments": {"file_path": "big.txt"}}}],
        "display": [{"type": "diff", "path": "big.txt", "diff": diff}],
    })
}

fn edit_approval(display: Value) -> Value {
    json!({
        "questions": [{"text": "Allow the agent to run Edit?", "kind": "approval",
                       "action": {"name": "Edit", "arguments": {"file_path": "src/payments.py",
                                  "old_string": "if amount > order.total:", "new_string": "if amount > order.paid:"}}}],
        "display": display,
        "agent": "claude-code",
    })
}

async fn text(
    s: &TestServer,
    path: &str,
    token: Option<&str>,
) -> (StatusCode, String, Option<String>) {
    let mut req = s.client.get(format!("{}{path}", s.url));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let response = req.send().await.expect("sent");
    let status = response.status();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, response.text().await.expect("body"), kind)
}

#[tokio::test]
async fn the_record_carries_the_blocks_and_the_pages_show_them_inert() {
    let s = TestServer::start().await;
    let agent = s.key(Role::Agent, "bot", "default").await;
    let record = s
        .ask(
            &agent,
            edit_approval(json!([
                {"type": "markdown", "title": "Why", "text": "Refunds must not exceed what was **paid**. <script>window.pwned = 1</script> [x](javascript:alert(1))"},
                {"type": "diff", "path": "src/payments.py", "before": "def refund(order, amount):\n    if amount > order.total:\n        raise ValueError\n", "after": "def refund(order, amount):\n    if amount > order.paid:\n        raise ValueError\n"},
                {"type": "fields", "items": [{"label": "Order", "value": "A-17"}, {"label": "Amount", "value": 5000}]},
                {"type": "image", "alt": "the refund chart", "data": data_url("image/png", &png())},
                {"type": "link", "url": "https://example.com/runbook", "title": "Runbook"},
            ])),
        )
        .await;
    let id = record["id"].as_str().expect("id");
    assert_eq!(record["summary"], "Edit src/payments.py (+1 \u{2212}1)");
    let display = record["display"].as_array().expect("display");
    assert_eq!(display.len(), 5);
    assert_eq!(display[1]["type"], "diff");
    assert!(
        display[1]["diff"].as_str().is_some_and(
            |d| d.contains("-    if amount > order.total:\n+    if amount > order.paid:")
        ),
        "{}",
        display[1]
    );
    assert_eq!(
        display[2]["items"][1],
        json!({"label": "Amount", "value": "5000"})
    );
    // An image is not inlined in the record: it is served from here.
    assert_eq!(
        display[3],
        json!({"type": "image", "alt": "the refund chart", "url": format!("/v1/requests/{id}/display/3"),
               "media_type": "image/png", "bytes": png().len()})
    );

    let image = s
        .client
        .get(format!("{}/v1/requests/{id}/display/3", s.url))
        .bearer_auth(&agent)
        .send()
        .await
        .expect("sent");
    assert_eq!(image.status(), StatusCode::OK);
    assert_eq!(image.headers()["content-type"], "image/png");
    assert_eq!(image.headers()["x-content-type-options"], "nosniff");
    assert_eq!(image.bytes().await.expect("bytes").to_vec(), png());
    for n in ["0", "9", "x"] {
        let (status, body) = s
            .get(&format!("/v1/requests/{id}/display/{n}"), &agent)
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "block {n}: {body}");
    }
    // Another tenant sees nothing of it.
    let stranger = s.key(Role::Admin, "stranger", "other").await;
    let (status, _) = s
        .get(&format!("/v1/requests/{id}/display/3"), &stranger)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // The fragment the inbox shows: numbered lines with markers, the agent's HTML as text.
    let (status, html, kind) = text(&s, &format!("/display/{id}"), Some(&agent)).await;
    assert_eq!(status, StatusCode::OK);
    assert!(kind.is_some_and(|k| k.starts_with("text/html")));
    assert!(html.contains("<tr class=\"del\"><td class=\"num\">2</td><td class=\"num\"></td><td class=\"mark\" title=\"removed\">\u{2212}</td><td class=\"text\">    if amount &gt; order.total:</td></tr>"), "{html}");
    assert!(
        html.contains("&lt;script&gt;window.pwned = 1&lt;/script&gt;"),
        "{html}"
    );
    assert!(
        !html.contains("<script") && !html.contains("href=\"javascript"),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "<img src=\"/v1/requests/{id}/display/3\" alt=\"the refund chart\""
        )),
        "{html}"
    );
    assert!(html.contains("<a href=\"https://example.com/runbook\" rel=\"noopener noreferrer nofollow\">Runbook</a>"), "{html}");

    // The answer link shows the same, without a key and without script; images under the link.
    let link = record["answer_url"].as_str().expect("link");
    let token = link.rsplit('/').next().expect("token");
    let (status, page, _) = text(&s, &format!("/a/{token}"), None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(
        page.contains("<h1>Edit src/payments.py (+1 \u{2212}1)</h1>"),
        "{page}"
    );
    assert!(
        page.contains("<td class=\"text\">    if amount &gt; order.paid:</td>"),
        "{page}"
    );
    assert!(
        page.contains(&format!("<img src=\"/a/{token}/display/3\"")),
        "{page}"
    );
    assert!(
        page.contains("value=\"revise\"> Request changes</label>"),
        "{page}"
    );
    assert!(!page.contains("<script>window"), "{page}");
    let image = s
        .client
        .get(format!("{}/a/{token}/display/3", s.url))
        .send()
        .await
        .expect("sent");
    assert_eq!(image.status(), StatusCode::OK);
    assert_eq!(image.headers()["content-type"], "image/png");
}

#[tokio::test]
async fn an_approval_sent_without_blocks_shows_what_its_action_does() {
    let s = TestServer::start().await;
    let record = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Run it?", "kind": "approval",
                   "action": {"name": "Bash", "arguments": {"command": "kubectl -n prod rollout restart deploy/payments", "description": "Restart payments"}}}]}),
        )
        .await;
    assert_eq!(
        record["summary"],
        "Bash: kubectl -n prod rollout restart deploy/payments"
    );
    assert_eq!(
        record["display"],
        json!([
            {"type": "markdown", "text": "Restart payments"},
            {"type": "code", "title": "Command", "language": "bash", "text": "kubectl -n prod rollout restart deploy/payments"},
        ])
    );
}

#[tokio::test]
async fn each_bad_block_is_a_422_naming_it_and_nothing_is_stored() {
    let s = TestServer::start().await;
    let big = "x".repeat(200 * 1024);
    let too_large_image = data_url("image/png", &[png(), vec![0; 1024 * 1024]].concat());
    let cases: Vec<(Value, &str, &str)> = vec![
        (
            json!(vec![json!({"type": "markdown", "text": "x"}); 21]),
            "invalid_display",
            "display: at most 20 blocks are allowed, got 21",
        ),
        (
            json!([{"type": "code", "text": big}, {"type": "markdown", "text": big}]),
            "invalid_display",
            "display: the blocks' text may be at most 256 KiB together",
        ),
        (
            json!([{"type": "markdown", "text": "ok"}, {"type": "diff", "diff": "I changed the refund check."}]),
            "invalid_display",
            "display[1].diff: not a unified diff",
        ),
        (
            json!([{"type": "image", "alt": "x", "data": data_url("image/png", b"GIF89a\x01\x00")}]),
            "invalid_display",
            "display[0].data: the data says image/png but its bytes are image/gif",
        ),
        (
            json!([{"type": "image", "alt": "x", "data": data_url("image/svg+xml", b"<svg onload=alert(1)>")}]),
            "invalid_display",
            "display[0].data: images may be PNG, JPEG, GIF or WebP",
        ),
        (
            json!([{"type": "image", "alt": "x", "data": too_large_image}]),
            "invalid_display",
            "display[0].data: an image may be at most 1 MiB",
        ),
        (
            json!([{"type": "link", "url": "javascript:alert(1)"}]),
            "invalid_display",
            "display[0].url: links may only be http or https",
        ),
        (
            json!([{"type": "video"}]),
            "invalid_display",
            "display[0].type: unknown block type \"video\"",
        ),
        (
            json!([{"type": "markdown", "text": "x", "colour": "red"}]),
            "unknown_field",
            "display[0].colour: unknown field",
        ),
        (
            json!("not a list"),
            "invalid_type",
            "display: expected a list of blocks",
        ),
    ];
    let mut failures = Vec::new();
    for (display, want_code, want_message) in cases {
        let (status, body) = s
            .post("/v1/requests", &s.admin, edit_approval(display.clone()))
            .await;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        if status != StatusCode::UNPROCESSABLE_ENTITY
            || code(&body) != want_code
            || !message.starts_with(want_message)
        {
            failures.push(format!("{want_message}: got {status} {body}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let (_, page) = s.get("/v1/requests", &s.admin).await;
    assert_eq!(page["requests"], json!([]), "nothing half-made was kept");

    let (status, body) = s
        .post(
            "/v1/requests",
            &s.admin,
            json!({"question": "Ship?", "summary": "x".repeat(121)}),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "too_long"),
        "{body}"
    );
}

#[tokio::test]
async fn a_request_for_changes_needs_a_reason_and_its_revision_shows_what_changed() {
    let s = TestServer::start().await;
    let responder = s.key(Role::Responder, "alice", "default").await;
    let first = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Refund?", "kind": "approval",
                   "action": {"name": "refund", "arguments": {"order": "A-17", "amount": 5000}}}]}),
        )
        .await;
    let id = first["id"].as_str().expect("id");
    let answer = format!("/v1/requests/{id}/answer");

    // A revision of a request still pending is refused: it follows a decision.
    let (status, body) = s
        .post(
            "/v1/requests",
            &s.admin,
            json!({"question": "Again?", "revises": id}),
        )
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "invalid_revises"),
        "{body}"
    );

    let (status, body) = s
        .post(&answer, &responder, json!({"decision": "revise"}))
        .await;
    assert_eq!(
        (status, code(&body)),
        (StatusCode::UNPROCESSABLE_ENTITY, "reason_required"),
        "{body}"
    );
    assert_eq!(body["error"]["field"], "answers.q1.reason");
    let (status, outcome) = s
        .post(
            &answer,
            &responder,
            json!({"decision": "revise", "reason": "refund 500, the rest is store credit"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{outcome}");
    assert_eq!(outcome["questions"][0]["decision"], "revise");
    assert_eq!(
        outcome["questions"][0]["reason"],
        "refund 500, the rest is store credit"
    );
    assert_eq!(
        outcome["questions"][0]["choices_offered"],
        json!(["approve", "deny", "revise"])
    );

    let second = s
        .ask(
            &s.admin,
            json!({"questions": [{"text": "Refund?", "kind": "approval",
                   "action": {"name": "refund", "arguments": {"order": "A-17", "amount": 500}}}],
                   "revises": id}),
        )
        .await;
    assert_eq!(second["revises"], id);
    let (status, html, _) = text(
        &s,
        &format!("/display/{}", second["id"].as_str().expect("id")),
        Some(&responder),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert!(html.contains("This revises an earlier request"), "{html}");
    assert!(
        html.contains("Changes requested by alice: refund 500, the rest is store credit"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"text\">  &quot;amount&quot;: 5000</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td class=\"text\">  &quot;amount&quot;: 500</td>"),
        "{html}"
    );

    // Unknown ids, and another tenant's, are no request to revise.
    let stranger = s.key(Role::Admin, "stranger", "other").await;
    for (token, revises) in [(&s.admin, "nope"), (&stranger, id)] {
        let (status, body) = s
            .post(
                "/v1/requests",
                token,
                json!({"question": "Again?", "revises": revises}),
            )
            .await;
        assert_eq!(
            (status, code(&body)),
            (StatusCode::UNPROCESSABLE_ENTITY, "invalid_revises"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn the_link_page_form_requests_changes() {
    let s = TestServer::start().await;
    let record = s.ask(&s.admin, edit_approval(Value::Null)).await;
    let link = record["answer_url"].as_str().expect("link").to_owned();
    let post = |form: &'static str| {
        s.client
            .post(&link)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
    };
    let refused = post("q1.decision=revise&q1.reason=").await.expect("sent");
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let page = refused.text().await.expect("page");
    assert!(page.contains("requesting changes needs a reason"), "{page}");
    let done = post("q1.decision=revise&q1.reason=edit+only+the+refund+check")
        .await
        .expect("sent");
    assert!(
        done.status().is_success() || done.status().is_redirection(),
        "{}",
        done.status()
    );
    let id = record["id"].as_str().expect("id");
    let (_, now) = s.get(&format!("/v1/requests/{id}"), &s.admin).await;
    assert_eq!(
        now["outcome"]["questions"][0]["decision"], "revise",
        "{now}"
    );
}
