//! Display blocks: what is accepted (in its canonical form) and every refusal naming the block
//! and the problem; diffs read into numbered lines; and the display and summary derived from each
//! tool a coding agent asks about.

use base64::Engine;
use clarify_core::display::{
    self, Block, Content, DiffView, FileState, LineKind, ToolCall, derive, parse_diff,
};
use clarify_core::{Limits, NewRequest, parse_request};
use serde_json::{Value, json};

fn request_with(display: Value) -> Result<NewRequest, clarify_core::ValidationError> {
    parse_request(
        &json!({"question": "Ship it?", "display": display}),
        &Limits::default(),
    )
}

/// A case: its name, a `display` value, and either its canonical form or the error's code and
/// message.
type Case<'a> = (&'a str, Value, Result<Value, (&'a str, &'a str)>);

fn check(cases: Vec<Case<'_>>) {
    let mut failures = Vec::new();
    for (name, display, want) in cases {
        match (request_with(display.clone()), want) {
            (Ok(request), Ok(want)) => {
                let got = serde_json::to_value(&request.display).expect("serializes");
                if got != want {
                    failures.push(format!("{name}:\n  want {want}\n  got  {got}"));
                }
                // The canonical form is accepted again as the same blocks.
                let again = request_with(got.clone()).map(|r| r.display);
                if again.as_ref() != Ok(&request.display) {
                    failures.push(format!("{name}: canonical form reads back as {again:?}"));
                }
            }
            (Err(e), Err((code, message))) => {
                if e.code() != code || e.to_string() != message {
                    failures.push(format!(
                        "{name}:\n  want {code}: {message}\n  got  {}: {e}",
                        e.code()
                    ));
                }
            }
            (got, want) => failures.push(format!("{name}:\n  want {want:?}\n  got  {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

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

const DIFF: &str = "--- a/src/payments.py\n+++ b/src/payments.py\n@@ -1,3 +1,4 @@\n def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:\n+        log.warning(\"refund above paid\")\n         raise ValueError\n";

#[test]
fn blocks_are_accepted_in_their_canonical_form() {
    check(vec![
        (
            "markdown keeps its text without trailing space",
            json!([{"type": "markdown", "text": "\n**Refund** of *5,000 EUR*  \n\n", "title": " Why \n now "}]),
            Ok(
                json!([{"type": "markdown", "title": "Why now", "text": "**Refund** of *5,000 EUR*"}]),
            ),
        ),
        (
            "a unified diff is kept as written",
            json!([{"type": "diff", "path": "src/payments.py", "diff": DIFF}]),
            Ok(json!([{"type": "diff", "path": "src/payments.py", "diff": DIFF}])),
        ),
        (
            "bare hunks are a diff",
            json!([{"type": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n"}]),
            Ok(json!([{"type": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n"}])),
        ),
        (
            "before and after become the unified diff, 3 lines of context",
            json!([{"type": "diff", "path": "a.txt", "before": "1\n2\n3\n4\n5\n6\n7\n8\n", "after": "1\n2\n3\n4\nfive\n6\n7\n8\n"}]),
            Ok(
                json!([{"type": "diff", "path": "a.txt", "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"}]),
            ),
        ),
        (
            "a created file, before absent",
            json!([{"type": "diff", "path": "new.txt", "after": "hello\n"}]),
            Ok(
                json!([{"type": "diff", "path": "new.txt", "diff": "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"}]),
            ),
        ),
        (
            "code keeps indentation; its language is a lower-case name",
            json!([{"type": "code", "language": "Rust", "text": "    let x = 1;\n"}]),
            Ok(json!([{"type": "code", "language": "rust", "text": "    let x = 1;"}])),
        ),
        (
            "facts: numbers and structures become text",
            json!([{"type": "fields", "items": [{"label": "Amount", "value": 5000}, {"label": "Recipients", "value": ["a@x.com", "b@y.com"]}, {"label": "Note", "value": " urgent "}]}]),
            Ok(
                json!([{"type": "fields", "items": [{"label": "Amount", "value": "5000"}, {"label": "Recipients", "value": "[\"a@x.com\",\"b@y.com\"]"}, {"label": "Note", "value": "urgent"}]}]),
            ),
        ),
        (
            "an image checked by its bytes, written back canonically",
            json!([{"type": "image", "alt": "the chart", "data": format!("data:IMAGE/PNG;base64,{}", base64::engine::general_purpose::STANDARD_NO_PAD.encode(png()))}]),
            Ok(
                json!([{"type": "image", "alt": "the chart", "data": data_url("image/png", &png())}]),
            ),
        ),
        (
            "a link; the title is its text",
            json!([{"type": "link", "url": "https://example.com/runbook#rollback", "title": "Runbook"}]),
            Ok(
                json!([{"type": "link", "title": "Runbook", "url": "https://example.com/runbook#rollback"}]),
            ),
        ),
        ("null is no blocks", json!(null), Ok(json!([]))),
    ]);
}

#[test]
fn bad_blocks_are_refused_naming_the_block_and_the_problem() {
    let big = "x".repeat(200 * 1024);
    let too_large_image = data_url("image/png", &[png(), vec![0; 1024 * 1024]].concat());
    check(vec![
        (
            "not a list",
            json!({"type": "markdown"}),
            Err((
                "invalid_type",
                "display: expected a list of blocks, got an object",
            )),
        ),
        (
            "too many blocks",
            json!(vec![json!({"type": "markdown", "text": "x"}); 21]),
            Err((
                "invalid_display",
                "display: at most 20 blocks are allowed, got 21",
            )),
        ),
        (
            "too large together",
            json!([{"type": "code", "text": big}, {"type": "markdown", "text": big}]),
            Err((
                "invalid_display",
                "display: the blocks' text may be at most 256 KiB together, got 400 KiB",
            )),
        ),
        (
            "an unknown type",
            json!([{"type": "video", "url": "x"}]),
            Err((
                "invalid_display",
                "display[0].type: unknown block type \"video\"; use markdown, diff, code, fields, image or link",
            )),
        ),
        (
            "a misspelt key",
            json!([{"type": "markdown", "txt": "x", "text": "y"}]),
            Err((
                "unknown_field",
                "display[0].txt: unknown field; did you mean text?",
            )),
        ),
        (
            "no type",
            json!([{"text": "x"}]),
            Err(("missing_field", "display[0].type: is required")),
        ),
        (
            "empty markdown",
            json!([{"type": "markdown", "text": "  "}]),
            Err(("empty_field", "display[0].text: must not be empty")),
        ),
        (
            "a diff that is not one",
            json!([{"type": "markdown", "text": "ok"}, {"type": "markdown", "text": "ok"}, {"type": "diff", "diff": "I changed the refund check."}]),
            Err((
                "invalid_display",
                "display[2].diff: not a unified diff: no hunk (@@ -a,b +c,d @@) found",
            )),
        ),
        (
            "a hunk whose counts lie",
            json!([{"type": "diff", "diff": "@@ -1,5 +1,5 @@\n-a\n+b\n"}]),
            Err((
                "invalid_display",
                "display[0].diff: not a unified diff: error parsing patch at byte 0: hunk header does not match hunk",
            )),
        ),
        (
            "a diff and before together",
            json!([{"type": "diff", "diff": "@@ -1 +1 @@\n-a\n+b\n", "before": "a"}]),
            Err((
                "invalid_display",
                "display[0].diff: give either diff or before and after, not both",
            )),
        ),
        (
            "before and after the same, without a path",
            json!([{"type": "diff", "before": "a\n", "after": "a\n"}]),
            Err((
                "invalid_display",
                "display[0].after: before and after are the same, so there is no change to show",
            )),
        ),
        (
            "a diff block with nothing",
            json!([{"type": "diff", "path": "x"}]),
            Err((
                "invalid_display",
                "display[0].diff: a diff block needs diff (a unified diff) or before and after",
            )),
        ),
        (
            "a code language that is markup",
            json!([{"type": "code", "language": "<script>", "text": "x"}]),
            Err((
                "invalid_display",
                "display[0].language: \"<script>\" is not a language name; use letters, digits, +, #, -, _ or .",
            )),
        ),
        (
            "a fact without a label",
            json!([{"type": "fields", "items": [{"value": 1}]}]),
            Err(("missing_field", "display[0].items[0].label: is required")),
        ),
        (
            "no facts",
            json!([{"type": "fields", "items": []}]),
            Err(("empty_field", "display[0].items: must not be empty")),
        ),
        (
            "a javascript: link",
            json!([{"type": "link", "url": "javascript:alert(1)"}]),
            Err((
                "invalid_display",
                "display[0].url: links may only be http or https, got a \"javascript\" link",
            )),
        ),
        (
            "a data: link",
            json!([{"type": "link", "url": "data:text/html,<script>alert(1)</script>"}]),
            Err((
                "invalid_display",
                "display[0].url: links may only be http or https, got a \"data\" link",
            )),
        ),
        (
            "an image that is not a data URL",
            json!([{"type": "image", "alt": "x", "data": "https://example.com/a.png"}]),
            Err((
                "invalid_display",
                "display[0].data: an image must be a data: URL, e.g. data:image/png;base64,...",
            )),
        ),
        (
            "an SVG",
            json!([{"type": "image", "alt": "x", "data": data_url("image/svg+xml", b"<svg onload=alert(1)>")}]),
            Err((
                "invalid_display",
                "display[0].data: images may be PNG, JPEG, GIF or WebP, got \"image/svg+xml\"",
            )),
        ),
        (
            "bytes that are not the type claimed",
            json!([{"type": "image", "alt": "x", "data": data_url("image/png", b"GIF89a\x01\x00")}]),
            Err((
                "invalid_display",
                "display[0].data: the data says image/png but its bytes are image/gif",
            )),
        ),
        (
            "HTML sent as a PNG",
            json!([{"type": "image", "alt": "x", "data": data_url("image/png", b"<html><script>alert(1)</script>")}]),
            Err((
                "invalid_display",
                "display[0].data: the data says image/png but its bytes are not an image of that type",
            )),
        ),
        (
            "an image over 1 MiB",
            json!([{"type": "image", "alt": "x", "data": too_large_image}]),
            Err((
                "invalid_display",
                "display[0].data: an image may be at most 1 MiB, got about 1.0 MiB",
            )),
        ),
        (
            "an image without alt text",
            json!([{"type": "image", "data": data_url("image/png", &png())}]),
            Err(("missing_field", "display[0].alt: is required")),
        ),
        (
            "not base64",
            json!([{"type": "image", "alt": "x", "data": "data:image/png;base64,%%%"}]),
            Err((
                "invalid_display",
                "display[0].data: the image data is not valid base64 (Invalid symbol 37, offset 0.)",
            )),
        ),
    ]);
}

#[test]
fn a_summary_is_one_line_of_at_most_120_characters() {
    let parse = |summary: Value| {
        parse_request(
            &json!({"question": "Ship it?", "summary": summary}),
            &Limits::default(),
        )
    };
    assert_eq!(
        parse(json!(" Refund\n order A-17 ")).map(|r| r.summary),
        Ok("Refund order A-17".to_owned())
    );
    let e = parse(json!("x".repeat(121))).expect_err("too long");
    assert_eq!(
        e.to_string(),
        "summary: at most 120 characters are allowed, got 121"
    );
    let derived = parse_request(
        &json!({"questions": [{"header": "Deploy", "text": "Which region\nfirst?", "options": ["eu", "us"]}]}),
        &Limits::default(),
    )
    .expect("valid");
    assert_eq!(derived.summary, "Deploy: Which region first?");
}

#[test]
fn a_diff_reads_into_numbered_lines_per_file() {
    let git = "diff --git a/src/a.rs b/src/a.rs\nindex 1..2 100644\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -10,3 +10,3 @@ fn main() {\n let a = 1;\n-let b = 2;\n+let b = 3;\n let c = 4;\ndiff --git a/docs/new.md b/docs/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,2 @@\n+# New\n+text\n";
    let view: DiffView = parse_diff(git).expect("a git diff");
    assert_eq!(view.files.len(), 2);
    let a = &view.files[0];
    assert_eq!(a.path(), Some("src/a.rs"));
    assert_eq!((a.added, a.removed), (1, 1));
    assert_eq!(a.hunks[0].header(), "@@ -10,3 +10,3 @@ fn main() {");
    let lines: Vec<(char, Option<usize>, Option<usize>, &str)> = a.hunks[0]
        .lines
        .iter()
        .map(|l| (l.kind.marker(), l.old, l.new, l.text.as_str()))
        .collect();
    assert_eq!(
        lines,
        vec![
            (' ', Some(10), Some(10), "let a = 1;"),
            ('-', Some(11), None, "let b = 2;"),
            ('+', None, Some(11), "let b = 3;"),
            (' ', Some(12), Some(12), "let c = 4;"),
        ]
    );
    let new = &view.files[1];
    assert_eq!(
        (new.old_path.as_deref(), new.path()),
        (None, Some("docs/new.md"))
    );
    assert_eq!((new.added, new.removed), (2, 0));
    assert!(new.hunks[0].lines.iter().all(|l| l.kind == LineKind::Added));
    // Written back, the view is the same diff.
    assert_eq!(parse_diff(&view.to_unified()).expect("reads back"), view);
}

fn derived(name: &str, args: Value, files: &[(&str, Option<&str>)]) -> display::Derived {
    let files: Vec<(String, Option<String>)> = files
        .iter()
        .map(|(p, c)| (p.to_string(), c.map(str::to_owned)))
        .collect();
    let read = move |path: &str| match files.iter().find(|(p, _)| p == path) {
        Some((_, Some(content))) => FileState::Content(content.clone()),
        Some((_, None)) => FileState::Missing,
        None => FileState::Unknown,
    };
    derive(
        &ToolCall {
            name,
            arguments: &args,
            cwd: Some("/home/dev/shop"),
        },
        &read,
    )
}

/// The first diff block's lines as `marker old new text`.
fn diff_lines(blocks: &[Block]) -> Vec<String> {
    let diff = blocks
        .iter()
        .find_map(|b| match &b.content {
            Content::Diff { diff, .. } => Some(diff.clone()),
            _ => None,
        })
        .expect("a diff block");
    parse_diff(&diff)
        .expect("the derived diff parses")
        .files
        .iter()
        .flat_map(|f| f.hunks.iter().flat_map(|h| h.lines.iter()))
        .map(|l| {
            let n = |n: Option<usize>| n.map_or("-".to_owned(), |n| n.to_string());
            format!("{}{} {} {}", l.kind.marker(), n(l.old), n(l.new), l.text)
        })
        .collect()
}

const PAYMENTS: &str = "import log\n\ndef refund(order, amount):\n    if amount > order.total:\n        raise ValueError\n    order.refund(amount)\n";

#[test]
fn an_edit_is_shown_as_a_diff_of_the_file() {
    let args = json!({"file_path": "/home/dev/shop/src/payments.py",
        "old_string": "    if amount > order.total:\n", "new_string": "    if amount > order.paid:\n        log.warning(\"above paid\")\n"});
    let d = derived(
        "Edit",
        args.clone(),
        &[("/home/dev/shop/src/payments.py", Some(PAYMENTS))],
    );
    assert_eq!(d.summary, "Edit src/payments.py (+2 \u{2212}1)");
    assert_eq!(d.blocks[0].title, None);
    assert!(
        matches!(&d.blocks[0].content, Content::Diff { path: Some(p), .. } if p == "src/payments.py")
    );
    assert_eq!(
        diff_lines(&d.blocks),
        vec![
            " 1 1 import log",
            " 2 2 ",
            " 3 3 def refund(order, amount):",
            "-4 -     if amount > order.total:",
            "+- 4     if amount > order.paid:",
            "+- 5         log.warning(\"above paid\")",
            " 5 6         raise ValueError",
            " 6 7     order.refund(amount)",
        ]
    );
    // Without the file (the server's view), the edited text alone, titled so.
    let d = derived("Edit", args, &[]);
    assert_eq!(d.summary, "Edit src/payments.py (+2 \u{2212}1)");
    assert_eq!(
        d.blocks[0].title.as_deref(),
        Some("src/payments.py (the edited text; line numbers count within it)")
    );
    assert_eq!(
        diff_lines(&d.blocks),
        vec![
            "-1 -     if amount > order.total:",
            "+- 1     if amount > order.paid:",
            "+- 2         log.warning(\"above paid\")",
        ]
    );
}

#[test]
fn gemini_clis_replace_and_write_file_are_diffs_too() {
    let path = "/home/dev/shop/src/payments.py";
    let d = derived(
        "replace",
        json!({"file_path": path, "old_string": "order.total", "new_string": "order.paid",
            "instruction": "Compare with what was paid."}),
        &[(path, Some(PAYMENTS))],
    );
    assert_eq!(d.summary, "replace src/payments.py (+1 \u{2212}1)");
    assert!(diff_lines(&d.blocks).contains(&"+- 4     if amount > order.paid:".to_owned()));

    let twice = "a = 1\na = 1\n";
    let d = derived(
        "replace",
        json!({"file_path": path, "old_string": "a = 1", "new_string": "a = 2", "allow_multiple": true}),
        &[(path, Some(twice))],
    );
    assert_eq!(d.summary, "replace src/payments.py (+2 \u{2212}2)");

    let d = derived(
        "write_file",
        json!({"file_path": "/home/dev/shop/README.md", "content": "# Shop\n"}),
        &[("/home/dev/shop/README.md", None)],
    );
    assert_eq!(d.summary, "write_file README.md (+1 \u{2212}0)");
    assert_eq!(diff_lines(&d.blocks), vec!["+- 1 # Shop"]);
}

#[test]
fn multi_edit_write_and_notebook_edit() {
    let path = "/home/dev/shop/src/payments.py";
    let d = derived(
        "MultiEdit",
        json!({"file_path": path, "edits": [
            {"old_string": "import log", "new_string": "import logging as log"},
            {"old_string": "order.total", "new_string": "order.paid"}]}),
        &[(path, Some(PAYMENTS))],
    );
    assert_eq!(d.summary, "MultiEdit src/payments.py (+2 \u{2212}2)");
    assert_eq!(d.blocks.len(), 1, "one diff of the file: {:?}", d.blocks);

    let d = derived(
        "Write",
        json!({"file_path": "/home/dev/shop/README.md", "content": "# Shop\n"}),
        &[("/home/dev/shop/README.md", None)],
    );
    assert_eq!(d.summary, "Write README.md (+1 \u{2212}0)");
    assert_eq!(d.blocks[0].title.as_deref(), Some("README.md (a new file)"));
    assert_eq!(diff_lines(&d.blocks), vec!["+- 1 # Shop"]);

    let d = derived(
        "Write",
        json!({"file_path": path, "content": PAYMENTS.replace("total", "paid")}),
        &[(path, Some(PAYMENTS))],
    );
    assert_eq!(d.summary, "Write src/payments.py (+1 \u{2212}1)");
    assert_eq!(d.blocks[0].title, None);

    let d = derived("Write", json!({"file_path": path, "content": "x\n"}), &[]);
    assert_eq!(
        d.blocks[0].title.as_deref(),
        Some("src/payments.py (everything written; the file on disk was not compared)")
    );

    let d = derived(
        "NotebookEdit",
        json!({"notebook_path": "/home/dev/shop/nb.ipynb", "cell_id": "c3", "new_source": "df.head()", "edit_mode": "replace"}),
        &[],
    );
    assert_eq!(d.summary, "NotebookEdit nb.ipynb (replace)");
    assert_eq!(
        d.blocks,
        vec![Block::code(
            Some("replace cell c3 of nb.ipynb"),
            Some("python"),
            "df.head()"
        )]
    );
}

#[test]
fn commands_and_links() {
    let d = derived(
        "Bash",
        json!({"command": "kubectl -n prod rollout restart deploy/payments", "description": "Restart the payments service"}),
        &[],
    );
    assert_eq!(
        d.summary,
        "Bash: kubectl -n prod rollout restart deploy/payments"
    );
    assert_eq!(
        d.blocks,
        vec![
            Block::markdown(None, "Restart the payments service"),
            Block::code(
                Some("Command"),
                Some("bash"),
                "kubectl -n prod rollout restart deploy/payments"
            ),
        ]
    );
    // A long command is cut in the summary, never in the block.
    let long = format!("echo {}", "a".repeat(300));
    let d = derived("Bash", json!({"command": long}), &[]);
    assert_eq!(d.summary.chars().count(), 120);
    assert!(d.summary.ends_with('…'));
    assert_eq!(
        d.blocks,
        vec![Block::code(Some("Command"), Some("bash"), &long)]
    );
    // An argv, as Codex and Gemini send commands, is quoted back as a shell would read it.
    let d = derived(
        "shell",
        json!({"command": ["bash", "-lc", "rm -rf build && make"]}),
        &[],
    );
    assert_eq!(
        d.blocks,
        vec![Block::code(
            Some("Command"),
            Some("bash"),
            "bash -lc 'rm -rf build && make'"
        )]
    );

    let d = derived(
        "WebFetch",
        json!({"url": "https://docs.example.com/api", "prompt": "Find the rate limit"}),
        &[],
    );
    assert_eq!(d.summary, "WebFetch: https://docs.example.com/api");
    assert_eq!(
        d.blocks[0].content,
        Content::Link {
            url: "https://docs.example.com/api".to_owned()
        }
    );
    let d = derived("WebFetch", json!({"url": "javascript:alert(1)"}), &[]);
    assert!(
        !d.blocks
            .iter()
            .any(|b| matches!(b.content, Content::Link { .. })),
        "a javascript: URL never becomes a link: {:?}",
        d.blocks
    );
}

#[test]
fn a_codex_patch_is_one_diff_per_file() {
    let patch = "*** Begin Patch\n*** Update File: src/payments.py\n@@ def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:\n*** Add File: docs/refunds.md\n+# Refunds\n+Paid amounts only.\n*** Delete File: old.txt\n*** End Patch\n";
    let d = derived(
        "apply_patch",
        json!({"command": patch}),
        &[
            ("src/payments.py", Some(PAYMENTS)),
            ("old.txt", Some("bye\n")),
        ],
    );
    assert_eq!(d.summary, "apply_patch 3 files (+3 \u{2212}2)");
    let diffs: Vec<Option<String>> = d
        .blocks
        .iter()
        .filter_map(|b| match &b.content {
            Content::Diff { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        diffs,
        vec![
            Some("src/payments.py".to_owned()),
            Some("docs/refunds.md".to_owned()),
            Some("old.txt".to_owned())
        ]
    );
    // Read against the file, the update has its real line numbers.
    assert_eq!(
        diff_lines(&d.blocks[..1]),
        vec![
            " 1 1 import log",
            " 2 2 ",
            " 3 3 def refund(order, amount):",
            "-4 -     if amount > order.total:",
            "+- 4     if amount > order.paid:",
            " 5 5         raise ValueError",
            " 6 6     order.refund(amount)",
        ]
    );
    // Without the files, the changed text alone; one file is named in the summary.
    let one = "*** Begin Patch\n*** Update File: a.py\n@@\n x = 1\n-y = 2\n+y = 3\n*** End Patch";
    let d = derived("apply_patch", json!({"input": one}), &[]);
    assert_eq!(d.summary, "apply_patch a.py (+1 \u{2212}1)");
    assert_eq!(
        diff_lines(&d.blocks),
        vec![" 1 1 x = 1", "-2 - y = 2", "+- 2 y = 3"]
    );
}

#[test]
fn any_other_tool_shows_its_facts_and_the_rest_as_json() {
    let d = derived(
        "mcp__stripe__refund",
        json!({"order": "A-17", "amount": 5000, "notify": true, "lines": [{"sku": "x", "qty": 1}], "note": null}),
        &[],
    );
    assert_eq!(
        d.summary,
        "mcp__stripe__refund: order=A-17, amount=5000, notify=true"
    );
    assert_eq!(
        serde_json::to_value(&d.blocks).expect("serializes"),
        json!([
            {"type": "fields", "items": [{"label": "order", "value": "A-17"}, {"label": "amount", "value": "5000"}, {"label": "notify", "value": "true"}]},
            {"type": "code", "title": "Arguments", "language": "json", "text": "{\n  \"lines\": [\n    {\n      \"sku\": \"x\",\n      \"qty\": 1\n    }\n  ]\n}"},
        ])
    );
    assert_eq!(derived("ping", json!({}), &[]).blocks, Vec::<Block>::new());
}

#[test]
fn an_approval_without_display_gets_one_in_validation() {
    let body = json!({"questions": [{"text": "Allow the agent to run Bash?", "kind": "approval",
        "action": {"name": "Bash", "arguments": {"command": "make deploy"}}}]});
    let request = parse_request(&body, &Limits::default()).expect("valid");
    assert_eq!(request.summary, "Bash: make deploy");
    assert_eq!(
        request.display,
        vec![Block::code(Some("Command"), Some("bash"), "make deploy")]
    );
    // What was derived reads back as the same request.
    let again = parse_request(
        &serde_json::to_value(&request).expect("serializes"),
        &Limits::default(),
    );
    assert_eq!(again, Ok(request));

    // A display (and summary) the agent sent is kept as sent.
    let mut body = body;
    body["display"] = json!([{"type": "markdown", "text": "Deploys **v2.3** to prod"}]);
    body["summary"] = json!("Deploy v2.3");
    let request = parse_request(&body, &Limits::default()).expect("valid");
    assert_eq!(request.summary, "Deploy v2.3");
    assert_eq!(
        request.display,
        vec![Block::markdown(None, "Deploys **v2.3** to prod")]
    );
}

#[test]
fn a_derived_diff_past_its_limit_is_cut_and_says_so() {
    let before: String = (0..30_000).map(|i| format!("line {i}\n")).collect();
    let after = before.replace("line 1", "LINE 1");
    let d = derived(
        "Write",
        json!({"file_path": "/home/dev/shop/big.txt", "content": after}),
        &[("/home/dev/shop/big.txt", Some(&before))],
    );
    let Content::Diff { diff, .. } = &d.blocks[0].content else {
        panic!("a diff first: {:?}", d.blocks[0]);
    };
    assert!(diff.len() <= 128 * 1024, "{} bytes", diff.len());
    let Content::Markdown { text } = &d.blocks[1].content else {
        panic!("then the note: {:?}", d.blocks.get(1));
    };
    assert!(
        text.starts_with("The diff is cut here: ") && text.ends_with(" more lines are not shown."),
        "{text}"
    );
    // The cut diff is still a diff, and the whole display is within a request's limits.
    let body = json!({"question": "Write?", "display": d.blocks});
    assert!(parse_request(&body, &Limits::default()).is_ok());
}
