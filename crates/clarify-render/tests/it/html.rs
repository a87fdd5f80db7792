//! HTML: markdown's rules, diffs as numbered lines, and every way agent text could try to run.

use clarify_core::display::{Block, Content, Fact};
use clarify_render::html::{blocks, diff, markdown};

#[test]
fn markdown_is_commonmark_with_github_tables_strikethrough_and_task_lists() {
    let html = markdown(
        "# Plan\n\n**Refund** ~~all~~ *some*\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- [x] tests\n- [ ] docs\n\n`x < y`",
    );
    for want in [
        "<h1>Plan</h1>",
        "<strong>Refund</strong> <del>all</del> <em>some</em>",
        "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody>",
        "<td>1</td><td>2</td>",
        "<li>\u{2611} tests</li>",
        "<li>\u{2610} docs</li>",
        "<code>x &lt; y</code>",
    ] {
        assert!(html.contains(want), "{want:?} missing from {html}");
    }
}

#[test]
fn nothing_an_agent_writes_runs_or_links_elsewhere_than_it_says() {
    // (markdown, what must not appear, what must appear)
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "<script>alert(1)</script>",
            vec!["<script"],
            vec!["&lt;script&gt;alert(1)&lt;/script&gt;"],
        ),
        (
            "hi <img src=x onerror=alert(1)> there",
            vec!["<img"],
            vec!["&lt;img src=x onerror=alert(1)&gt;"],
        ),
        (
            "<a href=\"javascript:alert(1)\">x</a>",
            vec!["<a "],
            vec!["&lt;a href="],
        ),
        (
            "[click](javascript:alert(1))",
            vec!["href", "javascript"],
            vec!["click"],
        ),
        ("[click](JaVaScRiPt:alert(1))", vec!["href"], vec!["click"]),
        (
            "[click](jav&#x61;script:alert(1))",
            vec!["href"],
            vec!["click"],
        ),
        (
            "[click](data:text/html,<script>alert(1)</script>)",
            vec!["href", "<script"],
            vec!["click"],
        ),
        ("[keys](/v1/keys)", vec!["href"], vec!["keys"]),
        (
            "![chart](https://evil.example/x.png)",
            vec!["<img"],
            vec![
                "<a href=\"https://evil.example/x.png\" rel=\"noopener noreferrer nofollow\">chart</a>",
            ],
        ),
        (
            "[docs](https://example.com/a?b=1&c=2)",
            vec![],
            vec![
                "<a href=\"https://example.com/a?b=1&amp;c=2\" rel=\"noopener noreferrer nofollow\">docs</a>",
            ],
        ),
        (
            "<https://example.com>",
            vec![],
            vec!["rel=\"noopener noreferrer nofollow\""],
        ),
        (
            "[mail](mailto:ops@example.com)",
            vec![],
            vec!["href=\"mailto:ops@example.com\""],
        ),
        (
            "<style>body{display:none}</style>",
            vec!["<style"],
            vec!["&lt;style&gt;"],
        ),
        (
            "<iframe src=https://evil.example></iframe>",
            vec!["<iframe"],
            vec!["&lt;iframe"],
        ),
        ("<!-- hidden --> shown", vec!["<!--"], vec!["shown"]),
    ];
    let mut failures = Vec::new();
    for (input, never, always) in cases {
        let html = markdown(input);
        for bad in never {
            if html
                .to_ascii_lowercase()
                .contains(&bad.to_ascii_lowercase())
            {
                failures.push(format!("{input:?} gave {html:?}, which contains {bad:?}"));
            }
        }
        for good in always {
            if !html.contains(good) {
                failures.push(format!("{input:?} gave {html:?}, without {good:?}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_block_escapes_what_it_shows() {
    let evil = "</code></pre><script>alert(1)</script>";
    let shown = blocks(
        &[
            Block::code(Some("<b>title</b>"), Some("rust"), evil),
            Block::new(
                None,
                Content::Fields {
                    items: vec![Fact {
                        label: evil.to_owned(),
                        value: evil.to_owned(),
                    }],
                },
            ),
            Block::new(
                None,
                Content::Diff {
                    path: Some(evil.to_owned()),
                    diff: format!("@@ -1 +1 @@\n-{evil}\n+ok\n"),
                },
            ),
            Block::new(
                Some(evil.to_owned()),
                Content::Link {
                    url: "https://example.com/\"onmouseover=\"x".to_owned(),
                },
            ),
            Block::new(
                None,
                Content::Link {
                    url: "javascript:alert(1)".to_owned(),
                },
            ),
            Block::new(
                None,
                Content::Image {
                    data: String::new(),
                    alt: "\" onerror=\"alert(1)".to_owned(),
                },
            ),
        ],
        &|n| Some(format!("/v1/requests/r1/display/{n}")),
    );
    assert!(!shown.contains("<script"), "{shown}");
    assert!(!shown.contains("<b>"), "{shown}");
    assert!(!shown.contains("\"onmouseover"), "{shown}");
    assert!(!shown.contains("href=\"javascript"), "{shown}");
    assert!(!shown.contains("\" onerror"), "{shown}");
    assert!(
        shown.contains("<img src=\"/v1/requests/r1/display/5\""),
        "{shown}"
    );
}

#[test]
fn a_diff_shows_numbers_markers_and_counts() {
    let html = diff(
        Some("src/payments.py"),
        "@@ -3,3 +3,4 @@\n def refund(order, amount):\n-    if amount > order.total:\n+    if amount > order.paid:\n+        log.warning(\"paid\")\n         raise ValueError\n",
    );
    assert!(
        html.contains("<span class=\"diff-path\">src/payments.py</span>"),
        "{html}"
    );
    assert!(
        html.contains("<span class=\"add\">+2</span> <span class=\"del\">\u{2212}1</span>"),
        "{html}"
    );
    assert!(html.contains("<tr class=\"hunk\"><td class=\"num\"></td><td class=\"num\"></td><td class=\"mark\"></td><td class=\"text\">@@ -3,3 +3,4 @@</td></tr>"), "{html}");
    assert!(html.contains("<tr class=\"del\"><td class=\"num\">4</td><td class=\"num\"></td><td class=\"mark\" title=\"removed\">\u{2212}</td><td class=\"text\">    if amount &gt; order.total:</td></tr>"), "{html}");
    assert!(html.contains("<tr class=\"add\"><td class=\"num\"></td><td class=\"num\">5</td><td class=\"mark\" title=\"added\">+</td>"), "{html}");
    assert!(
        html.contains("<tr class=\"ctx\"><td class=\"num\">5</td><td class=\"num\">6</td>"),
        "{html}"
    );
}
